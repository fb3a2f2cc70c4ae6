"""``dpgpu pst DATA --epsilon E --out DIR``: PrivTree's private prediction suffix tree.

Writes a release directory: ``report.json`` (parameters, lambda/delta of the
split test, ledger, tree shape), ``pst.json`` (every node: context, depth,
leaf flag, noisy histogram over the items and ``&``), ``synthetic.<ext>`` in
the input's format (unless ``--no-synthetic``) and ``diagnostics.json``
(timings; not private, not part of the release).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..data.public_vocab import read_vocabulary
from ..errors import InvalidParameter
from ..mechanisms.privtree import PSTRelease, pst
from ..mechanisms.privtree.pst import MAX_HISTOGRAM_CELLS, MAX_NODES, MAX_SYNTHETIC, \
    MAX_SYNTHETIC_ITEMS, check_synthetic, node_limit
from .common import (Progress, add_data_arguments, add_engine_arguments, add_mechanism_command,
                     load_from_args, run_mechanism)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``pst`` subcommand."""
    p = add_mechanism_command(sub, "pst", help="PrivTree: private prediction suffix tree and "
                              "synthetic sequences", description=__doc__,
                              example="dpgpu pst msnbc.seq.gz --epsilon 1 --l-top 20 "
                                      "--n-synthetic 10000 --seed 7 --out pst/")
    add_data_arguments(p)
    p.add_argument("--l-top", type=int, default=20,
                   help="symbols kept per sequence, end marker included (default 20)")
    p.add_argument("--max-length", type=int,
                   help="cap on synthetic sequence length in items (default: --l-top)")
    p.add_argument("--n-synthetic", type=int,
                   help=f"number of synthetic sequences, at most {MAX_SYNTHETIC:,} and "
                        f"{MAX_SYNTHETIC_ITEMS:,} / --max-length (default: the model's noisy "
                        "count, within those limits)")
    p.add_argument("--max-nodes", type=int,
                   help=f"public cap on the tree's nodes; each releases a histogram of |I| + 1 "
                        f"noisy counts, at most {MAX_HISTOGRAM_CELLS:,} in all (default "
                        f"{MAX_NODES:,}, lowered to {MAX_HISTOGRAM_CELLS:,} / (|I| + 1) for a "
                        "large vocabulary)")
    p.add_argument("--no-synthetic", action="store_true", help="skip the synthetic database "
                   "(then --n-synthetic and --max-length, which only shape it, are refused)")
    add_engine_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the synthetic data's size and the node cap, then load, release, write.

    Raises
    ------
    InvalidParameter
        Before the input is read: ``--n-synthetic`` or ``--max-length`` with
        ``--no-synthetic``; out-of-range values (:func:`check_synthetic`);
        ``--max-nodes`` times ``|I| + 1`` above ``MAX_HISTOGRAM_CELLS``
        (:func:`node_limit`; ``|I|`` from ``--vocab`` when given, else
        at least 1; checked again on the data's vocabulary).
    """
    if args.no_synthetic:
        given = [option for option, value in (("--n-synthetic", args.n_synthetic),
                                              ("--max-length", args.max_length))
                 if value is not None]
        if given:
            raise InvalidParameter(f"{', '.join(given)}: shape{'s' if len(given) == 1 else ''} "
                                   "the synthetic data, which --no-synthetic skips: drop "
                                   f"{'it' if len(given) == 1 else 'them'} or --no-synthetic")
    check_synthetic(args.l_top, args.max_length, args.n_synthetic)
    if args.max_nodes is not None:  # public inputs only: pst() checks again on the data's
        node_limit(read_vocabulary(args.vocab).size if args.vocab else None, args.max_nodes)
    return run_mechanism(args, load_from_args, _release, _describe)


def _release(args: argparse.Namespace, db: Any, progress: Progress) -> PSTRelease:
    """The private prediction suffix tree of ``db``."""
    return pst(db, args.epsilon, l_top=args.l_top, seed=args.seed, backend=args.backend,
               synthetic=not args.no_synthetic, n_synthetic=args.n_synthetic,
               max_length=args.max_length, max_nodes=args.max_nodes, engine=args.engine,
               client=args.client, progress=progress)


def _describe(release: PSTRelease) -> str:
    """Summary of a PrivTree PST release (no timings: they grow with the data)."""
    return (f"PrivTree PST: {sum(release.report['tree']['nodes_per_depth'])} nodes"
            + (f", {len(release.synthetic)} synthetic sequences" if release.synthetic else ""))
