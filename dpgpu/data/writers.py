"""Write a SequenceDB in the input's own format, SPMF or plain lines.

Synthetic data written in the format it was read from is a drop-in
replacement for the original file.  A file written from a database on a
public vocabulary reads back on that vocabulary (``dpgpu.load(path,
vocab=...)``) as the same sequences with the same item ids, and any
database reads back with the labels it has (``list(db)``): items are
written by their labels, and SPMF text keeps the ``@ITEM`` names an SPMF
input gave its numbers.  A label that the chosen format cannot hold as it
is (white space in a ``lines`` file or a ``.seq`` header, a character XML
forbids, ...) is refused before anything is written
(:func:`check_writable`); labels are never rewritten.  Every
writer goes through :func:`~dpgpu.data.io.atomic_output`: a failed write
leaves nothing behind and an existing file is only replaced with ``force``.
"""

from __future__ import annotations

import gzip
import itertools
import logging
import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, TextIO

import numpy as np

from ..errors import InputError, InvalidParameter
from .io import atomic_output
from .load import DETECT_BYTES, detect_format, extension_format
from .sequencedb import SequenceDB
from .text import MAX_DIGITS, SEQ_DATA_VOCABULARY

log = logging.getLogger("dpgpu")

WRITE_FORMATS = ("seq", "spmf", "lines", "csv", "parquet", "xes", "wide", "trajectory",
                 "column")
#: Formats written as CSV tables besides event logs: a ``.csv`` name suits them too.
CSV_TABLES = ("wide", "trajectory", "column")
#: Formats an extension suits, given as the format, besides the one it names: a ``.txt``
#: name (``lines``) suits every format written as text.
_ALSO_SUITS = {".txt": tuple(f for f in WRITE_FORMATS if f != "parquet")}
#: What :func:`write_parts` writes: not ``wide``, whose columns follow the longest sequence.
PART_FORMATS = tuple(f for f in WRITE_FORMATS if f != "wide")
#: A token the integer readers parse as a number (ASCII digits, at most 18 of them).
INT_TOKEN = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}")
#: An integer as the readers print it back: no leading zero, no "-0".
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]{0,17}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
#: What the SPMF reader takes for a line end (:func:`dpgpu.data.io.unix_line_ends`).
_LINE_END = re.compile("[\r\n]")


#: The field delimiter a CSV output's extension asks for (else the input's, or a comma).
_CSV_DELIMITERS = {".tsv": "\t", ".csv": ","}


def write(db: Any, path: Any, format: str | None = None, *, force: bool = False,
          delimiter: str | None = None) -> int:
    """Write ``db`` to ``path`` (see :meth:`SequenceDB.save`).

    A CSV table (``csv``, ``wide``, ``trajectory``, ``column``) is delimited
    by ``delimiter``, else tab-separated in a ``.tsv`` file and
    comma-separated in a ``.csv`` one, else delimited as its input (if that
    was a CSV table of that kind or a CSV log).

    Parameters
    ----------
    db : SequenceDB
        The database to write.
    path : str or path-like
        The file to write (``.gz`` to compress), written atomically.
    format : str, optional
        One of :data:`WRITE_FORMATS`.  Default: the format ``db`` was read
        from (``db.source["format"]``), else ``"lines"``.
    force : bool
        Replace an existing file.
    delimiter : str, optional
        The field delimiter of a CSV table, whatever the file's name (a
        release writes its input's); not used by the other formats.

    Returns
    -------
    int
        The sequences written: all of them, but for the empty ones in a
        format with a row per item (:data:`ROW_FORMATS`), which are counted
        in a warning.  A warning also says when ``db``'s users are left out
        (formats other than :data:`USER_FORMATS`).

    Raises
    ------
    InvalidParameter
        An unknown format, or one that cannot hold the labels (:func:`check_writable`).
    InputError
        ``path`` may not be written (it exists without ``force``, or is not
        a regular file; :func:`~dpgpu.data.io.check_output`).
    """
    fmt = _write_format(format or db.source.get("format") or "lines")
    check_writable(db, fmt, path)
    with atomic_output(path, force=force, binary=fmt == "parquet") as stream:
        write_all(open_sink(fmt, db, stream, path, delimiter=delimiter), db)
    if fmt == "lines":
        _warn_unless_detected_as_lines(Path(path))
    if db.users is not None and fmt not in USER_FORMATS:
        log.warning("%s: the users of this user-level data are not written: the %s format has "
                    "no user column (%s keep them)", Path(path).name, fmt, ", ".join(USER_FORMATS))
    return written(len(db), int(np.count_nonzero(db.lengths == 0)), fmt, path)


