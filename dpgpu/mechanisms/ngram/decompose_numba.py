"""Numba loop of the N-gram decomposition: how often each gram of one level is published.

Imported only when used (it imports Numba).  The model's remaining counts
of all levels are one flat float array, level ``s`` at ``base[s]``.  For the
``M`` grams of one level, ``rows[i]`` holds the flat position of every
sub-gram of gram ``i`` (-1 where the model lacks it, -2 for the lone end
marker, which constrains nothing), grouped by sub-gram length: columns
``starts[k]:starts[k + 1]`` are the sub-grams of level ``levels[k]``, in
increasing length.  See :func:`dpgpu.mechanisms.ngram.synthesis.decompose`.
"""

from __future__ import annotations

import numba
import numpy as np

from ...backend.numba_threads import one_caller_when_unsafe


@numba.njit(cache=True, nogil=True)
def _charged(copies, rows, lo, hi, b0, size):
    """What ``copies`` charge to each sub-gram in columns ``lo:hi`` (level starting at ``b0``)."""
    total = np.zeros(size)
    for i in range(rows.shape[0]):
        for a in range(lo, hi):
            if rows[i, a] >= 0:
                total[rows[i, a] - b0] += copies[i]
    return total


@one_caller_when_unsafe
@numba.njit(cache=True, nogil=True, parallel=True)
def publish_level(copies, rows, starts, levels, remaining, base):
    """Copies of each gram its sub-grams can pay for; charge them to ``remaining``.

    Parameters
    ----------
    copies : int64 array (M,)
        Wanted copies (the gram's own remaining count, rounded down).
    rows, starts, levels, remaining, base
        See the module docstring; ``remaining`` is updated in place.

    Returns
    -------
    int64 array (M,)
        Copies published: capped so that every sub-gram occurring ``k``
        times in a gram pays ``k`` per copy from what it has left, then, per
        sub-gram length in increasing order, scaled down by the worst ratio
        of what is left to the level's joint demand.
    """
    m = rows.shape[0]
    out = copies.copy()
    for i in numba.prange(m):  # each gram reads ``remaining`` and writes only out[i]
        for k in range(levels.shape[0]):  # a sub-gram recurs only among those of its length
            for a in range(starts[k], starts[k + 1]):
                v = rows[i, a]
                if v == -2:
                    continue
                if v < 0:
                    out[i] = 0
                    continue
                mult = 0
                for b in range(starts[k], starts[k + 1]):
                    if rows[i, b] == v:
                        mult += 1
                cap = np.floor(max(remaining[v], 0.0) / mult)
                if cap < out[i]:
                    out[i] = np.int64(cap)
    for k in range(levels.shape[0]):
        lo, hi, b0 = starts[k], starts[k + 1], base[levels[k]]
        demand = _charged(out, rows, lo, hi, b0, base[levels[k] + 1] - b0)
        for i in numba.prange(m):
            worst = 1.0
            for a in range(lo, hi):
                v = rows[i, a]
                if v >= 0 and demand[v - b0] > remaining[v]:
                    worst = min(worst, max(remaining[v], 0.0) / demand[v - b0])
            out[i] = np.int64(np.floor(out[i] * worst))
    for k in range(levels.shape[0]):
        lo, hi, b0 = starts[k], starts[k + 1], base[levels[k]]
        total = _charged(out, rows, lo, hi, b0, base[levels[k] + 1] - b0)
        for j in range(total.shape[0]):
            remaining[b0 + j] -= total[j]
    return out
