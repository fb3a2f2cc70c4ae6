"""``dpgpu privtree-spatial POINTS --epsilon E --columns x,y --out DIR``: PrivTree on points.

Writes a release directory: ``report.json``, ``leaves.csv`` (one row per leaf:
``lo_<column>``, ``hi_<column>`` for each dimension and the noisy ``count``),
``tree.json`` (every node by depth) and ``diagnostics.json`` (timings; not
private, not part of the release).  Pass the public domain with
``--bounds lo,hi,lo,hi,...``: a point outside it (one on its edge is inside)
is an error naming the file, its line (Parquet: row) and column, before any
budget is spent or anything written; ``--outside drop`` leaves such points
out, ``--outside clip`` moves them onto the domain's edge.  Without
``--bounds`` the data's bounding box is used and the release is NOT private:
the report says ``"private": false`` with epsilon infinite and delta 1.

``--method ug`` and ``--method ag`` release the PrivTree paper's baselines
instead: UG, a uniform grid of noisy counts (any number of columns), and AG,
the adaptive grid of Qardaji, Yang and Li (two columns).  Both take the
dataset size as public, as in the paper: give it with ``--n N`` (a public
figure, not read off the data).  They read the points, ``--bounds``,
``--outside``, ``--seed`` and ``--backend`` as PrivTree does, and write
``report.json`` and ``leaves.csv`` in the same layout (each grid cell a
leaf; AG's counts are floats), so ``dpgpu evaluate`` and
``dpgpu.load_release(DIR).range_count`` treat them alike.  ``--fanout`` and
``--engine dask`` are PrivTree's only.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from ..data.points import parse_columns, point_place, read_points
from ..errors import InputError, InvalidParameter
from ..mechanisms.privtree import SpatialHistogram, SpatialRelease, adaptive_grid, \
    privtree_spatial, uniform_grid
from ..mechanisms.privtree.spatial import MAX_SPLIT_DIMS, OUTSIDE, PointsOutside, \
    check_fanout, number
from .common import Progress, add_engine_arguments, add_mechanism_command, data_path, \
    run_mechanism, whole_count

#: ``--method``: PrivTree, or a baseline of its paper, by the function that releases it.
METHODS = {"privtree": privtree_spatial, "ug": uniform_grid, "ag": adaptive_grid}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``privtree-spatial`` subcommand."""
    p = add_mechanism_command(sub, "privtree-spatial",
                              help="PrivTree: private spatial decomposition (or UG, AG)",
                              description=__doc__,
                              example="dpgpu privtree-spatial checkins.csv --epsilon 1 "
                                      "--columns lon,lat --bounds -180,180,-90,90 --seed 7 "
                                      "--out tree/")
    p.add_argument("points", type=data_path,
                   help="CSV or Parquet file, one point per row (- for standard input)")
    p.add_argument("--columns", required=True, help="coordinate columns, e.g. x,y")
    p.add_argument("--bounds", help="public domain: lo,hi for each column, in order, with "
                                    "hi - lo finite; a point on its edge is inside, one "
                                    "outside follows --outside (default: the data's bounding "
                                    "box, NOT private)")
    p.add_argument("--outside", choices=OUTSIDE, default="error",
                   help="a point outside --bounds: an error naming its line (default), left "
                        "out (drop), or moved onto the domain's edge (clip)")
    p.add_argument("--method", choices=tuple(METHODS), default="privtree",
                   help="PrivTree (default), or the paper's baselines: ug, a uniform grid; "
                        "ag, the adaptive grid of Qardaji et al. (two columns); both need --n")
    p.add_argument("--n", type=whole_count, metavar="N",
                   help="--method ug/ag: the number of points, taken as public (it sizes the "
                        "grid; give a public figure, not one read off the data)")
    p.add_argument("--fanout", type=int,
                   help=f"children per split: 2, 4, ... up to 2**d for d columns, and at most "
                        f"2**{MAX_SPLIT_DIMS} (default: that largest value; PrivTree only)")
    add_engine_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the options of the method, then read, release, write."""
    names = parse_columns(args.columns)
    if args.method == "privtree":
        if args.n is not None:
            raise InvalidParameter("--n: only with --method ug or ag (the baselines take the "
                                   "number of points as public); PrivTree does not use it")
        check_fanout(args.fanout, len(names))
    else:
        check_baseline_options(args, len(names))
    return run_mechanism(args, _load, _release, _describe)


def check_baseline_options(args: argparse.Namespace, d: int) -> None:
    """Refuse what ``--method ug`` / ``ag`` cannot take, before anything is read.

    Parameters
    ----------
    args : argparse.Namespace
        The command's arguments: ``method``, ``n``, ``fanout`` and ``engine`` are read.
    d : int
        The number of ``--columns``.

    Raises
    ------
    InvalidParameter
        Naming the option: no ``--n`` or ``--n 0``, ``--fanout`` (a tree's),
        ``--engine dask`` (the baselines count here), or for AG other than two
        columns.
    """
    method = args.method
    if args.n is None:
        raise InvalidParameter(f"--n: required with --method {method}: the number of points, "
                               "taken as public (it sizes the grid, as in the PrivTree paper)")
    if args.n < 1:
        raise InvalidParameter(f"--n: the number of points must be at least 1, got {args.n}")
    if args.fanout is not None:
        raise InvalidParameter(f"--fanout: only with --method privtree (a tree's children per "
                               f"split); --method {method} is a grid")
    if args.engine != "local":
        raise InvalidParameter(f"--engine {args.engine}: only with --method privtree; "
                               f"--method {method} counts here (--engine local)")
    if method == "ag" and d != 2:
        raise InvalidParameter(f"--columns: --method ag (the adaptive grid) is defined for "
                               f"two-dimensional points; give two columns, got {d}")


def _load(args: argparse.Namespace) -> np.ndarray:
    """The points of the named columns."""
    return read_points(args.points, parse_columns(args.columns))


def _release(args: argparse.Namespace, points: Any,
             progress: Progress) -> SpatialRelease | SpatialHistogram:
    """The release of ``points`` by ``--method`` (no stages to report)."""
    bounds = None
    if args.bounds is not None:
        try:
            bounds = [float(v) for v in args.bounds.split(",")]
        except ValueError:
            raise InvalidParameter(f"bounds: expected numbers, got {args.bounds!r}") from None
    names = parse_columns(args.columns)
    if args.method == "privtree":
        options = {"fanout": args.fanout, "engine": args.engine, "client": args.client}
    else:
        options = {"n": args.n}
    try:
        return METHODS[args.method](points, args.epsilon, bounds=bounds, columns=names,
                                    seed=args.seed, backend=args.backend,
                                    outside=args.outside, **options)
    except PointsOutside as exc:  # the same check, in the terms of the command line
        column = names[exc.column]
        raise InputError(
            f"{args.points}, {_place(args.points, exc.first)}, column {column!r}: the point lies "
            f"outside --bounds ({number(exc.lo)} to {number(exc.hi)} for {column!r}; {exc.count} "
            f"of the {exc.n} points lie outside); fix --bounds (lo,hi for each of --columns, "
            f"in order: {','.join(names)}), or pass --outside drop to leave such points out "
            "or --outside clip to move them onto the domain's edge") from None


def _place(path: str, index: int) -> str:
    """Where point ``index`` of ``path`` lies (:func:`dpgpu.data.points.point_place`), or its
    number where the file cannot be read again."""
    try:
        return point_place(path, index)
    except InputError:
        return f"point {index + 1}"


def _describe(release: SpatialRelease | SpatialHistogram) -> str:
    """Summary of a spatial release."""
    if isinstance(release, SpatialRelease):
        return f"PrivTree decomposition: {len(release.leaves)} leaves"
    grid = {"uniform-grid": "UG uniform grid", "adaptive-grid": "AG adaptive grid"}
    return f"{grid[release.report['mechanism']]}: {len(release)} cells"
