"""Numba loop of PFS² capped candidate generation (:mod:`.candidates`).

Imported only when used (it imports Numba).  One serial kernel, resumable:
it joins the parents of a level in a given order, writes the candidates
that can still be among the best into a buffer, and returns when the
buffer is full (the caller keeps the best and calls again) or when no
parent left can give a candidate good enough.

Level tables (built by :func:`.candidates.capped_candidates`): ``level``
``(m, k)`` the distinct patterns, rows in lexicographic order; ``sup`` their
supports; ``order`` the parents in the order joined (decreasing support,
ties by row).  A candidate ``p + (q[-1],)`` of rows ``i = p`` and ``j = q``
has the key ``i * m + j``: keys order candidates lexicographically (``q``
runs through the rows starting with ``p[1:]``, ascending in ``q[-1]``).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def _prefix_range(level, lo, hi, key, start, n):
    """The rows of ``level[lo:hi]`` (all starting alike before column ``start``) whose
    columns ``start .. start + n - 1`` equal ``key[:n]``: their range ``lo, hi``."""
    for col in range(start, start + n):
        x = key[col - start]
        a, b = lo, hi
        while a < b:  # first row with level[r, col] >= x
            mid = (a + b) >> 1
            if level[mid, col] < x:
                a = mid + 1
            else:
                b = mid
        lo = a
        b = hi
        while a < b:  # first row with level[r, col] > x
            mid = (a + b) >> 1
            if level[mid, col] <= x:
                a = mid + 1
            else:
                b = mid
        hi = a
        if lo >= hi:
            return lo, lo
    return lo, hi


@numba.njit(cache=True, nogil=True)
def _contains(level, lo, hi, row):
    """Whether ``row`` is a row of ``level[lo:hi]`` (lexicographic binary search)."""
    k = level.shape[1]
    while lo < hi:
        mid = (lo + hi) >> 1
        cmp = 0
        for t in range(k):
            if level[mid, t] != row[t]:
                cmp = -1 if level[mid, t] < row[t] else 1
                break
        if cmp == 0:
            return True
        if cmp < 0:
            lo = mid + 1
        else:
            hi = mid
    return False


@numba.njit(cache=True, nogil=True)
def join_scan(level, sup, order, pos, j, found, budget, full, floor_s, floor_key,
              out_key, out_s, n_out):
    """Join parents ``order[pos:]`` (the one at ``pos`` from its partner row ``j``, -1: from
    its first), the best candidates into ``out_key`` / ``out_s`` from ``n_out`` on.

    A candidate of score ``s`` and key ``key`` is written when it can still
    be among the best ``budget``: always while ``full`` is false, else when
    ``(s, -key) > (floor_s, -floor_key)`` (the worst of the best so far).
    ``found`` counts the candidates found (join and prune); once above
    ``budget``, one that cannot be written is not even pruned (the count
    is then only a lower bound, which is all the caller needs).

    Returns
    -------
    pos, j, found, n_out : int
        Where to resume; the counts so far.
    stopped : bool
        No parent left can give a candidate to write (while ``found >
        budget``): parents join in decreasing support, a candidate scores
        at most its first parent's support, and a parent tied with the
        floor gives keys above ``floor_key`` once its row is past the
        floor's first parent.  Returning with ``pos < m`` and not
        ``stopped``: ``out_key`` is full.
    """
    m, k = level.shape
    cap = out_key.size
    row = np.empty(k, dtype=level.dtype)
    par = np.empty(max(k - 1, 1), dtype=level.dtype)
    while pos < m:
        i = order[pos]
        sp = sup[i]
        if full and found > budget and (sp < floor_s or (sp == floor_s and i * m > floor_key)):
            return pos, j, found, n_out, True
        for t in range(k - 1):
            par[t] = level[i, t + 1]
        lo, hi = _prefix_range(level, 0, m, par, 0, k - 1)  # partners: rows starting with p[1:]
        first_lo, first_hi = _prefix_range(level, 0, m, level[i], 0, 1)  # rows starting with p[0]
        if j < lo:
            j = lo
        while j < hi:
            s = min(sp, sup[j])
            key = i * m + j
            enters = (not full) or s > floor_s or (s == floor_s and key < floor_key)
            if enters or found <= budget:
                if enters and n_out == cap:
                    return pos, j, found, n_out, False
                ok = True
                for d in range(1, k):  # c = p + (x,) minus its item d: c[:d] + c[d + 1:]
                    for t in range(d):
                        row[t] = level[i, t]
                    for t in range(d, k - 1):
                        row[t] = level[i, t + 1]
                    row[k - 1] = level[j, k - 1]
                    if not _contains(level, first_lo, first_hi, row):
                        ok = False
                        break
                if ok:
                    found += 1
                    if enters:
                        out_key[n_out] = key
                        out_s[n_out] = s
                        n_out += 1
            j += 1
        pos += 1
        j = -1
    return pos, j, found, n_out, False
