"""Noisy sequence-length statistics, the DP length quantiles several mechanisms need.

Adding or removing one sequence changes the number of sequences by 1 and
one bin of the length histogram by 1 (the bins are disjoint), so discrete
Laplace noise of scale ``1 / epsilon`` makes each of them epsilon-DP.
Lengths above ``l_upper`` are not counted (``l_upper`` is public).  The
histogram has a bin for length 0: an empty sequence is covered by any
length, and without its bin a share of empty sequences of ``1 - fraction``
or more kept every coverage from being reached (the quantile then came out
as ``l_upper``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..privacy import DiscreteLaplace, laplace_scale


def noisy_count(n: int, key: Any, epsilon: float, *, tag: int) -> int:
    """An exact count ``n`` plus discrete Laplace ``1 / epsilon``, at least 1."""
    noise = DiscreteLaplace(laplace_scale(epsilon)).sample(key, np.array([0]), tag=tag,
                                                           backend="numpy")
    return max(1, int(n) + int(noise[0]))


def length_counts(lengths: np.ndarray, l_upper: int) -> np.ndarray:
    """Exact number of values equal to ``0 .. l_upper`` in ``lengths`` (larger ones not counted).

    A sum over sequences, so partitions' counts add up to the whole's.
    """
    return np.bincount(np.minimum(lengths, l_upper + 1), minlength=l_upper + 2)[:l_upper + 1]


def noisy_length_histogram(counts: np.ndarray, key: Any, epsilon: float, *,
                           tag: int) -> np.ndarray:
    """The exact :func:`length_counts` ``counts`` plus discrete Laplace ``1 / epsilon`` each.

    The noise of the bin for length ``l`` is keyed by ``l``.
    """
    lengths = np.arange(len(counts))
    return counts + DiscreteLaplace(laplace_scale(epsilon)).sample(key, lengths, tag=tag,
                                                                   backend="numpy")


def coverage_length(noisy_hist: np.ndarray, total: int, fraction: float) -> int:
    """Smallest ``l >= 1`` whose noisy cumulative count reaches ``fraction * total``.

    The count of ``l`` is that of lengths ``0 .. l``; where no length reaches
    it, the longest length of the histogram.
    """
    reached = np.flatnonzero(np.cumsum(noisy_hist) >= fraction * total)
    return max(1, int(reached[0])) if reached.size else int(noisy_hist.size) - 1
