"""Write a SequenceDB in the input's own format, SPMF or plain lines.

Synthetic data written in the format it was read from is a drop-in
replacement for the original file.  A file written from a database on a
public vocabulary reads back on that vocabulary (``dpgpu.load(path,
vocab=...)``) as the same sequences with the same item ids.  A label that
the chosen format cannot hold as it is (white space in a ``lines`` file or a
``.seq`` header, a character XML forbids, ...) is refused before anything
is written (:func:`check_writable`); labels are never rewritten.  Every
writer goes through :func:`~dpgpu.data.io.atomic_output`: a failed write
leaves nothing behind and an existing file is only replaced with ``force``.
"""

from __future__ import annotations

import logging
import re
from functools import partial
from pathlib import Path
from typing import Any, Iterator, TextIO

import numpy as np

from ..errors import InputError, InvalidParameter
from .io import atomic_output
from .load import DETECT_BYTES, detect_format, extension_format
from .text import MAX_DIGITS, SEQ_DATA_VOCABULARY

log = logging.getLogger("dpgpu")

WRITE_FORMATS = ("seq", "spmf", "lines", "csv", "parquet", "xes")
#: A token the integer readers parse as a number (ASCII digits, at most 18 of them).
_INT_TOKEN = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}")
#: An integer as the readers print it back: no leading zero, no "-0".
_CANONICAL_INT = re.compile(r"0|-?[1-9][0-9]{0,17}")
_SURROGATE = re.compile("[\ud800-\udfff]")
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


#: The field delimiter a CSV output's extension asks for (else the input's, or a comma).
_CSV_DELIMITERS = {".tsv": "\t", ".csv": ","}


def write(db: Any, path: Any, format: str | None = None, *, force: bool = False) -> None:
    """Write ``db`` to ``path`` (see :meth:`SequenceDB.save`).

    A CSV log is tab-separated in a ``.tsv`` file and comma-separated in a
    ``.csv`` one (otherwise delimited as its input, if that was a CSV log).

    Raises
    ------
    InvalidParameter
        An unknown format, or one that cannot hold the labels (:func:`check_writable`).
    """
    fmt = format or db.source.get("format") or "lines"
    if fmt not in WRITE_FORMATS:
        raise InvalidParameter(f"format: cannot write {fmt!r}; choose one of "
                               f"{', '.join(WRITE_FORMATS)}")
    check_writable(db, fmt, path)
    from . import eventlog  # noqa: PLC0415

    if fmt == "parquet":
        with atomic_output(path, force=force, binary=True) as stream:
            eventlog.write_parquet_log(db, stream)
        return
    writer = {"seq": write_seq, "spmf": write_spmf, "lines": write_lines,
              "csv": partial(eventlog.write_csv_log, delimiter=_CSV_DELIMITERS.get(
                  extension_format(path)[0])),
              "xes": eventlog.write_xes}[fmt]
    with atomic_output(path, force=force) as stream:
        writer(db, stream)
    if fmt == "lines":
        _warn_unless_detected_as_lines(db, Path(path))


def check_writable(db: Any, fmt: str, path: Any) -> None:
    """Refuse a format that cannot hold ``db``'s labels unchanged.

    Which labels are written depends on the format: every category name of
    a ``.seq`` header and every ``@ITEM`` name of SPMF text (the whole
    vocabulary), only the items that occur in the other formats.  No format
    holds a NUL character or a lone surrogate.  What each format cannot hold:

    - ``seq``: an empty name, white space, a first name starting with ``%``;
    - ``spmf``: labels other than non-negative integers are numbered and
      named in ``@ITEM=id=label`` lines, which cannot hold a line break or
      trailing white space;
    - ``lines``: an empty label, white space (it separates the items), and
      an integer with a leading zero (or ``-0``) when every item is an
      integer, since such a file is read as numbers;
    - ``csv``, ``parquet``, ``xes``: a blank label (their readers refuse an
      empty activity); ``xes`` also a character XML 1.0 forbids.  These
      formats also write each sequence's case name and user label, which
      are held to the same rules on characters.

    Parameters
    ----------
    db : SequenceDB
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
    occurring = _occurring_labels(db)
    problem = _label_problem(db, fmt, occurring)
    if problem is None:
        return
    what, why = problem
    others = [f for f in writable_formats(db) if f != fmt]
    listed = ", ".join(others[:-1]) + " or " + others[-1] if len(others) > 1 else "".join(others)
    advice = f"write {listed} instead" if others else "no format dpgpu writes can hold it"
    raise InvalidParameter(f"format: cannot write {path} as {fmt}: {what} {why}; {advice}")


def label_problem(db: Any, fmt: str) -> str | None:
    """Why ``fmt`` cannot hold ``db``'s labels unchanged (:func:`check_writable`), or None."""
    problem = _label_problem(db, fmt, _occurring_labels(db))
    return None if problem is None else f"{problem[0]} {problem[1]}"


