"""``dpgpu advise DATA --epsilon E``: private suggestions for l_max and DPNE's Delta.

Mechanisms bound each sequence's influence by keeping its first ``l_max``
items (N-gram ``--l-max``, PrivTree ``--l-top``): too small loses data, too
large adds noise.  This spends its share of ``--epsilon`` (half on the number
of sequences, half on the histogram of lengths ``0 .. --l-upper``, both with
discrete Laplace noise) and suggests the lengths that cover 85, 90 and 95 %
of the sequences (an empty sequence is covered by any length); that part is
epsilon-DP for one sequence.

When the data has users (``--user``; JSON lines and text tables always do),
it also suggests DPNE's per-user contribution bound Delta (``dpne
--contribution``): ``--contribution-share`` of ``--epsilon`` (default half)
goes to the number of users and to a histogram of each user's number of
distinct n-grams (``--gram-length``, default 1: the words DPNE's first
level unions), in bins about 19 % wide up to ``--contribution-upper``.  The
suggestions are the bounds that keep every n-gram of 85, 90 and 95 % of the
users; that part is epsilon-DP for one user (all of the user's texts).

The epsilon spent here adds to what the release spends, in each part's
unit: on user-level data the ``l_max`` part protects one sequence, so for a
user with k sequences it is worth k times its epsilon.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from ..mechanisms.dpne.levels import Positions, identities
from ..mechanisms.lengths import coverage_length, length_counts, noisy_count, \
    noisy_length_histogram
from ..ops.keys import sorted_unique
from ..privacy import PrivacyLedger
from ..privacy.calibration import sampling_delta
from ..privacy.samplers import LAPLACE_TV_BOUND
from ..validation import check_positive_int, check_probability
from .common import add_command, add_data_arguments, load_from_args, print_json

COVERAGES = (0.85, 0.90, 0.95)
#: Bins per doubling of the per-user count histogram (bin edges about 2 ** (j / 4)).
BINS_PER_DOUBLING = 4


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``advise`` subcommand."""
    p = add_command(sub, "advise", help="privately suggest l_max (and DPNE's Delta for user data)",
                    description=__doc__, example="dpgpu advise clicks.seq --epsilon 0.05")
    add_data_arguments(p)
    p.add_argument("--epsilon", type=float, required=True, help="budget this advice spends")
    p.add_argument("--l-upper", type=int, default=100,
                   help="longest length considered (default 100)")
    p.add_argument("--contribution-share", type=float, default=0.5,
                   help="share of --epsilon spent on the DPNE Delta suggestion when the data "
                        "has users (default 0.5)")
    p.add_argument("--gram-length", type=int, default=1,
                   help="n of the distinct n-grams counted per user (default 1)")
    p.add_argument("--contribution-upper", type=int, default=10_000,
                   help="largest Delta considered (default 10000)")
    p.add_argument("--seed", type=int, help="reproducible noise (recorded as seeded)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def advise(db, epsilon: float, *, l_upper: int = 100, contribution_share: float = 0.5,
           gram_length: int = 1, contribution_upper: int = 10_000,
           seed: int | None = None) -> dict:
    """Suggested truncation lengths and, for user-level data, DPNE contribution bounds.

    Parameters
    ----------
    db : SequenceDB
    epsilon : float
        Total budget.
    l_upper : int
        Longest length considered (public).
    contribution_share : float
        In ``(0, 1)``: the share of ``epsilon`` spent on the contribution
        bound when ``db.users`` is set (otherwise all of it goes to
        ``l_max``).
    gram_length : int
        ``n`` of the distinct n-grams counted per user.
    contribution_upper : int
        Largest bound considered (public).
    seed : int, optional

    Returns
    -------
    dict
        ``{"l_max": {coverage: length}, "contribution": {...} or None,
        "budget": {"l_max": eps, "contribution": eps}, "units": {"l_max":
        "one sequence", "contribution": "one user"}, "epsilon": ..., "ledger":
        ...}``.  The ``l_max`` part is epsilon-DP for one sequence, the
        ``contribution`` part for one user.
    """
    ledger = PrivacyLedger(epsilon, seed=seed)
    l_upper = check_positive_int(l_upper, "l_upper")
    share = check_probability(contribution_share, "contribution_share")
    gram_length = check_positive_int(gram_length, "gram_length")
    contribution_upper = check_positive_int(contribution_upper, "contribution_upper")
    users = db.users is not None
    half = ledger.epsilon * (1 - share if users else 1) / 2
    size = ledger.charge("advise: noisy number of sequences", half,
                         sampling_delta=sampling_delta(LAPLACE_TV_BOUND, 1, half))
    hist = ledger.charge("advise: noisy length histogram", half,
                         sampling_delta=sampling_delta(LAPLACE_TV_BOUND, l_upper + 1, half),
                         hint="l_upper")
    total = noisy_count(len(db), size.key, half, tag=1)
    noisy = noisy_length_histogram(length_counts(db.lengths, l_upper), hist.key, half, tag=2)
    contribution = _advise_contribution(db, ledger, gram_length, contribution_upper) \
        if users else None
    return {"l_max": {f"{c:.0%}": coverage_length(noisy, total, c) for c in COVERAGES},
            "contribution": contribution,
            "budget": {"l_max": 2 * half,
                       "contribution": contribution["epsilon"] if contribution else 0.0},
            "units": {"l_max": "one sequence", "contribution": "one user"},
            "epsilon": ledger.spent_epsilon, "delta": ledger.spent_delta,
            "seeded": ledger.seeded, "ledger": ledger.to_dict()}


