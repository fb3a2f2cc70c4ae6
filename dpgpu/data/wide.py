"""State sequences in wide form: one CSV row per sequence, one column per time point.

This is how life-course and panel data are kept (the STS form of the R
package TraMineR: ``biofam``, ``mvad``, ``actcal``): a header of column
names, then a row per person whose *state columns* (ages 15..30, months
``Jul.93`` .. ``Jun.99``) hold the state at each time point, beside other
columns (ids, covariates, weights) that are not part of the sequence.

Reading (``format="wide"``, never detected: the state columns must be
named, ``states="FIRST:LAST"`` or a list) gives one sequence per row: its
state values in column order.  Missing values -- an empty cell, or one of
:data:`MISSING` (R's ``NA``, TraMineR's ``*`` missing and ``%`` void) --
are left out, so a row observed for fewer time points gives a shorter
sequence (and a row with none an empty one).  Values are stripped of
surrounding white space.  The vocabulary is the states that occur, sorted
(numerically when all are integers), so it is not public.  ``case`` names
a column of row ids, kept as the sequences' names (``source["cases"]``);
they must be distinct.  No other column is read into the database.

Writing gives the same shape: the id column (the input's ``case`` column
name, else ``id``) and the state columns (the input's names, else ``1`` ..
``L`` for the longest sequence), a row per sequence, left-aligned, the
cells past a sequence's end empty.  A sequence longer than the state
columns, or a state that would not read back as itself, cannot be written
(:func:`wide_problem`).
"""

from __future__ import annotations

import csv
from typing import Any, Sequence, TextIO

import numpy as np

from ..errors import InputError, InvalidParameter
from .eventlog import (case_names, check_delimiter, check_option, csv_layout, single_column,
                       table_writer)
from .reading import ReadProgress, csv_reader, encode_values, gc_paused, numbering
from .sequencedb import SequenceDB, sort_labels
from .vocabulary import Vocabulary

#: Cell values (after stripping white space) that mean "no state observed".
MISSING = frozenset({"", "NA", "NaN", "*", "%"})
#: Rows whose states are turned into integer codes at a time.
_BLOCK_ROWS = 1 << 15


def read_wide(path: Any, data: bytes, *, states: Any = None, case: str | None = None,
              delimiter: str | None = None) -> SequenceDB:
    """Read a wide state-sequence CSV (module docstring).

    Parameters
    ----------
    path : path-like
        The file (for messages and ``source``).
    data : bytes
        Its contents (decompressed, without a byte-order mark).
    states : str or sequence of str
        The state columns, in time order: ``"FIRST:LAST"`` (the columns from
        FIRST to LAST in the header, both included), ``"a,b,c"``, one column
        name, or a list of names.
    case : str, optional
        Column of row ids (the sequences' names; distinct).
    delimiter : str, optional
        One character; by default the most frequent of ``, TAB ; |`` in the
        header row.

    Returns
    -------
    SequenceDB
        One sequence per data row; ``source`` has the format, the columns
        (``{"states": [...], "case": ...}``), the delimiter and, with
        ``case``, the row ids.

    Raises
    ------
    InvalidParameter
        No ``states``, or a ``case``/``delimiter`` of the wrong type.
    InputError
        A state or case column the header does not have (the message lists
        the columns and names the option) or has more than once (of a
        ``FIRST:LAST`` range, FIRST or LAST), a malformed line, a row with
        another number of fields than the header, an empty or repeated row
        id.  Messages name the file and line.
    """
    case = check_option(case, "case")
    delimiter = check_delimiter(delimiter)
    if states is None:
        raise InvalidParameter("states: the wide format needs the state columns, e.g. "
                               "states='15:30' (--states 15:30): the first and last, or a list")
    start, delimiter = csv_layout(path, data, delimiter, "a wide file")
    reader, stream = csv_reader(data, start, delimiter)
    try:
        header = next(reader)
        picked = state_columns(path, header, states)
        id_column = _column(path, header, case, "case") if case is not None else None
        table = numbering()
        codes, pending, lengths, ids, id_lines = [], [], [], [], {}
        progress = ReadProgress(path)
        before = reader.line_num  # lines read before the next row
        with gc_paused():
            for row in reader:
                line, before = before + 1, reader.line_num  # where the row starts
                if not row:  # a blank line
                    continue
                if len(row) != len(header):
                    raise InputError(f"{path}: line {line}: {len(row)} fields, but the header "
                                     f"has {len(header)}")
                values = [v for v in (row[i].strip() for i in picked) if v not in MISSING]
                pending += values
                lengths.append(len(values))
                if id_column is not None:
                    ids.append(_row_id(path, row[id_column].strip(), line, id_lines, case))
                if len(lengths) % _BLOCK_ROWS == 0:  # a block's states become integer codes
                    codes.append(encode_values(pending, table))
                    pending = []
                    progress(stream.buffer.tell(), len(data), line)
        codes.append(encode_values(pending, table))
    except csv.Error as exc:
        raise InputError(f"{path}: line {reader.line_num}: malformed CSV ({exc})") from None
    return _database(path, table, codes, lengths, ids, delimiter,
                     {"states": [header[i] for i in picked], "case": case})


