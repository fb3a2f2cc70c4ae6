"""``dpgpu advise DATA --epsilon E``: a private suggestion for the truncation length.

Mechanisms bound each sequence's influence by keeping its first ``l_max``
items (N-gram ``--l-max``, PrivTree ``--l-top``): too small loses data, too
large adds noise.  This spends ``--epsilon`` (half on the number of
sequences, half on the histogram of lengths ``1 .. --l-upper``, both with
discrete Laplace noise) and suggests the lengths that cover 85, 90 and 95 %
of the sequences.  The epsilon spent here adds to what the release spends.
"""

from __future__ import annotations

import argparse

from ..mechanisms.lengths import coverage_length, noisy_count, noisy_length_histogram
from ..privacy import PrivacyLedger
from ..privacy.calibration import sampling_delta
from ..privacy.samplers import LAPLACE_TV_BOUND
from ..validation import check_positive_int
from .common import add_command, add_data_arguments, load_from_args, print_json

COVERAGES = (0.85, 0.90, 0.95)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``advise`` subcommand."""
    p = add_command(sub, "advise", help="privately suggest a truncation length l_max",
                    description=__doc__, example="dpgpu advise clicks.seq --epsilon 0.05")
    add_data_arguments(p)
    p.add_argument("--epsilon", type=float, required=True, help="budget this advice spends")
    p.add_argument("--l-upper", type=int, default=100, help="longest length considered")
    p.add_argument("--seed", type=int, help="reproducible noise (recorded as seeded)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def advise(db, epsilon: float, *, l_upper: int = 100, seed: int | None = None) -> dict:
    """Suggested truncation lengths from a noisy length histogram.

    Parameters
    ----------
    db : SequenceDB
    epsilon : float
        Total budget (epsilon-DP for one sequence added or removed).
    l_upper : int
        Longest length considered (public).
    seed : int, optional

    Returns
    -------
    dict
        ``{"l_max": {coverage: length}, "epsilon": ..., "ledger": ...}``.
    """
    ledger = PrivacyLedger(epsilon, seed=seed)
    l_upper = check_positive_int(l_upper, "l_upper")
    half = ledger.epsilon / 2
    size = ledger.charge("advise: noisy number of sequences", half,
                         sampling_delta=sampling_delta(LAPLACE_TV_BOUND, 1, half))
    hist = ledger.charge("advise: noisy length histogram", half,
                         sampling_delta=sampling_delta(LAPLACE_TV_BOUND, l_upper, half))
    total = noisy_count(db, size.key, half, tag=1)
    noisy = noisy_length_histogram(db, hist.key, half, l_upper, tag=2)
    return {"l_max": {f"{c:.0%}": coverage_length(noisy, total, c) for c in COVERAGES},
            "epsilon": ledger.spent_epsilon, "delta": ledger.spent_delta,
            "seeded": ledger.seeded, "ledger": ledger.to_dict()}


def run(args: argparse.Namespace) -> int:
    """Load, advise, print."""
    db = load_from_args(args)
    result = advise(db, args.epsilon, l_upper=args.l_upper, seed=args.seed)
    if args.json:
        print_json(result)
        return 0
    cover = ", ".join(f"{length} covers {c}" for c, length in result["l_max"].items())
    print(f"suggested l_max (noisy, epsilon {result['epsilon']:g} spent): {cover} of the "
          "sequences")
    print("the epsilon spent here adds to the release's own budget")
    return 0