def writable_formats(db: Any) -> list[str]:
    """The formats of :data:`WRITE_FORMATS` that hold every label of ``db`` unchanged
    (:func:`check_writable`), in that order."""
    occurring = _occurring_labels(db)
    return [f for f in WRITE_FORMATS if _label_problem(db, f, occurring) is None]


def _occurring_labels(db: Any) -> list[str]:
    present = np.bincount(db.items, minlength=db.vocab.size) > 0
    return [label for label, seen in zip(db.vocab.labels, present.tolist()) if seen]


def _label_problem(db: Any, fmt: str, occurring: list[str]) -> tuple[str, str] | None:
    """The first label ``fmt`` cannot hold, described (``item 'x'``), and why; or None.

    Event-log formats also write each sequence's case name and user label:
    those must be text the format can hold too.
    """
    labels = {"seq": db.vocab.names or db.vocab.labels,
              "spmf": db.vocab.labels}.get(fmt, occurring)
    for label in labels:
        why = _text_problem(label, xml=fmt == "xes")
        if why:
            return f"item {label!r}", why
    if fmt in ("csv", "parquet", "xes"):
        from . import eventlog  # noqa: PLC0415 - event-log support loads on demand

        names = eventlog.case_names(db)
        if eventlog.output_columns(db)[0]["user"] is not None:
            names = names + eventlog.user_names(db)
        for name in names:
            why = _text_problem(name, xml=fmt == "xes")
            if why:
                return f"case or user name {name!r}", why
    problem = {"seq": _seq_problem, "spmf": _spmf_problem,
               "lines": _lines_problem}.get(fmt, _event_log_problem)(labels)
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


def _spmf_problem(labels: list[str]) -> tuple[str, str] | None:
    if all(_spmf_number(x) for x in labels):
        return None
    for label in labels:
        if "\n" in label:
            return label, "contains a line break, which would end its @ITEM line"
        if label != label.rstrip():
            return label, "ends in white space, which its @ITEM line would lose"
    return None


def _lines_problem(labels: list[str]) -> tuple[str, str] | None:
    for label in labels:
        if not label:
            return label, "is empty, and a lines file cannot hold it"
        if any(c.isspace() for c in label):
            return label, "contains white space, which separates the items of a lines file"
    if all(_INT_TOKEN.fullmatch(x) for x in labels):
        for label in labels:
            if not _CANONICAL_INT.fullmatch(label):
                return label, (f"would read back as {int(label)}: a lines file whose items "
                               "are all integers is read as numbers")
    return None


def _event_log_problem(labels: list[str]) -> tuple[str, str] | None:
    for label in labels:
        if not label.strip():
            return label, "is blank, and event-log readers refuse an empty activity"
    return None


def _spmf_number(label: str) -> bool:
    """Whether SPMF text can hold ``label`` as the item number itself."""
    return _CANONICAL_INT.fullmatch(label) is not None and not label.startswith("-")


#: About how many items the sequence writers turn into text at once.
_CHUNK_ITEMS = 1 << 20
#: At most how many sequences they turn into text at once.
_CHUNK_SEQUENCES = 1 << 18


