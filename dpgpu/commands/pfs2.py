"""``dpgpu pfs2 DATA --epsilon E --threshold T --out DIR``: frequent subsequences (PFS^2, ICDE'16).

Writes a release directory: ``report.json`` and ``frequent.tsv`` (pattern,
noisy support).  ``--threshold`` is relative (0.01: contained in 1% of the
sequences).
"""

from __future__ import annotations

import argparse

from ..mechanisms.pfs2 import pfs2
from .common import add_backend_argument, add_data_arguments, load_from_args


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``pfs2`` subcommand."""
    p = sub.add_parser("pfs2", help="PFS^2: differentially private frequent subsequences",
                       description=__doc__)
    add_data_arguments(p)
    p.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    p.add_argument("--threshold", type=float, required=True,
                   help="relative support threshold in (0, 1), e.g. 0.01")
    p.add_argument("--l-upper", type=int, default=20,
                   help="upper bound l_1 on the sample length constraint (default 20)")
    p.add_argument("--eta", type=float, default=0.85, help="length quantile (default 0.85)")
    p.add_argument("--zeta", type=float, default=0.3, help="relaxation parameter (default 0.3)")
    p.add_argument("--seed", type=int, help="reproducible noise (recorded as seeded)")
    p.add_argument("--out", required=True, help="release directory to create")
    p.add_argument("--force", action="store_true", help="replace an existing release")
    add_backend_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, mine, write."""
    db = load_from_args(args)
    release = pfs2(db, args.epsilon, args.threshold, l_upper=args.l_upper, eta=args.eta,
                   zeta=args.zeta, seed=args.seed, backend=args.backend)
    out = release.save(args.out, force=args.force)
    r = release.report
    print(f"PFS2 release written to {out}: epsilon={r['epsilon']:g}, "
          f"{len(release.patterns)} frequent sequences, L_f={r['pre_mining']['L_f']}")
    return 0
