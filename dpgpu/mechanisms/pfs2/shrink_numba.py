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
def _append(y, out, n, cl, m, rem, cmatch, cand, k, plist, n_pre, pmatch, pre_flat, pre_off):
    """Append ``y`` to ``out[:n]``, advancing the greedy matches of the candidates and prefixes."""
    out[n] = y
    for j in range(m):
        if rem[j] and cmatch[j] < k and cand[cl[j], cmatch[j]] == y:
            cmatch[j] += 1
    for t in range(n_pre):
        g = plist[t]
        q = pre_off[g] + pmatch[g]
        if q < pre_off[g + 1] and pre_flat[q] == y:
            pmatch[g] += 1
    return n + 1


@numba.njit(cache=True, nogil=True)
def _drop_contained(m, cl, rem, cmatch, k, pre_id, cnt):
    """Remove the remaining candidates now contained in the output; returns how many."""
    dropped = 0
    for j in range(m):
        if rem[j] and cmatch[j] == k:
            rem[j] = False
            cnt[pre_id[cl[j]]] -= 1
            dropped += 1
    return dropped


@numba.njit(cache=True, nogil=True)
def _best_candidate(m, cl, rem, cand, k, gen_id, n_distinct, cnt):
    """The remaining candidate of largest (c-score, distinct items), lexicographically smallest."""
    best = -1
    best_score = -1
    for j in range(m):
        if not rem[j]:
            continue
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


@numba.njit(parallel=True, nogil=True, cache=True)
def reconstruct_rows(contains, cand, pre_id, gen_id, n_distinct, pre_flat, pre_off, l_max,
                     n_sym, n_chunks, out):
    """Algorithm 2 (CS-tree greedy) for every sequence, given ``contains[s, c]`` (``Contain_k``).

    Slot ``s`` of ``out`` is ``out[s * l_max:(s + 1) * l_max]``; the
    sequences are cut into ``n_chunks`` runs (:func:`_reconstruct_run`).
    """
    n_seq = contains.shape[0]
    lens = np.zeros(n_seq, dtype=np.int64)
    for ch in numba.prange(n_chunks):
        _reconstruct_run(contains, cand, pre_id, gen_id, n_distinct, pre_flat, pre_off, l_max,
                         n_sym, n_seq * ch // n_chunks, n_seq * (ch + 1) // n_chunks, out, lens)
    return lens


@numba.njit(cache=True, nogil=True)
def _reconstruct_run(contains, cand, pre_id, gen_id, n_distinct, pre_flat, pre_off, l_max,
                     n_sym, lo, hi, out, lens):
    """Algorithm 2 for sequences ``lo .. hi - 1``, which share scratch.

    State per sequence: which contained candidates remain, how many items of
    each candidate and of each g-node (prefix) the output matches greedily
    so far (the output only grows, so a candidate is contained exactly when
    its match is complete), and ``cnt[g]``, the remaining candidates under
    g-node ``g`` (its c-node children).
    """
    n_cand = contains.shape[1]
    k = cand.shape[1]
    n_grp = pre_off.size - 1
    cl = np.empty(n_cand, dtype=np.int64)       # contained candidates, in candidate order
    rem = np.zeros(n_cand, dtype=np.bool_)
    cmatch = np.zeros(n_cand, dtype=np.int64)
    cnt = np.zeros(n_grp, dtype=np.int64)
    pmatch = np.zeros(n_grp, dtype=np.int64)
    plist = np.empty(n_grp, dtype=np.int64)     # g-nodes of the contained candidates
    votes = np.zeros(n_sym, dtype=np.int64)
    voted = np.empty(n_sym, dtype=np.int64)
    for s in range(lo, hi):
        m = 0
        n_pre = 0
        for c in range(n_cand):
            if contains[s, c]:
                cl[m] = c
                rem[m] = True
                cmatch[m] = 0
                m += 1
                g = pre_id[c]
                if cnt[g] == 0:
                    plist[n_pre] = g
                    n_pre += 1
                    pmatch[g] = 0
                cnt[g] += 1
        if m == 0:
            continue
        o = out[s * l_max:(s + 1) * l_max]
        n = 0
        n_rem = m
        first = True
        while n < l_max and n_rem > 0:
            n_voted = 0
            if not first:
                for j in range(m):
                    c = cl[j]
                    g = pre_id[c]
                    if rem[j] and pmatch[g] == pre_off[g + 1] - pre_off[g]:
                        x = cand[c, k - 1]
                        if votes[x] == 0:
                            voted[n_voted] = x
                            n_voted += 1
                        votes[x] += 1
            first = False
            if n_voted > 0:
                x = voted[0]
                for t in range(1, n_voted):
                    y = voted[t]
                    if votes[y] > votes[x] or (votes[y] == votes[x] and y < x):
                        x = y
                for t in range(n_voted):
                    votes[voted[t]] = 0
                n = _append(x, o, n, cl, m, rem, cmatch, cand, k, plist, n_pre, pmatch,
                            pre_flat, pre_off)
            else:
                c = _best_candidate(m, cl, rem, cand, k, gen_id, n_distinct, cnt)
                for t in range(min(k, l_max - n)):
                    n = _append(cand[c, t], o, n, cl, m, rem, cmatch, cand, k, plist, n_pre,
                                pmatch, pre_flat, pre_off)
            n_rem -= _drop_contained(m, cl, rem, cmatch, k, pre_id, cnt)
        lens[s] = n
        for t in range(n_pre):
            cnt[plist[t]] = 0
