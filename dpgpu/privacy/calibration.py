"""Noise calibration: from a privacy target to a noise scale or threshold.

* :func:`laplace_scale` -- discrete Laplace / two-sided geometric: scale
  ``sensitivity / epsilon`` (L1 sensitivity; never truncated to an integer).
* :func:`gaussian_delta`, :func:`analytic_gaussian_sigma` -- the analytic
  Gaussian mechanism (Balle & Wang, ICML 2018, Theorem 8): the exact privacy
  profile ``delta(epsilon) = Phi(D/2s - eps s/D) - e^eps Phi(-D/2s - eps s/D)``
  and the smallest ``sigma`` meeting a target, solved in log space.
* :func:`discrete_gaussian_delta`, :func:`discrete_gaussian_sigma` -- the
  exact profile of the discrete Gaussian for an integer query (Canonne, Kamath
  & Steinke 2020, Theorem 7) and the smallest sigma meeting a target.
* :func:`dpsu_threshold`, :func:`dpsu_gaussian` -- the weighted-Gaussian DP
  set union threshold of DPNE (Kim et al., NeurIPS 2021, Theorem 2.1;
  Gopi et al., ICML 2020): ``sigma = analytic_gaussian_sigma(eps, delta/2)``
  and ``rho = max_{1<=t<=Delta0} 1/sqrt(t) + sigma Phi^-1((1 - delta/2)^(1/t))``
  for a release of total ``delta``.
* :func:`split_gaussian_sigma` -- Theorem 2.1's split of ``sigma*`` into
  per-level ``sigma_k`` with ``sum 1/sigma_k**2 = 1/sigma***2``.
* :func:`integer_threshold` -- the integer form of "noisy count > rho".
* :func:`sampling_delta` -- the delta term that accounts the samplers'
  distance from exact (see :mod:`dpgpu.privacy.samplers`).

Every function validates its parameters positively (NaN, infinities, zero and
negatives raise :class:`~dpgpu.errors.InvalidParameter` naming the
parameter) and rounds what it returns in the safe direction (noise, thresholds
and deltas up).
"""

from __future__ import annotations

import math
import sys
from decimal import Decimal
from fractions import Fraction
from typing import Any, Sequence

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtri

from ..errors import InvalidParameter
from ..validation import check_positive_int, check_positive_real, check_positive_reals, \
    check_probability
from .samplers import MAX_LAPLACE_SCALE
from .tables import float_at_least

#: Largest ``max_items`` of :func:`dpsu_threshold` and :func:`dpsu_gaussian`, whose time
#: and memory are linear in it: DPNE's largest contribution bound
#: (:data:`dpgpu.mechanisms.dpne.MAX_CONTRIBUTION`, not imported: DPNE imports this module).
MAX_ITEMS = 10_000


def laplace_scale(epsilon: float, sensitivity: float = 1.0, *, name: str = "sensitivity",
                  factor: Fraction = Fraction(1)) -> float:
    """Scale of (discrete) Laplace noise for ``epsilon``-DP: ``factor * sensitivity / epsilon``.

    Parameters
    ----------
    epsilon : float
        Finite, ``> 0``.
    sensitivity : float
        L1 sensitivity, finite, ``> 0`` (for discrete Laplace on integer
        counts: the largest change one individual makes).
    name : str
        The parameter that sets ``sensitivity`` (``"l_max"``, ``"--sensitivity"``),
        named when the scale passes the samplers' limit because of it.
    factor : Fraction
        Any other factor of the scale (PrivTree's ``(2 beta - 1) / (beta - 1)``).

    Returns
    -------
    float
        The scale, rounded up.

    Raises
    ------
    InvalidParameter
        When the scale passes the samplers' limit
        (:data:`~dpgpu.privacy.samplers.MAX_LAPLACE_SCALE`, ``2**52``): naming
        ``epsilon`` when it passes even at a sensitivity of 1, else ``name``,
        with the largest value this epsilon allows.
    """
    shown = sensitivity if isinstance(sensitivity, int) else None  # an integer as given
    epsilon = check_positive_real(epsilon, "epsilon")
    sensitivity = check_positive_real(sensitivity, name)
    unit = factor / Fraction(epsilon)  # exact: no overflow to check first
    scale = unit * Fraction(sensitivity)
    if scale <= MAX_LAPLACE_SCALE:
        return float_at_least(scale)
    if unit > MAX_LAPLACE_SCALE:
        raise InvalidParameter(f"epsilon: too small; a budget of {epsilon:.3g} makes the noise "
                               f"scale {_show(unit)} even at {name} = 1, past the samplers' "
                               "limit of 2**52; raise epsilon")
    raise InvalidParameter(f"{name}: {shown or f'{sensitivity:g}'} makes the noise scale "
                           f"{_show(scale)} "
                           f"(over a budget of {epsilon:.3g}) pass the samplers' limit of "
                           f"2**52; at this epsilon {name} can be at most "
                           f"{math.floor(MAX_LAPLACE_SCALE / unit)}: lower {name} or raise epsilon")


