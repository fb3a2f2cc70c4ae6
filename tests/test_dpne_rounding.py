"""Rounding in the safe direction in DPNE's calibration and its DPSU baselines.

Each test recomputes the exact quantity itself (``fractions.Fraction`` or
``decimal`` at 60 digits, with explicit margins), never through the code
under test, and checks that the calibration never rounds the unsafe way.
"""

from __future__ import annotations

import math
from decimal import Context, Decimal, localcontext
from fractions import Fraction

import pytest

from dpgpu.mechanisms.dpne.baselines import GRID, laplace_threshold, run_noise
from dpgpu.mechanisms.dpne.calibration import zcdp_sigma

PREC = Context(prec=60)


def _laplace_tail(scale: float, c: int) -> Decimal:
    """``P[L > c] = exp(-(c + 1) / scale) / (1 + exp(-1 / scale))`` to 60 digits."""
    with localcontext(PREC):
        x = 1 / Decimal(scale)
        return (-(c + 1) * x).exp() / (1 + (-x).exp())


# 1. laplace_threshold.  At scale 2560 (epsilon 0.1 on one run: laplace_scale(0.1, GRID))
# the float p = exp(-1/2560) is 4.6e-17 below the real one, so the float p**(c + 1) at
# c = 36000 is 1.65e-12 below the real tail, more than the 1e-12 kept off q.  With delta a
# hair (1e-13) below the real tail at c0 and one item (t = 1, so the share is delta
# itself), the float loop stopped at c0, whose real tail is above delta.
@pytest.mark.parametrize("c0", [30000, 36000, 40000])
def test_laplace_threshold_tail_is_exact_at_the_edge(c0):
    scale = 2560.0
    with localcontext(PREC):
        delta = float(_laplace_tail(scale, c0) * (1 - Decimal("1e-13")))
    c = laplace_threshold(scale, delta, 1) - GRID
    assert _laplace_tail(scale, c) <= Decimal(delta)            # the real tail, at 60 digits
    assert c <= c0 + 1                                          # one step more, no more


# The same, where the parameters are those of releases (dpsu-all / -single at epsilon 0.1,
# dpsu-even with T = 6 at 0.5 and T = 9 at 0.1): for every t the threshold keeps a user's t
# grams all unreleased with probability at least 1 - delta, checked exactly from an upper
# bound on the tail ((1 - tail)**t in fractions).
@pytest.mark.parametrize("scale", [2560.0, 3072.0, 23040.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-7 / 9])
def test_laplace_threshold_holds_exactly_for_every_t(scale, delta):
    cap = 4
    thr = laplace_threshold(scale, delta, cap)
    for t in range(1, cap + 1):
        c = thr - -(-GRID // t)
        with localcontext(PREC):
            tail = Fraction(_laplace_tail(scale, c) * (1 + Decimal("1e-50")))
        assert (1 - tail) ** t >= 1 - Fraction(delta)


# 2. dpsu-even's weighted noise.  GRID sigma* sqrt(n) in floats is rounded to nearest and
# lands below the real product for about half the run counts (32 of 63 at sigma* =
# zcdp_sigma(2, 5e-6) = 2.221228239839255; n = 3: 984.9037226517446 against
# 984.90372265174468...), accounting slightly less zCDP than the runs spend.
@pytest.mark.parametrize("sigma_star", [2.221228239839255, 4.5308771170409745, 8.96234594804049])
def test_even_sigma_never_below_exact(sigma_star):
    from dpgpu.mechanisms.dpne.baselines import even_sigma  # noqa: PLC0415 - new helper

    for n in range(1, 64):
        sigma = GRID * even_sigma(sigma_star, n)
        exact_square = Fraction(GRID) ** 2 * Fraction(sigma_star) ** 2 * n
        assert Fraction(sigma) ** 2 >= exact_square, n
        # and no more than rounding: at most two floats above the real value
        assert Fraction(math.nextafter(math.nextafter(sigma, 0), 0)) ** 2 < exact_square, n
    assert even_sigma(sigma_star, 1) == sigma_star                   # exact at one run


def test_dpsu_even_noise_never_below_exact():
    sigma_star = 2.221228239839255
    for n in (3, 6, 11, 12, 13):     # the float product is below the real one at these
        sigma = run_noise("weighted", 1.0, n, sigma_star).sigma
        assert Fraction(sigma) ** 2 >= Fraction(GRID) ** 2 * Fraction(sigma_star) ** 2 * n, n


# 3. zcdp_sigma.  The float check of CKS20 Corollary 13's bound has no margin: the sigma it
# returned for (1.5, 1e-10) gave a real bound (infimum over the order a) 3.3e-15 above
# delta; (0.3, 1e-7): 1.2e-15; (2, 5e-5): 1.5e-15; (0.2, 5e-6): 1.1e-15.
def _cks_delta(sigma: float, epsilon: float) -> Decimal:
    """``inf_{a > 1} exp((a-1)(a rho - eps)) (1 - 1/a)**a / (a - 1)``, ``rho = 1/(2 sigma**2)``.

    The log of the bound is convex in ``a`` with derivative ``(2a - 1) rho - eps +
    ln(1 - 1/a)``; bisection on it finds the order to 60 digits, where the bound is
    flat: its value there exceeds the infimum by far less than the digits kept.
    """
    with localcontext(PREC):
        eps = Decimal(epsilon)
        rho = 1 / (2 * Decimal(sigma) ** 2)

        def slope(a):
            return (2 * a - 1) * rho - eps + (1 - 1 / a).ln()

        lo, hi = Decimal(1) + Decimal("1e-30"), Decimal(2)
        while slope(hi) < 0:
            hi *= 2
        for _ in range(220):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
        a = (lo + hi) / 2
        return ((a - 1) * (a * rho - eps) - (a - 1).ln() + a * (1 - 1 / a).ln()).exp()


@pytest.mark.parametrize("epsilon,delta", [(1.5, 1e-10), (0.3, 1e-7), (2.0, 5e-5),
                                           (0.2, 5e-6), (1.0, 5e-8)])
def test_zcdp_sigma_meets_the_exact_conversion(epsilon, delta):
    sigma = zcdp_sigma(epsilon, delta)
    assert _cks_delta(sigma, epsilon) <= Decimal(delta)
    # still the least sigma up to the search's steps: 1e-10 smaller misses delta
    assert _cks_delta(sigma / (1 + 1e-10), epsilon) > Decimal(delta)
