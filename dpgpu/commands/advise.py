"""``dpgpu advise DATA --epsilon E``: private suggestions for l_max and DPNE's Delta.

Mechanisms bound each sequence's influence by keeping its first ``l_max``
items (N-gram ``--l-max``, PrivTree ``--l-top``): too small loses data, too
large adds noise.  This spends its share of ``--epsilon`` (half on the number
of sequences, half on the histogram of lengths ``0 .. --l-upper``, both with
discrete Laplace noise) and suggests the lengths that cover 85, 90 and 95 %
of the sequences (an empty sequence is covered by any length); that part is
epsilon-DP for one sequence.  Lengths above ``--l-upper`` fall in no bin, so
where the noisy histogram up to it does not reach a share of the noisy
number of sequences, the suggestion is shown as ``>L`` with a note to raise
``--l-upper`` (``--json``: ``l_max_capped``), not as the cap ``L``.

When the data has users (``--user``; JSON lines and text tables always do),
it also suggests DPNE's per-user contribution bound Delta (``dpne
--contribution``): ``--contribution-share`` of ``--epsilon`` (default half)
goes to the number of users and to a histogram of each user's number of
distinct n-grams (``--gram-length``, default 1: the words DPNE's first
level unions), in bins about 19 % wide up to ``--contribution-upper``.  The
suggestions are the bounds that keep every n-gram of 85, 90 and 95 % of the
users; that part is epsilon-DP for one user (all of the user's texts), and
a share the histogram up to ``--contribution-upper`` does not reach is
shown the same way (``--json``: the part's ``capped``).  On
data without users those three options would do nothing: given, they are
refused (once the data is read).

The epsilon spent here adds to what the release spends, in each part's
unit: on user-level data the ``l_max`` part protects one sequence, so for a
user with k sequences it is worth k times its epsilon.

The options are checked before the data is read, for data with users and
without: --gram-length is at most DPNE's largest --max-n (64) and
--contribution-upper its largest --contribution (10000); each part's
epsilon must give a noise scale within the samplers' limit (2**52), and the
noisy counts (--l-upper + 1 of them in the length histogram) must keep the
samplers' accounted distance from exact noise within 1e-9.  (An --epsilon
above about 28 fits only with users, whose l_max part gets less of it: it
is refused once the data turns out to have none.)
"""

from __future__ import annotations

import argparse
from fractions import Fraction
from typing import Any, Mapping

import numpy as np

from ..errors import InvalidParameter
from ..mechanisms.dpne import MAX_CONTRIBUTION, MAX_N
from ..mechanisms.dpne.levels import Positions, identities
from ..mechanisms.lengths import coverage_length, length_counts, noisy_count, \
    noisy_length_histogram
from ..ops.keys import sorted_unique
from ..privacy import PrivacyLedger
from ..privacy.calibration import sampling_delta
from ..privacy.samplers import LAPLACE_TV_BOUND, MAX_LAPLACE_SCALE
from ..privacy.tables import float_at_most
from ..validation import check_positive_int, check_positive_real, check_probability
from .common import add_command, add_data_arguments, load_from_args, print_json

COVERAGES = (0.85, 0.90, 0.95)
#: Bins per doubling of the per-user count histogram (bin edges about 2 ** (j / 4)).
BINS_PER_DOUBLING = 4
#: The samplers' allowance of a run (on top of its pure epsilon).
MAX_SAMPLING_DELTA = 1e-9
#: :func:`advise`'s parameters that set the contribution suggestion (data with users only),
#: and their defaults.
CONTRIBUTION_DEFAULTS = {"contribution_share": 0.5, "gram_length": 1,
                         "contribution_upper": MAX_CONTRIBUTION}
