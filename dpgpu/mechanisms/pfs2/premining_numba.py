"""Numba loops of the PFS² maximal-support search (:mod:`.premining`).

Imported only when used (it imports Numba).  A search node holds, per
sequence that may still contain a completion, the end ``e`` of the leftmost
match of its prefix and a ``limit``: an item at position ``p`` may extend
the prefix when ``e < p < limit``.  Positions index the flat item array;
``rank_at[p]`` is the rank of the item there in the search alphabet, or -1.

:func:`window_children` gives what the search needs of a node's children:
their bounds (the weights, from one read of the windows) and, for those
worth visiting, their sequences and match ends (the first occurrence of
the child's item in each window), so no child reads the windows again.
Most nodes list no child (none beats the running best); only the others
read their windows a second time, each up to the last kept child's item.

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
    cuts = _cuts(e.size, n_chunks)
    weight, _ = _window_counts(rank_at, limit, w, np.arange(e.size), e, 0, n_items, cuts)
    return weight.sum(axis=0)


def _cuts(n, n_chunks):
    """Bounds of ``n_chunks`` runs of ``n`` sequences: run ``c`` is ``cuts[c]:cuts[c + 1]``."""
    return np.arange(n_chunks + 1, dtype=np.int64) * n // n_chunks


def _window_counts(rank_at, end, w, seqs, e, room, n_items, cuts):
    """Per run of ``cuts`` and rank: weight and number of the sequences whose window holds it.

    The window of the node's ``j``-th sequence ``s = seqs[j]`` is
    ``e[j] < p < end[s] - room``; its weight is ``w[s]``.  Returns two int64
    arrays of shape ``(runs, n_items)``.
    """
    weight = np.zeros((cuts.size - 1, n_items), dtype=np.int64)
    count = np.zeros((cuts.size - 1, n_items), dtype=np.int64)
    if cuts.size == 2:
        _counts_run(rank_at, end, w, seqs, e, room, cuts, weight, count, 0)
    else:
        _counts_runs(rank_at, end, w, seqs, e, room, cuts, weight, count)
    return weight, count


@numba.njit(nogil=True, cache=True)
def _counts_run(rank_at, end, w, seqs, e, room, cuts, weight, count, c):
    """Run ``c`` of :func:`_window_counts`: its weights and counts, into row ``c``."""
    seen = np.full(weight.shape[1], -1, dtype=np.int64)  # last sequence that held each rank
    for j in range(cuts[c], cuts[c + 1]):
        s = seqs[j]
        for p in range(e[j] + 1, end[s] - room):
            r = rank_at[p]
            if r >= 0 and seen[r] != j:
                seen[r] = j
                weight[c, r] += w[s]
                count[c, r] += 1


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def _counts_runs(rank_at, end, w, seqs, e, room, cuts, weight, count):
    """:func:`_counts_run` of every run, in parallel."""
    for c in numba.prange(cuts.size - 1):
        _counts_run(rank_at, end, w, seqs, e, room, cuts, weight, count, c)


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
    cuts = _cuts(e.size, n_chunks)
    weight, count = _window_counts(rank_at, end, w, seqs, e, room, n_items, cuts)
    bounds = weight.sum(axis=0)
    keep = bounds > best
    count[:, ~keep] = 0
    at = np.zeros(n_items + 1, dtype=np.int64)
    np.cumsum(count.sum(axis=0), out=at[1:])
    # where each run writes each child: after the earlier runs' entries of that child
    fill = at[:-1] + np.cumsum(count, axis=0) - count
    child_seq = np.empty(at[-1], dtype=seqs.dtype)
    child_end = np.empty(at[-1], dtype=e.dtype)
    if at[-1]:  # most nodes list no child: their windows are read once
        args = (rank_at, end, seqs, e, room, cuts, keep, int(keep.sum()), fill, child_seq,
                child_end)
        if n_chunks == 1:
            _fill_run(*args, 0)
        else:
            _fill_runs(*args)
    return bounds, at, child_seq, child_end


@numba.njit(nogil=True, cache=True)
def window_size(end, seqs, e, room):
    """Positions in all the windows ``e[j] < p < end[seqs[j]] - room``."""
    out = 0
    for j in range(seqs.size):
        out += max(end[seqs[j]] - room - e[j] - 1, 0)
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
def _fill_run(rank_at, end, seqs, e, room, cuts, keep, n_keep, fill, child_seq, child_end, c):
    """Run ``c`` of :func:`window_children`: the first occurrences of the kept ranks, listed.

    Each window is read again, up to the first occurrence of its last kept rank.
    """
    seen = np.full(keep.size, -1, dtype=np.int64)  # last sequence that held each rank
    for j in range(cuts[c], cuts[c + 1]):
        s = seqs[j]
        found = 0
        for p in range(e[j] + 1, end[s] - room):
            r = rank_at[p]
            if r >= 0 and keep[r] and seen[r] != j:
                seen[r] = j
                child_seq[fill[c, r]] = s
                child_end[fill[c, r]] = p
                fill[c, r] += 1
                found += 1
                if found == n_keep:
                    break


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def _fill_runs(rank_at, end, seqs, e, room, cuts, keep, n_keep, fill, child_seq, child_end):
    """:func:`_fill_run` of every run, in parallel."""
    for c in numba.prange(cuts.size - 1):
        _fill_run(rank_at, end, seqs, e, room, cuts, keep, n_keep, fill, child_seq, child_end,
                  c)


def tail_weights(tails, seqs, after, w, n_chunks):
    """Per tail, the weight of the node's sequences whose tail match starts after ``after``.

    Parameters
    ----------
    tails : numpy.ndarray of signed int, shape (sequences, tails)
        Per sequence of the database and tail, the start of the tail's
        rightmost match (-1 where it does not occur).
    seqs : numpy.ndarray of int
        The node's sequences.
    after : numpy.ndarray of int
        Per node sequence: the tail must start beyond this position.
    w : numpy.ndarray of int64
        Per sequence of the database: its weight.
    n_chunks : int
        Runs of sequences read in parallel (1: in this thread alone).

    Returns
    -------
    numpy.ndarray of int64
        Shape ``(tails,)``.
    """
    cuts = _cuts(seqs.size, n_chunks)
    partial = np.zeros((n_chunks, tails.shape[1]), dtype=np.int64)
    if n_chunks == 1:
        _tails_run(tails, seqs, after, w, cuts, partial, 0)
    else:
        _tails_runs(tails, seqs, after, w, cuts, partial)
    return partial.sum(axis=0)


@numba.njit(nogil=True, cache=True)
def _tails_run(tails, seqs, after, w, cuts, partial, c):
    """Run ``c`` of :func:`tail_weights`, into ``partial[c]``."""
    row = partial[c]
    for j in range(cuts[c], cuts[c + 1]):
        s = seqs[j]
        t = tails[s]
        for q in range(t.size):
            if t[q] > after[j]:
                row[q] += w[s]


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def _tails_runs(tails, seqs, after, w, cuts, partial):
    """:func:`_tails_run` of every run, in parallel."""
    for c in numba.prange(cuts.size - 1):
        _tails_run(tails, seqs, after, w, cuts, partial, c)