def distinct_grams_per_user(db: Any, n: int) -> np.ndarray:
    """Number of distinct contiguous ``n``-grams in each user's texts (exact; private).

    Parameters
    ----------
    db : SequenceDB
        With ``users`` (without, each sequence is its own user).
    n : int

    Returns
    -------
    numpy.ndarray of int64
        One count per distinct user id, in sorted id order (0 for a user
        whose sequences are all shorter than ``n``).
    """
    pos = Positions.of(db)
    owners = sorted_unique(db.users) if db.users is not None else np.arange(len(db))
    starts = pos.windows(n)
    keys = identities(pos.rows(n, starts), db.vocab.size).astype(np.uint64)
    users = np.searchsorted(owners, pos.users[starts]).astype(np.int64)
    order = np.lexsort((keys, users))
    users, keys = users[order], keys[order]
    new = np.ones(users.size, dtype=bool)
    new[1:] = (users[1:] != users[:-1]) | (keys[1:] != keys[:-1])
    return np.bincount(users[new], minlength=owners.size).astype(np.int64)


def count_bins(upper: int) -> np.ndarray:
    """Upper edges ``e_1 < e_2 < ... = upper`` of the count bins ``(e_{j-1}, e_j]`` (public).

    ``e_j`` is ``2 ** (j / BINS_PER_DOUBLING)`` rounded, so a suggestion is
    at most about 19 % above the quantile it stands for.
    """
    top = int(np.ceil(np.log2(upper) * BINS_PER_DOUBLING))
    edges = np.unique(np.round(2.0 ** (np.arange(top + 1) / BINS_PER_DOUBLING)).astype(np.int64))
    return np.append(edges[edges < upper], upper)


def _advise_contribution(db: Any, ledger: PrivacyLedger, n: int, upper: int) -> dict:
    """Spend what ``ledger`` has left on DP quantiles of distinct n-grams per user.

    Adding or removing one user changes the number of users by 1 and one bin
    of the histogram by 1, so each gets discrete Laplace noise of scale
    ``1 / epsilon_part`` (like the length histogram).
    """
    half = ledger.remaining_epsilon / 2
    edges = count_bins(upper)
    size = ledger.charge("advise: noisy number of users", half,
                         sampling_delta=sampling_delta(LAPLACE_TV_BOUND, 1, half))
    hist = ledger.charge(f"advise: noisy histogram of distinct {n}-grams per user", half,
                         sampling_delta=sampling_delta(LAPLACE_TV_BOUND, edges.size + 1, half))
    counts = distinct_grams_per_user(db, n)
    # 0 for a user without n-grams (covered by any cap), else 1 .. len(edges); above: one more
    bins = np.where(counts > 0, np.searchsorted(edges, counts) + 1, 0)
    total = noisy_count(bins.size, size.key, half, tag=3)
    noisy = noisy_length_histogram(length_counts(bins, int(edges.size)), hist.key, half, tag=4)
    return {"suggested": {f"{c:.0%}": int(edges[coverage_length(noisy, total, c) - 1])
                          for c in COVERAGES},
            "gram_length": n, "upper": upper, "epsilon": 2 * half, "unit": "one user"}


def run(args: argparse.Namespace) -> int:
    """Load, advise, print."""
    db = load_from_args(args)
    result = advise(db, args.epsilon, l_upper=args.l_upper,
                    contribution_share=args.contribution_share, gram_length=args.gram_length,
                    contribution_upper=args.contribution_upper, seed=args.seed)
    if args.json:
        print_json(result)
        return 0
    cover = ", ".join(f"{length} covers {c}" for c, length in result["l_max"].items())
    print(f"suggested l_max (noisy, epsilon {result['budget']['l_max']:g} spent, DP for one "
          f"sequence): {cover} of the sequences")
    part = result["contribution"]
    if part:
        cover = ", ".join(f"{d} covers {c}" for c, d in part["suggested"].items())
        print(f"suggested dpne --contribution (noisy, epsilon {part['epsilon']:g} spent, DP for "
              f"one user): {cover} of the users (all their distinct {part['gram_length']}-grams)")
    if part:
        print(f"the epsilon spent here adds to the release's own budget: "
              f"{result['budget']['l_max']:g} for one sequence (a user with k sequences: k "
              f"times that) and {part['epsilon']:g} for one user")
    else:
        print(f"the epsilon spent here ({result['epsilon']:g}) adds to the release's own "
              "budget")
    return 0
