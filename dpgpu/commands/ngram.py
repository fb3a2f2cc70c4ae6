"""``dpgpu ngram DATA --epsilon E --out DIR``: the N-gram mechanism (CCS'12).

Writes a release directory: ``report.json``, ``ngrams.tsv`` (every node of
the exploration tree: gram, noisy count, consistent count) and
``synthetic.<ext>`` in the input's format (unless ``--no-synthetic``) and ``diagnostics.json``
(timings; not private, not part of the release).
"""

from __future__ import annotations

import argparse
from typing import Any

from ..mechanisms.ngram import N_MAX, VARIANTS, NGramRelease, check_parameters, ngram
from .common import (Progress, add_data_arguments, add_engine_arguments, add_mechanism_command,
                     load_from_args, run_mechanism)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``ngram`` subcommand."""
    p = add_mechanism_command(sub, "ngram", help="N-gram: noisy n-grams and synthetic sequences",
                              description=__doc__,
                              example="dpgpu ngram msnbc.seq.gz --epsilon 1 --l-max 20 "
                                      "--n-max 5 --seed 7 --out release/")
    add_data_arguments(p)
    p.add_argument("--l-max", type=int, default=20, help="items kept per sequence (default 20)")
    p.add_argument("--n-max", type=int, help=f"longest n-gram (default {N_MAX}; at most "
                   "--l-max + 1, and lowered to it with a warning where given)")
    p.add_argument("--variant", choices=VARIANTS, default="adaptive",
                   help="budget allocation / approximation variant (default adaptive; "
                        "'baseline' is NOT private)")
    p.add_argument("--no-synthetic", action="store_true", help="skip the synthetic database")
    add_engine_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the budget and the tree's size, then load, release, write."""
    check_parameters(args.epsilon, args.l_max, args.n_max)
    return run_mechanism(args, load_from_args, _release, _describe)


def _release(args: argparse.Namespace, db: Any, progress: Progress) -> NGramRelease:
    """The N-gram release of ``db``, counted locally or over Dask."""
    return ngram(db, args.epsilon, l_max=args.l_max, n_max=args.n_max,
                 variant=args.variant, seed=args.seed, backend=args.backend,
                 synthetic=not args.no_synthetic, engine=args.engine, client=args.client,
                 progress=progress)


def _describe(release: NGramRelease) -> str:
    """Summary of an N-gram release."""
    return (f"N-gram release: tree levels {release.report['tree']['levels']}"
            + (f", {len(release.synthetic)} synthetic sequences" if release.synthetic else ""))
