"""Noisy sequence-length statistics, the DP length quantiles several mechanisms need.

Adding or removing one sequence changes the number of sequences by 1 and
one bin of the length histogram by 1 (the bins are disjoint), so discrete
Laplace noise of scale ``1 / epsilon`` makes each of them epsilon-DP.
Lengths above ``l_upper`` are not counted (``l_upper`` is public).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..privacy import DiscreteLaplace


def noisy_count(db: Any, key: Any, epsilon: float, *, tag: int) -> int:
    """``|D|`` plus discrete Laplace noise of scale ``1 / epsilon``, at least 1."""
    noise = DiscreteLaplace(1.0 / epsilon).sample(key, np.array([0]), tag=tag, backend="numpy")
    return max(1, len(db) + int(noise[0]))


def noisy_length_histogram(db: Any, key: Any, epsilon: float, l_upper: int, *,
                           tag: int) -> np.ndarray:
    """Counts of sequences of length ``1 .. l_upper``, each with discrete Laplace ``1 / epsilon``.

    The noise of the bin for length ``l`` is keyed by ``l``.
    """
    lengths = np.arange(1, l_upper + 1)
    exact = np.bincount(np.minimum(db.lengths, l_upper + 1), minlength=l_upper + 2)[1:l_upper + 1]
    return exact + DiscreteLaplace(1.0 / epsilon).sample(key, lengths, tag=tag, backend="numpy")


def coverage_length(noisy_hist: np.ndarray, total: int, fraction: float) -> int:
    """Smallest ``l`` whose noisy cumulative count reaches ``fraction * total`` (else the last)."""
    reached = np.flatnonzero(np.cumsum(noisy_hist) >= fraction * total)
    return int(reached[0]) + 1 if reached.size else int(noisy_hist.size)
