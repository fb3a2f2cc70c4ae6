"""Calibration of DPNE on the integer grid: ``sigma*``, per-level ``sigma_k``, thresholds.

Noise is the discrete Gaussian ``N_Z(0, s**2)`` on a histogram whose weights
are integers on a grid of ``GRID`` units per unit weight (``s = GRID *
sigma``).  Three quantities follow:

* :func:`zcdp_sigma` -- the smallest ``sigma`` such that ``1/(2 sigma**2)``-zCDP
  implies ``(epsilon, delta)``-DP by the conversion of Canonne, Kamath &
  Steinke (NeurIPS 2020, Corollary 13):
  ``delta = inf_{a>1} exp((a-1)(a rho - eps)) / (a-1) * (1 - 1/a)**a``.
  Any ``a`` gives a valid bound, so a numerically approximate minimiser is
  safe; the bound is evaluated rigorously at the ``a`` used
  (:func:`zcdp_delta_bound`: decimal arithmetic, rounded up), since its float
  value can land a few units in the last place below the real one.
* :func:`tail_threshold` -- the least integer ``c`` with
  ``P[N_Z(0, s**2) > c] <= q``, from the fixed-point weights of
  :func:`dpgpu.privacy.tables.gaussian_half_weights` in exact integer
  arithmetic (the dropped tail beyond ``10.53 s`` is added as ``2**-79``).
* :func:`dpsu_integer_threshold` -- DPNE Theorem 2.1's ``rho_1`` on the grid:
  ``max_t w_t + c_t`` where ``w_t = floor(GRID / sqrt(t))`` is the weight of
  an item of a user keeping ``t`` items and ``c_t`` the least integer with
  ``P[X > c_t] <= 1 - (1 - delta)**(1/t)``.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

from scipy.optimize import brentq, minimize_scalar

from ...errors import InvalidParameter
from ...privacy.tables import gaussian_half_weights
from ...validation import check_positive_int, check_positive_real, check_probability

#: Grid units per unit of weight (weights ``floor(GRID / sqrt(t))``).  256 keeps
#: more than 93 % of every weight up to ``t = 300`` (the default contribution) and
#: no weight at 0 up to ``t = 10,000``; the noise is ``GRID`` times larger, so the
#: samplers' ``sigma <= 2**17`` caps ``sigma_k`` at 512 (epsilon about 0.03 at
#: ``max_n = 9``, ``delta = 1e-7``).
GRID = 256
#: The fixed-point tables bound a tail only down to this probability: :func:`tail_threshold`
#: resolves ``q > TAIL_RESOLUTION``, and callers check that before any data is read.
TAIL_RESOLUTION = Fraction(1, 2 ** 79)
#: Largest epsilon :func:`zcdp_sigma` calibrates (its search stays in finite floats).
MAX_ZCDP_EPSILON = 1e6
#: Largest unit sigma :func:`zcdp_sigma` searches (the samplers stop far below it).
MAX_ZCDP_SIGMA = 2.0 ** 40


def zcdp_delta(sigma: float, epsilon: float) -> float:
    """``delta`` implied at ``epsilon`` by ``1/(2 sigma**2)``-zCDP (CKS20 Cor. 13), in floats."""
    return math.exp(_log_zcdp_delta(sigma, epsilon))


def _log_zcdp_delta(sigma: float, epsilon: float) -> float:
    """``log zcdp_delta(sigma, epsilon)``, without underflow for large ``epsilon``."""
    return _log_cks_delta(sigma, epsilon, _zcdp_order(sigma, epsilon))


def _log_cks_delta(sigma: float, epsilon: float, a: float) -> float:
    """The logarithm of CKS20 Corollary 13's bound at the order ``a > 1``, in floats."""
    rho = 1 / (2 * sigma * sigma)
    return (a - 1) * (a * rho - epsilon) - math.log(a - 1) + a * math.log1p(-1 / a)