def state_columns(path: Any, header: list[str], states: Any) -> list[int]:
    """Indices in ``header`` of the state columns ``states`` names (see :func:`read_wide`).

    Parameters
    ----------
    path : str or path-like
        The file, named in errors.
    header : list of str
        The file's column names.
    states : str or sequence of str
        One column name, ``"FIRST:LAST"`` (the columns from ``FIRST`` to
        ``LAST``, in header order), ``"a,b,c"`` or a list of names.

    Returns
    -------
    list of int
        The columns' indices in ``header``, in the order named.

    Raises
    ------
    InputError
        A name the header does not have, naming ``states`` and listing the
        columns, or one it has more than once (of a range, the first or last).
    InvalidParameter
        ``states`` of the wrong type, empty, or a range whose last column
        comes before its first.
    """
    if isinstance(states, str):
        if states in header:
            names: Sequence[str] = [states]
        elif ":" in states:
            first, last = (s.strip() for s in states.split(":", 1))
            lo, hi = (_column(path, header, name, "states") for name in (first, last))
            if hi < lo:
                raise InvalidParameter(f"states: {last!r} comes before {first!r} in the header "
                                       f"of {path} (name the range FIRST:LAST in header order)")
            return list(range(lo, hi + 1))
        else:
            names = [s.strip() for s in states.split(",")]
    elif isinstance(states, (list, tuple)) and all(isinstance(s, str) for s in states):
        names = states
    else:
        raise InvalidParameter(f"states: expected column names ('FIRST:LAST', 'a,b,c' or a "
                               f"list), got {states!r}")
    if not names or not all(names):
        raise InvalidParameter(f"states: no column named in {states!r}")
    return [_column(path, header, name, "states") for name in names]


def _column(path: Any, header: list[str], name: str, option: str) -> int:
    """Index of column ``name`` in ``header`` (else of the one whose stripped name is
    ``name`` stripped); InputError where there is none, or several."""
    found = [i for i, h in enumerate(header) if h == name] \
        or [i for i, h in enumerate(header) if h.strip() == name.strip()]
    if not found:
        raise InputError(f"{path}: no column {name!r} for --{option} "
                         f"(columns: {', '.join(header)})")
    return single_column(path, found, name, option)


def _row_id(path: Any, value: str, line: int, seen: dict, case: str) -> str:
    """``value``, the row id on ``line``, checked non-empty and not seen before."""
    if not value:
        raise InputError(f"{path}: line {line}: empty row id (column {case!r})")
    if value in seen:
        raise InputError(f"{path}: line {line}: row id {value!r} (column {case!r}) already on "
                         f"line {seen[value]}; each row is one sequence and needs its own id")
    seen[value] = line
    return value


def _database(path: Any, table: dict, codes: list, lengths: list, ids: list,
              delimiter: str, columns: dict) -> SequenceDB:
    """The SequenceDB of the rows' state codes (numbered by ``table`` as they came)."""
    labels = list(table)
    ordered = sort_labels(labels)
    position = {label: i for i, label in enumerate(ordered)}
    remap = np.array([position[x] for x in labels], dtype=np.int32)
    flat = np.concatenate(codes)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    source = {"path": str(path), "format": "wide", "columns": columns, "delimiter": delimiter}
    if columns["case"] is not None:
        source["cases"] = ids
    return SequenceDB(remap[flat], offsets, Vocabulary(ordered, public=False), source=source)


