"""Shorter gram levels from longer ones, with no second pass over the windows.

A window of length ``n`` that lies inside its row is either the first ``n``
symbols of a window of length ``n + 1`` inside the row, or the row's last
``n`` symbols.  So, for every ``n``-gram ``g``::

    count_n(g) = sum over symbols x of count_{n+1}(g x)  +  #{rows ending with g}

With exact packed keys (:mod:`dpgpu.ops.keys`: digit ``symbol + 1``, most
significant first) the first term groups level ``n + 1`` by ``key //
radix``, which keeps sorted keys sorted, and the second needs only each
row's last symbols.  :meth:`dpgpu.ops.grams.GramEngine.count_levels` counts
the longest level from the windows and derives the others here, with
whole-array operations on NumPy or CuPy.
"""

from __future__ import annotations

from typing import Any

from .keys import array_module

#: Key spaces up to this many bins are merged in a dense histogram (8 B a bin: 128 MiB).
DENSE_MERGE_BINS = 2 ** 24


def run_sums(keys: Any, counts: Any = None):
    """Distinct keys of a sorted key array and the summed counts of each run.

    Parameters
    ----------
    keys : array of int64, shape (M,)
        Nondecreasing.
    counts : array of int64, shape (M,), optional
        Count of each entry; 1 each when omitted.

    Returns
    -------
    keys : array of int64, shape (U,)
        Strictly increasing.
    counts : array of int64, shape (U,)
    """
    xp = array_module(keys)
    if keys.size == 0:
        return keys, xp.zeros(0, dtype=xp.int64)
    starts = xp.flatnonzero(xp.concatenate([xp.ones(1, dtype=bool), keys[1:] != keys[:-1]]))
    ends = xp.concatenate([starts[1:], xp.asarray([keys.size], dtype=starts.dtype)])
    if counts is None:
        return keys[starts], (ends - starts).astype(xp.int64)
    total = xp.cumsum(counts, dtype=xp.int64)
    sums = total[ends - 1]
    sums[1:] -= total[ends[:-1] - 1]
    return keys[starts], sums


def merge_counts(a_keys: Any, a_counts: Any, b_keys: Any, b_counts: Any):
    """Union of two sets of distinct increasing keys, the counts of a shared key summed.

    By binary search, with no sort: each key of one side finds its place
    among the other's.

    Parameters
    ----------
    a_keys, b_keys : array of int64
        Distinct and increasing, each.
    a_counts, b_counts : array of int64
        Their counts.

    Returns
    -------
    keys : array of int64, increasing
    counts : array of int64
    """
    xp = array_module(a_keys)
    at = xp.searchsorted(a_keys, b_keys)
    shared = at < a_keys.size
    shared[shared] = a_keys[at[shared]] == b_keys[shared]
    counts = a_counts.copy()
    counts[at[shared]] += b_counts[shared]  # distinct places
    new, new_counts = b_keys[~shared], b_counts[~shared]
    keys = xp.empty(a_keys.size + new.size, dtype=xp.int64)
    total = xp.empty(keys.size, dtype=xp.int64)
    into_a = xp.arange(a_keys.size) + xp.searchsorted(new, a_keys)  # new keys before each
    into_new = xp.arange(new.size) + at[~shared]  # a's keys before each
    keys[into_a], total[into_a] = a_keys, counts
    keys[into_new], total[into_new] = new, new_counts
    return keys, total


def row_suffix_keys(blocks: list, m: int, radix: int, xp: Any):
    """Packed key of the last ``m`` symbols of every row, right-aligned.

    A row shorter than ``m`` gets zero digits in front, so the key's last
    ``n`` digits, ``key % radix**n``, are the row's last ``n`` symbols when
    they are at least ``radix**(n - 1)`` (the row holds ``n`` symbols or
    more), and less than that otherwise.

    Parameters
    ----------
    blocks : list of (tokens, lengths)
        Padded blocks: int32 symbol ids (padding -1) and valid lengths.
    m : int
        Symbols kept (>= 0); keys must be exact (``radix**m < 2**63``).
    radix : int
    xp : module
        NumPy or CuPy, the blocks' array module.

    Returns
    -------
    array of int64, shape (rows,)
        One key per row of every block, blocks in order.
    """
    parts = [xp.zeros(0, dtype=xp.int64)]
    for tokens, lengths in blocks:
        lengths = lengths.astype(xp.int64)
        keys = xp.zeros(tokens.shape[0], dtype=xp.int64)
        rows = xp.arange(tokens.shape[0])
        for back in range(m, 0, -1):  # the symbol `back` places before the row's end
            col = lengths - back
            digit = tokens[rows, xp.maximum(col, 0)].astype(xp.int64) + 1
            keys = keys * radix + xp.where(col >= 0, digit, 0)
        parts.append(keys)
    return xp.concatenate(parts)


def shorter_level(keys: Any, counts: Any, suffixes: Any, n: int, radix: int):
    """Level ``n`` from level ``n + 1`` and the rows' last symbols.

    Parameters
    ----------
    keys : array of int64, shape (U,)
        Distinct packed keys of the ``(n + 1)``-grams inside their rows,
        increasing.
    counts : array of int64, shape (U,)
        Their counts.
    suffixes : array of int64, shape (rows,)
        :func:`row_suffix_keys` with at least ``n`` symbols.
    n : int
        Level wanted (>= 1).
    radix : int

    Returns
    -------
    keys : array of int64, shape (V,)
        Distinct packed keys of the ``n``-grams inside their rows, increasing.
    counts : array of int64, shape (V,)
    """
    xp = array_module(keys)
    ends = suffixes % radix ** n
    ends = ends[ends >= radix ** (n - 1)]  # rows holding n symbols or more
    heads, sums = run_sums(keys // radix, counts)
    space = radix ** n
    if space <= DENSE_MERGE_BINS:
        hist = xp.zeros(space, dtype=xp.int64)
        if ends.size:  # CuPy's bincount fails on an empty array (cupy/cupy#8116)
            hist += xp.bincount(ends, minlength=space)
        hist[heads] += sums  # heads are distinct
        found = xp.flatnonzero(hist)
        return found, hist[found]
    return merge_counts(heads, sums, *run_sums(xp.sort(ends)))
