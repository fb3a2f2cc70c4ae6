"""Numba loops of PFS² sequence shrinking (:mod:`.shrink`).

Imported only when used (it imports Numba).  Each kernel shrinks a whole
batch of sequences in one call, in parallel over the sequences (they are
independent, so the result does not depend on the number of threads), and
writes every sequence into its own fixed slot of ``out``, returning the
lengths.

Candidate tables (built by :func:`.shrink.candidate_tables`): ``cand``
``(C, k)`` items; ``pre_id`` the g-node (prefix ``cand[c, :-1]``) of each
candidate, as a group of :func:`dpgpu.eval.truth.group_by_prefix`
(``pre_flat``, ``pre_off``); ``gen_id`` ``(C, k)`` the group of each
distinct generator (``cand[c]`` minus one item; -1 where it is no
candidate's prefix or repeats an earlier generator); ``n_distinct`` the
number of distinct items of each candidate.
"""

from __future__ import annotations

import numba
import numpy as np

from ...backend.numba_threads import one_caller_when_unsafe
from ...eval.subseq_numba import groups_by_first_item, sequence_hits


@numba.njit(cache=True, nogil=True)
def _compress_one(cur, nxt, n, k, max_pattern):
    """Lemma 2 on ``cur[:n]`` (``nxt`` is scratch): the buffer holding the result, its length."""
    for p in range(1, max_pattern + 1):
        m = 0
        i = 0
        while i < n:
            if i + p * (k + 1) <= n:
                r = 1  # copies of cur[i:i+p] starting at i
                while i + (r + 1) * p <= n:
                    same = True
                    for u in range(p):
                        if cur[i + r * p + u] != cur[i + u]:
                            same = False
                            break
                    if not same:
                        break
                    r += 1
                if r > k:
                    for _ in range(k):
                        for u in range(p):
                            nxt[m] = cur[i + u]
                            m += 1
                    i += r * p
                    continue
            nxt[m] = cur[i]
            m += 1
            i += 1
        cur, nxt = nxt, cur
        n = m
    return cur, n


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def compress_rows(items, offsets, k, max_pattern, out):
    """Consecutive-pattern compression of every sequence, into ``out[offsets[s]:]``."""
    n_seq = offsets.size - 1
    lens = np.zeros(n_seq, dtype=np.int64)
    for s in numba.prange(n_seq):
        a = offsets[s]
        n = offsets[s + 1] - a
        cur = items[a:a + n].copy()
        res, m = _compress_one(cur, np.empty_like(cur), n, k, max_pattern)
        out[a:a + m] = res[:m]
        lens[s] = m
    return lens


@numba.njit(cache=True, nogil=True)
def _append(y, out, n, m, cl, cmatch, want, cand, k):
    """Append ``y`` to ``out[:n]``, advancing the greedy matches of the remaining candidates.

    ``want[j]`` is the item that candidate ``cl[j]`` matches next (-1 once
    it is matched): most candidates are passed over on that one read.
    """
    out[n] = y
    for j in range(m):
        if want[j] == y:
            cmatch[j] += 1
            want[j] = cand[cl[j], cmatch[j]] if cmatch[j] < k else -1
    return n + 1


@numba.njit(cache=True, nogil=True)
def _drop_contained(m, cl, cmatch, want, k, pre_id, cnt):
    """Remove the candidates now contained in the output; returns how many remain.

    The remaining ones stay first in ``cl``, ``cmatch`` and ``want``, in their order.
    """
    kept = 0
    for j in range(m):
        if cmatch[j] == k:
            cnt[pre_id[cl[j]]] -= 1
        else:
            cl[kept] = cl[j]
            cmatch[kept] = cmatch[j]
            want[kept] = want[j]
            kept += 1
    return kept


@numba.njit(cache=True, nogil=True)
def _best_candidate(m, cl, cand, k, gen_id, n_distinct, cnt):
    """The remaining candidate of largest (c-score, distinct items), lexicographically smallest."""
    best = -1
    best_score = -1
    for j in range(m):
        c = cl[j]
        score = 0
        for t in range(k):
            if gen_id[c, t] >= 0:
                score += cnt[gen_id[c, t]]
        if best >= 0:
            if score < best_score:
                continue
            if score == best_score:
                if n_distinct[c] < n_distinct[best]:
                    continue
                if n_distinct[c] == n_distinct[best]:
                    t = 0
                    while cand[c, t] == cand[best, t]:
                        t += 1
                    if cand[c, t] > cand[best, t]:
                        continue
        best = c
        best_score = score
    return best


