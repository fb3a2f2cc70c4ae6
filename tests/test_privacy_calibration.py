"""Calibration against published vectors and its own definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from dpgpu.privacy import analytic_gaussian_sigma, discrete_gaussian_delta, \
    discrete_gaussian_sigma, dpsu_gaussian, dpsu_threshold, gaussian_delta, sampling_delta, \
    split_gaussian_sigma


@pytest.mark.parametrize("epsilon, delta, max_items, rho", [
    # anchors-implementations.md section 2.2: weighted-Gaussian DPSU thresholds, quoted
    # per delta share (sigma = AGM(eps, delta), rho from (1 - delta)^(1/t)); the DPNE
    # calibration (tol 1e-12) gives 17.380345 and 146.481934, Google's 1e-3 bisection
    # 17.38400956867444 and 146.48399729851198.
    (1.0, 1e-5, 3, 17.380345),
    (0.1, 1e-5, 10, 146.481934),
])
def test_dpsu_threshold_published_vectors(epsilon, delta, max_items, rho):
    sigma = analytic_gaussian_sigma(epsilon, delta)
    assert dpsu_threshold(sigma, delta, max_items) == pytest.approx(rho, abs=2e-6)
    # dpsu_gaussian takes the release's total delta and gives each part half of it.
    assert dpsu_gaussian(epsilon, 2 * delta, max_items) == (sigma, pytest.approx(rho, abs=2e-6))
    # Google's coarser bisection is conservative: slightly above ours, never below.
    assert dpsu_threshold(sigma, delta, max_items) < rho + 4e-3


def test_dpsu_threshold_definition():
    sigma, delta, max_items = 2.0, 1e-6, 7
    rho = dpsu_threshold(sigma, delta, max_items)
    for t in range(1, max_items + 1):
        # P[all t items of weight 1/sqrt(t) stay at or below rho] >= 1 - delta
        assert norm.cdf((rho - 1 / math.sqrt(t)) / sigma) ** t >= 1 - delta - 1e-15
    assert any(norm.cdf((rho - 1e-6 - 1 / math.sqrt(t)) / sigma) ** t < 1 - delta
               for t in range(1, max_items + 1))


@pytest.mark.parametrize("epsilon, delta, sensitivity", [
    (1.0, 1e-5, 1.0), (0.1, 1e-10, 1.0), (8.0, 1e-3, 1.0), (0.5, 1e-6, 3.0), (3.0, 0.4, 0.25),
])
def test_analytic_gaussian_is_the_smallest_sigma(epsilon, delta, sensitivity):
    sigma = analytic_gaussian_sigma(epsilon, delta, sensitivity)
    assert gaussian_delta(sigma, epsilon, sensitivity) <= delta
    assert gaussian_delta(sigma * (1 - 1e-9), epsilon, sensitivity) > delta
    # The classical bound sqrt(2 ln(1.25/delta)) / eps is looser where it applies.
    if epsilon < 1:
        assert sigma < sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon


def test_analytic_gaussian_reference_value():
    # Balle & Wang (2018), eps = 1, delta = 1e-5: sigma = 3.7306... (also DPNE's sigma_0).
    assert analytic_gaussian_sigma(1.0, 1e-5) == pytest.approx(3.730631634816, rel=1e-10)


def test_discrete_gaussian_delta_matches_direct_sum():
    sigma, epsilon = 1.7, 0.8
    y = np.arange(-60, 61)
    p = np.exp(-y ** 2 / (2 * sigma ** 2))
    p /= p.sum()
    a = epsilon * sigma ** 2 - 0.5
    direct = p[y > a].sum() - math.exp(epsilon) * p[y > a + 1].sum()
    assert discrete_gaussian_delta(sigma, epsilon) == pytest.approx(direct, rel=1e-9)
    # at the analytic sigma the discrete Gaussian is within a few percent of the target
    s = analytic_gaussian_sigma(1.0, 1e-5)
    assert discrete_gaussian_delta(s, 1.0) == pytest.approx(1e-5, rel=0.1)


@pytest.mark.parametrize("epsilon, delta, sensitivity", [(1.0, 1e-5, 1), (2.0, 1e-3, 3),
                                                      (1.0, 0.3, 1)])
def test_discrete_gaussian_sigma_is_the_smallest_sigma(epsilon, delta, sensitivity):
    sigma = discrete_gaussian_sigma(epsilon, delta, sensitivity)
    assert discrete_gaussian_delta(sigma, epsilon, sensitivity) <= delta
    assert discrete_gaussian_delta(sigma * (1 - 1e-8), epsilon, sensitivity) > delta


def test_split_gaussian_sigma_keeps_the_total():
    sigmas = split_gaussian_sigma(3.0, [1, 10, 100])
    assert math.fsum(s ** -2 for s in sigmas) <= 3.0 ** -2
    assert math.fsum(s ** -2 for s in sigmas) == pytest.approx(3.0 ** -2, rel=1e-12)
    assert sigmas[0] > sigmas[1] > sigmas[2]


def test_sampling_delta():
    assert sampling_delta(1e-17, 10 ** 6, 1.0) == pytest.approx((1 + math.e) * 1e-11)
    assert sampling_delta(0.0, 10, 1.0) == 0.0
    assert sampling_delta(1e-17, 5, 1000.0) == math.inf


def test_laplace_scales_never_fall_below_the_quotient():
    """Vectorised scales round up (a review found sens / eps rounding below it)."""
    from fractions import Fraction

    from dpgpu.privacy import laplace_scales

    rng = np.random.default_rng(0)
    eps = rng.random(2000) + 1e-3
    sens = rng.integers(1, 50, 2000).astype(float)
    got = laplace_scales(eps, sens)
    assert all(Fraction(g) >= Fraction(s) / Fraction(e) for g, s, e in zip(got, sens, eps))
    plain = sens / eps
    assert np.all(got > plain) and np.all(got <= np.nextafter(plain, np.inf))


@pytest.mark.parametrize("epsilon", [1e3, 4999.0, 5001.0, 1e6, 1e12, 1e30, 1e200, 1.7e308])
@pytest.mark.parametrize("delta", [1e-300, 1e-5, 0.5])
def test_analytic_gaussian_sigma_at_large_epsilon(epsilon, delta):
    """Regression: epsilon 1e200 raised 'function value at x=-1.0 is NaN' (eps s and 1/(2s)
    cancel, and log_ndtr overflowed)."""
    sigma = analytic_gaussian_sigma(epsilon, delta)
    assert gaussian_delta(sigma, epsilon) <= delta
    assert gaussian_delta(sigma * (1 - 1e-12), epsilon) > delta              # the smallest
    if epsilon >= 1e30:                 # delta(s) drops from 1 to 0 near s = 1/sqrt(2 eps)
        assert sigma == pytest.approx(1 / math.sqrt(2 * epsilon), rel=1e-12)


def test_gaussian_sigma_beyond_the_floats_names_sensitivity():
    from dpgpu.errors import InvalidParameter  # noqa: PLC0415

    with pytest.raises(InvalidParameter, match="^sensitivity: "):
        analytic_gaussian_sigma(1e-300, 1e-5, 1e305)


def test_cli_calibrate_gaussian_at_huge_epsilon(capsys):
    from dpgpu.cli import main  # noqa: PLC0415

    assert main(["calibrate", "gaussian", "--epsilon", "1e200", "--delta", "1e-5"]) == 0
    sigma = float(capsys.readouterr().out.split()[1])
    assert sigma == pytest.approx(7.0710678118654755e-101, rel=1e-12)


@pytest.mark.parametrize("epsilon,sensitivity,named", [
    (1e-300, 1.0, "epsilon: too small"), (1e-300, 1e305, "epsilon: too small"),
    (1e-9, 2.0 ** 30, r"sensitivity: 1\.07374e\+09 makes the noise scale 1\.07e\+18"),
    (1.0, 1e308, "sensitivity: .* can be at most 4503599627370496")])
def test_laplace_scale_past_the_samplers_limit_names_what_is_at_fault(epsilon, sensitivity,
                                                                      named):
    """epsilon when the scale passes the limit even at sensitivity 1, else the sensitivity."""
    from dpgpu.errors import InvalidParameter
    from dpgpu.privacy import laplace_scale

    with pytest.raises(InvalidParameter, match=f"^{named}"):
        laplace_scale(epsilon, sensitivity)
    assert laplace_scale(1.0, 2.0 ** 52) == 2.0 ** 52  # the limit itself is allowed
