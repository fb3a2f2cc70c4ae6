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

from .keys import _GOLDEN


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



@numba.njit(cache=True, nogil=True)
def home_slot(key, bits):
    """Home slot of a non-negative ``key`` in a table of ``2**bits`` slots (Fibonacci hashing)."""
    # as int64: Numba makes a float of uint64 mixed with int64
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(64 - bits))


@numba.njit(cache=True, nogil=True)
def key_table(keys, bits):
    """An open-addressing table of ``2**bits`` slots (more than ``keys.size``) from key to index.

    Returns ``(slot_keys, slot_index)``: slot ``h`` holds ``keys[slot_index[h]]``,
    or -1 while empty (keys are non-negative).  A key given twice maps to
    its first index.
    """
    mask = (1 << bits) - 1
    slot_keys = np.full(1 << bits, -1, dtype=np.int64)
    slot_index = np.zeros(1 << bits, dtype=np.int64)
    for i in range(keys.shape[0]):
        h = home_slot(keys[i], bits)
        while slot_keys[h] != -1 and slot_keys[h] != keys[i]:
            h = (h + 1) & mask
        if slot_keys[h] == -1:
            slot_keys[h] = keys[i]
            slot_index[h] = i
    return slot_keys, slot_index


@numba.njit(cache=True, nogil=True)
def find_index(slot_keys, slot_index, bits, key):
    """Index of ``key`` in a :func:`key_table`, or -1."""
    mask = (1 << bits) - 1
    h = home_slot(key, bits)
    while slot_keys[h] != -1:
        if slot_keys[h] == key:
            return slot_index[h]
        h = (h + 1) & mask
    return -1


@numba.njit(cache=True, nogil=True)
def find_indices(slot_keys, slot_index, bits, values, out):
    """``out[i]``: :func:`find_index` of ``values[i]`` (-1 where absent or negative).

    Parameters
    ----------
    slot_keys, slot_index : int64 arrays
        A :func:`key_table` of ``2**bits`` slots.
    bits : int
    values : (M,) integer array
    out : (M,) integer array
        Written.
    """
    for i in range(values.shape[0]):
        v = values[i]
        out[i] = find_index(slot_keys, slot_index, bits, v) if v >= 0 else -1


@numba.njit(cache=True, nogil=True)
def add_level_histogram(items, offsets, l_max, start_id, end_id, end_all, m, radix,
                        slot_keys, slot_index, bits, n_symbols, out):
    """``out[f * n_symbols + x] += 1`` for every length-``m + 1`` window of every row
    whose first ``m`` digits are context ``f`` of the :func:`key_table` and whose
    last symbol is ``x`` (rows as in ``_row_digits``; packed keys as
    :func:`dpgpu.ops.keys.packed_keys`)."""
    top = radix ** (m - 1) if m > 0 else 0  # weight of a context's first digit
    digits = np.empty(l_max + 2, dtype=np.int64)
    for s in range(offsets.shape[0] - 1):
        size = _row_digits(items, offsets[s], offsets[s + 1] - offsets[s], l_max, start_id,
                           end_id, end_all, digits)
        if size <= m:
            continue
        key = 0
        for i in range(m):
            key = key * radix + digits[i]
        for j in range(size - m):  # the window digits[j .. j + m]
            if j > 0 and m > 0:  # slide the context: drop digit j - 1, append digit j + m - 1
                key = (key - digits[j - 1] * top) * radix + digits[j + m - 1]
            f = find_index(slot_keys, slot_index, bits, key)
            if f >= 0:
                out[f * n_symbols + digits[j + m] - 1] += 1