@numba.njit(cache=True, nogil=True)
def _vote(m, cmatch, cl, cand, k, votes, voted):
    """The item most voted for by the candidates whose prefix is matched (ties: smaller id).

    A remaining candidate has matched its prefix (its g-node is matched)
    exactly when its own greedy match is one item short: both follow the
    same items.  Returns -1 when no candidate votes.
    """
    n_voted = 0
    for j in range(m):
        if cmatch[j] == k - 1:
            x = cand[cl[j], k - 1]
            if votes[x] == 0:
                voted[n_voted] = x
                n_voted += 1
            votes[x] += 1
    if n_voted == 0:
        return -1
    x = voted[0]
    for t in range(1, n_voted):
        y = voted[t]
        if votes[y] > votes[x] or (votes[y] == votes[x] and y < x):
            x = y
    for t in range(n_voted):
        votes[voted[t]] = 0
    return x


@one_caller_when_unsafe
@numba.njit(parallel=True, nogil=True, cache=True)
def reconstruct_rows(items, offsets, groups, cand, pre_id, gen_id, n_distinct, l_max, n_sym,
                     n_chunks, out):
    """Algorithm 2 (CS-tree greedy) for every sequence ``items[offsets[s]:offsets[s + 1]]``.

    ``groups`` is ``(pre_flat, pre_off, grp_off, ext_item, members)``, the
    candidates grouped by prefix (:func:`dpgpu.eval.truth.group_by_prefix`):
    ``Contain_k`` of each sequence comes from
    :func:`dpgpu.eval.subseq_numba.sequence_hits` (the groups bucketed by
    first item once, for all runs).  Slot ``s`` of ``out`` is
    ``out[s * l_max:(s + 1) * l_max]``; the sequences are cut into
    ``n_chunks`` runs (:func:`_reconstruct_run`).
    """
    n_seq = offsets.size - 1
    buckets = groups_by_first_item(groups[0], groups[1], n_sym)
    lens = np.zeros(n_seq, dtype=np.int64)
    for ch in numba.prange(n_chunks):
        _reconstruct_run(items, offsets, groups, buckets, cand, pre_id, gen_id, n_distinct,
                         l_max, n_sym, n_seq * ch // n_chunks, n_seq * (ch + 1) // n_chunks, out,
                         lens)
    return lens


@numba.njit(cache=True, nogil=True)
def _reconstruct_run(items, offsets, groups, buckets, cand, pre_id, gen_id, n_distinct, l_max,
                     n_sym, lo, hi, out, lens):
    """Algorithm 2 for sequences ``lo .. hi - 1``, which share scratch.

    State per sequence: the contained candidates that remain (first in
    ``cl``), how many items of each the output matches greedily so far
    (the output only grows, so a candidate is contained exactly when its
    match is complete), and ``cnt[g]``, the remaining candidates under
    g-node ``g`` (its c-node children).
    """
    pre_flat, pre_off, grp_off, ext_item, members = groups
    first_off, first_grp, empty = buckets
    n_cand, k = cand.shape
    last = np.full(n_sym, -1, dtype=np.int64)
    seen = np.full(n_sym, -1, dtype=np.int64)
    hits = np.empty(n_cand, dtype=np.int64)
    cl = np.empty(n_cand, dtype=np.int64)
    cmatch = np.empty(n_cand, dtype=np.int64)
    want = np.empty(n_cand, dtype=np.int64)
    cnt = np.zeros(pre_off.size - 1, dtype=np.int64)
    votes = np.zeros(n_sym, dtype=np.int64)
    voted = np.empty(n_sym, dtype=np.int64)
    for s in range(lo, hi):
        m = sequence_hits(items, offsets[s], offsets[s + 1], last, seen, s, pre_flat, pre_off,
                          grp_off, ext_item, first_off, first_grp, empty, hits)
        for j in range(m):
            cl[j] = members[hits[j]]
            cmatch[j] = 0
            want[j] = cand[cl[j], 0]
            cnt[pre_id[cl[j]]] += 1
        o = out[s * l_max:(s + 1) * l_max]
        n = 0
        first = True  # Algorithm 2 starts from the best candidate, not from votes
        while n < l_max and m > 0:
            x = -1 if first else _vote(m, cmatch, cl, cand, k, votes, voted)
            first = False
            if x >= 0:
                n = _append(x, o, n, m, cl, cmatch, want, cand, k)
            else:
                c = _best_candidate(m, cl, cand, k, gen_id, n_distinct, cnt)
                for t in range(min(k, l_max - n)):
                    n = _append(cand[c, t], o, n, m, cl, cmatch, want, cand, k)
            m = _drop_contained(m, cl, cmatch, want, k, pre_id, cnt)
        lens[s] = n
        for j in range(m):
            cnt[pre_id[cl[j]]] = 0