def output_format(output: Any, to: str | None, input_format: str | None = None,
                  names: tuple[str, str] = ("--to", "output")) -> str | None:
    """The format to write ``output`` in: ``to``, else the one its extension names.

    Extensions are those format detection reads as a hint
    (:func:`dpgpu.data.load.extension_format`), after any ``.gz``.  A name
    that reads as ``csv`` (``.csv``, ``.tsv``) also suits the CSV tables of
    :data:`CSV_TABLES`: without ``to``, such an input keeps its format.  A
    ``.txt`` name reads as ``lines`` and suits every format written as text
    (:data:`_ALSO_SUITS`), given as ``to``; without ``to`` it keeps a
    ``seq`` or ``spmf`` input's format (such files are often named
    ``.txt``; written as lines, SPMF's item names would be lost).
    ``dpgpu convert`` and
    :meth:`SequenceDB.save` write the format this returns, else the data's
    own; ``dpgpu generate`` writes it, else ``lines``.

    Parameters
    ----------
    output : str or path-like
        The output file.
    to : str or None
        The format asked for (``--to``, ``format=``).
    input_format : str or None
        The input's format (the CSV tables are never detected, so an input
        is one only when it says so).
    names : pair of str
        How messages name ``to`` and ``output``.

    Returns
    -------
    str or None
        None where neither names a format, or a ``.csv`` name is given a CSV
        table (the writer then keeps the input's).

    Raises
    ------
    InvalidParameter
        Naming ``to``, when the extension names another format (a ``.csv``
        name also suits :data:`CSV_TABLES`, a ``.txt`` name the text
        formats); or naming the output, when its extension names a format
        dpgpu cannot write.
    """
    suffix, named = extension_format(output)
    if named is None or (named == "csv" and (to or input_format) in CSV_TABLES):
        return to
    if to is not None and to in _ALSO_SUITS.get(suffix, ()):
        return to
    if to is None and suffix == ".txt" and input_format in ("seq", "spmf"):
        return input_format  # often named .txt; read as lines, SPMF would lose its names
    if to is not None and to != named:
        raise InvalidParameter(f"{names[0]}: {to} does not match the extension {suffix} of "
                               f"{output}, which reads as {named}; drop {names[0]} or change "
                               "the extension")
    if named not in WRITE_FORMATS:
        raise InvalidParameter(f"{names[1]}: {output}: its extension {suffix} names the {named} "
                               f"format, which dpgpu cannot write (it writes "
                               f"{', '.join(WRITE_FORMATS)})")
    return named


