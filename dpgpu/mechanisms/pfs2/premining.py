"""Pre-mining phase of PFS^2 (Algorithm 3, lines 2-9).

* ``|D|~``: the number of sequences plus discrete Laplace noise of scale
  ``1 / eps_1``;
* ``l_max = min(l_1, l_2)``: ``l_2`` is the first length at which the
  noisy length counts ``alpha_1 + .. + alpha_l2`` reach ``eta |D|~``; the
  counts of distinct lengths read disjoint sequences, so the whole length
  histogram costs ``eps_2`` (parallel composition, Theorem 7);
* ``L_f``: the largest ``y <= l_max`` whose noisy maximal support of
  ``y``-sequences ``beta_y`` reaches ``theta |D|~``.  ``beta`` is
  non-increasing in ``y`` (a sequence's support is at most its prefix's),
  so, as in Zeng et al. (the paper's ref. [8]), ``L_f`` is found by binary
  search with ``ceil(log2 l_max)`` noisy queries of ``eps_3 / ceil(log2 l_max)``
  each (sensitivity 1 each; sequential composition).

Queries are clipped from below at a public floor (half the noisy absolute
threshold): ``max(beta_y, floor)`` still has sensitivity 1, only decides
comparisons far below the threshold, and lets the exact maximal supports be
computed by mining at that floor instead of over all subsequences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...data.sequencedb import SequenceDB
from ...eval.truth import frequent_subsequences
from ...privacy import DiscreteLaplace, PrivacyLedger, sampling_delta
from ...privacy.samplers import LAPLACE_TV_BOUND
from ..lengths import coverage_length, noisy_count, noisy_length_histogram

#: Public floor of the maximal-support queries, as a fraction of the noisy threshold.
BETA_FLOOR = 0.5
#: Noise tags (domain separation within one step's key).
TAG_SIZE, TAG_LENGTHS, TAG_BETA = 1, 2, 3


@dataclass(frozen=True)
class PreMining:
    """Public results of the pre-mining phase (all differentially private).

    Attributes
    ----------
    n_noisy : int
        Noisy number of sequences ``|D|~`` (at least 1).
    l_max : int
        Length constraint of the sample databases.
    L_f : int
        Estimated length of the longest frequent sequence (number of samples).
    """

    n_noisy: int
    l_max: int
    L_f: int


def tv_delta(n_draws: int, epsilon: float) -> float:
    """Sampling delta of a step drawing ``n_draws`` discrete-Laplace values."""
    return sampling_delta(LAPLACE_TV_BOUND, n_draws, epsilon)


def noisy_size(db: SequenceDB, ledger: PrivacyLedger, epsilon: float) -> int:
    """``|D|~``: ``|D|`` + discrete Laplace ``(1 / eps_1)``, at least 1."""
    step = ledger.charge("pfs2: noisy |D|", epsilon, sampling_delta=tv_delta(1, epsilon))
    return noisy_count(db, step.key, epsilon, tag=TAG_SIZE)


def length_constraint(db: SequenceDB, ledger: PrivacyLedger, epsilon: float, n_noisy: int,
                      l_upper: int, eta: float) -> int:
    """``l_max = min(l_1, l_2)`` from the noisy length histogram (lengths ``1 .. l_1``)."""
    step = ledger.charge("pfs2: noisy length histogram (lengths 1..l_1, disjoint)", epsilon,
                         sampling_delta=tv_delta(l_upper, epsilon))
    noisy = noisy_length_histogram(db, step.key, epsilon, l_upper, tag=TAG_LENGTHS)
    return coverage_length(noisy, n_noisy, eta)


def max_frequent_length(db: SequenceDB, ledger: PrivacyLedger, epsilon: float, l_max: int,
                        threshold: float) -> int:
    """``L_f`` by binary search on the noisy maximal supports (see the module doc).

    Parameters
    ----------
    db : SequenceDB
    ledger : PrivacyLedger
    epsilon : float
        ``eps_3``.
    l_max : int
    threshold : float
        Noisy absolute threshold ``theta |D|~``.

    Returns
    -------
    int
        ``L_f`` in ``1 .. l_max``.
    """
    queries = max(1, math.ceil(math.log2(l_max))) if l_max > 1 else 1
    step = ledger.charge(f"pfs2: noisy maximal supports (binary search, {queries} queries)",
                         epsilon, sampling_delta=tv_delta(queries, epsilon))
    if l_max == 1:
        return 1
    floor = max(1, int(BETA_FLOOR * threshold))
    beta = _maximal_supports(db, floor, l_max)
    sampler = DiscreteLaplace(queries / epsilon)
    lo, hi = 1, l_max
    while lo < hi:
        mid = (lo + hi + 1) // 2
        noise = int(sampler.sample(step.key, np.array([mid]), tag=TAG_BETA, backend="numpy")[0])
        if max(beta[mid - 1], floor) + noise >= threshold:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _maximal_supports(db: SequenceDB, floor: int, l_max: int) -> list[int]:
    """``max(beta_y, floor)`` for ``y = 1 .. l_max`` (exact; mined at ``floor``)."""
    pats, sups = frequent_subsequences(db, floor, max_length=l_max)
    best = [floor] * l_max
    for p, s in zip(pats, sups.tolist()):
        best[len(p) - 1] = max(best[len(p) - 1], s)
    return best
