"""DPSU baselines of the DPNE paper (Section 3.1.2, Tables 4 and 5): DP set union over n-grams.

Each gram of length ``1 .. T`` is an item of DPSU (Gopi et al., ICML'20);
nothing uses the structure of n-grams.

* ``dpsu-all``: one DPSU over the union of all k-grams, ``k = 1 .. T``,
  each user keeping ``T * Delta_0`` of them, with the whole budget.
* ``dpsu-even``: one DPSU per ``k`` (``Delta_0`` each), the budget split
  evenly: Gaussian noise ``sigma_k = sqrt(T) sigma*`` (zCDP composition, as
  DPNE's equal schedule) and thresholds at ``delta / (2T)`` each; Laplace
  noise at ``epsilon / T`` and thresholds at ``delta / T`` each (basic
  composition; the paper's "about epsilon / sqrt(T)" is the advanced
  composition of the same split).
* ``dpsu-single``: one DPSU over the ``T``-grams alone with the whole budget
  (the paper runs it once per ``k``; call it once per ``max_n``).

Policies.  ``weighted``: the weighted-Gaussian histogram of
:mod:`.histogram` (L2 sensitivity ``GRID``), discrete Gaussian noise, the
threshold of :func:`.calibration.dpsu_integer_threshold` -- the privacy
argument of the module doc of :mod:`dpgpu.mechanisms.dpne` with one level.
``laplace``: Policy Laplace (:mod:`.policy`): each user adds ``GRID`` units
by integer l1-descent towards the cutoff ``Gamma = rho + alpha * lambda``;
the final histogram has L1 sensitivity ``GRID`` (contractivity, see
:mod:`.policy`), so discrete Laplace noise of scale ``lambda = GRID /
epsilon`` makes the noisy histogram ``epsilon``-DP on the grams both
neighbours hold, and the threshold ``rho = max_t ceil(GRID / t) + c_t``
(``P[L > c_t] <= 1 - (1 - delta)**(1/t)``) keeps the grams only the added
user holds unreleased except with probability ``delta``: ``(epsilon,
delta)``-DP.  This integer policy raises a user's *lowest* grams first, so
it favours rare grams and releases fewer than Gopi et al.'s real-valued
rule (equal shares capped by the gaps), whose integer rounding we have not
proved contractive.

Policy Gaussian is not offered: no integer form of it is private.  Its
real-valued proof rests on each user's step being an exact projection onto
the ball ``{z >= 0, ||z||_2 <= 1}``, which never increases distances.  On
the integer grid, any step that fills a gap vector exactly when it fits the
budget ``S`` can only be non-expanding if it maps to a nearest integer point
of the ball, and those maps expand distances: at ``S = 64`` the gaps
``(1, 65)`` and ``(2, 65)`` (distance 1) leave residual gaps ``(1, 1)`` and
``(0, 2)`` (distance sqrt 2).  Floor rounding of the scaled step fares
worse: a 131-user example at ``S = 64`` ends with neighbouring histograms
64.19 grid units apart, above the sensitivity the noise is calibrated to.

Noise is keyed by gram identity (rows padded to ``T`` with an unused symbol
for ``dpsu-all``); the ledger charges one step with sampling delta for
``max_draws`` draws, a public cap on the supported grams; a run whose
support exceeds it releases nothing and says so in the report.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...privacy import DiscreteGaussian, DiscreteLaplace, sampling_delta
from .calibration import GRID, dpsu_integer_threshold
from .histogram import TAG_NOISE, bounded_histogram, bounded_pairs, noisy_release, unique_int
from .levels import Positions, identities
from .policy import water_fill

METHODS = ("dpsu-all", "dpsu-even", "dpsu-single")
POLICIES = ("weighted", "laplace")


class GramTable:
    """Exact ids of every k-gram occurrence, ``k = 1 .. T`` (ids in lexicographic order).

    ``starts[k-1]`` are the window starts of length ``k``, ``ids[k-1]`` the
    gram id of each and ``rows[k-1]`` the ``(G_k, k)`` item matrix of the ids.
    """

    def __init__(self, pos: Positions, max_n: int, n_items: int):
        self.starts, self.ids, self.rows = [], [], []
        prev = pos.items
        for k in range(1, max_n + 1):
            starts = pos.windows(k)
            code = pos.items[starts] if k == 1 else \
                prev[starts] * n_items + pos.items[starts + k - 1]
            values, inv = unique_int(code, return_inverse=True)
            first = np.empty(values.size, dtype=np.int64)
            first[inv[::-1]] = starts[::-1]
            self.starts.append(starts)
            self.ids.append(inv)
            self.rows.append(pos.rows(k, first))
            prev = np.full(pos.items.size, -1, dtype=np.int64)
            prev[starts] = inv


def runs(method: str, max_n: int) -> list[list[int]]:
    """The gram lengths of each DPSU run of ``method``."""
    if method == "dpsu-all":
        return [list(range(1, max_n + 1))]
    if method == "dpsu-even":
        return [[k] for k in range(1, max_n + 1)]
    return [[max_n]]


def calibrate(policy: str, epsilon: float, delta: float, n_runs: int, cap: int,
              alpha: float, sigma_star: float) -> tuple[Any, int, int]:
    """Sampler, integer threshold and cutoff of one of ``n_runs`` even runs."""
    if policy == "weighted":
        s = GRID * sigma_star * math.sqrt(n_runs)
        return DiscreteGaussian(s), dpsu_integer_threshold(s, delta / (2 * n_runs), cap), 0
    lam = GRID * n_runs / epsilon
    noise = DiscreteLaplace(lam)
    rho = laplace_threshold(lam, delta / n_runs, cap)
    return noise, rho, rho + math.ceil(alpha * lam)


def laplace_threshold(scale: float, delta: float, cap: int) -> int:
    """``max_t ceil(GRID / t) + c_t`` with ``P[L > c_t] <= 1 - (1 - delta)**(1/t)``.

    ``L`` is discrete Laplace, ``P[L > c] = p**(c + 1) / (1 + p)`` with
    ``p = exp(-1 / scale)``.
    """
    p = math.exp(-1 / scale)
    best = 0
    for t in range(1, cap + 1):
        q = -math.expm1(math.log1p(-delta) / t) * (1 - 1e-12)
        c = max(0, math.ceil(math.log(q * (1 + p)) / math.log(p)) - 1)
        while p ** (c + 1) / (1 + p) > q:
            c += 1
        best = max(best, -(-GRID // t) + c)
    return best


def release_run(pos: Positions, table: GramTable, ks: list[int], max_n: int, n_items: int,
                policy: str, cap: int, noise: Any, threshold: int, cutoff: int, key: Any,
                tag: int, max_draws: int) -> tuple[list[np.ndarray], int, bool]:
    """One DPSU run over the grams of lengths ``ks``: released rows per ``k`` and draws."""
    offsets = np.cumsum([0] + [table.rows[k - 1].shape[0] for k in ks])
    users = np.concatenate([pos.users[table.starts[k - 1]] for k in ks])
    grams = np.concatenate([table.ids[k - 1] + offsets[i] for i, k in enumerate(ks)])
    if policy == "weighted":
        keys, weights = bounded_histogram(users, grams, cap, key, tag)
    else:
        u, g, _ = bounded_pairs(users, grams, cap, key, tag)
        head = np.flatnonzero(np.r_[True, u[1:] != u[:-1]]) if u.size else np.zeros(0, int)
        hist = water_fill(np.r_[head, u.size], g, int(offsets[-1]), GRID, cutoff)
        keys = np.flatnonzero(hist)
        weights = hist[keys]
    if keys.size > max_draws:
        return [np.zeros((0, k), dtype=np.int32) for k in ks], 0, True
    level = np.searchsorted(offsets, keys, side="right") - 1
    out = []
    ident = np.empty(keys.size, dtype=np.int64)
    for i, k in enumerate(ks):
        sel = level == i
        rows = table.rows[k - 1][keys[sel] - offsets[i]]
        if len(ks) > 1:
            rows = np.concatenate([rows, np.full((rows.shape[0], max_n - k), n_items + 2,
                                                 dtype=np.int32)], axis=1)
        ident[sel] = np.asarray(identities(rows, n_items)).view(np.int64)
    if isinstance(noise, DiscreteGaussian):
        mask = noisy_release(weights, ident, noise.sigma, threshold, key, tag)
    else:
        mask = weights + noise.sample(key, ident, tag=tag + TAG_NOISE,
                                      backend="numpy") > threshold
    for i, k in enumerate(ks):
        sel = mask & (level == i)
        out.append(table.rows[k - 1][keys[sel] - offsets[i]])
    return out, int(keys.size), False


def draws_allowed(noise: Any, epsilon: float, allowance: float) -> int:
    """Default public draw cap: what the ledger's sampling-delta allowance covers."""
    return int(0.999 * allowance / ((1 + math.exp(epsilon)) * noise.tv_per_draw))


def sampling_cost(noise: Any, max_draws: int, epsilon: float) -> float:
    """Sampling delta of ``max_draws`` draws (see :func:`dpgpu.privacy.sampling_delta`)."""
    return sampling_delta(noise.tv_per_draw, max_draws, epsilon)

