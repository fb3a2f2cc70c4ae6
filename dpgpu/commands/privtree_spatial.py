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
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from ..data.points import parse_columns, point_place, read_points
from ..errors import InputError, InvalidParameter
from ..mechanisms.privtree import SpatialRelease, privtree_spatial
from ..mechanisms.privtree.spatial import MAX_SPLIT_DIMS, OUTSIDE, PointsOutside, \
    check_fanout, number
from .common import Progress, add_engine_arguments, add_mechanism_command, data_path, \
    run_mechanism


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``privtree-spatial`` subcommand."""
    p = add_mechanism_command(sub, "privtree-spatial",
                              help="PrivTree: private spatial decomposition",
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
    p.add_argument("--fanout", type=int,
                   help=f"children per split: 2, 4, ... up to 2**d for d columns, and at most "
                        f"2**{MAX_SPLIT_DIMS} (default: that largest value)")
    add_engine_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the columns and the fanout, then read, release, write."""
    check_fanout(args.fanout, len(parse_columns(args.columns)))
    return run_mechanism(args, _load, _release, _describe)


def _load(args: argparse.Namespace) -> np.ndarray:
    """The points of the named columns."""
    return read_points(args.points, parse_columns(args.columns))


def _release(args: argparse.Namespace, points: Any, progress: Progress) -> SpatialRelease:
    """The PrivTree decomposition of ``points`` (no stages to report)."""
    bounds = None
    if args.bounds is not None:
        try:
            bounds = [float(v) for v in args.bounds.split(",")]
        except ValueError:
            raise InvalidParameter(f"bounds: expected numbers, got {args.bounds!r}") from None
    names = parse_columns(args.columns)
    try:
        return privtree_spatial(points, args.epsilon, bounds=bounds, columns=names,
                                fanout=args.fanout, seed=args.seed, backend=args.backend,
                                outside=args.outside, engine=args.engine, client=args.client)
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


def _describe(release: SpatialRelease) -> str:
    """Summary of a PrivTree spatial release."""
    return f"PrivTree decomposition: {len(release.leaves)} leaves"
