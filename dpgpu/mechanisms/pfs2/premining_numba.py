"""Numba loops of the PFS² maximal-support search (:mod:`.premining`).

Imported only when used (it imports Numba).  A search node holds, per
sequence that may still contain a completion, the end ``e`` of the leftmost
match of its prefix and a ``limit``: an item at position ``p`` may extend
the prefix when ``e < p < limit``.  Positions index the flat item array;
``rank_at[p]`` is the rank of the item there in the search alphabet, or -1.

The window kernels give exact integers whatever the number of threads:
the weights are summed as integers per run of sequences and the runs are
added in order, and each sequence's result is written to its own slot.
They run in this thread alone on small inputs (the caller decides), where
waking the worker threads would cost more than the work: the search calls
them once per node.
"""

from __future__ import annotations

import numba
import numpy as np


def window_item_weights(rank_at, e, limit, w, n_items, n_chunks):
    """Per rank, the weight of the sequences holding it in their window ``(e, limit)``.

    Parameters
    ----------
    rank_at : numpy.ndarray of int32
        Rank of the item at each position, or -1 (outside the alphabet).
    e, limit : numpy.ndarray of int
        Per sequence: the window is the positions ``e < p < limit``.
    w : numpy.ndarray of int64
        Per sequence: its weight.
    n_items : int
        Number of ranks.
    n_chunks : int
        Runs of sequences counted in parallel (1: in this thread alone).

    Returns
    -------
    numpy.ndarray of int64
        Shape ``(n_items,)``.
    """
    partial = np.zeros((n_chunks, n_items), dtype=np.int64)
    if n_chunks == 1:
        _weights_run(rank_at, e, limit, w, 0, e.size, partial[0])
    else:
        _weights_runs(rank_at, e, limit, w, partial)
    return partial.sum(axis=0)


@numba.njit(nogil=True, cache=True)
def _weights_run(rank_at, e, limit, w, lo, hi, row):
    """:func:`window_item_weights` of the sequences ``lo .. hi - 1``, added to ``row``."""
    seen = np.full(row.size, -1, dtype=np.int64)  # last sequence counted for each rank
    for j in range(lo, hi):
        for p in range(e[j] + 1, limit[j]):
            r = rank_at[p]
            if r >= 0 and seen[r] != j:
                seen[r] = j
                row[r] += w[j]


@numba.njit(parallel=True, nogil=True, cache=True)
def _weights_runs(rank_at, e, limit, w, partial):
    """:func:`_weights_run` of ``partial.shape[0]`` runs of sequences, in parallel."""
    n, n_chunks = e.size, partial.shape[0]
    for c in numba.prange(n_chunks):
        _weights_run(rank_at, e, limit, w, n * c // n_chunks, n * (c + 1) // n_chunks,
                     partial[c])


def next_in_window(rank_at, keys, m, r, e, limit, max_scan, parallel):
    """Per sequence, the first position of rank ``r`` in its window ``(e, limit)``, else ``m``.

    The first ``max_scan`` positions of a window are read; a longer rest is
    searched in ``keys``.

    Parameters
    ----------
    rank_at : numpy.ndarray of int32
        Rank of the item at each position, or -1.
    keys : numpy.ndarray of int64
        Sorted ``rank * m + position`` of every position of the alphabet's
        items, then a sentinel larger than all of them.
    m : int
        More than every position.
    r : int
        The rank looked for.
    e, limit : numpy.ndarray of int
        Per sequence, the window.
    max_scan : int
        Positions read before a binary search (``>= 0``).
    parallel : bool
        Over the sequences in parallel, or in this thread alone.

    Returns
    -------
    numpy.ndarray of int64
        A position ``p`` with ``e < p < limit``, or ``m`` where the window
        does not hold rank ``r``.
    """
    out = np.full(e.size, m, dtype=np.int64)
    (_next_all if parallel else _next_run)(rank_at, keys, m, r, e, limit, max_scan, out)
    return out


@numba.njit(nogil=True, cache=True, inline="always")
def _next_one(rank_at, keys, m, r, lo, hi, max_scan):
    """:func:`next_in_window` of the window ``lo <= p < hi``."""
    stop = min(hi, lo + max_scan)
    p = lo
    while p < stop and rank_at[p] != r:
        p += 1
    if p < stop:
        return p
    if stop < hi:
        q = keys[np.searchsorted(keys, r * m + stop)] - r * m
        if q < hi:
            return q
    return m


@numba.njit(nogil=True, cache=True)
def _next_run(rank_at, keys, m, r, e, limit, max_scan, out):
    """:func:`next_in_window` into ``out``, in this thread."""
    for j in range(e.size):
        out[j] = _next_one(rank_at, keys, m, r, e[j] + 1, limit[j], max_scan)


@numba.njit(parallel=True, nogil=True, cache=True)
def _next_all(rank_at, keys, m, r, e, limit, max_scan, out):
    """:func:`next_in_window` into ``out``, in parallel over the sequences."""
    for j in numba.prange(e.size):
        out[j] = _next_one(rank_at, keys, m, r, e[j] + 1, limit[j], max_scan)


@numba.njit(nogil=True, cache=True)
def positions_by_item(items, n_sym):
    """The positions grouped by item, ascending within an item: a stable argsort of ``items``.

    Parameters
    ----------
    items : numpy.ndarray of int
        Values in ``0 .. n_sym - 1``.
    n_sym : int

    Returns
    -------
    numpy.ndarray of int64
        Equal to ``numpy.argsort(items, kind="stable")`` (a counting sort).
    """
    start = np.zeros(n_sym + 1, dtype=np.int64)
    for p in range(items.size):
        start[items[p] + 1] += 1
    for x in range(n_sym):
        start[x + 1] += start[x]
    order = np.empty(items.size, dtype=np.int64)
    for p in range(items.size):
        x = items[p]
        order[start[x]] = p
        start[x] += 1
    return order
