"""Numba loops of subsequence containment.

Imported only when used (it imports Numba).  Patterns come grouped by
prefix (:func:`dpgpu.eval.truth.group_by_prefix`): each group is a prefix
``pre_flat[pre_off[g]:pre_off[g+1]]`` with extension items
``ext_item[grp_off[g]:grp_off[g+1]]``.  The per-element logic,
:func:`prefix_end` -- the greedy leftmost match of a prefix, then one
last-occurrence test per extension item -- is shared by the support count
(:func:`support_counts`) and the containment matrix of PFS² shrinking
(:func:`contain_matrix`), and mirrored by ``kernels/subseq.cuh``.
"""

from __future__ import annotations

import numba
import numpy as np

#: :func:`prefix_end`'s answer when the prefix does not occur.
NO_MATCH = -2


@numba.njit(cache=True, nogil=True)
def prefix_end(items, a, b, last, pre_flat, p0, p1):
    """Where the leftmost match of ``pre_flat[p0:p1]`` in ``items[a:b]`` ends (``a - 1`` if empty).

    ``last[x]`` is the last position of item ``x`` in the sequence (-1 if
    absent).  Returns :data:`NO_MATCH` when the prefix does not occur, or
    when the sequence has no room for an extension item after it.
    """
    if p1 - p0 >= b - a:
        return NO_MATCH
    pos = a - 1
    for j in range(p0, p1):
        x = pre_flat[j]
        if last[x] <= pos:  # x does not occur after pos
            return NO_MATCH
        pos += 1
        while items[pos] != x:
            pos += 1
    return pos


@numba.njit(parallel=True, nogil=True, cache=True)
def support_counts(items, offsets, weights, pre_flat, pre_off, grp_off, ext_item, n_sym,
                   n_chunks):
    """Weighted number of sequences containing each grouped pattern."""
    n_seq = offsets.size - 1
    n_grp = pre_off.size - 1
    partial = np.zeros((n_chunks, ext_item.size), dtype=np.int64)
    for c in numba.prange(n_chunks):
        lo = n_seq * c // n_chunks
        hi = n_seq * (c + 1) // n_chunks
        last = np.full(n_sym, -1, dtype=np.int64)
        row = partial[c]
        for s in range(lo, hi):
            a = offsets[s]
            b = offsets[s + 1]
            if a == b:
                continue
            for p in range(a, b):
                last[items[p]] = p
            for g in range(n_grp):
                pos = prefix_end(items, a, b, last, pre_flat, pre_off[g], pre_off[g + 1])
                if pos != NO_MATCH:
                    for e in range(grp_off[g], grp_off[g + 1]):
                        if last[ext_item[e]] > pos:
                            row[e] += weights[s]
            for p in range(a, b):
                last[items[p]] = -1
    return partial.sum(axis=0)


@numba.njit(parallel=True, nogil=True, cache=True)
def contain_matrix(items, offsets, pre_flat, pre_off, grp_off, ext_item, n_sym, out):
    """``out[s, e]`` = sequence ``s`` contains grouped pattern ``e``."""
    n_seq = offsets.size - 1
    n_grp = pre_off.size - 1
    for s in numba.prange(n_seq):
        a = offsets[s]
        b = offsets[s + 1]
        if a == b:
            continue
        last = np.full(n_sym, -1, dtype=np.int64)
        for p in range(a, b):
            last[items[p]] = p
        for g in range(n_grp):
            pos = prefix_end(items, a, b, last, pre_flat, pre_off[g], pre_off[g + 1])
            if pos != NO_MATCH:
                for e in range(grp_off[g], grp_off[g + 1]):
                    if last[ext_item[e]] > pos:
                        out[s, e] = True
    return out
