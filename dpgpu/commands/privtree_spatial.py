"""``dpgpu privtree-spatial POINTS --epsilon E --columns x,y --out DIR``: PrivTree on points.

Writes a release directory: ``report.json``, ``leaves.csv`` (one row per leaf:
``lo_<column>``, ``hi_<column>`` for each dimension and the noisy ``count``)
and ``tree.json`` (every node by depth).  Pass the public domain with
``--bounds lo,hi,lo,hi,...``; without it the data's bounding box is used and
the report says the release is not private.
"""

from __future__ import annotations

import argparse
import sys

from ..data.points import parse_columns, read_points
from ..errors import InvalidParameter
from ..mechanisms.privtree import privtree_spatial
from .common import add_backend_argument


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``privtree-spatial`` subcommand."""
    p = sub.add_parser("privtree-spatial", help="PrivTree: private spatial decomposition",
                       description=__doc__)
    p.add_argument("points", help="CSV or Parquet file, one point per row")
    p.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    p.add_argument("--columns", required=True, help="coordinate columns, e.g. x,y")
    p.add_argument("--bounds", help="public domain: lo,hi for each column, in order")
    p.add_argument("--fanout", type=int, help="power of two up to 2**d (default 2**d)")
    p.add_argument("--seed", type=int, help="reproducible noise (recorded as seeded)")
    p.add_argument("--out", required=True, help="release directory to create")
    p.add_argument("--force", action="store_true", help="replace an existing release")
    add_backend_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read, release, write."""
    columns = parse_columns(args.columns)
    bounds = None
    if args.bounds is not None:
        try:
            bounds = [float(v) for v in args.bounds.split(",")]
        except ValueError:
            raise InvalidParameter(f"bounds: expected numbers, got {args.bounds!r}") from None
    points = read_points(args.points, columns)
    release = privtree_spatial(points, args.epsilon, bounds=bounds, columns=columns,
                               fanout=args.fanout, seed=args.seed, backend=args.backend)
    out = release.save(args.out, force=args.force)
    print(f"PrivTree decomposition written to {out}: epsilon={release.report['epsilon']:g}, "
          f"{len(release.leaves)} leaves")
    if not release.report["private"]:
        print("warning: no --bounds: the domain comes from the data; NOT private",
              file=sys.stderr)
    return 0
