"""Numba loops of the PFS² maximal-support search (:mod:`.premining`).

Imported only when used (it imports Numba).  A search node holds, per
sequence that may still contain a completion, the end ``e`` of the leftmost
match of its prefix and a ``limit``: an item at position ``p`` may extend
the prefix when ``e < p < limit``.  Positions index the flat item array;
``rank_at[p]`` is the rank of the item there in the search alphabet, or -1.

:func:`window_children` reads a node's windows once for both what the
search needs of its children: their bounds (the weights) and, for those
worth visiting, their sequences and match ends (the first occurrence of
the child's item in each window), so no child reads the windows again.

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

from ...backend.numba_threads import one_caller_when_unsafe


def window_item_weights(rank_at, e, limit, w, n_items, n_chunks):
    """Per rank, the weight of the sequences holding it in their window ``(e, limit)``.

    Parameters
    ----------
    rank_at : numpy.ndarray of signed int
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


@one_caller_when_unsafe
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
    rank_at : numpy.ndarray of signed int
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


@one_caller_when_unsafe
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


@numba.njit(nogil=True, cache=True)
def first_occurrences(rank_at, offsets, n_items):
    """Per rank, the sequences holding it and where it first occurs in each.

    Parameters
    ----------
    rank_at : numpy.ndarray of signed int
        Rank of the item at each position, or -1.
    offsets : numpy.ndarray of int64
        Sequence ``s`` is positions ``offsets[s] .. offsets[s + 1] - 1``.
    n_items : int
        Number of ranks.

    Returns
    -------
    at : numpy.ndarray of int64
        ``n_items + 1`` offsets: rank ``r``'s entries are ``at[r]:at[r + 1]``.
    seq : numpy.ndarray of int64
        The sequences holding the rank, ascending.
    pos : numpy.ndarray of int64
        The rank's first position in each of them.
    """
    n_seq = offsets.size - 1
    seen = np.full(n_items, -1, dtype=np.int64)  # last sequence that held each rank
    at = np.zeros(n_items + 1, dtype=np.int64)
    for s in range(n_seq):
        for p in range(offsets[s], offsets[s + 1]):
            r = rank_at[p]
            if r >= 0 and seen[r] != s:
                seen[r] = s
                at[r + 1] += 1
    for r in range(n_items):
        at[r + 1] += at[r]
    fill = at[:-1].copy()
    seq = np.empty(at[n_items], dtype=np.int64)
    pos = np.empty(at[n_items], dtype=np.int64)
    seen[:] = -1
    for s in range(n_seq):
        for p in range(offsets[s], offsets[s + 1]):
            r = rank_at[p]
            if r >= 0 and seen[r] != s:
                seen[r] = s
                seq[fill[r]] = s
                pos[fill[r]] = p
                fill[r] += 1
    return at, seq, pos


def window_children(rank_at, end, w, seqs, e, room, n_items, best, n_chunks):
    """The children of a search node: the bounds of all, the sequences of those above ``best``.

    The node holds sequences ``seqs``, matched up to ``e``; the window of
    sequence ``s`` is ``e < p < end[s] - room``.  Child ``r`` (the node's
    prefix extended by rank ``r``) holds the sequences whose window holds
    rank ``r``; its match end there is the first such ``p``.

    Parameters
    ----------
    rank_at : numpy.ndarray of signed int
        Rank of the item at each position, or -1.
    end, w : numpy.ndarray
        Per sequence of the database: its end and its weight (int64).
    seqs, e : numpy.ndarray
        The node's sequences and match ends.
    room : int
        Positions that must follow a child's match end.
    n_items : int
        Number of ranks.
    best : int
        Only the children of bound above ``best`` are listed.
    n_chunks : int
        Runs of sequences read in parallel (1: in this thread alone).

    Returns
    -------
    bounds : numpy.ndarray of int64
        Per rank, the weight of the child's sequences.
    at : numpy.ndarray of int64
        ``n_items + 1`` offsets: child ``r``'s sequences are
        ``child_seq[at[r]:at[r + 1]]`` (none unless ``bounds[r] > best``), in
        the node's order, with match ends ``child_end[at[r]:at[r + 1]]``.
    child_seq, child_end : numpy.ndarray
        Of the types of ``seqs`` and ``e``.
    """
    n = e.size
    cuts = np.arange(n_chunks + 1, dtype=np.int64) * n // n_chunks
    start = np.zeros(n_chunks + 1, dtype=np.int64)  # each run's share of the pair buffers
    np.cumsum(window_sizes(end, seqs, e, room, cuts), out=start[1:])
    weight = np.zeros((n_chunks, n_items), dtype=np.int64)
    count = np.zeros((n_chunks, n_items), dtype=np.int64)
    # (rank, position) of each window's first occurrences, in types as narrow as they allow
    pair_rank = np.empty(start[-1], dtype=rank_at.dtype)
    pair_pos = np.empty(start[-1], dtype=np.int32 if rank_at.size < 2 ** 31 else np.int64)
    held = np.empty(n, dtype=np.int32)
    args = (rank_at, end, w, seqs, e, room, cuts, start, weight, count, pair_rank, pair_pos, held)
    if n_chunks == 1:
        _pairs_run(*args, 0)
    else:
        _pairs_runs(*args)
    bounds = weight.sum(axis=0)
    keep = bounds > best
    count[:, ~keep] = 0
    at = np.zeros(n_items + 1, dtype=np.int64)
    np.cumsum(count.sum(axis=0), out=at[1:])
    # where each run writes each child: after the earlier runs' entries of that child
    fill = at[:-1] + np.cumsum(count, axis=0) - count
    child_seq = np.empty(at[-1], dtype=seqs.dtype)
    child_end = np.empty(at[-1], dtype=e.dtype)
    args = (seqs, cuts, start, held, pair_rank, pair_pos, keep, fill, child_seq, child_end)
    if n_chunks == 1:
        _fill_run(*args, 0)
    else:
        _fill_runs(*args)
    return bounds, at, child_seq, child_end