def _zcdp_order(sigma: float, epsilon: float) -> float:
    """The order ``a > 1`` at which the bound is taken: a float minimiser (any ``a`` is valid)."""
    rho = 1 / (2 * sigma * sigma)
    hi = max(4.0, 4 * (epsilon / rho + 1))
    best = minimize_scalar(lambda a: _log_cks_delta(sigma, epsilon, a), bounds=(1 + 1e-9, hi),
                           method="bounded", options={"xatol": 1e-10})
    a = float(best.x)
    return a if _log_cks_delta(sigma, epsilon, a) <= _log_cks_delta(sigma, epsilon, hi) else hi


def zcdp_delta_bound(sigma: float, epsilon: float) -> Decimal:
    """A rigorous upper bound on the ``delta`` of ``1/(2 sigma**2)``-zCDP at ``epsilon``.

    CKS20 Corollary 13's bound at the order of :func:`_zcdp_order`, evaluated
    in decimal at 100 digits from the floats' exact values, with ``ln`` and
    ``exp`` correctly rounded: ``a - 1`` is exact (a float ``a > 1`` has at
    most 54 significant digits), ``a log(1 - 1/a)`` is taken as ``a (ln(a - 1)
    - ln a)``, and every other operation is within ``1e-99`` relative, so the
    exponent is within a few ``1e-99 size`` of the real one, where ``size``
    bounds every intermediate it is made of; it is raised by ``1e-60 size``
    before ``exp``.  The float :func:`zcdp_delta` can fall a few units in the
    last place of ``exp(size 1e-16)`` on either side of it (3.3e-15 above
    ``delta`` at the former ``zcdp_sigma(1.5, 1e-10)``).
    """
    a = _zcdp_order(sigma, epsilon)
    with localcontext(Context(prec=100)):     # every operation below at 100 digits
        a_, s_, e_ = Decimal(a), Decimal(sigma), Decimal(epsilon)
        rho = 1 / (2 * s_ * s_)
        ln_am1, ln_a = (a_ - 1).ln(), a_.ln()
        exponent = (a_ - 1) * (a_ * rho - e_) - ln_am1 + a_ * (ln_am1 - ln_a)
        size = 1 + (a_ - 1) * (a_ * rho + e_) + (1 + a_) * abs(ln_am1) + a_ * abs(ln_a)
        return (exponent + size * Decimal("1e-60")).exp()


