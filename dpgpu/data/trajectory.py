"""Trajectories: the points of moving objects, read as sequences of grid cells.

A trajectory file is a CSV table with a header and a row per point (or the
same table as Parquet, which needs pyarrow): the trajectory (trip, track,
vehicle) the point belongs to, its coordinates ``x`` and ``y`` (longitude
and latitude, or metres) and, optionally, its time and a user column
(user-level data: several trajectories per person).

Reading (``format="trajectory"``, never detected) lays a grid of ``nx`` by
``ny`` equal cells over the rectangle ``bounds = (xmin, xmax, ymin, ymax)``
and turns each point into the cell that holds it.  The grid and the bounds
are parameters, never read off the data: bounds taken from the data (its
extreme points) would disclose them.  So every cell of the grid is an item
of the vocabulary, which is public.  The cell in column ``i`` (from ``xmin``)
and row ``j`` (from ``ymin``) is the item ``"i_j"``, with id ``j * nx + i``;
a point on the boundary between two cells belongs to the upper one, and
one on ``xmax`` (``ymax``) to the last column (row).

A trajectory's points are put in time order (ties, and files without a time
column, keep file order); the trajectories follow the order in which they
first appear.  By default a run of points in one cell gives one item
(``repeats="collapse"``: the sequence of cells visited); ``repeats="keep"``
gives an item per point.  A point outside the bounds is an error naming its
line (not its coordinates: an error message may be shared where the data
may not), unless ``outside="drop"``, which leaves it out (the runs are then
collapsed as if it had never been there, and a trajectory with no point
left is left out) with a warning that gives no count, since the run goes on
to a release.  Coordinates must be finite numbers.

Writing gives a table of the same shape: a row per item, with its
trajectory's name (the input's, else ``case-1``, ``case-2``, ...) and the
centre of its cell, under the input's column names (else ``trajectory``,
``x``, ``y``), so that reading the file back with the same grid gives the
same cells (with ``repeats="keep"``: a synthetic sequence may stay in one
cell for several steps).  Only a database whose ``source`` holds a grid (one
read from a trajectory file, or synthetic data made from one) can be
written.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, TextIO

import numpy as np

from ..errors import InputError, InvalidParameter
from ..validation import check_choice, check_positive_int
from .eventlog import (CANDIDATES, EventNames, check_delimiter, check_option, csv_columns,
                       csv_layout, csv_line, csv_row, group_events, parquet_columns, parquet_row,
                       pick_column, table_writer)
from .reading import csv_reader
from .sequencedb import SequenceDB
from .vocabulary import Vocabulary

log = logging.getLogger("dpgpu")

#: Most cells a grid may have (1024 x 1024): every cell is an item.
MAX_CELLS = 1 << 20
OUTSIDE = ("error", "drop")
REPEATS = ("collapse", "keep")
#: Normalised column names tried for each role when its option is not given.
TRAJECTORY_CANDIDATES = {
    "case": ("trajectoryid", "trajectory", "trajid", "traj", "trackid", "track", "tripid",
             "trip", "vehicleid", "vehicle", "taxiid", "taxi") + CANDIDATES["case"] + ("id",),
    "x": ("x", "lon", "lng", "long", "longitude"),
    "y": ("y", "lat", "latitude"),
    "timestamp": CANDIDATES["timestamp"],
}
_GRID = re.compile(r"\s*(\d+)\s*(?:[xX,]\s*(\d+)\s*)?")


@dataclass(frozen=True)
class Grid:
    """``nx`` columns by ``ny`` rows of equal cells over ``bounds = (xmin, xmax, ymin, ymax)``.

    Attributes
    ----------
    nx, ny : int
        Columns (along x) and rows (along y) of cells.
    bounds : tuple of 4 float
        ``(xmin, xmax, ymin, ymax)``: the rectangle the cells divide.
    """

    nx: int
    ny: int
    bounds: tuple[float, float, float, float]

    @classmethod
    def of(cls, grid: Any, bounds: Any) -> "Grid":
        """The grid the reader options ``grid`` and ``bounds`` describe.

        Parameters
        ----------
        grid : int, str or pair of int
            ``n`` (n by n cells), ``"NX"``, ``"NXxNY"`` or ``(nx, ny)``.
        bounds : str or sequence of 4 numbers
            ``"xmin,xmax,ymin,ymax"`` or the four numbers (or their strings).

        Returns
        -------
        Grid

        Raises
        ------
        InvalidParameter
            Naming ``grid`` or ``bounds``: missing, malformed, not finite, a
            minimum not below its maximum, more than :data:`MAX_CELLS` cells.
        """
        if grid is None:
            raise InvalidParameter("grid: the trajectory format needs a grid of cells, e.g. "
                                   "grid='32x32' (--grid 32x32)")
        if isinstance(grid, str):
            found = _GRID.fullmatch(grid)
            if found is None:
                raise InvalidParameter(f"grid: expected NX or NXxNY (e.g. 32x32), got {grid!r}")
            sizes = [int(found[1]), int(found[2] or found[1])]
        elif isinstance(grid, (list, tuple)) and len(grid) == 2:
            sizes = list(grid)
        else:
            sizes = [grid, grid]
        nx, ny = (check_positive_int(n, "grid") for n in sizes)
        if nx * ny > MAX_CELLS:
            raise InvalidParameter(f"grid: {nx} x {ny} cells; at most {MAX_CELLS} (every cell "
                                   "is an item)")
        return cls(nx, ny, _bounds(bounds))

    @classmethod
    def from_source(cls, source: dict) -> "Grid | None":
        """The grid recorded in a database's ``source`` (:meth:`as_source`), or None.

        Parameters
        ----------
        source : dict
            A database's ``source``.

        Returns
        -------
        Grid or None
            None when ``source`` lacks ``grid`` or ``bounds``.
        """
        if "grid" not in source or "bounds" not in source:
            return None
        return cls(*source["grid"], tuple(source["bounds"]))

    def as_source(self) -> dict:
        """The grid as ``source`` keys (``grid``, ``bounds``).

        Returns
        -------
        dict
            ``{"grid": [nx, ny], "bounds": [xmin, xmax, ymin, ymax]}`` (lists,
            as JSON holds them).
        """
        return {"grid": [self.nx, self.ny], "bounds": list(self.bounds)}

    @property
    def size(self) -> int:
        """Number of cells."""
        return self.nx * self.ny

    def labels(self) -> list[str]:
        """Item label of every cell, in id order (``"i_j"``: column i, row j).

        Returns
        -------
        list of str
            :attr:`size` labels, row by row (the id of ``"i_j"`` is ``j * nx + i``).
        """
        return [f"{i}_{j}" for j in range(self.ny) for i in range(self.nx)]

    def cells(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Cell id (int64) of each point, and whether it lies within the bounds.

        A point outside the bounds gets the id of the nearest cell.

        Parameters
        ----------
        x, y : numpy.ndarray of float
            The points' finite coordinates, as many of each.

        Returns
        -------
        ids : numpy.ndarray of int64
            The cell of each point (``j * nx + i``).
        inside : numpy.ndarray of bool
            Whether each point lies within the bounds (their edges included).
        """
        xmin, xmax, ymin, ymax = self.bounds
        inside = (x >= xmin) & (x <= xmax) & (y >= ymin) & (y <= ymax)
        return _index(y, ymin, ymax, self.ny) * self.nx + _index(x, xmin, xmax, self.nx), inside

    def centers(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coordinates ``(x, y)`` of the centre of each cell ``ids``.

        Parameters
        ----------
        ids : numpy.ndarray of int
            Cell ids, ``0 .. size-1``.

        Returns
        -------
        x, y : numpy.ndarray of float
            The centres' coordinates, one per id.
        """
        xmin, xmax, ymin, ymax = self.bounds
        i, j = ids % self.nx, ids // self.nx  # (2i + 1) / 2n last: 0.15, not 0.15000000000000002
        return (xmin + (xmax - xmin) * (2 * i + 1) / (2 * self.nx),
                ymin + (ymax - ymin) * (2 * j + 1) / (2 * self.ny))

    def ids_of(self, labels: list[str]) -> np.ndarray:
        """Cell id of each label (``"i_j"``), -1 for a label that names no cell of the grid.

        Parameters
        ----------
        labels : list of str
            Item labels.

        Returns
        -------
        numpy.ndarray of int64
        """
        index = {label: k for k, label in enumerate(self.labels())}
        return np.array([index.get(label, -1) for label in labels], dtype=np.int64)


def _bounds(bounds: Any) -> tuple[float, float, float, float]:
    """``bounds`` (see :meth:`Grid.of`) as four floats, checked."""
    if bounds is None:
        raise InvalidParameter("bounds: the trajectory format needs the grid's extent, "
                               "XMIN XMAX YMIN YMAX (--bounds), chosen without looking at the "
                               "data: bounds read off the data would disclose its extreme points")
    values = bounds.split(",") if isinstance(bounds, str) else bounds
    try:
        numbers = [float(v) for v in values]
    except (TypeError, ValueError):
        numbers = []
    if len(numbers) != 4 or not all(math.isfinite(v) for v in numbers):
        raise InvalidParameter(f"bounds: expected four finite numbers XMIN XMAX YMIN YMAX, got "
                               f"{bounds!r}")
    xmin, xmax, ymin, ymax = numbers
    if not (xmin < xmax and ymin < ymax):
        raise InvalidParameter(f"bounds: each minimum must be below its maximum, got x from "
                               f"{xmin:g} to {xmax:g} and y from {ymin:g} to {ymax:g}")
    return xmin, xmax, ymin, ymax


def _index(v: np.ndarray, lo: float, hi: float, n: int) -> np.ndarray:
    """Column (or row) of each finite coordinate ``v`` among ``n`` equal intervals of
    ``[lo, hi]`` (the nearest one for a coordinate outside)."""
    return np.clip(np.floor((v - lo) / (hi - lo) * n), 0, n - 1).astype(np.int64)


def read_trajectory(path: Any, data: bytes, *, grid: Any = None, bounds: Any = None,
                    case: str | None = None, x: str | None = None, y: str | None = None,
                    timestamp: str | None = None, user: str | None = None,
                    outside: str = "error", repeats: str = "collapse",
                    delimiter: str | None = None) -> SequenceDB:
    """Read a table of trajectory points as sequences of grid cells (module docstring).

    Parameters
    ----------
    path : path-like
        The file (for messages and ``source``).
    data : bytes
        Its contents (decompressed): CSV text, or a Parquet file (with
        numeric or string coordinate columns; typed, numeric or ISO-8601
        times).
    grid, bounds
        The grid (:meth:`Grid.of`): ``"NXxNY"`` cells over
        ``"xmin,xmax,ymin,ymax"``.  Both required.
    case, x, y, timestamp, user : str, optional
        Column names.  ``case``, ``x``, ``y`` and ``timestamp`` are picked
        from common names when not given (:data:`TRAJECTORY_CANDIDATES`:
        ``trajectory_id``, ``trip``, ``taxi_id``, ``id``, ...; ``x``,
        ``lon``, ``longitude``; ``y``, ``lat``, ``latitude``; ``time``,
        ``timestamp``, ...); without a time column the points keep file
        order.  ``user`` is never picked.
    outside : {"error", "drop"}
        What a point outside the bounds is.
    repeats : {"collapse", "keep"}
        One item per run of points in a cell, or one per point.
    delimiter : str, optional
        CSV: one character; by default the most frequent of ``, TAB ; |``
        in the header row.

    Returns
    -------
    SequenceDB
        One sequence per trajectory, over the grid's cells (a public
        vocabulary).  ``source`` has the format, the columns, the (CSV)
        delimiter, the timestamp kind, the grid and bounds, the
        trajectories' names (``cases``) and, with ``user``, the user labels.

    Raises
    ------
    InvalidParameter
        A bad ``grid``, ``bounds``, ``outside``, ``repeats``, column option
        or delimiter.
    InputError
        A missing column (the message lists the columns and names the
        option), a malformed line, a row with another number of fields than
        the header, an empty (null) Parquet value, a coordinate that is not
        a finite number, a point outside the bounds (unless dropped), a bad
        timestamp, an empty trajectory or user id, a trajectory of two
        users.  Messages name the file and line (row, for Parquet).
    """
    cells = Grid.of(grid, bounds)
    outside = check_choice(outside, "outside", OUTSIDE)
    repeats = check_choice(repeats, "repeats", REPEATS)
    options = {role: check_option(value, role) for role, value in
               (("case", case), ("x", x), ("y", y), ("timestamp", timestamp), ("user", user))}
    delimiter = check_delimiter(delimiter)

    def pick(header: list[str]) -> dict[str, str | None]:
        return {role: pick_column(path, header, role, options[role],
                                  required=role in ("case", "x", "y"),
                                  candidates=TRAJECTORY_CANDIDATES.get(role, ()))
                for role in ("case", "x", "y", "timestamp", "user")}

    if data.startswith(b"PAR1"):
        where, text = parquet_row, _parquet_text(path, data)
        columns, values, (keys, kind) = parquet_columns(path, data, pick, numbers=("x", "y"),
                                                        what="a trajectory file")
    else:
        start, delimiter = csv_layout(path, data, delimiter, "a trajectory file")
        where, text = _csv_where(data, start, delimiter), _csv_text(data, start, delimiter)
        columns, values, (keys, kind) = csv_columns(path, where, data, start, delimiter, pick,
                                                    numbers=("x", "y"))
    for axis in ("x", "y"):
        bad = np.flatnonzero(~np.isfinite(values[axis]))
        if bad.size:
            raise InputError(f"{path}: {where(int(bad[0]))}: column {columns[axis]!r}: "
                             f"{text(int(bad[0]), columns[axis])!r} is not a finite number")
    xs, ys = values["x"], values["y"]
    ids, inside = cells.cells(xs, ys)
    kept = np.arange(ids.size)
    if not inside.all():
        first = int(np.argmin(inside))
        if outside == "error":  # the line, not the point: a location is what DP protects
            raise InputError(f"{path}: {where(first)}: the point lies outside the bounds (x "
                             f"{cells.bounds[0]:g} to {cells.bounds[1]:g}, y {cells.bounds[2]:g} "
                             f"to {cells.bounds[3]:g}); widen --bounds, or leave such points "
                             "out with --outside drop")
        kept = np.flatnonzero(inside)
        # no count: the run goes on to a release, and what it prints must hold no statistic
        log.warning("%s: points outside the bounds are left out (--outside drop)", path)
    picked = {role: _renumbered(*values[role], kept) for role in ("case", "user")
              if role in values}
    db, extra = group_events(path, lambda i: where(int(kept[i])), columns, picked["case"],
                             (np.zeros(0, dtype=str), ids[kept]),
                             None if keys is None else keys[kept], picked.get("user"),
                             vocab=Vocabulary(cells.labels(), public=True))
    if repeats == "collapse":
        db = _collapsed(db)
    db.source = {"path": str(path), "format": "trajectory", "columns": columns,
                 "timestamp_kind": kind, **cells.as_source(), **extra}
    if delimiter is not None:
        db.source["delimiter"] = delimiter
    return db


def _csv_where(data: bytes, start: int, delimiter: str) -> Callable[[int], str]:
    """Where data row ``i`` of a CSV table is, for messages."""
    return lambda i: f"line {csv_line(data, start, delimiter, i)}"


def _csv_text(data: bytes, start: int, delimiter: str) -> Callable[[int, str], str]:
    """The text of row ``i`` of a CSV table in a column, read again (for messages)."""
    def text(i: int, column: str) -> str:
        header = [h.strip() for h in next(csv_reader(data, start, delimiter)[0])]
        return csv_row(data, start, delimiter, i)[1][header.index(column)]
    return text


def _parquet_text(path: Any, data: bytes) -> Callable[[int, str], str]:
    """The value of row ``i`` of a Parquet table in a column, as text, read again (for messages)."""
    def text(i: int, column: str) -> str:
        labels, codes = parquet_columns(path, data, lambda header: {"value": column})[1]["value"]
        return str(labels[codes[i]])
    return text


def _renumbered(labels: np.ndarray, codes: np.ndarray,
                kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, codes)`` of the rows ``kept``, numbered again in order of first appearance."""
    if kept.size == codes.size:
        return labels, codes
    distinct, first, inverse = np.unique(codes[kept], return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return labels[distinct[order]], rank[inverse.reshape(-1)]


def _collapsed(db: SequenceDB) -> SequenceDB:
    """``db`` with every run of equal items within a sequence cut to one item."""
    items, offsets = db.items, db.offsets
    keep = np.ones(items.size, dtype=bool)
    keep[1:] = items[1:] != items[:-1]
    keep[offsets[:-1][offsets[:-1] < items.size]] = True  # a sequence's first item stays
    before = np.zeros(items.size + 1, dtype=np.int64)
    np.cumsum(keep, out=before[1:])
    return SequenceDB(items[keep], before[offsets], db.vocab, users=db.users)


# ------------------------------------------------------------------ writing
def output_columns(db: SequenceDB) -> tuple[str, str, str]:
    """The trajectory, x and y column names a trajectory file of ``db`` gets.

    The input's, when it was a trajectory file; else ``trajectory``, ``x``, ``y``.

    Parameters
    ----------
    db : SequenceDB
        The database to write; its ``source`` names the input's columns.

    Returns
    -------
    tuple of 3 str
        The trajectory, x and y column names.
    """
    columns = db.source.get("columns") if db.source.get("format") == "trajectory" else None
    if columns:
        return columns["case"], columns["x"], columns["y"]
    return "trajectory", "x", "y"


def trajectory_problem(db: SequenceDB) -> tuple[str, str] | None:
    """What of ``db`` a trajectory file cannot hold, and why; or None.

    No grid in ``source`` (the cells' places are unknown), an occurring
    item that names no cell of the grid, or users (a trajectory file of
    user-level data would need its user column, which is not written).

    Parameters
    ----------
    db : SequenceDB
        The database to write.

    Returns
    -------
    tuple of (str, str) or None
        What cannot be held (``"user-level data"``, ``"the database"``,
        ``"item 'label'"``) and why, or None when the file can hold ``db``.
    """
    if db.users is not None:
        return "user-level data", "has users, and the trajectory writer has no user column"
    grid = Grid.from_source(db.source)
    if grid is None:
        return "the database", ("has no grid (only data read from a trajectory file, or "
                                "synthetic data made from it, has one)")
    present = np.flatnonzero(np.bincount(db.items, minlength=db.vocab.size) > 0)
    ids = grid.ids_of([db.vocab.labels[k] for k in present.tolist()])
    if (ids < 0).any():
        label = db.vocab.labels[int(present[np.argmax(ids < 0)])]
        return f"item {label!r}", f"names no cell of the {grid.nx} x {grid.ny} grid"
    return None


class TrajectorySink:
    """Writes a trajectory CSV (a row per item: name, cell centre), a part at a time.

    Parameters
    ----------
    db : SequenceDB
        The whole database, or its first part: it decides the columns
        (:func:`output_columns`), the grid and the names.
    stream : text stream
    delimiter : str, optional
        Default: the input's (a trajectory or CSV file), else ``,``.
    """

    def __init__(self, db: SequenceDB, stream: TextIO, *, delimiter: str | None = None) -> None:
        grid = Grid.from_source(db.source)
        if grid is None:
            raise InvalidParameter("format: " + " ".join(trajectory_problem(db) or ()))
        ids = grid.ids_of(db.vocab.labels)
        self.x, self.y = grid.centers(np.maximum(ids, 0))
        self.names = EventNames(db)
        self.writer = table_writer(stream, db, delimiter, "trajectory",
                                   (self.names.cases(db, 0),))
        self.writer.writerow(output_columns(db))

    def write(self, part: SequenceDB, first: int) -> None:
        """Write the rows of ``part`` (``first``: sequences written before it).

        Parameters
        ----------
        part : SequenceDB
            The next sequences of the database, in its vocabulary.
        first : int
            How many sequences were written before ``part``: generated
            trajectory names (``case-1``, ``case-2``, ...) number on from there.
        """
        names = np.array(self.names.cases(part, first), dtype=object)
        rows = np.repeat(names, np.diff(part.offsets))
        self.writer.writerows(zip(rows.tolist(), self.x[part.items].tolist(),
                                  self.y[part.items].tolist()))

    def close(self) -> None:
        """Nothing to end: the rows are complete."""
