"""Exact host arithmetic behind the samplers: fixed-point weights and 64-bit CDF tables.

A sampler here turns one uniform 64-bit word ``u`` into an outcome by counting
how many thresholds of a sorted table are ``<= u``.  The thresholds are the
cumulative distribution, rounded to multiples of ``2**-64``, of *integer*
weights computed once per parameter on the host with Python integers
(fixed point with :data:`PRECISION` fractional bits; ``exp`` from
:mod:`decimal` at 100 significant digits).  No floating-point number touches
a threshold.

Distance from exact.  :func:`cdf_table` computes, in exact rational
arithmetic, the total-variation distance between the table's distribution and
the distribution of its fixed-point weights.  The fixed-point weights
themselves differ from the ideal real weights by less than ``2**-150`` in
total variation for every table dpgpu builds (each weight carries at most
``k**2`` truncations of ``2**-256`` after ``k`` recurrence steps, ``k <
2**22``), and :data:`WEIGHT_SLACK` adds that to every bound.

The search (:func:`search`) is a branch-free binary search with exactly
``log2(len(table) + 1)`` steps for every draw, so the work never depends on
the data or on the noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Context, Decimal
from fractions import Fraction
from itertools import accumulate
from typing import Any

import numpy as np

#: Fractional bits of the fixed-point weights.
PRECISION = 256
#: Upper bound on the distance between fixed-point and real weights.
WEIGHT_SLACK = 2.0 ** -150
_ONE = 1 << PRECISION
_MAX_U64 = (1 << 64) - 1
_DECIMAL = Context(prec=100)


def exp_neg_fixed(x: Fraction) -> int:
    """``exp(-x) * 2**PRECISION`` as an integer, for a rational ``x >= 0``."""
    d = _DECIMAL.divide(Decimal(x.numerator), Decimal(x.denominator))
    return int(_DECIMAL.multiply(_DECIMAL.exp(-d), Decimal(_ONE)))


def geometric_weights(ratio: int, n: int) -> list[int]:
    """Fixed-point weights ``ratio**v`` for ``v = 0 .. n-1`` (``ratio`` fixed point)."""
    weights = [_ONE]
    for _ in range(n - 1):
        weights.append((weights[-1] * ratio) >> PRECISION)
    return weights


def gaussian_half_weights(sigma: float, t: int) -> list[int]:
    """Fixed-point weights ``exp(-k**2 / (2 sigma**2))`` for ``k = 0 .. t``.

    Uses ``w[k+1] = w[k] * a[k]`` with ``a[k] = exp(-(2k+1) / (2 sigma**2))``
    and ``a[k+1] = a[k] * exp(-1 / sigma**2)``.
    """
    s2 = Fraction(sigma) ** 2
    a = exp_neg_fixed(1 / (2 * s2))
    c = exp_neg_fixed(1 / s2)
    weights = [_ONE]
    for _ in range(t):
        weights.append((weights[-1] * a) >> PRECISION)
        a = (a * c) >> PRECISION
    return weights


@dataclass(frozen=True)
class CdfTable:
    """A sorted uint64 threshold table for :func:`search`.

    Attributes
    ----------
    thresholds : numpy.ndarray
        ``2**b - 1`` sorted uint64 values; the first ``pad`` are zeros.
    pad : int
        Leading zeros; subtract from :func:`search`'s count to get the
        outcome index ``0 .. n-1``.
    tv : float
        Upper bound on the total-variation distance between the outcome
        distribution (for a uniform word) and the normalised weights.
    """

    thresholds: np.ndarray
    pad: int
    tv: float
    _device: dict = field(default_factory=dict, repr=False, compare=False)

    def on(self, xp: Any):
        """The thresholds as an array of ``xp`` (copied to a device once)."""
        key = xp.__name__
        if key not in self._device:
            self._device[key] = xp.asarray(self.thresholds)
        return self._device[key]


def cdf_table(weights: list[int]) -> CdfTable:
    """The 64-bit CDF table of integer ``weights`` (at least two outcomes).

    Threshold ``i`` is ``round(2**64 * (w_0 + ... + w_i) / Z)`` (capped at
    ``2**64 - 1``), so outcome ``i`` has probability
    ``(thr_i - thr_{i-1}) / 2**64``.
    """
    n = len(weights)
    z = sum(weights)
    half = z >> 1
    thr = [min(((c << 64) + half) // z, _MAX_U64) for c in accumulate(weights[:-1])]
    err, prev = 0, 0
    for t, w in zip(thr + [1 << 64], weights):
        err += abs((t - prev) * z - (w << 64))
        prev = t
    tv = float_at_least(Fraction(err, (2 * z) << 64)) + WEIGHT_SLACK
    bits = (n - 1).bit_length()
    pad = (1 << bits) - n
    table = np.zeros(pad + n - 1, dtype=np.uint64)
    table[pad:] = np.array(thr, dtype=np.uint64)
    return CdfTable(table, pad, tv)


def search(table: Any, u: Any, xp: Any):
    """Count the entries of a sorted ``(2**b - 1,)`` table that are ``<= u``.

    Exactly ``b`` gather-compare steps per element, with no branches.
    Returns int64 counts in ``[0, 2**b - 1]``.
    """
    pos = xp.zeros(u.shape, dtype=xp.int64)
    step = (table.shape[0] + 1) >> 1
    while step:
        hit = (xp.take(table, pos + (step - 1)) <= u).astype(xp.int64)
        pos += hit * step
        step >>= 1
    return pos


def float_at_least(x: Fraction) -> float:
    """The least float ``>= x``."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)


def float_at_most(x: Fraction) -> float:
    """The largest float ``<= x``."""
    f = float(x)
    return f if Fraction(f) <= x else math.nextafter(f, -math.inf)