@numba.njit(nogil=True, cache=True)
def window_sizes(end, seqs, e, room, cuts):
    """Positions in the windows ``e[j] < p < end[seqs[j]] - room`` of each run of ``cuts``."""
    out = np.zeros(cuts.size - 1, dtype=np.int64)
    for c in range(cuts.size - 1):
        for j in range(cuts[c], cuts[c + 1]):
            out[c] += max(end[seqs[j]] - room - e[j] - 1, 0)
    return out


@numba.njit(nogil=True, cache=True)
def weights_with_room(at, seq, room_of, w, room):
    """Per group ``at[r] .. at[r + 1] - 1`` of entries, the weights ``w[seq]`` of those with room.

    An entry counts when ``room_of`` exceeds ``room``.  Returns int64.
    """
    out = np.zeros(at.size - 1, dtype=np.int64)
    for r in range(at.size - 1):
        for i in range(at[r], at[r + 1]):
            if room_of[i] > room:
                out[r] += w[seq[i]]
    return out


@numba.njit(nogil=True, cache=True)
def _pairs_run(rank_at, end, w, seqs, e, room, cuts, start, weight, count, pair_rank, pair_pos,
               held, c):
    """Run ``c`` of :func:`window_children`: each window's ranks at their first positions.

    Writes the pairs (rank, position) of the node's ``j``-th sequence after
    those of the run's earlier sequences, from ``start[c]``, and their
    number to ``held[j]``; adds the weights and counts of run ``c``.
    """
    seen = np.full(weight.shape[1], -1, dtype=np.int64)  # last sequence that held each rank
    o = start[c]
    for j in range(cuts[c], cuts[c + 1]):
        s = seqs[j]
        o0 = o
        for p in range(e[j] + 1, end[s] - room):
            r = rank_at[p]
            if r >= 0 and seen[r] != j:
                seen[r] = j
                weight[c, r] += w[s]
                count[c, r] += 1
                pair_rank[o] = r
                pair_pos[o] = p
                o += 1
        held[j] = o - o0


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def _pairs_runs(rank_at, end, w, seqs, e, room, cuts, start, weight, count, pair_rank, pair_pos,
                held):
    """:func:`_pairs_run` of every run, in parallel."""
    for c in numba.prange(cuts.size - 1):
        _pairs_run(rank_at, end, w, seqs, e, room, cuts, start, weight, count, pair_rank,
                   pair_pos, held, c)


@numba.njit(nogil=True, cache=True)
def _fill_run(seqs, cuts, start, held, pair_rank, pair_pos, keep, fill, child_seq, child_end, c):
    """Run ``c`` of :func:`window_children`: its pairs of the kept ranks, to their children."""
    o = start[c]
    for j in range(cuts[c], cuts[c + 1]):
        for t in range(o, o + held[j]):
            r = pair_rank[t]
            if keep[r]:
                child_seq[fill[c, r]] = seqs[j]
                child_end[fill[c, r]] = pair_pos[t]
                fill[c, r] += 1
        o += held[j]


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def _fill_runs(seqs, cuts, start, held, pair_rank, pair_pos, keep, fill, child_seq, child_end):
    """:func:`_fill_run` of every run, in parallel."""
    for c in numba.prange(cuts.size - 1):
        _fill_run(seqs, cuts, start, held, pair_rank, pair_pos, keep, fill, child_seq,
                  child_end, c)
