"""Threshold relaxation (PFS^2 Section V-B).

The noisy local support of a k-sequence ``t`` whose support in ``D`` equals
the threshold is modelled as ``Normal(mu, sigma^2) + Laplace(0, phi)`` with
``mu = f n``, ``sigma^2 = f (1 - f) n`` (the binomial sample count, ``f`` the
relative threshold, ``n`` the sample size) and ``phi = Delta_k / eps_4``.
The relaxed threshold ``theta'`` solves ``F(theta') = zeta`` for the CDF of
that sum (Diaz-Francis and Montoya's closed form, the paper's ref. [25]).

Only public values enter: ``theta``, ``zeta``, ``Delta_k``, ``eps_4`` and the
sample size estimated from the noisy ``|D|`` and ``L_f``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, ndtr


def normal_laplace_cdf(z: float, mu: float, sigma: float, phi: float) -> float:
    """CDF at ``z`` of ``Normal(mu, sigma^2) + Laplace(0, phi)``.

    Parameters
    ----------
    z : float
    mu : float
    sigma : float
        ``>= 0`` (0: the Laplace CDF shifted by ``mu``).
    phi : float
        Laplace scale, ``> 0``.

    Returns
    -------
    float

    Notes
    -----
    ``F(z) = Phi(u) - 1/2 e^{s^2/2 - u s} Phi(u - s) + 1/2 e^{s^2/2 + u s} Phi(-u - s)``
    with ``u = (z - mu) / sigma`` and ``s = sigma / phi``: the paper's erfc
    form with ``erfc(x) = 2 Phi(-sqrt(2) x)``.  The exponential factors are
    combined with ``log Phi`` so that no term overflows.
    """
    if sigma <= 0.0:
        d = (z - mu) / phi
        return 1.0 - 0.5 * math.exp(-d) if d >= 0 else 0.5 * math.exp(d)
    u = (z - mu) / sigma
    s = sigma / phi
    lower = math.exp(s * s / 2 - u * s + float(log_ndtr(u - s)))
    upper = math.exp(s * s / 2 + u * s + float(log_ndtr(-u - s)))
    return float(np.clip(float(ndtr(u)) - 0.5 * lower + 0.5 * upper, 0.0, 1.0))


def relaxed_threshold(theta: float, sample_size: float, sensitivity: float, epsilon: float,
                      zeta: float) -> float:
    """The relaxed local threshold ``theta'`` with ``F(theta') = zeta`` (an absolute count).

    Parameters
    ----------
    theta : float
        Relative threshold in ``(0, 1)``.
    sample_size : float
        Estimated number of sequences of the sample database (public).
    sensitivity : float
        ``Delta_k`` of the local supports.
    epsilon : float
        Budget of the local supports (``eps_4``).
    zeta : float
        Relaxation parameter in ``(0, 1)`` (the paper uses 0.3).

    Returns
    -------
    float

    Notes
    -----
    The root is bracketed by stepping out from ``mu`` by ``w = 40 (sigma +
    phi) + 1``, doubling the step, until the CDF is below ``zeta`` on the left
    and at least ``zeta`` on the right.  The computed CDF reaches 0 and 1
    (its terms underflow) within about ``40 (sigma + phi)`` of ``mu`` plus
    the Laplace tail's ``phi log(1 / zeta) <= 745 phi``, so a few doublings
    bracket every ``zeta`` in ``(0, 1)``, down to the smallest float.
    """
    mu = theta * sample_size
    sigma = math.sqrt(max(theta * (1.0 - theta) * sample_size, 0.0))
    phi = sensitivity / epsilon

    def excess(z: float) -> float:
        return normal_laplace_cdf(z, mu, sigma, phi) - zeta

    width = 40.0 * (sigma + phi) + 1.0
    left = right = width
    while excess(mu - left) >= 0:
        left *= 2
    while excess(mu + right) < 0:
        right *= 2
    return float(brentq(excess, mu - left, mu + right, xtol=1e-9, rtol=1e-12))
