"""``dpgpu privtree-spatial POINTS --epsilon E --columns x,y --out DIR``: PrivTree on points.

Writes a release directory: ``report.json``, ``leaves.csv`` (one row per leaf:
``lo_<column>``, ``hi_<column>`` for each dimension and the noisy ``count``),
``tree.json`` (every node by depth) and ``diagnostics.json`` (timings; not
private, not part of the release).  Pass the public domain with
``--bounds lo,hi,lo,hi,...``; points outside it are clipped onto its edge.
Without it the data's bounding box is used and the release is NOT private:
the report says ``"private": false`` with epsilon infinite and delta 1.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from ..data.points import parse_columns, read_points
from ..errors import InvalidParameter
from ..mechanisms.privtree import SpatialRelease, privtree_spatial
from ..mechanisms.privtree.spatial import MAX_SPLIT_DIMS, check_fanout
from .common import Progress, add_engine_arguments, add_mechanism_command, nonempty_path, \
    run_mechanism


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``privtree-spatial`` subcommand."""
    p = add_mechanism_command(sub, "privtree-spatial",
                              help="PrivTree: private spatial decomposition",
                              description=__doc__,
                              example="dpgpu privtree-spatial checkins.csv --epsilon 1 "
                                      "--columns lon,lat --bounds -180,180,-90,90 --seed 7 "
                                      "--out tree/")
    p.add_argument("points", type=nonempty_path, help="CSV or Parquet file, one point per row")
    p.add_argument("--columns", required=True, help="coordinate columns, e.g. x,y")
    p.add_argument("--bounds", help="public domain: lo,hi for each column, in order, with "
                                    "hi - lo finite; points outside are clipped onto the "
                                    "domain's edge (default: the data's bounding box, NOT "
                                    "private)")
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
    return privtree_spatial(points, args.epsilon, bounds=bounds,
                            columns=parse_columns(args.columns), fanout=args.fanout,
                            seed=args.seed, backend=args.backend, engine=args.engine,
                            client=args.client)


def _describe(release: SpatialRelease) -> str:
    """Summary of a PrivTree spatial release."""
    return f"PrivTree decomposition: {len(release.leaves)} leaves"