def zcdp_sigma(epsilon: float, delta: float) -> float:
    """Smallest ``sigma`` (unit L2 sensitivity) with ``zcdp_delta(sigma, epsilon) <= delta``.

    The search runs in floats; the ``sigma`` returned meets the rigorous
    :func:`zcdp_delta_bound` ``<= delta`` (raised by a factor ``1 + 1e-12`` until it
    does, which it does where the floats' rounding, a few units in the last
    place, fell on the unsafe side).

    Raises
    ------
    InvalidParameter
        Naming ``epsilon`` when it is above :data:`MAX_ZCDP_EPSILON`, or so
        small (for ``delta``) that sigma would exceed :data:`MAX_ZCDP_SIGMA`.
    """
    epsilon = check_positive_real(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    if epsilon > MAX_ZCDP_EPSILON:
        raise InvalidParameter(f"epsilon: {epsilon:g} is above {MAX_ZCDP_EPSILON:g}, the "
                               "largest the Gaussian calibration takes")
    target = math.log(delta)

    def excess(sigma: float) -> float:
        return _log_zcdp_delta(sigma, epsilon) - target

    def meets(sigma: float) -> bool:
        return zcdp_delta_bound(sigma, epsilon) <= Decimal(delta)

    lo, hi = 1e-3, 1.0
    while excess(hi) > 0:
        hi *= 2
        if hi > MAX_ZCDP_SIGMA:
            raise InvalidParameter(f"epsilon: {epsilon:g} needs a Gaussian sigma above "
                                   f"{MAX_ZCDP_SIGMA:g}; raise epsilon or delta")
    while excess(lo) <= 0 and lo > 1e-12:  # a large epsilon allows a tiny sigma
        lo /= 2
    s = lo if excess(lo) <= 0 else brentq(excess, lo, hi, xtol=1e-13, rtol=1e-14)
    while zcdp_delta(s, epsilon) > delta:  # the float guarantee first (unchanged search) ...
        s *= 1 + 1e-12
    while not meets(s):                    # ... then the rigorous one
        s *= 1 + 1e-12
    return s


def unit_weights(max_items: int) -> list[int]:
    """``w_t = floor(GRID / sqrt(t))`` for ``t = 0 .. max_items`` (``w_0 = 0``).

    Exact: ``w_t = isqrt(GRID**2 // t)``, so ``t * w_t**2 <= GRID**2`` (one
    user's integer weights have L2 norm at most ``GRID``).
    """
    max_items = check_positive_int(max_items, "max_items")
    return [0] + [math.isqrt(GRID * GRID // t) for t in range(1, max_items + 1)]


@lru_cache(maxsize=32)
def _suffix_sums(s: float) -> tuple[list[int], int]:
    """Fixed-point ``sum_{k>c} w_k`` for ``c = 0 .. T`` and the normaliser ``Z``."""
    t = math.ceil(s * 10.53)
    half = gaussian_half_weights(s, t)
    z = 2 * sum(half) - half[0]
    suffix = [0] * (t + 1)
    acc = 0
    for k in range(t, 0, -1):
        suffix[k - 1] = acc = acc + half[k]
    return suffix, z


def tail_threshold(s: float, q: Fraction) -> int:
    """Least integer ``c >= 0`` with ``P[N_Z(0, s**2) > c] <= q`` (rigorous upper tail).

    ``q`` must exceed :data:`TAIL_RESOLUTION`; the mechanisms derive ``q``
    from their parameters and refuse those that would pass below it.
    """
    s = check_positive_real(s, "s")
    suffix, z = _suffix_sums(s)
    lo, hi = 0, len(suffix) - 1          # P[X > T] <= 2**-79 < any q we use
    if q <= TAIL_RESOLUTION:
        raise ValueError("tail probability below the sampler's resolution")
    while lo < hi:
        mid = (lo + hi) // 2
        if Fraction(suffix[mid], z) + TAIL_RESOLUTION <= q:
            hi = mid
        else:
            lo = mid + 1
    return lo


def tail_probability(s: float, c: int) -> Fraction:
    """``P[N_Z(0, s**2) > c]`` for ``c >= 0`` from the fixed-point weights (within 2**-79)."""
    suffix, z = _suffix_sums(s)
    return Fraction(suffix[min(c, len(suffix) - 1)], z)


def dpsu_integer_threshold(s: float, delta: float, max_items: int) -> int:
    """Theorem 2.1's ``rho_1`` on the grid: release iff ``H + X > threshold``.

    A user alone holding its ``t`` kept items gives each weight ``w_t``; they
    all stay at or below the threshold with probability
    ``P[X <= c_t]**t >= 1 - delta`` (the ``(0, delta)`` part of the proof).

    Raises
    ------
    InvalidParameter
        Naming ``delta`` when the smallest tail, ``c_{max_items}``'s, is
        below :data:`TAIL_RESOLUTION`.
    """
    delta = check_probability(delta, "delta")
    w = unit_weights(max_items)
    q = [Fraction(-math.expm1(math.log1p(-delta) / t) * (1 - 1e-12))
         for t in range(1, max_items + 1)]                           # decreasing in t
    if q[-1] <= TAIL_RESOLUTION:
        raise InvalidParameter(
            f"delta: too small for the DPSU threshold: its share {delta:g} of delta, spread over "
            f"up to {max_items} items of a user, is below the noise tables' resolution of 2**-79 "
            f"per item; raise delta (or lower the contribution)")
    return max(w[t] + tail_threshold(s, q[t - 1]) for t in range(1, max_items + 1))
