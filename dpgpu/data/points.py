"""Read d-dimensional points (CSV or Parquet) for spatial mechanisms.

One point per row; the chosen numeric columns are the coordinates.  CSV is
parsed with the standard :mod:`csv` module (quoted fields allowed, the
delimiter sniffed from the header line); Parquet needs pyarrow.  gzip is
transparent.  A row whose coordinate is empty or not a finite number is an
input error naming the file, line and column (in Parquet: the column and
the row, counted from 1).
"""

from __future__ import annotations

import csv
import io
import math
from collections import abc
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import InputError, InvalidParameter
from .eventlog import PARQUET_HINT
from .reading import optional_pyarrow
from .io import read_bytes


#: What a column name may not hold: release files (``leaves.csv``) write names bare,
#: comma-separated, one row a line.
UNSAFE_IN_NAMES = (",", '"', "\r", "\n")


def check_columns(columns: Sequence[str], d: int | None = None) -> list[str]:
    """``columns`` as a list, if it is a sequence of ``d`` distinct names that a CSV header holds.

    Parameters
    ----------
    columns : sequence of str (a list, tuple or array)
        The names: non-empty strings without a comma, a double quote or a
        line break (:data:`UNSAFE_IN_NAMES`).  A string is refused, not
        split into characters.
    d : int, optional
        How many names are needed (any number, at least one, when omitted).

    Returns
    -------
    list of str

    Raises
    ------
    InvalidParameter
        Naming ``columns``: a string or a value that is not a sequence, a
        name that is not a non-empty string or holds one of those
        characters, a duplicate, no name at all, or not ``d`` names.
    """
    if isinstance(columns, (str, bytes)) or not isinstance(columns, (abc.Sequence, np.ndarray)):
        raise InvalidParameter(f"columns: expected a list of names such as ['x', 'y'], got "
                               f"{columns!r}")
    names = list(columns)
    bad = [c for c in names if not isinstance(c, str) or not c
           or any(ch in c for ch in UNSAFE_IN_NAMES)]
    if bad or not names or len(set(names)) != len(names):
        raise InvalidParameter(f"columns: expected distinct non-empty names without a comma, a "
                               f"double quote or a line break, got {columns!r}")
    if d is not None and len(names) != d:
        raise InvalidParameter(f"columns: expected {d} names, one per dimension, got "
                               f"{len(names)}")
    return names


def parse_columns(columns: "str | Sequence[str]") -> list[str]:
    """Column names from ``"x,y"`` or a sequence, checked by :func:`check_columns`.

    Parameters
    ----------
    columns : str or sequence of str
        Comma-separated names (each stripped of white space), or the names.

    Returns
    -------
    list of str

    Raises
    ------
    InvalidParameter
        From :func:`check_columns`.
    """
    return check_columns([c.strip() for c in columns.split(",")] if isinstance(columns, str)
                         else [str(c) for c in columns])


def read_points(path: Any, columns: "str | Sequence[str]") -> np.ndarray:
    """Points ``(n, d)`` float64 from the named columns of a CSV or Parquet file.

    Parameters
    ----------
    path : str or path-like
    columns : str or sequence of str
        ``"x,y"`` or ``["x", "y"]``.

    Returns
    -------
    numpy.ndarray of float64, shape (n, d)

    Raises
    ------
    InputError
        Missing file or column, or a value that is not a finite number
        (naming the file, the column and the line or row).
    """
    names = parse_columns(columns)
    p = Path(path)
    data = read_bytes(p)
    if data[:4] == b"PAR1":
        return _parquet(p, names)
    found = _csv_records(data.decode("utf-8-sig", errors="replace"))
    if found is None:
        raise InputError(f"{p}: empty file")
    header, records = found
    missing = [c for c in names if c not in header]
    if missing:
        raise InputError(f"{p}: no column {missing[0]!r} (columns: {', '.join(header)})")
    cols = [header.index(c) for c in names]
    out = [[_coordinate(row[j] if j < len(row) else None, p, f"line {line}", c)
            for j, c in zip(cols, names)] for line, row in records]
    return np.asarray(out, dtype=np.float64).reshape(-1, len(names))


def point_place(path: Any, index: int) -> str:
    """Where the point ``index`` (from 0) that :func:`read_points` read from ``path`` lies.

    Returns
    -------
    str
        ``line N`` for a CSV file (counted as :func:`read_points` counts:
        blank lines hold no point, a quoted field may span lines), ``row N``
        for Parquet, or ``point N`` (from 1) when the file no longer holds it
        (a pipe, read once).

    Raises
    ------
    InputError
        When ``path`` cannot be read again.
    """
    data = read_bytes(Path(path))
    if data[:4] == b"PAR1":
        return f"row {index + 1}"
    found = _csv_records(data.decode("utf-8-sig", errors="replace"))
    for i, (line, _) in enumerate(found[1] if found else ()):
        if i == index:
            return f"line {line}"
    return f"point {index + 1}"


def _csv_records(text: str) -> tuple[list[str], Iterator[tuple[int, list[str]]]] | None:
    """The header of a CSV text (its delimiter the one of ``,;\\t|`` the header holds most
    of) and its non-empty records with the line each starts on; None for an empty text."""
    lines = text.splitlines()
    if not lines:
        return None
    rows = csv.reader(io.StringIO(text), delimiter=max(",;\t|", key=lines[0].count))
    header = next(rows)

    def records() -> Iterator[tuple[int, list[str]]]:
        end = rows.line_num  # the last line read: a quoted field may span lines
        for row in rows:
            line, end = end + 1, rows.line_num
            if row:
                yield line, row
    return header, records()


def _coordinate(value: Any, p: Path, where: str, column: str) -> float:
    """``value`` as a finite float, or an InputError naming the file, ``where`` and ``column``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise InputError(f"{p}, {where}, column {column!r}: no value (a coordinate is needed)")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{p}, {where}, column {column!r}: {value!r} is not a number") \
            from None
    if not math.isfinite(v):
        raise InputError(f"{p}, {where}, column {column!r}: {value!r} is not a finite number")
    return v


def _parquet(p: Path, names: list[str]) -> np.ndarray:
    pa, pq = optional_pyarrow()
    if pa is None:
        raise InputError(f"{p}: reading Parquet needs pyarrow: {PARQUET_HINT}")
    table = pq.read_table(p)
    missing = [c for c in names if c not in table.column_names]
    if missing:
        raise InputError(f"{p}: no column {missing[0]!r}")
    cols = [_parquet_column(pa, table.column(c), p, c) for c in names]
    return np.column_stack(cols)


def _parquet_column(pa: Any, column: Any, p: Path, name: str) -> np.ndarray:
    """A Parquet column as finite float64, or an InputError naming the column and row.

    Integer and floating-point columns are converted at once; any other type
    (strings, decimals, ...) value by value, as CSV fields are.
    """
    values = column.to_numpy(zero_copy_only=False)
    if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        return np.asarray([_coordinate(v, p, f"row {i}", name)
                           for i, v in enumerate(values, start=1)], dtype=np.float64)
    out = np.asarray(values, dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        raise InputError(f"{p}, row {bad[0] + 1}, column {name!r}: no value or not a finite "
                         "number")
    return out
