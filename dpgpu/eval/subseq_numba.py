"""Numba loops of subsequence containment.

Imported only when used (it imports Numba).  Patterns come grouped by
prefix (:func:`dpgpu.eval.truth.group_by_prefix`): each group is a prefix
``pre_flat[pre_off[g]:pre_off[g+1]]`` with extension items
``ext_item[grp_off[g]:grp_off[g+1]]``.  The per-element logic,
:func:`prefix_end` -- the greedy leftmost match of a prefix, then one
last-occurrence test per extension item -- is shared by the support count
(:func:`support_counts`) and PFS² sequence reconstruction, which lists each sequence's candidates
with :func:`sequence_hits` (:mod:`dpgpu.mechanisms.pfs2.shrink_numba`), and
mirrored by ``kernels/subseq.cuh``.

A prefix can only match a sequence holding its first item, and its
leftmost match starts at that item's first occurrence, so the groups are
bucketed by that item (:func:`groups_by_first_item`) and a sequence
visits only the buckets of its distinct items, at their first
occurrences, matching the rest of each prefix from there
(:func:`match_after`), and the groups of empty prefix: the same matches
as :func:`prefix_end` on every group, with far fewer tries and shorter
scans when the sequences hold few of the items.  A group far larger than
what is left of the sequence after its prefix's match (the single items
of a large vocabulary) is tested from those items instead, each searched
among the group's, sorted once (:func:`ext_order`): a sequence then costs
its length, not the group's size (the CUDA kernel tests pattern by
pattern).  The support count runs over chunks of
sequences in parallel; each chunk counts into its own row (integers, added
in chunk order), so the results do not depend on the number of threads.

Supports are sums over sequences, so the callers count each distinct
sequence once, weighted by its multiplicity: :func:`sequence_hashes` and
:func:`group_rows` find the distinct sequences (exactly: a hash only
proposes a match, the items decide it).

The exact miner's levels are lexicographically sorted pattern matrices;
:func:`gsp_candidates` joins and prunes one into the next with binary
searches (:func:`narrow`), the rows sharing a start being contiguous.
"""

from __future__ import annotations

import numba
import numpy as np

from ..backend.numba_threads import one_caller_when_unsafe
from ..ops.keys import _GOLDEN, _MIX1, _MIX2

#: :func:`prefix_end`'s answer when the prefix does not occur.
NO_MATCH = -2
#: A group holding more than this many patterns per item of a sequence after its prefix's
#: match is tested from those items, each searched among the group's (:func:`_extensions`),
#: not pattern by pattern.
WALK_RATIO = 8


@numba.njit(cache=True, nogil=True, inline="always")
def prefix_end(items, a, b, last, pre_flat, p0, p1):
    """Where the leftmost match of ``pre_flat[p0:p1]`` in ``items[a:b]`` ends (``a - 1`` if empty).

    ``last[x]`` is the last position of item ``x`` in the sequence (-1 if
    absent).  Returns :data:`NO_MATCH` when the prefix does not occur, or
    when the sequence has no room for an extension item after it.
    """
    if p1 - p0 >= b - a:
        return NO_MATCH
    return match_after(items, a - 1, last, pre_flat, p0, p1)


@numba.njit(cache=True, nogil=True, inline="always")
def match_after(items, pos, last, pre_flat, p0, p1):
    """Where the leftmost match of ``pre_flat[p0:p1]`` after ``pos`` ends, or :data:`NO_MATCH`."""
    for j in range(p0, p1):
        x = pre_flat[j]
        if last[x] <= pos:  # x does not occur after pos
            return NO_MATCH
        pos += 1
        while items[pos] != x:
            pos += 1
    return pos


@numba.njit(cache=True, nogil=True)
def groups_by_first_item(pre_flat, pre_off, n_sym):
    """The groups bucketed by the first item of their prefix.

    Returns
    -------
    first_off : numpy.ndarray of int64
        ``n_sym + 1`` offsets: the groups whose prefix starts with item
        ``x`` are ``first_grp[first_off[x]:first_off[x + 1]]``, ascending.
    first_grp : numpy.ndarray of int64
    empty : numpy.ndarray of int64
        The groups of empty prefix (the patterns of one item).
    """
    n_grp = pre_off.size - 1
    first_off = np.zeros(n_sym + 1, dtype=np.int64)
    n_empty = 0
    for g in range(n_grp):
        if pre_off[g + 1] > pre_off[g]:
            first_off[pre_flat[pre_off[g]] + 1] += 1
        else:
            n_empty += 1
    for x in range(n_sym):
        first_off[x + 1] += first_off[x]
    fill = first_off[:-1].copy()
    first_grp = np.empty(first_off[n_sym], dtype=np.int64)
    empty = np.empty(n_empty, dtype=np.int64)
    n_empty = 0
    for g in range(n_grp):
        if pre_off[g + 1] > pre_off[g]:
            x = pre_flat[pre_off[g]]
            first_grp[fill[x]] = g
            fill[x] += 1
        else:
            empty[n_empty] = g
            n_empty += 1
    return first_off, first_grp, empty