#: The options of ``dpgpu advise`` that set :func:`advise`'s parameters (for its messages).
OPTIONS = {"epsilon": "--epsilon", "l_upper": "--l-upper",
           "contribution_share": "--contribution-share", "gram_length": "--gram-length",
           "contribution_upper": "--contribution-upper"}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``advise`` subcommand."""
    p = add_command(sub, "advise", help="privately suggest l_max (and DPNE's Delta for user data)",
                    description=__doc__, example="dpgpu advise clicks.seq --epsilon 0.05")
    add_data_arguments(p)
    p.add_argument("--epsilon", type=float, required=True, help="budget this advice spends")
    p.add_argument("--l-upper", type=int, default=100,
                   help="longest length considered (default 100)")
    # default None: given for data without users, they are refused (refuse_contribution_options)
    p.add_argument("--contribution-share", type=float,
                   help="share of --epsilon spent on the DPNE Delta suggestion, data with "
                        "users only (default 0.5)")
    p.add_argument("--gram-length", type=int,
                   help=f"n of the distinct n-grams counted per user, at most {MAX_N}; data "
                        "with users only (default 1)")
    p.add_argument("--contribution-upper", type=int,
                   help=f"largest Delta considered, at most {MAX_CONTRIBUTION}; data with "
                        f"users only (default {MAX_CONTRIBUTION})")
    p.add_argument("--seed", type=int, help="reproducible noise (recorded as seeded)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def advise(db, epsilon: float, *, l_upper: int = 100, contribution_share: float | None = None,
           gram_length: int | None = None, contribution_upper: int | None = None,
           seed: int | None = None) -> dict:
    """Suggested truncation lengths and, for user-level data, DPNE contribution bounds.

    Parameters
    ----------
    db : SequenceDB
    epsilon : float
        Total budget.
    l_upper : int
        Longest length considered (public).
    contribution_share : float, optional
        In ``(0, 1)``: the share of ``epsilon`` spent on the contribution
        bound when ``db.users`` is set (default 0.5; without users all of
        ``epsilon`` goes to ``l_max``).
    gram_length : int, optional
        ``n`` of the distinct n-grams counted per user, at most
        :data:`~dpgpu.mechanisms.dpne.MAX_N` (default 1).
    contribution_upper : int, optional
        Largest bound considered (public), at most
        :data:`~dpgpu.mechanisms.dpne.MAX_CONTRIBUTION` (default that).
        ``contribution_share``, ``gram_length`` and ``contribution_upper``
        set the contribution suggestion, made for data with users only:
        given for data without, they are refused rather than ignored.
    seed : int, optional

    Returns
    -------
    dict
        ``{"l_max": {coverage: length}, "l_max_capped": {coverage: bool},
        "contribution": {"suggested": {coverage: bound}, "capped": {coverage:
        bool}, ...} or None, "budget": {"l_max": eps, "contribution": eps},
        "units": {"l_max": "one sequence", "contribution": "one user"},
        "epsilon": ..., "ledger": ...}``.  The ``l_max`` part is epsilon-DP
        for one sequence, the ``contribution`` part for one user.  A coverage
        is capped (True) where the noisy counts up to ``l_upper`` (up to
        ``contribution_upper``) stay below that share of the noisy total: the
        quantile lies above the cap, and its value, the cap, is only a lower
        bound (decided from the noisy values alone, see :func:`quantile`).

    Raises
    ------
    InvalidParameter
        A parameter :func:`check_parameters` refuses, before the data is
        read; or an ``epsilon`` too large for the samplers on data without
        users (with users, the ``l_max`` part gets less of it); or a
        contribution parameter given for data without users
        (:func:`refuse_contribution_options`).
    """
    ledger = PrivacyLedger(epsilon, seed=seed, max_sampling_delta=MAX_SAMPLING_DELTA)
    given = {"contribution_share": contribution_share, "gram_length": gram_length,
             "contribution_upper": contribution_upper}
    epsilon, l_upper, share, gram_length, contribution_upper = check_parameters(
        epsilon, l_upper=l_upper, **given)
    refuse_contribution_options(db, given)
    users = db.users is not None
    edges = count_bins(contribution_upper)
    steps = _steps(epsilon, share, l_upper, edges.size, gram_length, users)
    keys = [ledger.charge(name, eps, sampling_delta=sd).key for name, eps, sd in steps]
    half = steps[0][1]
    total = noisy_count(len(db), keys[0], half, tag=1)
    noisy = noisy_length_histogram(length_counts(db.lengths, l_upper), keys[1], half, tag=2)
    contribution = _advise_contribution(db, keys[2:], steps[2][1], gram_length, edges) \
        if users else None
    lengths = {f"{c:.0%}": quantile(noisy, total, c) for c in COVERAGES}
    return {"l_max": {c: length for c, (length, _) in lengths.items()},
            "l_max_capped": {c: capped for c, (_, capped) in lengths.items()},
            "contribution": contribution,
            "budget": {"l_max": 2 * half,
                       "contribution": contribution["epsilon"] if contribution else 0.0},
            "units": {"l_max": "one sequence", "contribution": "one user"},
            "epsilon": ledger.spent_epsilon, "delta": ledger.spent_delta,
            "seeded": ledger.seeded, "ledger": ledger.to_dict()}


def quantile(noisy_hist: np.ndarray, total: int, fraction: float) -> tuple[int, bool]:
    """:func:`~dpgpu.mechanisms.lengths.coverage_length`, and whether it is capped.

    Capped: no running total of the noisy histogram (bins ``0 .. l_upper``)
    reaches ``fraction * total`` (noisy counts may be negative, so a total
    that reached it may fall back below it further on: that share is
    reached): no value up to the cap covers the share, and the length
    returned is the cap, a lower bound.  Post-processing of the noisy values
    only (values above the cap are in no bin; the noisy total counts them),
    so it costs no budget.
    """
    return (coverage_length(noisy_hist, total, fraction),
            bool(np.cumsum(noisy_hist).max(initial=0) < fraction * total))


def refuse_contribution_options(db: Any, given: Mapping[str, Any],
                                names: Mapping[str, str] | None = None) -> None:
    """Refuse the contribution parameters given (not None) for data without users.

    ``contribution_share``, ``gram_length`` and ``contribution_upper`` set the
    suggestion of DPNE's per-user bound, made only when ``db.users`` is set;
    without users :func:`advise` spends all of ``epsilon`` on ``l_max`` and
    they would do nothing.

    Raises
    ------
    InvalidParameter
        Naming each one given (``names``, as for :func:`check_parameters`).
    """
    used = [(names or {}).get(k, k) for k in CONTRIBUTION_DEFAULTS if given.get(k) is not None]
    if db.users is None and used:
        source = db.source.get("path")
        raise InvalidParameter(
            f"{', '.join(used)}: appl{'ies' if len(used) == 1 else 'y'} to the DPNE "
            f"contribution suggestion, made for data with users only, and "
            f"{source or 'the data'} has none (all of epsilon goes to l_max): drop "
            f"{'it' if len(used) == 1 else 'them'}, or read the data with its users (--user)")


def check_parameters(epsilon: Any, *, l_upper: Any = 100, contribution_share: Any = None,
                     gram_length: Any = None, contribution_upper: Any = None,
                     names: Mapping[str, str] | None = None) -> tuple[float, int, float, int, int]:
    """:func:`advise`'s parameters, checked whatever the data (with users or without).

    Besides each one's range, the budget split must work both ways: each
    noisy step's epsilon must give a noise scale within the samplers' limit
    (:data:`~dpgpu.privacy.samplers.MAX_LAPLACE_SCALE`), and the samplers'
    accounted delta of all the steps (:func:`~dpgpu.privacy.calibration.sampling_delta`)
    must stay within :data:`MAX_SAMPLING_DELTA`.  The length histogram's
    ``l_upper + 1`` draws make most of it: ``l_upper`` is refused where a
    smaller one would fit, ``epsilon`` where none would (on data with users
    or without; an ``epsilon`` that fits only with users, whose ``l_max``
    part gets less of it, is refused by :func:`advise` on data without).

    Parameters
    ----------
    epsilon, l_upper, contribution_share, gram_length, contribution_upper
        As for :func:`advise` (None: the default, :data:`CONTRIBUTION_DEFAULTS`).
    names : mapping of str to str, optional
        The name of each parameter in the messages (default: the parameter's
        own; ``dpgpu advise`` gives :data:`OPTIONS`).

    Returns
    -------
    (float, int, float, int, int)
        ``epsilon``, ``l_upper``, ``contribution_share``, ``gram_length`` and
        ``contribution_upper``, as float or int.

    Raises
    ------
    InvalidParameter
        Naming the parameter at fault.
    """
    name = dict(zip(OPTIONS, OPTIONS)) if names is None else names
    epsilon = check_positive_real(epsilon, name["epsilon"])
    l_upper = check_positive_int(l_upper, name["l_upper"])
    share, gram_length, upper = (CONTRIBUTION_DEFAULTS[k] if v is None else v for k, v in (
        ("contribution_share", contribution_share), ("gram_length", gram_length),
        ("contribution_upper", contribution_upper)))
    share = check_probability(share, name["contribution_share"])
    gram_length = check_positive_int(gram_length, name["gram_length"], maximum=MAX_N)
    upper = check_positive_int(upper, name["contribution_upper"], maximum=MAX_CONTRIBUTION)
    n_bins = count_bins(upper).size
    for users in (False, True):
        least = min(eps for _, eps, _ in _steps(epsilon, share, 1, n_bins, gram_length, users))
        if least >= 1 / MAX_LAPLACE_SCALE:
            continue
        limit = "whose noise scale 1 / epsilon passes the samplers' limit of 2**52"
        if not users:  # each step gets epsilon / 2
            raise InvalidParameter(f"{name['epsilon']}: too small: each of the two noisy steps "
                                   f"gets epsilon / 2 = {least:.3g}, {limit}")
        raise InvalidParameter(
            f"{name['contribution_share']}: {share!r} leaves {least:.3g} of epsilon={epsilon:g} "
            f"to a noisy step (with users, l_max's two get (1 - share) / 2 of it each, the "
            f"contribution's two share / 2), {limit}")

    def fits(users: bool, length: int) -> bool:
        deltas = [sd for _, _, sd in _steps(epsilon, share, length, n_bins, gram_length, users)]
        return all(d <= MAX_SAMPLING_DELTA for d in deltas) \
            and sum(map(Fraction, deltas)) <= Fraction(MAX_SAMPLING_DELTA)

    why = (f"the samplers' accounted distance from exact noise, (1 + e^epsilon) x draws x tv "
           f"with the step's epsilon, passes the run's allowance of {MAX_SAMPLING_DELTA:g}")
    usable = [users for users in (False, True) if fits(users, 1)]
    if not usable:
        raise InvalidParameter(f"{name['epsilon']}: {epsilon:g} is too large: {why} at any "
                               f"{name['l_upper']}; lower it")
    if not all(fits(users, l_upper) for users in usable):
        lo, hi = 1, l_upper  # lo fits, hi does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if all(fits(users, mid) for users in usable) else (lo, mid)
        raise InvalidParameter(f"{name['l_upper']}: at most {lo:,} at epsilon={epsilon:g}, "
                               f"got {l_upper:,}: above, {why} (the length histogram draws "
                               f"{name['l_upper']} + 1 noisy counts)")
    return epsilon, l_upper, share, gram_length, upper


def _steps(epsilon: float, share: float, l_upper: int, n_bins: int, gram_length: int,
           users: bool) -> list[tuple[str, float, float]]:
    """What :func:`advise` charges, in order: each noisy step's name, epsilon and sampling delta.

    The ``l_max`` part, ``epsilon`` (``(1 - share) epsilon`` with users),
    goes half to the number of sequences, half to the length histogram of
    ``l_upper + 1`` bins; with users, the rest (rounded down, as the ledger
    leaves it) half to the number of users, half to the histogram of their
    distinct n-grams, ``n_bins + 1`` bins.
    """
    half = epsilon * (1 - share if users else 1) / 2
    steps = [("advise: noisy number of sequences", half, 1),
             ("advise: noisy length histogram", half, l_upper + 1)]
    if users:
        rest = float_at_most(Fraction(epsilon) - 2 * Fraction(half)) / 2
        steps += [("advise: noisy number of users", rest, 1),
                  (f"advise: noisy histogram of distinct {gram_length}-grams per user", rest,
                   n_bins + 1)]
    return [(name, eps, sampling_delta(LAPLACE_TV_BOUND, draws, eps))
            for name, eps, draws in steps]


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


def _advise_contribution(db: Any, keys: list[Any], epsilon: float, n: int,
                         edges: np.ndarray) -> dict:
    """DP quantiles of distinct ``n``-grams per user, in the bins of upper ``edges``.

    Adding or removing one user changes the number of users by 1 and one bin
    of the histogram by 1, so each gets discrete Laplace noise of scale
    ``1 / epsilon`` (like the length histogram), with the two ``keys`` charged
    for them.
    """
    counts = distinct_grams_per_user(db, n)
    # 0 for a user without n-grams (covered by any cap), else 1 .. len(edges); above: one more
    bins = np.where(counts > 0, np.searchsorted(edges, counts) + 1, 0)
    total = noisy_count(bins.size, keys[0], epsilon, tag=3)
    noisy = noisy_length_histogram(length_counts(bins, int(edges.size)), keys[1], epsilon, tag=4)
    found = {f"{c:.0%}": quantile(noisy, total, c) for c in COVERAGES}
    return {"suggested": {c: int(edges[b - 1]) for c, (b, _) in found.items()},
            "capped": {c: capped for c, (_, capped) in found.items()},
            "gram_length": n, "upper": int(edges[-1]), "epsilon": 2 * epsilon,
            "unit": "one user"}


def _covers(values: Mapping[str, int], capped: Mapping[str, bool], whom: str,
            hint: str) -> str:
    """``"5 covers 85%, >100 covers 95% of WHOM (>100: HINT)"``: a capped value as ``>cap``."""
    text = ", ".join(f">{v} covers {c}" if capped[c] else f"{v} covers {c}"
                     for c, v in values.items()) + f" of {whom}"
    caps = {v for c, v in values.items() if capped[c]}
    return text + "".join(f" (>{v}: {hint})" for v in sorted(caps))


def run(args: argparse.Namespace) -> int:
    """Check the options, load, advise, print."""
    given = {k: getattr(args, k) for k in CONTRIBUTION_DEFAULTS}
    check_parameters(args.epsilon, l_upper=args.l_upper, **given, names=OPTIONS)
    db = load_from_args(args)
    refuse_contribution_options(db, given, OPTIONS)  # before advise names them its own way
    result = advise(db, args.epsilon, l_upper=args.l_upper, seed=args.seed, **given)
    if args.json:
        print_json(result)
        return 0
    cover = _covers(result["l_max"], result["l_max_capped"], "the sequences",
                    "not reached up to --l-upper, raise it")
    print(f"suggested l_max (noisy, epsilon {result['budget']['l_max']:g} spent, DP for one "
          f"sequence): {cover}")
    part = result["contribution"]
    if part:
        hint = "not reached up to --contribution-upper, " + (
            "raise it" if part["upper"] < MAX_CONTRIBUTION
            else f"the largest dpne --contribution ({MAX_CONTRIBUTION:,})")
        cover = _covers(part["suggested"], part["capped"],
                        f"the users (all their distinct {part['gram_length']}-grams)", hint)
        print(f"suggested dpne --contribution (noisy, epsilon {part['epsilon']:g} spent, DP for "
              f"one user): {cover}")
    if part:
        print(f"the epsilon spent here adds to the release's own budget: "
              f"{result['budget']['l_max']:g} for one sequence (a user with k sequences: k "
              f"times that) and {part['epsilon']:g} for one user")
    else:
        print(f"the epsilon spent here ({result['epsilon']:g}) adds to the release's own "
              "budget")
    return 0
