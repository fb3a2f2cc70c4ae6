"""Read d-dimensional points (CSV or Parquet) for spatial mechanisms.

One point per row; the chosen numeric columns are the coordinates.  CSV is
parsed with the standard :mod:`csv` module (quoted fields allowed, the
delimiter sniffed from the header line); Parquet needs pyarrow.  gzip is
transparent.  A row whose coordinate is empty or not a finite number is an
input error naming the file, line and column.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import InputError, InvalidParameter
from .eventlog import PARQUET_HINT, _pyarrow
from .io import read_bytes


def parse_columns(columns: "str | Sequence[str]") -> list[str]:
    """Column names from ``"x,y"`` or a sequence; at least one, no duplicates."""
    names = [c.strip() for c in columns.split(",")] if isinstance(columns, str) else \
        [str(c) for c in columns]
    if not names or any(not c for c in names) or len(set(names)) != len(names):
        raise InvalidParameter(f"columns: expected distinct non-empty names, got {columns!r}")
    return names


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
        Missing file or column, or a value that is not a finite number.
    """
    names = parse_columns(columns)
    p = Path(path)
    data = read_bytes(p)
    if data[:4] == b"PAR1":
        return _parquet(p, names)
    text = data.decode("utf-8-sig", errors="replace")
    lines = text.splitlines()
    if not lines:
        raise InputError(f"{p}: empty file")
    delimiter = max(",;\t|", key=lines[0].count)
    rows = csv.reader(io.StringIO(text), delimiter=delimiter)
    header = next(rows)
    missing = [c for c in names if c not in header]
    if missing:
        raise InputError(f"{p}: no column {missing[0]!r} (columns: {', '.join(header)})")
    cols = [header.index(c) for c in names]
    out = []
    for line, row in enumerate(rows, start=2):
        if not row:
            continue
        try:
            vals = [float(row[j]) for j in cols]
        except (ValueError, IndexError):
            raise InputError(f"{p}, line {line}: columns {', '.join(names)} need numbers") \
                from None
        if not all(math.isfinite(v) for v in vals):
            raise InputError(f"{p}, line {line}: coordinates must be finite")
        out.append(vals)
    return np.asarray(out, dtype=np.float64).reshape(-1, len(names))


def _parquet(p: Path, names: list[str]) -> np.ndarray:
    pa, pq = _pyarrow()
    if pa is None:
        raise InputError(f"{p}: reading Parquet needs pyarrow: {PARQUET_HINT}")
    table = pq.read_table(p)
    missing = [c for c in names if c not in table.column_names]
    if missing:
        raise InputError(f"{p}: no column {missing[0]!r}")
    cols = [np.asarray(table.column(c).to_numpy(zero_copy_only=False), dtype=np.float64)
            for c in names]
    pts = np.column_stack(cols) if cols else np.zeros((0, 0))
    if not np.all(np.isfinite(pts)):
        raise InputError(f"{p}: coordinates must be finite numbers")
    return pts