# ------------------------------------------------------------------ writing
def output_columns(db: SequenceDB) -> tuple[str, list[str]]:
    """The id column's name and the state columns' names a wide file of ``db`` gets.

    The input's, when it was a wide file; else ``id`` and ``1`` .. ``L``
    (``L``: the longest sequence of ``db``).

    Parameters
    ----------
    db : SequenceDB
        The database to write; its ``source`` names the input's columns.

    Returns
    -------
    id_column : str
        The id column (``id`` also for a wide input without one).
    states : list of str
        The state columns, in order.
    """
    columns = db.source.get("columns") if db.source.get("format") == "wide" else None
    if columns:
        return columns.get("case") or "id", list(columns["states"])
    return "id", [str(t) for t in range(1, db.max_length + 1)]


def wide_problem(db: SequenceDB) -> tuple[str, str] | None:
    """What of ``db`` a wide file cannot hold, and why; or None.

    A sequence longer than the state columns (:func:`output_columns`), an
    occurring state that reads back as missing (:data:`MISSING`) or with
    white space at an end (values are read stripped), or users (user-level
    data: the format has no user column).

    Parameters
    ----------
    db : SequenceDB
        The database to write.

    Returns
    -------
    tuple of (str, str) or None
        What cannot be held (``"user-level data"``, the longest sequence, or
        ``"item 'label'"``) and why, or None when a wide file can hold ``db``.
    """
    if db.users is not None:
        return "user-level data", "has users, and the wide format has no user column"
    _, states = output_columns(db)
    if db.max_length > len(states):
        return (f"a sequence of {db.max_length} items",
                f"is longer than the {len(states)} state columns of the wide format")
    present = np.bincount(db.items, minlength=db.vocab.size) > 0
    for label, seen in zip(db.vocab.labels, present.tolist()):
        if seen and label.strip() in MISSING:
            return f"item {label!r}", "reads back as a missing state in the wide format"
        if seen and label != label.strip():
            return f"item {label!r}", "has white space at an end, which the wide reader strips"
    return None


class WideSink:
    """Writes a wide state-sequence CSV, a part of the database at a time.

    Parameters
    ----------
    db : SequenceDB
        The whole database, or its first part: it decides the columns
        (:func:`output_columns`) and the row ids (the input's, else
        ``case-1``, ``case-2``, ...).
    stream : text stream
    delimiter : str, optional
        Default: the input's (a wide or CSV file), else ``,``.
    """

    def __init__(self, db: SequenceDB, stream: TextIO, *, delimiter: str | None = None) -> None:
        id_column, self.states = output_columns(db)
        self.input_ids = "cases" in db.source
        self.labels = np.array(db.vocab.labels, dtype=object)
        self.writer = table_writer(stream, db, delimiter, "wide",
                                   (case_names(db) if self.input_ids else [], db.vocab.labels))
        self.writer.writerow([id_column] + self.states)

    def write(self, part: SequenceDB, first: int) -> None:
        """Write the rows of ``part`` (``first``: sequences written before it).

        Parameters
        ----------
        part : SequenceDB
            The next sequences of the database, in its vocabulary.
        first : int
            How many sequences were written before ``part``: generated row
            ids (``case-1``, ``case-2``, ...) number on from there.

        Raises
        ------
        InvalidParameter
            A sequence longer than the state columns (a later part of
            :func:`dpgpu.data.writers.write_parts` may hold one).
        """
        if part.max_length > len(self.states):
            raise InvalidParameter(f"format: a sequence of {part.max_length} items is longer "
                                   f"than the {len(self.states)} state columns of the wide "
                                   "file being written")
        names = case_names(part) if self.input_ids else \
            [f"case-{first + i + 1}" for i in range(len(part))]
        labels = self.labels[part.items].tolist()
        width = len(self.states)
        bounds = part.offsets.tolist()
        self.writer.writerows([name] + labels[lo:hi] + [""] * (width - hi + lo)
                              for name, lo, hi in zip(names, bounds[:-1], bounds[1:]))

    def close(self) -> None:
        """Nothing to end: the rows are complete."""
