"""Numba loops of gram counting on the CPU.

Imported only when used (it imports Numba).  For small key spaces the NumPy
path of :meth:`dpgpu.ops.grams.GramEngine.count` reads the flat items of the
database directly -- no padded tensor, no key temporaries -- and adds every
window of every sequence, markers included, to a dense histogram, with the
keys of :func:`dpgpu.ops.keys.packed_keys` (digit ``symbol + 1``, most
significant first).  :meth:`~dpgpu.ops.grams.GramEngine.count_levels` reads
each row's last symbols the same way.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _row_digits(items, first, full, l_max, start_id, end_id, end_all, digits):
    """Write one row's digits to ``digits`` and return its length.

    The sequence ``items[first:first + full]`` is cut to its first ``l_max``
    items, preceded by ``start_id`` when it is >= 0 and followed by
    ``end_id`` when that is >= 0 and the sequence was not cut (or
    ``end_all``), exactly as :meth:`dpgpu.data.SequenceDB.padded` lays out
    its rows.
    """
    head = 1 if start_id >= 0 else 0
    kept = min(full, l_max)
    size = head + kept
    if head:
        digits[0] = start_id + 1
    for i in range(kept):
        digits[head + i] = items[first + i] + 1
    if end_id >= 0 and (end_all or full <= l_max):
        digits[size] = end_id + 1
        size += 1
    return size


@numba.njit(cache=True, nogil=True)
def add_dense_counts(items, offsets, l_max, start_id, end_id, end_all, n, radix, hist):
    """``hist[key] += 1`` for every length-``n`` window of every row (see ``_row_digits``)."""
    top = radix ** (n - 1)  # weight of a window's first digit
    digits = np.empty(l_max + 2, dtype=np.int64)
    for s in range(offsets.shape[0] - 1):
        size = _row_digits(items, offsets[s], offsets[s + 1] - offsets[s], l_max, start_id,
                           end_id, end_all, digits)
        if size < n:
            continue
        key = 0
        for i in range(n):
            key = key * radix + digits[i]
        hist[key] += 1
        for j in range(n, size):  # slide: drop digit j - n, append digit j
            key = (key - digits[j - n] * top) * radix + digits[j]
            hist[key] += 1


@numba.njit(cache=True, nogil=True)
def suffix_keys(items, offsets, l_max, start_id, end_id, end_all, m, radix, out):
    """``out[s]`` = packed key of row ``s``'s last ``m`` digits, zero digits in front of a
    shorter row (:func:`dpgpu.ops.levels.row_suffix_keys`)."""
    digits = np.empty(l_max + 2, dtype=np.int64)
    for s in range(offsets.shape[0] - 1):
        size = _row_digits(items, offsets[s], offsets[s + 1] - offsets[s], l_max, start_id,
                           end_id, end_all, digits)
        key = 0
        for i in range(size - m, size):
            key = key * radix + (digits[i] if i >= 0 else 0)
        out[s] = key