def save_format(db: Any, path: Any, format: str | None = None) -> str:
    """The format :meth:`SequenceDB.save` writes ``db`` to ``path`` in.

    As ``dpgpu convert`` chooses it (:func:`output_format`): ``format``,
    else the one the extension of ``path`` names (after any ``.gz``; a
    ``.csv`` or ``.tsv`` name keeps a wide, trajectory or column database in
    its format), else the format ``db`` was read from, else ``"lines"``.

    Parameters
    ----------
    db : SequenceDB
        The database to write.
    path : str or path-like
        The file to write.
    format : str, optional
        One of :data:`WRITE_FORMATS`.

    Returns
    -------
    str

    Raises
    ------
    InvalidParameter
        Naming ``path`` when it is not a path, or its extension names a
        format dpgpu cannot write (``.jsonl``); naming ``format`` when it is
        not one of :data:`WRITE_FORMATS`, or the extension names another
        (a ``.txt`` name suits every format written as text, a ``.csv``
        name the CSV tables).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidParameter(f"path: expected a file name (str or path-like), got "
                               f"{type(path).__name__}")
    if format is not None:
        _write_format(format)
    chosen = output_format(path, format, db.source.get("format"), ("format", "path"))
    return chosen or db.source.get("format") or "lines"


def write_parts(db_parts: Iterable[Any], path: Any, format: str, *,
                force: bool = False) -> tuple[int, int]:
    """Write a database that arrives in parts, such as generated data too large to hold.

    The parts share the first part's vocabulary and have neither users nor
    case names: an event log names their cases ``case-1``, ``case-2``, ...
    on across the parts.  Only the first part is checked against the format
    (:func:`check_writable`); it also decides what the format needs from the
    whole database (the ``.seq`` header, SPMF's item names, the event-log
    columns).  The file is written atomically, as by :func:`write`.

    Parameters
    ----------
    db_parts : iterable of SequenceDB
        Consecutive parts of the database, at least one.
    path : path-like
        The file to write (``.gz`` to compress).
    format : str
        One of :data:`PART_FORMATS`.
    force : bool
        Replace an existing file.

    Returns
    -------
    tuple of int
        The sequences and the events written (empty sequences are not
        written in a format with a row per item, :func:`written`).

    Raises
    ------
    InvalidParameter
        An unknown format, one that cannot hold the labels, no parts, or a
        part in another vocabulary or with users or case names.
    """
    fmt = _write_format(format)
    if fmt not in PART_FORMATS:
        raise InvalidParameter(f"format: {fmt} is not written a part at a time (its columns "
                               "follow the longest sequence of the whole database); choose one "
                               f"of {', '.join(PART_FORMATS)}")
    db_parts = iter(db_parts)
    head = next(db_parts, None)
    if head is None:
        raise InvalidParameter("db_parts: no part to write")
    check_writable(head, fmt, path)
    n_sequences = n_events = n_empty = 0
    with atomic_output(path, force=force, binary=fmt == "parquet") as stream:
        sink = open_sink(fmt, head, stream, path)
        for db in itertools.chain([head], db_parts):
            if db.vocab != head.vocab or db.users is not None or "cases" in db.source:
                raise InvalidParameter("db_parts: every part must be in the first part's "
                                       "vocabulary, without users or case names")
            for part in parts(db):
                sink.write(part, n_sequences)
                n_sequences += len(part)
                n_empty += int(np.count_nonzero(part.lengths == 0))
            n_events += db.n_events
        sink.close()
    return written(n_sequences, n_empty, fmt, path), n_events


#: Formats with a row per item: a sequence without items has no row there.
ROW_FORMATS = ("csv", "parquet", "trajectory")
#: Formats that write each sequence's user; ``wide`` and ``trajectory`` refuse user-level
#: data (:func:`check_writable`), the others leave the users out, with a warning.
USER_FORMATS = ("csv", "parquet", "column")


def written(n_sequences: int, n_empty: int, fmt: str, path: Any) -> int:
    """How many of ``n_sequences`` a ``fmt`` file holds, warning of the empty ones left out.

    Parameters
    ----------
    n_sequences, n_empty : int
        The sequences given to the writer, and how many of them were empty.
    fmt : str
    path : path-like
        The file written (its name is in the warning: a release writes it in a
        staging folder first).

    Returns
    -------
    int
        ``n_sequences``, less ``n_empty`` in a format of :data:`ROW_FORMATS`.
    """
    if fmt not in ROW_FORMATS or not n_empty:
        return n_sequences
    log.warning("%s: %d of the %d sequences are empty and were not written: a %s file has a "
                "row per item, so a sequence without items has no row", Path(path).name, n_empty,
                n_sequences, fmt)
    return n_sequences - n_empty


def _write_format(fmt: str) -> str:
    if fmt not in WRITE_FORMATS:
        raise InvalidParameter(f"format: cannot write {fmt!r}; choose one of "
                               f"{', '.join(WRITE_FORMATS)}")
    return fmt


def open_sink(fmt: str, db: Any, stream: Any, path: Any, *, delimiter: str | None = None) -> Any:
    """A writer of ``fmt`` to ``stream`` for ``db``'s sequences, given a part at a time.

    Its ``write(part, first)`` writes the sequences of ``part`` (``first``:
    how many were written before them) and ``close()`` ends the file.

    Parameters
    ----------
    fmt : str
        One of :data:`WRITE_FORMATS`.
    db : SequenceDB
        The whole database, or its first part (:func:`write_parts`): it
        decides the header, columns and names.
    stream : text stream, or binary stream for ``parquet``
    path : path-like
        The file being written (a CSV table is tab-separated in a ``.tsv``
        file and comma-separated in a ``.csv`` one, otherwise delimited as
        its input, if that was a CSV table).
    delimiter : str, optional
        The field delimiter of a CSV table, whatever ``path``'s name.

    Returns
    -------
    sink
        A :class:`TextSink` (``seq``, ``spmf``, ``lines``), or the format's
        sink (:class:`~dpgpu.data.eventlog.CsvLogSink`,
        :class:`~dpgpu.data.eventlog.ParquetLogSink`,
        :class:`~dpgpu.data.xes.XesSink`, :class:`~dpgpu.data.wide.WideSink`,
        :class:`~dpgpu.data.trajectory.TrajectorySink`,
        :class:`~dpgpu.data.column.ColumnSink`); opening it writes the header.
    """
    if fmt in ("seq", "spmf", "lines"):
        return {"seq": seq_sink, "spmf": spmf_sink, "lines": lines_sink}[fmt](db, stream)
    from . import eventlog, xes  # noqa: PLC0415 - event-log support loads on demand

    delimiter = delimiter or _CSV_DELIMITERS.get(extension_format(path)[0])
    if fmt == "csv":
        return eventlog.CsvLogSink(db, stream, delimiter=delimiter)
    if fmt == "wide":
        from .wide import WideSink  # noqa: PLC0415

        return WideSink(db, stream, delimiter=delimiter)
    if fmt == "trajectory":
        from .trajectory import TrajectorySink  # noqa: PLC0415

        return TrajectorySink(db, stream, delimiter=delimiter)
    if fmt == "column":
        from .column import ColumnSink  # noqa: PLC0415

        return ColumnSink(db, stream, sep="" if written_as_chars(db) else " ", delimiter=delimiter)
    return {"parquet": eventlog.ParquetLogSink, "xes": xes.XesSink}[fmt](db, stream)


def check_writable(db: Any, fmt: str, path: Any) -> None:
    """Refuse a format that cannot hold ``db``'s labels unchanged.

    Which labels are written depends on the format: every category name of
    a ``.seq`` header and every ``@ITEM`` name of SPMF text (the whole
    vocabulary), only the items that occur in the other formats.  No format
    holds a NUL character or a lone surrogate.  What each format cannot hold:

    - ``seq``: an empty name, white space, a first name starting with ``%``;
    - ``spmf``: labels other than non-negative integers are numbered from 1
      and named in ``@ITEM=number=label`` lines (integer labels are written as they
      are, and named in such lines where an SPMF input named them); these lines
      cannot hold a line break (a line feed or a carriage return, which the
      reader also takes for a line end) or trailing white space;
    - ``lines``: an empty label, white space (it separates the items), a
      label starting with U+FEFF (a reader drops it as a byte-order mark at
      the start of the file); for a database read a character at a time, a
      label that is not one character.  An integer with a leading zero (or
      ``-0``) is held: ``tokens="auto"`` reads a file with one as text
      (:func:`~dpgpu.data.text.is_canonical_int`), so every label reads back
      as written.  What is refused depends on the labels written and the
      ``tokens="chars"`` option only, never on how the input's other
      tokens made ``"auto"`` choose, so neighbouring inputs with the same
      output labels get the same file format;
    - ``csv``, ``parquet``, ``xes``: a blank label (their readers refuse an
      empty activity); ``xes`` also a character XML 1.0 forbids.  These
      formats also write each sequence's case name and user label, which
      are held to the same rules on characters;
    - ``wide``: a sequence longer than the state columns, a state that reads
      back as missing, users (:func:`dpgpu.data.wide.wide_problem`);
    - ``trajectory``: a database without a grid, an item that names no cell
      of it, users (:func:`dpgpu.data.trajectory.trajectory_problem`);
    - ``column``: what ``lines`` cannot hold (the items of a sequence share
      a cell, space-separated or, read a character at a time, not
      separated) but for the byte-order mark (the header comes first); it
      also writes each sequence's case name and user label, held to the
      same rules on characters as the event logs'.

    Parameters
    ----------
    db : SequenceDB
        The database (or the first part of one) to write.
    fmt : str
        One of :data:`WRITE_FORMATS`.
    path : path-like
        The file to write (for the message).

    Raises
    ------
    InvalidParameter
        Naming the file, the first label the format cannot hold and why, and
        the formats that can hold every label.
    """
    problem = _label_problem(db, fmt, _present(db))
    if problem is None:
        return
    what, why = problem
    others = [f for f in writable_formats(db) if f != fmt]
    listed = ", ".join(others[:-1]) + " or " + others[-1] if len(others) > 1 else "".join(others)
    advice = f"write {listed} instead" if others else "no format dpgpu writes can hold it"
    raise InvalidParameter(f"format: cannot write {path} as {fmt}: {what} {why}; {advice}")


def label_problem(db: Any, fmt: str) -> str | None:
    """Why ``fmt`` cannot hold ``db``'s labels unchanged (:func:`check_writable`), or None.

    Parameters
    ----------
    db : SequenceDB
        The database to write.
    fmt : str
        One of :data:`WRITE_FORMATS`.

    Returns
    -------
    str or None
        What cannot be held and why, in words (``"item 'a b' contains
        white space, ..."``), or None when ``fmt`` can hold ``db``.
    """
    problem = _label_problem(db, fmt, _present(db))
    return None if problem is None else f"{problem[0]} {problem[1]}"


def writable_formats(db: Any) -> list[str]:
    """The formats of :data:`WRITE_FORMATS` that hold every label of ``db`` unchanged
    (:func:`check_writable`), in that order.

    Parameters
    ----------
    db : SequenceDB

    Returns
    -------
    list of str
        Possibly empty.
    """
    present = _present(db)
    return [f for f in WRITE_FORMATS if _label_problem(db, f, present) is None]


def _named_items(db: Any) -> dict[str, str]:
    """The ``@ITEM`` names an SPMF input gave its item numbers, by label (read without a
    vocabulary: on one, SPMF items are labelled by their names already)."""
    names = db.source.get("names")
    if db.source.get("format") != "spmf" or not names or db.vocab.public:
        return {}
    return {x: names[x] for x in db.vocab.labels if x in names}


def _present(db: Any) -> list[bool]:
    """Whether each item of ``db``'s vocabulary occurs, in id order."""
    return (np.bincount(db.items, minlength=db.vocab.size) > 0).tolist()


def _label_problem(db: Any, fmt: str, present: list[bool]) -> tuple[str, str] | None:
    """The first label ``fmt`` cannot hold, described (``item 'x'``), and why; or None.

    ``present`` says which items occur (:func:`_present`).  Event-log
    formats also write each sequence's case name and user label: those must
    be text the format can hold too.
    """
    if fmt == "spmf":
        labels = list(_spmf_items(db)[1].values())
    elif fmt == "seq":
        labels = db.vocab.names or db.vocab.labels
    else:
        labels = [label for label, seen in zip(db.vocab.labels, present) if seen]
    for label in labels:
        why = _text_problem(label, xml=fmt == "xes")
        if why:
            return f"item {label!r}", why
    if fmt in ("csv", "parquet", "xes", "wide", "trajectory", "column"):
        from . import eventlog  # noqa: PLC0415 - event-log support loads on demand

        names = eventlog.case_names(db)
        if fmt in ("csv", "parquet", "xes", "column") \
                and eventlog.output_columns(db)[0]["user"] is not None:
            names = names + eventlog.user_names(db)
        for name in names:
            why = _text_problem(name, xml=fmt == "xes")
            if why:
                return f"case or user name {name!r}", why
    if fmt == "wide":
        from .wide import wide_problem  # noqa: PLC0415

        return wide_problem(db)
    if fmt == "trajectory":
        from .trajectory import trajectory_problem  # noqa: PLC0415

        return trajectory_problem(db)
    if fmt in ("lines", "column"):
        problem = _chars_problem(labels) if written_as_chars(db) \
            else _lines_problem(labels, fmt)
        if problem is None and fmt == "lines":  # a column file starts with its header
            problem = _bom_problem(labels)
    else:
        problem = {"seq": _seq_problem, "spmf": _spmf_problem}.get(fmt, _event_log_problem)(labels)
    return None if problem is None else (f"item {problem[0]!r}", problem[1])


def _text_problem(text: str, *, xml: bool) -> str | None:
    """Why no format (or, with ``xml``, XML 1.0) can hold ``text``, or None."""
    if "\x00" in text:
        return "holds a NUL character"
    if _SURROGATE.search(text):
        return "is not valid Unicode text (a lone surrogate)"
    bad = _NOT_XML.search(text) if xml else None
    return f"holds {bad.group()!r}, a character XML 1.0 cannot represent" if bad else None


def _seq_problem(names: list[str]) -> tuple[str, str] | None:
    for name in names:
        if not name:
            return name, "is empty, and a .seq header cannot name it"
        if any(c.isspace() for c in name):
            return name, "contains white space, which separates the category names " \
                         "of a .seq header"
    if names and names[0].startswith("%"):
        return names[0], "starts with '%', which would make the .seq header line a comment"
    return None


def _spmf_problem(names: list[str]) -> tuple[str, str] | None:
    """Why an ``@ITEM`` line cannot hold one of ``names``, or None."""
    for name in names:
        end = _LINE_END.search(name)
        if end:
            return name, (f"contains a line break ({end.group()!r}), which would end its @ITEM "
                          "line")
        if name != name.rstrip():
            return name, "ends in white space, which its @ITEM line would lose"
    return None


def _lines_problem(labels: list[str], fmt: str) -> tuple[str, str] | None:
    """Why a ``fmt`` file (``lines``, or ``column``: items separated by spaces) cannot hold
    one of ``labels``, or None.

    Integers with leading zeros need no check: ``tokens="auto"`` (and
    ``"str"``, which :func:`dpgpu.release.synthetic_reader_options` records)
    read a file holding one as text, so every label reads back as written.
    The answer depends on ``labels`` alone, not on how the input was read.
    """
    for label in labels:
        if not label:
            return label, f"is empty, and a {fmt} file cannot hold it"
        if any(c.isspace() for c in label):
            return label, f"contains white space, which separates the items of a {fmt} file"
    return None


def _chars_problem(labels: list[str]) -> tuple[str, str] | None:
    for label in labels:
        if len(label) != 1 or label.isspace():
            return label, ("is not one character other than white space, and the input was "
                           "read a character at a time (tokens chars)")
    return None


def _bom_problem(labels: list[str]) -> tuple[str, str] | None:
    """A label that a lines file would lose its first character of, where it starts the file."""
    for label in labels:
        if label.startswith("\ufeff"):
            return label, ("starts with U+FEFF, which a reader drops as a byte-order mark when "
                           "it starts the file")
    return None


def _event_log_problem(labels: list[str]) -> tuple[str, str] | None:
    for label in labels:
        if not label.strip():
            return label, "is blank, and event-log readers refuse an empty activity"
    return None


def _spmf_number(label: str) -> bool:
    """Whether SPMF text can hold ``label`` as the item number itself."""
    return _CANONICAL_INT.fullmatch(label) is not None and not label.startswith("-")


def _spmf_items(db: Any) -> tuple[list[str], dict[str, str]]:
    """The number SPMF text writes for each item of ``db``'s vocabulary, in id order, and the
    ``@ITEM`` names by number (:func:`spmf_sink`)."""
    labels = db.vocab.labels
    if all(_spmf_number(x) for x in labels):
        return list(labels), _named_items(db)
    numbers = [str(i) for i in range(1, len(labels) + 1)]  # positive, as SPMF's items are
    return numbers, dict(zip(numbers, labels))


#: About how many items a writer turns into text (or rows) at once.
_CHUNK_ITEMS = 1 << 20
#: At most how many sequences it handles at once.
_CHUNK_SEQUENCES = 1 << 18


def parts(db: Any) -> Iterator[Any]:
    """``db``'s sequences in consecutive parts that a writer handles at once.

    A part holds about :data:`_CHUNK_ITEMS` items (at least one sequence, at
    most :data:`_CHUNK_SEQUENCES`), with its sequences' users and case names
    (the same slice of ``source["cases"]``), so that writing never builds
    the text or rows of a whole large database at once.

    Parameters
    ----------
    db : SequenceDB

    Yields
    ------
    SequenceDB
        Sequences ``start .. stop - 1`` of ``db``, in order.
    """
    offsets, n = db.offsets, len(db)
    start = 0
    while start < n:
        stop = int(np.searchsorted(offsets, offsets[start] + _CHUNK_ITEMS, side="right")) - 1
        stop = min(max(stop, start + 1), start + _CHUNK_SEQUENCES, n)
        first = offsets[start]
        source = dict(db.source)
        if "cases" in source:
            source["cases"] = source["cases"][start:stop]
        yield SequenceDB(db.items[first:offsets[stop]], offsets[start:stop + 1] - first,
                         db.vocab, users=None if db.users is None else db.users[start:stop],
                         source=source)
        start = stop


class TextSink:
    """Writes sequences as text, one line each, after a header.

    A sequence's line is ``sep.join(tokens[i] for i in its items) + end``.
    Each part's text is built from its flat ``items``/``offsets`` arrays at
    once: every item's token is gathered into one array of pieces, with
    ``end`` after each sequence, and joined.

    Parameters
    ----------
    stream : text stream
    header : str
        Written first.
    tokens : list of str
        The text of each item id.
    sep : str
        Written between the items of a sequence.
    end : str
        Written after each sequence's items.
    """

    def __init__(self, stream: TextIO, header: str, tokens: list[str], *, sep: str = "",
                 end: str = "\n") -> None:
        self.stream, self.sep, self.end = stream, sep, end
        self.last_token = _object_array(tokens)
        self.token = self.last_token + sep if sep else self.last_token  # followed by another
        stream.write(header)

    def write(self, part: Any, first: int) -> None:
        """Write the sequences of ``part`` (``first``: the number of sequences before it).

        Parameters
        ----------
        part : SequenceDB
            The next sequences, in the vocabulary whose ``tokens`` the sink
            was given.
        first : int
            How many sequences were written before ``part`` (text formats
            name no sequence, so it is not used).
        """
        ids, offsets = part.items, part.offsets
        ends = offsets[1:]  # each sequence's end, in ids
        at_end = ends + np.arange(len(part))  # where its `end` goes among the pieces
        pieces = np.empty(ids.size + at_end.size, dtype=object)
        is_item = np.ones(pieces.size, dtype=bool)
        is_item[at_end] = False
        pieces[is_item] = self.token[ids]
        if self.sep:  # no separator after a sequence's last item
            filled = part.lengths > 0
            pieces[at_end[filled] - 1] = self.last_token[ids[ends[filled] - 1]]
        pieces[at_end] = self.end
        self.stream.write("".join(pieces.tolist()))

    def close(self) -> None:
        """Nothing follows the last sequence."""


def _object_array(texts: list[str]) -> np.ndarray:
    out = np.empty(len(texts), dtype=object)
    out[:] = texts
    return out


def seq_sink(db: Any, stream: TextIO) -> TextSink:
    """UCI ``.seq``: a header naming the categories, then 1-based category numbers.

    Categories are numbered in vocabulary order; their names are the
    vocabulary's names (from a ``.seq`` input) or else its labels (see
    :func:`check_writable` for the names a header can hold).  A vocabulary
    taken from the data is marked so in the header
    (:data:`dpgpu.data.text.SEQ_DATA_VOCABULARY`).

    Parameters
    ----------
    db : SequenceDB
        The whole database, or its first part: its vocabulary makes the
        header.
    stream : text stream

    Returns
    -------
    TextSink
        Having written the header.
    """
    names = db.vocab.names or db.vocab.labels
    header = f"% Different categories found in input file:\n\n{' '.join(names)}\n\n"
    if not db.vocab.public:  # reading the file back must not make them public
        header += SEQ_DATA_VOCABULARY + "\n"
    header += "\n% Sequences:\n\n"
    return TextSink(stream, header, [f"{i + 1} " for i in range(db.vocab.size)])


def spmf_sink(db: Any, stream: TextIO) -> TextSink:
    """SPMF: ``item -1 item -1 ... -2`` per line (or the stripped variant if read so).

    Labels that are all non-negative integers (written as the readers print
    them) are written as they are, and named in ``@ITEM=label=name`` lines
    where an SPMF input named them, so an SPMF file keeps its numbers and
    names.  Otherwise every label is replaced by its id plus one (SPMF
    numbers items from 1) and named in an ``@ITEM=number=label`` line, as
    SPMF does for text; the
    vocabulary's items that never occur are named too, and
    ``dpgpu.load(..., vocab=...)`` matches items by these names.

    Parameters
    ----------
    db : SequenceDB
        The whole database, or its first part: its vocabulary makes the
        ``@ITEM`` lines, its ``source`` says whether it was read stripped.
    stream : text stream

    Returns
    -------
    TextSink
        Having written the header (if any).
    """
    labels, names = _spmf_items(db)
    header = "@CONVERTED_FROM_TEXT\n" + "".join(f"@ITEM={number}={name}\n"
                                                for number, name in names.items()) \
        if names else ""
    if db.source.get("format") == "spmf" and db.source.get("stripped"):
        return TextSink(stream, header, labels, sep=" ")
    return TextSink(stream, header, [x + " -1 " for x in labels], end="-2\n")


def lines_sink(db: Any, stream: TextIO) -> TextSink:
    """One sequence per line, labels separated by single spaces (or, for a database
    read a character at a time, ``tokens="chars"``, not separated).

    Labels are written as they are; :func:`write` refuses labels this format
    cannot hold (see :func:`check_writable`).

    Parameters
    ----------
    db : SequenceDB
        The whole database, or its first part.
    stream : text stream

    Returns
    -------
    TextSink
    """
    return TextSink(stream, "", list(db.vocab.labels), sep="" if written_as_chars(db) else " ")


def written_as_chars(db: Any) -> bool:
    """Whether ``db`` was read a character at a time (a lines or column file, tokens chars),
    and so is written with its items run together.

    Parameters
    ----------
    db : SequenceDB

    Returns
    -------
    bool
    """
    return db.source.get("format") in ("lines", "column") and db.source.get("tokens") == "chars"


def write_seq(db: Any, stream: TextIO) -> None:
    """Write ``db`` to ``stream`` as UCI ``.seq`` text (:func:`seq_sink`).

    Parameters
    ----------
    db : SequenceDB
        The database, whole.
    stream : text stream
        Where to write; the labels are not checked (:func:`check_writable`).
    """
    write_all(seq_sink(db, stream), db)


def write_spmf(db: Any, stream: TextIO) -> None:
    """Write ``db`` to ``stream`` as SPMF text (:func:`spmf_sink`).

    Parameters
    ----------
    db : SequenceDB
        The database, whole.
    stream : text stream
        Where to write; the labels are not checked (:func:`check_writable`).
    """
    write_all(spmf_sink(db, stream), db)


def write_lines(db: Any, stream: TextIO) -> None:
    """Write ``db`` to ``stream`` as one line of labels per sequence (:func:`lines_sink`).

    Parameters
    ----------
    db : SequenceDB
        The database, whole.
    stream : text stream
        Where to write; the labels are not checked (:func:`check_writable`).
    """
    write_all(lines_sink(db, stream), db)


def write_all(sink: Any, db: Any) -> None:
    """Give ``sink`` every sequence of ``db``, a part at a time (:func:`parts`), then close it.

    Parameters
    ----------
    sink
        A writer with ``write(part, first)`` and ``close()``, such as
        :class:`TextSink` or :class:`dpgpu.data.eventlog.CsvLogSink`.
    db : SequenceDB
    """
    first = 0
    for part in parts(db):
        sink.write(part, first)
        first += len(part)
    sink.close()


def _warn_unless_detected_as_lines(path: Path) -> None:
    """Warn when format detection would take the lines file at ``path`` for another format.

    Its first line may look like a header of another format, or its items
    like SPMF numbers with ``-2`` terminators.
    """
    with (gzip.open if path.name.endswith(".gz") else open)(path, "rb") as written:
        head = written.read(DETECT_BYTES)  # what format detection reads
    try:
        seen = detect_format(path, head)
    except InputError:  # not for this warning to refuse a file already written
        return
    if seen != "lines":
        log.warning("%s: its items make this lines file look like %s; read it back with "
                    "format='lines' (--format lines)", path, seen)
