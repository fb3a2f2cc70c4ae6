"""``dpgpu ngram DATA --epsilon E --out DIR``: the N-gram mechanism (CCS'12).

Writes a release directory: ``report.json``, ``ngrams.tsv`` (every node of
the exploration tree: gram, noisy count, consistent count) and
``synthetic.<ext>`` in the input's format (unless ``--no-synthetic``).
"""

from __future__ import annotations

import argparse
import sys

from ..mechanisms.ngram import VARIANTS, ngram
from .common import add_backend_argument, add_data_arguments, load_from_args


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``ngram`` subcommand."""
    p = sub.add_parser("ngram", help="N-gram: noisy n-grams and synthetic sequences",
                       description=__doc__)
    add_data_arguments(p)
    p.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    p.add_argument("--l-max", type=int, default=20, help="items kept per sequence (default 20)")
    p.add_argument("--n-max", type=int, default=5, help="longest n-gram (default 5)")
    p.add_argument("--variant", choices=VARIANTS, default="adaptive",
                   help="budget allocation / approximation variant (default adaptive; "
                        "'baseline' is NOT private)")
    p.add_argument("--seed", type=int, help="reproducible noise (recorded as seeded)")
    p.add_argument("--no-synthetic", action="store_true", help="skip the synthetic database")
    p.add_argument("--out", required=True, help="release directory to create")
    p.add_argument("--force", action="store_true", help="replace an existing release")
    add_backend_argument(p)
    p.add_argument("--engine", choices=("local", "dask"), default="local",
                   help="count here, or over Dask partitions (same release for the same key)")
    p.add_argument("--scheduler", help="with --engine dask: scheduler address "
                   "(default: a local cluster of two workers)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, release, write."""
    db = load_from_args(args)
    client = None
    if args.engine == "dask":
        from ..scale.dask import connect  # noqa: PLC0415 - optional dependency

        client = connect(args.scheduler)
    release = ngram(db, args.epsilon, l_max=args.l_max, n_max=args.n_max, variant=args.variant,
                    seed=args.seed, backend=args.backend, synthetic=not args.no_synthetic,
                    engine=args.engine, client=client)
    out = release.save(args.out, force=args.force)
    r = release.report
    print(f"N-gram release written to {out}: epsilon={r['epsilon']:g}, "
          f"tree levels {r['tree']['levels']}"
          + (f", {len(release.synthetic)} synthetic sequences" if release.synthetic else ""))
    if not r["private"]:
        print("warning: variant 'baseline' is NOT differentially private", file=sys.stderr)
    return 0
