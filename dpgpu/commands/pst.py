"""``dpgpu pst DATA --epsilon E --out DIR``: PrivTree's private prediction suffix tree.

Writes a release directory: ``report.json`` (parameters, lambda/delta of the
split test, ledger, tree shape, timings), ``pst.json`` (every node: context,
depth, leaf flag, noisy histogram over the items and ``&``) and
``synthetic.<ext>`` in the input's format (unless ``--no-synthetic``).
"""

from __future__ import annotations

import argparse

from ..mechanisms.privtree import pst
from .common import add_backend_argument, add_data_arguments, load_from_args


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``pst`` subcommand."""
    p = sub.add_parser("pst", help="PrivTree: private prediction suffix tree and synthetic "
                       "sequences", description=__doc__)
    add_data_arguments(p)
    p.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    p.add_argument("--l-top", type=int, default=20,
                   help="symbols kept per sequence, end marker included (default 20)")
    p.add_argument("--max-length", type=int,
                   help="cap on synthetic sequence length in items (default: --l-top)")
    p.add_argument("--n-synthetic", type=int,
                   help="number of synthetic sequences (default: the model's noisy count)")
    p.add_argument("--seed", type=int, help="reproducible noise (recorded as seeded)")
    p.add_argument("--no-synthetic", action="store_true", help="skip the synthetic database")
    p.add_argument("--out", required=True, help="release directory to create")
    p.add_argument("--force", action="store_true", help="replace an existing release")
    add_backend_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, release, write."""
    db = load_from_args(args)
    release = pst(db, args.epsilon, l_top=args.l_top, seed=args.seed, backend=args.backend,
                  synthetic=not args.no_synthetic, n_synthetic=args.n_synthetic,
                  max_length=args.max_length)
    out = release.save(args.out, force=args.force)
    r = release.report
    print(f"PrivTree PST written to {out}: epsilon={r['epsilon']:g}, "
          f"{sum(r['tree']['nodes_per_depth'])} nodes, build {r['timings']['build_s']:.2f} s"
          + (f", {len(release.synthetic)} synthetic sequences" if release.synthetic else ""))
    return 0