@numba.njit(cache=True, nogil=True)
def ext_order(grp_off, ext_item):
    """Each group's patterns in order of extension item, for :func:`sequence_hits`' look-ups.

    Parameters
    ----------
    grp_off, ext_item : numpy.ndarray of int
        The patterns grouped by prefix (module doc).

    Returns
    -------
    numpy.ndarray of int64
        A permutation of the patterns, within each group: ``ext_item[order[i]]``
        ascends over ``grp_off[g] <= i < grp_off[g + 1]`` (equal items in
        pattern order).  A group already in that order (such as a sorted
        list's) keeps it at one pass.
    """
    order = np.arange(ext_item.size)
    for g in range(grp_off.size - 1):
        a, b = grp_off[g], grp_off[g + 1]
        for e in range(a + 1, b):
            if ext_item[e] < ext_item[e - 1]:
                order[a:b] = a + np.argsort(ext_item[a:b], kind="mergesort")
                break
    return order


@numba.njit(cache=True, nogil=True, inline="always")
def _extensions(items, b, last, pos, grp_off, ext_item, order, walk_ratio, g, hits, n):
    """Append to ``hits[n:]`` group ``g``'s patterns whose last item is in ``items[pos + 1:b]``.

    The group's patterns are tested one by one (one ``last`` look-up each),
    unless they outnumber those items more than ``walk_ratio`` times and
    ``order`` (:func:`ext_order`) is given: then each distinct item there,
    at its last occurrence, is searched among the group's sorted items.
    """
    if pos == NO_MATCH:
        return n
    e0, e1 = grp_off[g], grp_off[g + 1]
    if order is not None and e1 - e0 > walk_ratio * (b - 1 - pos):
        for p in range(pos + 1, b):
            x = items[p]
            if last[x] != p:
                continue  # x occurs again later: looked up once, there
            lo, hi = e0, e1
            while lo < hi:  # the first of the group's sorted items >= x
                mid = (lo + hi) >> 1
                if ext_item[order[mid]] < x:
                    lo = mid + 1
                else:
                    hi = mid
            while lo < e1 and ext_item[order[lo]] == x:
                hits[n] = order[lo]
                n += 1
                lo += 1
        return n
    for e in range(e0, e1):
        hits[n] = e  # kept only when the item occurs after pos: no branch to mispredict
        n += last[ext_item[e]] > pos
    return n


