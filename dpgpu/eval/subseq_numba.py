"""Numba loops of subsequence containment.

Imported only when used (it imports Numba).  Patterns come grouped by
prefix (:func:`dpgpu.eval.truth.group_by_prefix`): each group is a prefix
``pre_flat[pre_off[g]:pre_off[g+1]]`` with extension items
``ext_item[grp_off[g]:grp_off[g+1]]``.  The per-element logic,
:func:`prefix_end` -- the greedy leftmost match of a prefix, then one
last-occurrence test per extension item -- is shared by the support count
(:func:`support_counts`) and the containment matrix of PFS² shrinking
(:func:`contain_matrix`), and mirrored by ``kernels/subseq.cuh``.

A prefix can only match a sequence holding its first item, and its
leftmost match starts at that item's first occurrence, so the groups are
bucketed by that item (:func:`groups_by_first_item`) and a sequence
visits only the buckets of its distinct items, at their first
occurrences, matching the rest of each prefix from there
(:func:`match_after`), and the groups of empty prefix: the same matches
as :func:`prefix_end` on every group, with far fewer tries and shorter
scans when the sequences hold few of the items.  Both kernels run over chunks of
sequences in parallel; each chunk counts into its own row (integers, added
in chunk order) or writes its own rows, so the results do not depend on
the number of threads.
"""

from __future__ import annotations

import numba
import numpy as np

#: :func:`prefix_end`'s answer when the prefix does not occur.
NO_MATCH = -2


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


@numba.njit(cache=True, nogil=True, inline="always")
def _extensions(last, pos, grp_off, ext_item, g, hits, n):
    """Append to ``hits[n:]`` the patterns of group ``g`` whose last item occurs after ``pos``."""
    if pos != NO_MATCH:
        for e in range(grp_off[g], grp_off[g + 1]):
            if last[ext_item[e]] > pos:
                hits[n] = e
                n += 1
    return n


@numba.njit(cache=True, nogil=True, inline="always")
def sequence_hits(items, a, b, last, seen, s, pre_flat, pre_off, grp_off, ext_item, first_off,
                  first_grp, empty, hits):
    """The grouped patterns that ``items[a:b]`` contains, into ``hits``; returns how many.

    ``last`` must be -1 for every item (it holds the sequence's last
    occurrences, :func:`prefix_end`, during the call, and is reset after);
    ``seen`` must hold no ``s`` (it is marked ``s`` at the sequence's items);
    ``hits`` has room for every pattern.  Each pattern is listed once.  A
    prefix's leftmost match starts at the first occurrence of its first
    item, so the groups of a bucket go on from there.
    """
    for p in range(a, b):
        last[items[p]] = p
    n = 0
    for i in range(empty.size):
        g = empty[i]
        n = _extensions(last, prefix_end(items, a, b, last, pre_flat, pre_off[g], pre_off[g + 1]),
                        grp_off, ext_item, g, hits, n)
    for p in range(a, b):
        x = items[p]
        if seen[x] == s:
            continue
        seen[x] = s  # the item's first occurrence
        for i in range(first_off[x], first_off[x + 1]):
            g = first_grp[i]
            pos = match_after(items, p, last, pre_flat, pre_off[g] + 1, pre_off[g + 1])
            n = _extensions(last, pos, grp_off, ext_item, g, hits, n)
    for p in range(a, b):
        last[items[p]] = -1
    return n


@numba.njit(parallel=True, nogil=True, cache=True)
def support_counts(items, offsets, weights, pre_flat, pre_off, grp_off, ext_item, n_sym,
                   n_chunks):
    """Weighted number of sequences containing each grouped pattern."""
    n_seq = offsets.size - 1
    first_off, first_grp, empty = groups_by_first_item(pre_flat, pre_off, n_sym)
    partial = np.zeros((n_chunks, ext_item.size), dtype=np.int64)
    for c in numba.prange(n_chunks):
        last = np.full(n_sym, -1, dtype=np.int64)
        seen = np.full(n_sym, -1, dtype=np.int64)
        hits = np.empty(ext_item.size, dtype=np.int64)
        row = partial[c]
        for s in range(n_seq * c // n_chunks, n_seq * (c + 1) // n_chunks):
            n = sequence_hits(items, offsets[s], offsets[s + 1], last, seen, s, pre_flat,
                              pre_off, grp_off, ext_item, first_off, first_grp, empty, hits)
            for i in range(n):
                row[hits[i]] += weights[s]
    return partial.sum(axis=0)


@numba.njit(parallel=True, nogil=True, cache=True)
def contain_matrix(items, offsets, pre_flat, pre_off, grp_off, ext_item, members, n_sym,
                   n_chunks, out):
    """``out[s, members[e]]`` = sequence ``s`` contains grouped pattern ``e``.

    ``out`` starts all False; ``members`` maps the grouped order back to the
    patterns' own order (:func:`dpgpu.eval.truth.group_by_prefix`).
    """
    n_seq = offsets.size - 1
    first_off, first_grp, empty = groups_by_first_item(pre_flat, pre_off, n_sym)
    for c in numba.prange(n_chunks):
        last = np.full(n_sym, -1, dtype=np.int64)
        seen = np.full(n_sym, -1, dtype=np.int64)
        hits = np.empty(ext_item.size, dtype=np.int64)
        for s in range(n_seq * c // n_chunks, n_seq * (c + 1) // n_chunks):
            n = sequence_hits(items, offsets[s], offsets[s + 1], last, seen, s, pre_flat,
                              pre_off, grp_off, ext_item, first_off, first_grp, empty, hits)
            for i in range(n):
                out[s, members[hits[i]]] = True
    return out
