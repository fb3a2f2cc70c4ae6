"""The weighted-Gaussian histogram of one level, its noise and its threshold.

Input: one row per occurrence, ``(user, gram)`` with ``gram`` an integer
index of the level's candidate space and ``identity`` its noise identity.
Each user keeps at most ``max_items`` distinct grams, a uniformly random
subset chosen by keyed words (the ``max_items`` smallest words of
:meth:`NoiseKey.words` at identity ``hash(user, gram)``), and adds the
integer weight ``floor(GRID / sqrt(t))`` to each of its ``t`` kept grams,
so one user moves the histogram by at most ``GRID`` in L2.  The histogram
is one segmented reduction (sort + ``bincount``) over the kept rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.keys import _splitmix
from ...privacy import DiscreteGaussian, NoiseKey
from .calibration import unit_weights

#: Keyed-word tags within a level's key (the level number is added * 4).
TAG_SUBSET, TAG_NOISE, TAG_SPURIOUS = 0, 1, 2


def bounded_histogram(users: np.ndarray, grams: np.ndarray, max_items: int, key: NoiseKey,
                      tag: int, *, bound: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Distinct grams and their integer weights after contribution bounding.

    Parameters
    ----------
    users, grams : (M,) int64 arrays
        One row per occurrence (duplicates allowed).
    max_items : int
        ``Delta_k``.
    key : NoiseKey
        The level's key (subset choice uses tag ``tag + TAG_SUBSET``).
    tag : int
        The level's base tag.
    bound : bool
        ``False`` keeps every gram of a user but still weights each by
        ``floor(GRID / sqrt(min(t, max_items)))`` (the L2 norm exceeds
        ``GRID``): a deliberately broken variant for the audit test, never
        used by a release.

    Returns
    -------
    grams : (U,) int64, sorted
    weights : (U,) int64
    """
    pairs = np.unique(np.stack([users.astype(np.int64), grams.astype(np.int64)]), axis=1) \
        if users.size else np.zeros((2, 0), dtype=np.int64)
    u, g = pairs[0], pairs[1]
    words = key.words(_splitmix(u.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                                ^ g.astype(np.uint64), np), tag + TAG_SUBSET, 1,
                      backend="numpy")[0]
    order = np.lexsort((words, u))
    u, g = u[order], g[order]
    first = np.r_[True, u[1:] != u[:-1]] if u.size else np.zeros(0, dtype=bool)
    start = np.maximum.accumulate(np.where(first, np.arange(u.size), 0))
    rank = np.arange(u.size) - start
    held = np.diff(np.r_[np.flatnonzero(first), u.size])
    t = np.repeat(held, held)
    keep = rank < max_items if bound else np.ones(u.size, dtype=bool)
    w = np.asarray(unit_weights(max_items), dtype=np.int64)[np.minimum(t, max_items)]
    grams_out, inv = np.unique(g[keep], return_inverse=True)
    return grams_out, np.bincount(inv, weights=w[keep], minlength=grams_out.size).astype(np.int64)


def noisy_release(weights: np.ndarray, identities: np.ndarray, s: float, threshold: int,
                  key: NoiseKey, tag: int) -> np.ndarray:
    """Mask of the grams whose ``weight + N_Z(0, s**2) > threshold`` (noise keyed by identity)."""
    if weights.size == 0:
        return np.zeros(0, dtype=bool)
    noise = DiscreteGaussian(s).sample(key, identities, tag=tag + TAG_NOISE, backend="numpy")
    return weights + noise > threshold


def as_int64(a: Any) -> np.ndarray:
    """``a`` as an int64 NumPy array (identities may be uint64 hashes)."""
    a = np.asarray(a)
    return a.view(np.int64) if a.dtype == np.uint64 else a.astype(np.int64, copy=False)