@numba.njit(cache=True, nogil=True, inline="always")
def sequence_hits(items, a, b, last, seen, s, pre_flat, pre_off, grp_off, ext_item, first_off,
                  first_grp, empty, hits, order=None, walk_ratio=WALK_RATIO):
    """The grouped patterns that ``items[a:b]`` contains, into ``hits``; returns how many.

    ``last`` must be -1 for every item (it holds the sequence's last
    occurrences, :func:`prefix_end`, during the call, and is reset after);
    ``seen`` must hold no ``s`` (it is marked ``s`` at the sequence's items);
    ``hits`` has room for every pattern.  Each pattern is listed once.  A
    prefix's leftmost match starts at the first occurrence of its first
    item, so the groups of a bucket go on from there.  With ``order``
    (:func:`ext_order`), a group of more than ``walk_ratio`` patterns per
    item of the sequence after its prefix's match is tested from those items
    (:func:`_extensions`), so that a large group (a level of single items
    over a large vocabulary) costs the sequence's length, not the group's;
    the patterns listed are the same, perhaps in another order.
    """
    for p in range(a, b):
        last[items[p]] = p
    n = 0
    for i in range(empty.size):
        g = empty[i]
        pos = prefix_end(items, a, b, last, pre_flat, pre_off[g], pre_off[g + 1])
        n = _extensions(items, b, last, pos, grp_off, ext_item, order, walk_ratio, g, hits, n)
    for p in range(a, b):
        x = items[p]
        if seen[x] == s:
            continue
        seen[x] = s  # the item's first occurrence
        for i in range(first_off[x], first_off[x + 1]):
            g = first_grp[i]
            pos = match_after(items, p, last, pre_flat, pre_off[g] + 1, pre_off[g + 1])
            n = _extensions(items, b, last, pos, grp_off, ext_item, order, walk_ratio, g, hits,
                            n)
    for p in range(a, b):
        last[items[p]] = -1
    return n


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def support_counts(items, offsets, weights, pre_flat, pre_off, grp_off, ext_item, n_sym,
                   n_chunks, walk_ratio=WALK_RATIO):
    """Weighted number of sequences containing each grouped pattern.

    Parameters
    ----------
    items : numpy.ndarray of int
        The sequences' item ids, concatenated.
    offsets : numpy.ndarray of int64
        ``n + 1`` offsets: sequence ``s`` is ``items[offsets[s]:offsets[s + 1]]``.
    weights : numpy.ndarray of int64
        The weight of each sequence (such as its multiplicity, where each
        distinct sequence is counted once).
    pre_flat, pre_off, grp_off, ext_item : numpy.ndarray of int64
        The patterns grouped by prefix (module doc): pattern ``e`` is the
        prefix of its group followed by ``ext_item[e]``.
    n_sym : int
        Number of item ids (every id is below it).
    n_chunks : int
        Chunks of sequences counted in parallel, each into its own row.
    walk_ratio : int
        Patterns per item of a sequence above which a group is tested from
        the sequence's items (:func:`sequence_hits`; default
        :data:`WALK_RATIO`): the counts do not depend on it.

    Returns
    -------
    numpy.ndarray of int64
        ``ext_item.size`` supports: the summed weights of the sequences
        that contain each pattern.
    """
    n_seq = offsets.size - 1
    first_off, first_grp, empty = groups_by_first_item(pre_flat, pre_off, n_sym)
    order = ext_order(grp_off, ext_item)
    partial = np.zeros((n_chunks, ext_item.size), dtype=np.int64)
    for c in numba.prange(n_chunks):
        last = np.full(n_sym, -1, dtype=np.int64)
        seen = np.full(n_sym, -1, dtype=np.int64)
        hits = np.empty(ext_item.size, dtype=np.int64)
        row = partial[c]
        for s in range(n_seq * c // n_chunks, n_seq * (c + 1) // n_chunks):
            n = sequence_hits(items, offsets[s], offsets[s + 1], last, seen, s, pre_flat,
                              pre_off, grp_off, ext_item, first_off, first_grp, empty, hits,
                              order, walk_ratio)
            for i in range(n):
                row[hits[i]] += weights[s]
    return partial.sum(axis=0)


# ------------------------------------------------------------------ grouping


@numba.njit(cache=True, nogil=True, inline="always")
def _mix(h):
    """The splitmix64 finaliser: every input bit moves every output bit."""
    h = (h ^ (h >> np.uint64(30))) * _MIX1
    h = (h ^ (h >> np.uint64(27))) * _MIX2
    return h ^ (h >> np.uint64(31))


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def sequence_hashes(items, offsets):
    """A 64-bit hash of each sequence ``items[offsets[s]:offsets[s + 1]]`` (order-dependent).

    Parameters
    ----------
    items : numpy.ndarray of int
    offsets : numpy.ndarray of int64

    Returns
    -------
    numpy.ndarray of uint64
        Equal sequences hash equal; different ones rarely do.
    """
    n_seq = offsets.size - 1
    out = np.empty(n_seq, dtype=np.uint64)
    for s in numba.prange(n_seq):
        h = _mix(np.uint64(offsets[s + 1] - offsets[s]) + _GOLDEN)
        for p in range(offsets[s], offsets[s + 1]):
            h = _mix(h ^ (np.uint64(items[p]) + _GOLDEN))
        out[s] = h
    return out


@numba.njit(cache=True, nogil=True, inline="always")
def _same_rows(items, offsets, r, s):
    """Whether sequences ``r`` and ``s`` hold the same items."""
    a, b = offsets[r], offsets[s]
    n = offsets[r + 1] - a
    if offsets[s + 1] - b != n:
        return False
    for i in range(n):
        if items[a + i] != items[b + i]:
            return False
    return True


@numba.njit(nogil=True, cache=True)
def group_rows(items, offsets, hashes, weights):
    """The distinct sequences, in order of first occurrence, and their total weights.

    An open-addressing table keyed by ``hashes`` proposes, for each
    sequence, the distinct sequences seen so far with the same hash; the
    items decide, so a hash collision costs time, never exactness.

    Parameters
    ----------
    items : numpy.ndarray of int
    offsets : numpy.ndarray of int64
    hashes : numpy.ndarray of uint64
        Any function of the sequence's items (:func:`sequence_hashes`).
    weights : numpy.ndarray of int64
        One per sequence.

    Returns
    -------
    first : numpy.ndarray of int64
        For each distinct sequence, its first row.
    total : numpy.ndarray of int64
        For each distinct sequence, the sum of its rows' weights.
    """
    n_seq = hashes.size
    cap = 1
    while cap < 2 * n_seq:
        cap *= 2
    # a slot holds -1 (empty), or a group id (below 2**32) in its low 32 bits and 31 more bits
    # of the hash above them: one int64 that rules out most other groups without their items
    table = np.full(cap, -1, dtype=np.int64)
    first = np.empty(n_seq, dtype=np.int64)
    total = np.zeros(n_seq, dtype=np.int64)
    n_groups = 0
    for s in range(n_seq):
        h = hashes[s]
        tag = np.int64(h >> np.uint64(33))
        i = np.int64(h & np.uint64(cap - 1))
        while True:
            v = table[i]
            if v < 0:
                g = n_groups
                table[i] = (tag << 32) | g
                first[g] = s
                n_groups += 1
                break
            g = v & 0xFFFFFFFF
            if v >> 32 == tag and _same_rows(items, offsets, first[g], s):
                break
            i = (i + 1) & (cap - 1)
        total[g] += weights[s]
    return first[:n_groups], total[:n_groups]


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def gather_rows(items, offsets, rows):
    """The sequences ``rows`` of a flat batch, concatenated: ``(items, offsets)``.

    Parameters
    ----------
    items : numpy.ndarray
        The batch's item ids, concatenated.
    offsets : numpy.ndarray of int64
        ``n + 1`` offsets of the batch's sequences into ``items``.
    rows : numpy.ndarray of int
        The sequences to take, in order (repeats allowed).

    Returns
    -------
    items : numpy.ndarray
        Their items, concatenated (``items``' dtype).
    offsets : numpy.ndarray of int64
        ``rows.size + 1`` offsets into it.
    """
    out_off = np.zeros(rows.size + 1, dtype=np.int64)
    for i in range(rows.size):
        out_off[i + 1] = out_off[i] + offsets[rows[i] + 1] - offsets[rows[i]]
    out = np.empty(out_off[-1], dtype=items.dtype)
    for i in numba.prange(rows.size):
        a = offsets[rows[i]]
        out[out_off[i]:out_off[i + 1]] = items[a:a + out_off[i + 1] - out_off[i]]
    return out, out_off


@numba.njit(cache=True, nogil=True)
def occurring_pairs(items, offsets, weights, n_sym):
    """Every ordered pair ``(a, b)`` a sequence holds as a subsequence, once per sequence.

    ``(a, b)`` is held when ``a``'s first occurrence comes before ``b``'s
    last (``a == b``: when ``a`` occurs twice), so a sequence of ``d``
    distinct items costs ``d * d`` tests however long it is.  Returns the
    keys ``a * n_sym + b`` (int64) and the holding sequence's weight of each.
    """
    first = np.full(n_sym, -1, dtype=np.int64)  # a position before offsets[s]: not in sequence s
    last = np.empty(n_sym, dtype=np.int64)
    seen = np.empty(n_sym, dtype=np.int64)
    out = np.empty(0, dtype=np.int64)
    held = np.empty(0, dtype=np.int64)
    for fill in range(2):  # count, then write
        o = 0
        for s in range(offsets.size - 1):
            d = 0
            for p in range(offsets[s], offsets[s + 1]):
                x = items[p]
                if first[x] < offsets[s]:
                    first[x] = p
                    seen[d] = x
                    d += 1
                last[x] = p
            for i in range(d):
                a = seen[i]
                for j in range(d):
                    b = seen[j]
                    if first[a] < last[b]:
                        if fill:
                            out[o] = a * n_sym + b
                            held[o] = weights[s]
                        o += 1
        if not fill:
            out = np.empty(o, dtype=np.int64)
            held = np.empty(o, dtype=np.int64)
            first[:] = -1
    return out, held


# -------------------------------------------------------- candidate generation


@numba.njit(cache=True, nogil=True, inline="always")
def narrow(level, lo, hi, col, value):
    """The rows of ``level[lo:hi]`` whose column ``col`` holds ``value``, as ``(lo, hi)``.

    The rows ``[lo, hi)`` of the lexicographically sorted ``level`` must
    agree on the columns before ``col``, so that column ``col`` ascends
    there: two binary searches.
    """
    a, b = lo, hi
    while a < b:  # the first row holding value or more
        mid = (a + b) >> 1
        if level[mid, col] < value:
            a = mid + 1
        else:
            b = mid
    start, b = a, hi
    while a < b:  # the first row holding more
        mid = (a + b) >> 1
        if level[mid, col] <= value:
            a = mid + 1
        else:
            b = mid
    return start, a


@numba.njit(cache=True, nogil=True, inline="always")
def _rows_without(level, i, d, lo, hi):
    """The rows starting with ``p[:d] + p[d+1:]``, ``p = level[i]``, given the rows
    ``[lo, hi)`` that start with ``p[:d]``."""
    for col in range(d, level.shape[1] - 1):
        if lo == hi:
            break
        lo, hi = narrow(level, lo, hi, col, level[i, col + 1])
    return lo, hi


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def gsp_candidates(level, n_chunks):
    """The candidate ``(n+1)``-patterns of a level of ``n``-patterns (GSP join and prune).

    Row ``p`` joins row ``q`` when ``p[1:] == q[:-1]``, giving ``p + q[-1]``,
    kept only when deleting any one inner item of it leaves a row of the
    level (supports are anti-monotone under taking subsequences): the
    candidates of :func:`dpgpu.eval.truth.gsp_join` of the level with itself.

    Parameters
    ----------
    level : numpy.ndarray of int, shape (m, n)
        Distinct patterns, ``n >= 1``, rows in lexicographic order.
    n_chunks : int
        Parallel chunks of rows (>= 1); the result does not depend on it.

    Returns
    -------
    numpy.ndarray, shape (c, n + 1), of ``level``'s dtype
        The candidates, rows in lexicographic order.

    Notes
    -----
    Rows sharing a start are contiguous, so every set of rows searched is
    a range, narrowed one column at a time (:func:`narrow`).  Three passes
    over chunks of parent rows ``p`` in parallel:

    1. the partners ``q``, the rows starting with ``p[1:]``;
    2. the prune: for each inner position ``d`` of a candidate ``p + x``,
       the rows starting with ``p[:d] + p[d+1:]`` must include one ending
       with ``x``; the ``x`` of ``p``'s partners ascend, and so do the last
       items of those rows, so one walk along both tests them all.  Those
       rows lie among the rows starting with ``p[:d]``, whose ranges a
       chunk keeps from one parent to the next while ``p[:d]`` stays;
    3. the kept candidates are written at the offsets their counts give.

    Deleting a candidate's first item gives ``q`` and its last gives ``p``:
    both rows, untested.
    """
    m, n = level.shape
    first = np.empty(m, dtype=np.int64)
    joins = np.zeros(m + 1, dtype=np.int64)
    for c in numba.prange(n_chunks):
        for i in range(m * c // n_chunks, m * (c + 1) // n_chunks):
            lo, hi = _rows_without(level, i, 0, 0, m)
            first[i] = lo
            joins[i + 1] = hi - lo
    join_at = np.cumsum(joins)
    keep = np.ones(join_at[m], dtype=np.bool_)
    count = np.zeros(m + 1, dtype=np.int64)
    for c in numba.prange(n_chunks):
        start_lo = np.zeros(n, dtype=np.int64)  # start_lo[d], start_hi[d]: rows starting with p[:d]
        start_hi = np.full(n, m, dtype=np.int64)
        i0 = m * c // n_chunks
        for i in range(i0, m * (c + 1) // n_chunks):
            same = 0  # p[:same] is the previous parent's
            while i > i0 and same < n - 1 and level[i, same] == level[i - 1, same]:
                same += 1
            for d in range(same + 1, n):
                start_lo[d], start_hi[d] = narrow(level, start_lo[d - 1], start_hi[d - 1], d - 1,
                                                  level[i, d - 1])
            kept = joins[i + 1]
            for d in range(1, n):
                if kept == 0:
                    break
                a, b = _rows_without(level, i, d, start_lo[d], start_hi[d])
                for t in range(joins[i + 1]):
                    if keep[join_at[i] + t]:
                        x = level[first[i] + t, n - 1]
                        while a < b and level[a, n - 1] < x:
                            a += 1
                        if a == b or level[a, n - 1] != x:
                            keep[join_at[i] + t] = False
                            kept -= 1
            count[i + 1] = kept
    out_at = np.cumsum(count)
    out = np.empty((out_at[m], n + 1), dtype=level.dtype)
    for c in numba.prange(n_chunks):
        for i in range(m * c // n_chunks, m * (c + 1) // n_chunks):
            o = out_at[i]
            for t in range(joins[i + 1]):
                if keep[join_at[i] + t]:
                    out[o, :n] = level[i]
                    out[o, n] = level[first[i] + t, n - 1]
                    o += 1
    return out
