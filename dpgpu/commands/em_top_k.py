"""``dpgpu em-top-k DATA --epsilon E --k K --out DIR``: PrivTree's EM baseline, top-k strings.

The private baseline of the PrivTree paper's sequence experiments (SIGMOD'16,
Section 6.2, Fig. 6): ``--k`` rounds of report-noisy-max over a set of
candidate strings that starts as the single items; each round selects the
most frequent candidate (occurrences of the contiguous string in the data
cut to each sequence's first ``--l-top`` items) at ``epsilon / k`` with
discrete Laplace noise, then replaces it by its one-item extensions.

Writes a release directory: ``report.json`` (parameters, budget per round,
noise scale, ledger), ``topk.tsv`` (rank, string: the ``--k`` selected
strings in the order selected) and ``diagnostics.json`` (timings; not
private, not part of the release).  ``dpgpu evaluate`` scores it (task
``em``: precision of the top-K strings, as the paper measures it).  The
counts are made here: there is no ``--engine dask``.
"""

from __future__ import annotations

import argparse
from typing import Any

from ..data.public_vocab import read_vocabulary
from ..mechanisms.privtree.em import EMRelease, calibrate, check_draws, em_top_k
from ..validation import check_positive_int, check_positive_real
from .common import Progress, add_data_arguments, add_mechanism_command, load_from_args, \
    run_mechanism


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``em-top-k`` subcommand."""
    p = add_mechanism_command(sub, "em-top-k", help="PrivTree's EM baseline: top-k frequent "
                              "strings by k noisy-max selections", description=__doc__,
                              example="dpgpu em-top-k msnbc.seq.gz --epsilon 1 --k 20 "
                                      "--l-top 20 --seed 7 --out em/")
    add_data_arguments(p)
    p.add_argument("--k", type=int, required=True,
                   help="number of strings to select (rounds, epsilon / k each)")
    p.add_argument("--l-top", type=int, default=20,
                   help="items kept per sequence (its first l_top; default 20)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the parameters, then load, select, write.

    Raises
    ------
    InvalidParameter
        Before the input is read, naming the parameter: ``epsilon`` not
        finite and positive, ``k`` or ``l_top`` not a positive integer, a
        budget per round or noise scale the samplers cannot give
        (:func:`dpgpu.mechanisms.privtree.em.calibrate`), and with ``--vocab``
        more than ``MAX_DRAWS`` noisy values (``k``); :func:`em_top_k` checks
        them all again on the data's vocabulary.
    """
    epsilon = check_positive_real(args.epsilon, "epsilon")
    k = check_positive_int(args.k, "k")
    l_top = check_positive_int(args.l_top, "l_top")
    calibrate(epsilon, k, l_top)
    if args.vocab:  # public inputs only: em_top_k checks again on the data's vocabulary
        check_draws(read_vocabulary(args.vocab).size, k, public=True)
    return run_mechanism(args, load_from_args, _release, _describe)


def _release(args: argparse.Namespace, db: Any, progress: Progress) -> EMRelease:
    """The ``k`` strings EM selects from ``db`` (no stages to report)."""
    return em_top_k(db, args.epsilon, args.k, l_top=args.l_top, seed=args.seed,
                    backend=args.backend)


def _describe(release: EMRelease) -> str:
    """Summary of an EM release (released values and public parameters only)."""
    return (f"EM top-k: {len(release.selected)} strings, l_top "
            f"{release.report['parameters']['l_top']}")