def _text_chunks(db: Any, tokens: list[str], *, sep: str = "", end: str = "\n") -> Iterator[str]:
    """The text of ``db``'s sequences, one line each, in chunks of whole lines.

    A sequence's line is ``sep.join(tokens[i] for i in its items) + end``.
    Each chunk is built from the flat ``items``/``offsets`` arrays at once
    (about :data:`_CHUNK_ITEMS` items): every item's token is gathered into
    one array of pieces, with ``end`` after each sequence, and joined.

    Parameters
    ----------
    db : SequenceDB
    tokens : list of str
        The text of each item id.
    sep : str
        Written between the items of a sequence.
    end : str
        Written after each sequence's items.

    Yields
    ------
    str
        The lines of consecutive sequences, in order.
    """
    last_token = _object_array(tokens)
    token = last_token + sep if sep else last_token  # an item followed by another
    offsets, n = db.offsets, len(db)
    start = 0
    while start < n:
        stop = int(np.searchsorted(offsets, offsets[start] + _CHUNK_ITEMS, side="right")) - 1
        stop = min(max(stop, start + 1), start + _CHUNK_SEQUENCES, n)
        first = offsets[start]
        ids = db.items[first:offsets[stop]]
        ends = offsets[start + 1:stop + 1] - first  # each sequence's end, in ids
        at_end = ends + np.arange(stop - start)  # where its `end` goes among the pieces
        pieces = np.empty(ids.size + at_end.size, dtype=object)
        is_item = np.ones(pieces.size, dtype=bool)
        is_item[at_end] = False
        pieces[is_item] = token[ids]
        if sep:  # no separator after a sequence's last item
            filled = db.lengths[start:stop] > 0
            pieces[at_end[filled] - 1] = last_token[ids[ends[filled] - 1]]
        pieces[at_end] = end
        yield "".join(pieces.tolist())
        start = stop


def _object_array(texts: list[str]) -> np.ndarray:
    out = np.empty(len(texts), dtype=object)
    out[:] = texts
    return out


def write_seq(db: Any, stream: TextIO) -> None:
    """UCI ``.seq``: a header naming the categories, then 1-based category numbers.

    Categories are numbered in vocabulary order; their names are the
    vocabulary's names (from a ``.seq`` input) or else its labels (see
    :func:`check_writable` for the names a header can hold).  A vocabulary
    taken from the data is marked so in the header
    (:data:`dpgpu.data.text.SEQ_DATA_VOCABULARY`).
    """
    names = db.vocab.names or db.vocab.labels
    stream.write("% Different categories found in input file:\n\n")
    stream.write(" ".join(names) + "\n\n")
    if not db.vocab.public:  # reading the file back must not make them public
        stream.write(SEQ_DATA_VOCABULARY + "\n")
    stream.write("\n% Sequences:\n\n")
    for text in _text_chunks(db, [f"{i + 1} " for i in range(db.vocab.size)]):
        stream.write(text)


def write_spmf(db: Any, stream: TextIO) -> None:
    """SPMF: ``item -1 item -1 ... -2`` per line (or the stripped variant if read so).

    Labels that are all non-negative integers (written as the readers print
    them) are written as they are.  Otherwise every label is replaced by its
    id and named in an ``@ITEM=id=label`` line, as SPMF does for text; the
    vocabulary's items that never occur are named too, and
    ``dpgpu.load(..., vocab=...)`` matches items by these names.
    """
    labels = db.vocab.labels
    if not all(_spmf_number(x) for x in labels):
        stream.write("@CONVERTED_FROM_TEXT\n")
        stream.write("".join(f"@ITEM={i}={label}\n" for i, label in enumerate(labels)))
        labels = [str(i) for i in range(len(labels))]
    if db.source.get("format") == "spmf" and db.source.get("stripped"):
        chunks = _text_chunks(db, list(labels), sep=" ")
    else:
        chunks = _text_chunks(db, [x + " -1 " for x in labels], end="-2\n")
    for text in chunks:
        stream.write(text)


def write_lines(db: Any, stream: TextIO) -> None:
    """One sequence per line, labels separated by single spaces.

    Labels are written as they are; :func:`write` refuses labels this format
    cannot hold (see :func:`check_writable`).
    """
    for text in _lines(db):
        stream.write(text)


def _lines(db: Any) -> Iterator[str]:
    """The text of a lines file, in chunks of whole lines (:func:`_text_chunks`)."""
    return _text_chunks(db, list(db.vocab.labels), sep=" ")


def _warn_unless_detected_as_lines(db: Any, path: Path) -> None:
    """Warn when format detection would take the lines file at ``path`` for another format.

    Its first line may look like a header of another format, or its items
    like SPMF numbers with ``-2`` terminators.
    """
    head = b""  # the lines that start within the first DETECT_BYTES bytes
    for text in _lines(db):
        head += text.encode("utf-8")
        cut = head.find(b"\n", DETECT_BYTES)
        if cut >= 0:
            head = head[:cut + 1]
            break
    try:
        seen = detect_format(path, head)
    except InputError:  # not for this warning to refuse a file already written
        return
    if seen != "lines":
        log.warning("%s: its items make this lines file look like %s; read it back with "
                    "format='lines' (--format lines)", path, seen)