def _show(value: Fraction) -> str:
    """``value`` to three digits, also past the largest float."""
    if value <= sys.float_info.max:
        return f"{float(value):.3g}"
    return f"{Decimal(value.numerator) / value.denominator:.3g}"


def laplace_scales(epsilon: Any, sensitivity: Any = 1.0):
    """``sensitivity / epsilon`` element by element, one float step up (never below the quotient).

    The vectorised twin of :func:`laplace_scale` for arrays of budgets: a
    float division is within half a unit in the last place of the quotient,
    so the next float up is above it.
    """
    return np.nextafter(np.divide(sensitivity, epsilon, dtype=np.float64), np.inf)


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """Exact ``delta`` of the Gaussian mechanism at ``epsilon`` (Balle & Wang, Thm 8).

    Parameters
    ----------
    sigma, epsilon, sensitivity : float
        Finite, ``> 0``; ``sensitivity`` is the L2 sensitivity.

    Returns
    -------
    float
        ``Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)``.
    """
    sigma = check_positive_real(sigma, "sigma")
    epsilon = check_positive_real(epsilon, "epsilon")
    sensitivity = check_positive_real(sensitivity, "sensitivity")
    return math.exp(_log_gaussian_delta(sigma / sensitivity, epsilon))


def _log_gaussian_delta(s: float, epsilon: float) -> float:
    """``log delta`` for unit sensitivity, without cancellation, for any epsilon.

    ``delta = Phi(-a) - e^eps Phi(-b)`` with ``a = eps s - 1/(2s)`` (exact
    from the floats, then rounded: ``eps s`` and ``1/(2s)`` agree to many
    digits at a large epsilon) and ``b = eps s + 1/(2s)``.  As ``b**2 - a**2 =
    2 eps``, ``eps + log Phi(-b)`` is ``-a**2/2 - log(b sqrt(2 pi)) + log(1 -
    b**-2 + 3 b**-4 - 15 b**-6 + 105 b**-8)`` (the normal tail's asymptotic
    series, truncated below ``1e-17`` for ``b >= 100``), where ``eps`` cancels
    exactly; below ``b = 100`` (``eps < 5000``) it is computed directly.
    """
    exact = Fraction(epsilon) * Fraction(s) - 1 / (2 * Fraction(s))
    try:
        a = float(exact)
    except OverflowError:                         # delta is 0 (exact > 0) or 1
        a = math.inf if exact > 0 else -math.inf
    b = epsilon * s + 0.5 / s
    la = float(log_ndtr(-a))
    if la == -math.inf:                           # delta <= Phi(-a) underflows
        return la
    if b < 100:
        tail = epsilon + float(log_ndtr(-b))
    else:
        x = 1 / (b * b)
        tail = (-0.5 * a * a - math.log(b) - 0.5 * math.log(2 * math.pi)
                + math.log1p(x * (-1 + x * (3 + x * (-15 + x * 105)))))
    gap = tail - la                               # < 0 because delta > 0
    return la + math.log(-math.expm1(min(gap, -1e-300)))


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest Gaussian ``sigma`` that is ``(epsilon, delta)``-DP (Balle & Wang 2018).

    Parameters
    ----------
    epsilon : float
        Finite, ``> 0`` (any size: at ``1e200``, ``sigma`` is about
        ``7.07e-101``, where ``delta(sigma)`` falls from 1 to 0 within a few
        units in the last place).
    delta : float
        In ``(0, 1)``.
    sensitivity : float
        L2 sensitivity, finite, ``> 0``.

    Returns
    -------
    float
        ``sigma`` with ``gaussian_delta(sigma, epsilon, sensitivity) <= delta``,
        within a relative ``1e-12`` of the exact solution (rounded up).
    """
    epsilon = check_positive_real(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    sensitivity = check_positive_real(sensitivity, "sensitivity")
    target = math.log(delta)

    def excess(log_s: float) -> float:
        # log delta >= log(5e-324) > -745 when it is representable: the floor keeps brentq
        # finite where delta underflows (a large epsilon), and the sign right
        return max(_log_gaussian_delta(math.exp(log_s), epsilon), -1000.0) - target

    lo, hi, step = -1.0, 1.0, 2.0
    while excess(lo) <= 0:                    # delta(s) falls as s grows
        lo, step = lo - step, 2 * step        # (log s is about -355 at epsilon 1.7e308)
    step = 2.0
    while excess(hi) > 0:
        hi, step = hi + step, 2 * step
    s = math.exp(brentq(excess, lo, hi, xtol=1e-14, rtol=1e-15))
    while math.exp(_log_gaussian_delta(s, epsilon)) > delta:  # the guarantee; a few steps
        s *= 1 + 1e-13
    sigma = Fraction(s) * Fraction(sensitivity)
    if sigma > Fraction(sys.float_info.max):
        raise InvalidParameter(f"sensitivity: {sensitivity:g} at epsilon={epsilon:g}, "
                               f"delta={delta:g} needs a sigma beyond the largest float")
    return float_at_least(sigma)


def discrete_gaussian_delta(sigma: float, epsilon: float, sensitivity: int = 1) -> float:
    """Exact ``delta`` of discrete Gaussian noise on an integer query (CKS20, Thm 7).

    ``delta = P[Y > eps s^2/D - D/2] - e^eps P[Y > eps s^2/D + D/2]`` for
    ``Y ~ N_Z(0, s^2)``, summed term by term as
    ``sum_{y > a} p(y) (1 - exp(eps - (2 y D + D^2) / (2 s^2)))`` so the
    difference never cancels.

    Parameters
    ----------
    sigma, epsilon : float
        Finite, ``> 0``.
    sensitivity : int
        Integer L2 sensitivity ``D >= 1``.

    Returns
    -------
    float
    """
    sigma = check_positive_real(sigma, "sigma")
    epsilon = check_positive_real(epsilon, "epsilon")
    d = check_positive_int(sensitivity, "sensitivity")
    s2 = sigma * sigma
    reach = math.ceil(40 * sigma) + 2
    y = np.arange(-reach, reach + 1, dtype=np.float64)
    logw = -y * y / (2 * s2)
    log_z = float(np.logaddexp.reduce(logw))
    a = epsilon * s2 / d - d / 2
    keep = y > a
    if not keep.any():
        return 0.0
    yk = y[keep]
    terms = np.exp(logw[keep] - log_z) * -np.expm1(epsilon - (2 * yk * d + d * d) / (2 * s2))
    return _up(float(terms.sum()) * (1 + 1e-12))


def discrete_gaussian_sigma(epsilon: float, delta: float, sensitivity: int = 1) -> float:
    """Smallest discrete-Gaussian ``sigma`` with ``discrete_gaussian_delta <= delta``.

    Use this, not :func:`analytic_gaussian_sigma`, for
    :class:`~dpgpu.privacy.samplers.DiscreteGaussian` noise: at the continuous
    sigma the discrete Gaussian's delta can be a few percent above the target
    (1.037e-5 for a 1e-5 target at epsilon 1).

    Parameters
    ----------
    epsilon : float
        Finite, ``> 0``.
    delta : float
        In ``(0, 1)``.
    sensitivity : int
        Integer L2 sensitivity ``>= 1``.

    Returns
    -------
    float
        Within a relative ``1e-9`` above the smallest such sigma.
    """
    epsilon = check_positive_real(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    d = check_positive_int(sensitivity, "sensitivity")
    lo = hi = analytic_gaussian_sigma(epsilon, delta, d)
    while discrete_gaussian_delta(hi, epsilon, d) > delta:
        lo, hi = hi, hi * 1.25
    while discrete_gaussian_delta(lo, epsilon, d) <= delta:
        lo, hi = lo / 1.25, lo
    while hi - lo > 1e-9 * hi:                     # bisection: ~40 steps
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if discrete_gaussian_delta(mid, epsilon, d) <= delta else (mid, hi)
    return hi


def dpsu_threshold(sigma: float, delta: float, max_items: int) -> float:
    """The weighted-Gaussian DPSU threshold ``rho`` (DPNE Theorem 2.1).

    ``rho = max_{1 <= t <= max_items} 1/sqrt(t) + sigma Phi^-1((1 - delta)^(1/t))``
    where ``delta`` is the share of the release's delta spent on the
    threshold (half of it in :func:`dpsu_gaussian`; published test vectors,
    e.g. 17.3803 for ``sigma = analytic_gaussian_sigma(1, 1e-5)``,
    ``delta = 1e-5``, ``max_items = 3``, are quoted per share).

    Privacy argument (Gopi et al. 2020): a user who keeps ``t <= max_items``
    items gives each weight ``1/sqrt(t)``; the items only this user holds
    must all stay at or below ``rho`` after ``N(0, sigma^2)`` noise except with
    probability ``delta``, i.e. ``Phi((rho - 1/sqrt(t))/sigma)^t >= 1 - delta``
    for every ``t``.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, finite, ``> 0``.
    delta : float
        The threshold's share of delta, in ``(0, 1)``.
    max_items : int
        ``Delta_0``: items each user contributes at most, from 1 to
        :data:`MAX_ITEMS`.

    Returns
    -------
    float
        ``rho`` (released items are those whose noisy weight is ``> rho``).
    """
    sigma = check_positive_real(sigma, "sigma")
    delta = check_probability(delta, "delta")
    max_items = check_positive_int(max_items, "max_items", maximum=MAX_ITEMS)
    t = np.arange(1, max_items + 1, dtype=np.float64)
    # Phi^-1((1 - delta)^(1/t)) = -Phi^-1(1 - (1 - delta)^(1/t)), computed without rounding 1 - x.
    tail = -np.expm1(np.log1p(-delta) / t)
    rho = 1 / np.sqrt(t) - sigma * ndtri(tail)
    return _up(float(rho.max()))


def dpsu_gaussian(epsilon: float, delta: float, max_items: int) -> tuple[float, float]:
    """``(sigma, rho)`` of weighted-Gaussian DP set union at ``(epsilon, delta)``.

    ``sigma = analytic_gaussian_sigma(epsilon, delta / 2)`` (L2 sensitivity 1:
    each user's weights have unit L2 norm) and ``rho = dpsu_threshold(sigma,
    delta / 2, max_items)``; the release is ``(epsilon, delta)``-DP (Gopi et
    al. 2020; DPNE Theorem 2.1 with one level).

    Parameters
    ----------
    epsilon : float
        Finite, ``> 0``.
    delta : float
        In ``(0, 1)``.
    max_items : int
        ``Delta_0``, from 1 to :data:`MAX_ITEMS`.

    Returns
    -------
    (float, float)
    """
    epsilon = check_positive_real(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    max_items = check_positive_int(max_items, "max_items", maximum=MAX_ITEMS)
    sigma = analytic_gaussian_sigma(epsilon, delta / 2)
    return sigma, dpsu_threshold(sigma, delta / 2, max_items)


def split_gaussian_sigma(sigma: float, weights: Sequence[float]) -> list[float]:
    """Split a Gaussian budget ``sigma*`` into ``sigma_k`` with ``sum sigma_k**-2 <= sigma***-2``.

    ``sigma_k = sigma* sqrt(W / w_k)`` with ``W = sum(weights)`` (DPNE
    Theorem 2.1: a larger weight is a larger share of the budget), each
    rounded up.

    Parameters
    ----------
    sigma : float
        Finite, ``> 0``.
    weights : sequence of float
        Non-empty, each finite and ``> 0``.

    Returns
    -------
    list of float
    """
    sigma = check_positive_real(sigma, "sigma")
    w = check_positive_reals(weights, "weights")
    total = math.fsum(w)
    return [_up(sigma * math.sqrt(total / x) * (1 + 1e-15)) for x in w]


def integer_threshold(rho: float) -> int:
    """The least integer strictly above ``rho``.

    For integer noisy counts, ``count > rho`` is ``count >= integer_threshold(rho)``.
    Truncating ``rho`` instead (37.3 -> 37) lets counts of exactly 37 through
    and raises delta (google/differential-privacy PR #101).

    Parameters
    ----------
    rho : float
        Finite (any sign).
    """
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.integer, np.floating)) \
            or not math.isfinite(rho):
        raise InvalidParameter(f"rho: must be a finite number, got {rho!r}")
    return math.floor(rho) + 1


def sampling_delta(tv_per_draw: float, n_draws: int, epsilon: float) -> float:
    """Delta that accounts the samplers' distance from exact noise.

    A step that is ``(epsilon, delta)``-DP with ideal noise and draws
    ``n_draws`` values, each within total variation ``tv_per_draw`` of ideal,
    is ``(epsilon, delta + (1 + e^epsilon) n_draws tv_per_draw)``-DP.
    ``n_draws`` must be public (an upper bound when the count depends on the
    data).

    Parameters
    ----------
    tv_per_draw : float
        Finite, ``>= 0`` (``sampler.tv_per_draw``).
    n_draws : int
        ``>= 0``.
    epsilon : float
        Finite, ``>= 0``.

    Returns
    -------
    float
    """
    tv = check_positive_real(tv_per_draw, "tv_per_draw", allow_zero=True)
    n = check_positive_int(n_draws, "n_draws", minimum=0)
    epsilon = check_positive_real(epsilon, "epsilon", allow_zero=True)
    if n * tv == 0:
        return 0.0
    if epsilon > 700:                     # e^epsilon overflows; no finite bound
        return math.inf
    return _up((1 + math.exp(epsilon)) * n * tv)


def _up(x: float) -> float:
    """The next float above ``x`` (absorbs the last rounding of a computation)."""
    return math.nextafter(x, math.inf)
