"""Sequence shrinking on a sample database (PFS^2 Section V-A).

Given the candidate ``k``-sequences ``C_k`` and the length constraint
``l_max``, every sequence of a sample database is made at most ``l_max``
long by

1. **irrelevant-item deletion** (Lemma 1): items in no candidate are dropped
   (vectorized over the whole sample);
2. **consecutive-pattern compression** (Lemma 2): for patterns of 1, 2 and
   3 items, in that order, ``j > k`` consecutive copies become ``k`` copies;
3. **sequence reconstruction** (Algorithm 2, the CS-tree greedy): a sequence
   still longer than ``l_max`` is replaced by a new sequence of at most
   ``l_max`` items built from the candidates it contains.

Steps 1 and 2 keep ``Contain_k`` (the candidates a sequence contains)
unchanged; step 3 may lose some.  Each step reads one sequence, ``C_k`` and
``l_max`` only, so shrinking is a *local transformation* (Theorem 6): two
neighbouring samples stay neighbours, and each shrunk sequence contains at
most ``C(l_max, k)`` distinct ``k``-sequences.

Reading of Algorithm 2 used here (the paper leaves these open): ties between
items go to the smaller id and ties between candidates (equal c-score and
number of distinct items) to the lexicographically smaller one; after each
append, every remaining c-node whose candidate the new sequence contains is
removed (the paper removes those it appended; the others are contained too,
so this only avoids appending them again); a candidate appended in the
fallback branch is cut to the room left, so the result never exceeds
``l_max``; a sequence containing no candidate becomes empty (it contributes
to no candidate's support either way).

Only sequences still longer than ``l_max`` after step 1 are compressed and
reconstructed; this is a Python loop over those sequences (few, after
deletion), not over the sample.  Which candidates each of them contains
(``Contain_k``, the input of Algorithm 2) is computed for all of them at once
by a Numba kernel (:func:`contained_candidates`) on the prefix-grouped layout
of the support kernel, instead of ``|C_k|`` Python subsequence checks per
sequence (the cost that stalled the BMS-WebView-1 benchmark: about 3,000
long sequences x 9,216 candidates at level 2).
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from ...data.sequencedb import SequenceDB
from ...eval.truth import group_by_prefix

#: Longest repeated pattern that consecutive-pattern compression looks for.
MAX_PATTERN = 3
#: Bound on ``sequences x candidates`` cells of one containment-kernel call.
_CONTAIN_CELLS = 2 ** 24


def is_subsequence(pattern: Sequence[int], seq: Sequence[int]) -> bool:
    """True when ``pattern`` occurs in ``seq`` in order, gaps allowed."""
    it = iter(seq)
    return all(x in it for x in pattern)


def delete_irrelevant(db: SequenceDB, relevant: np.ndarray) -> SequenceDB:
    """Drop the items not in any candidate (Lemma 1).

    Parameters
    ----------
    db : SequenceDB
    relevant : numpy.ndarray of bool, shape (|I|,)
        True for items that appear in some candidate.

    Returns
    -------
    SequenceDB
    """
    keep = relevant[db.items]
    seq = np.repeat(np.arange(len(db)), db.lengths)
    lens = np.bincount(seq[keep], minlength=len(db)).astype(np.int64)
    return SequenceDB(db.items[keep], np.concatenate([[0], np.cumsum(lens)]), db.vocab)


def compress(seq: Sequence[int], k: int, max_pattern: int = MAX_PATTERN) -> list[int]:
    """Replace ``j > k`` consecutive copies of a pattern by ``k`` copies (Lemma 2).

    Patterns of ``1 .. max_pattern`` items, in order of increasing length;
    the scan is left to right, and a run is cut where it starts.
    """
    cur = list(seq)
    for p in range(1, max_pattern + 1):
        out: list[int] = []
        i, n = 0, len(cur)
        while i < n:
            if i + p * (k + 1) <= n:
                unit = cur[i:i + p]
                r = 1
                while cur[i + r * p:i + (r + 1) * p] == unit:
                    r += 1
                if r > k:
                    out.extend(unit * k)
                    i += r * p
                    continue
            out.append(cur[i])
            i += 1
        cur = out
    return cur


def contained_candidates(seqs: Sequence[Sequence[int]], candidates: Sequence[tuple[int, ...]],
                         n_items: int) -> list[list[tuple[int, ...]]]:
    """``Contain_k`` of each sequence: the candidates it contains, in candidate order.

    Equal to ``[c for c in candidates if is_subsequence(c, seq)]`` for every
    ``seq``; computed by a Numba kernel (greedy leftmost match of each
    distinct prefix, then one last-occurrence lookup per candidate).
    """
    if not seqs or not candidates:
        return [[] for _ in seqs]
    pre_flat, pre_off, grp_off, ext_item, members = group_by_prefix(list(candidates))
    lens = np.array([len(q) for q in seqs], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    items = np.fromiter((x for q in seqs for x in q), dtype=np.int32, count=int(offsets[-1]))
    from ...eval.subseq_numba import contain_matrix  # noqa: PLC0415 - imports numba

    step = max(1, _CONTAIN_CELLS // len(candidates))
    result: list[list[tuple[int, ...]]] = []
    for lo in range(0, len(seqs), step):
        hi = min(len(seqs), lo + step)
        out = np.zeros((hi - lo, len(candidates)), dtype=np.bool_)
        contain_matrix(items, offsets[lo:hi + 1], pre_flat, pre_off, grp_off, ext_item,
                       n_items, out)
        hit = np.zeros_like(out)
        hit[:, members] = out  # back to candidate order
        for row in hit:
            result.append([candidates[i] for i in np.flatnonzero(row).tolist()])
    return result


def reconstruct(seq: Sequence[int], candidates: Sequence[tuple[int, ...]], k: int,
                l_max: int, contained: Sequence[tuple[int, ...]] | None = None) -> list[int]:
    """A sequence of at most ``l_max`` items keeping many candidates of ``seq`` (Algorithm 2).

    Parameters
    ----------
    seq : sequence of int
    candidates : sequence of tuple of int
        The candidate ``k``-sequences, sorted (ties are broken by this order).
    k : int
    l_max : int
    contained : sequence of tuple of int, optional
        The candidates ``seq`` contains, in candidate order, when already
        known (:func:`contained_candidates`).

    Returns
    -------
    list of int
    """
    if contained is None:
        contained = [c for c in candidates if is_subsequence(c, seq)]
    contained = list(contained)
    if not contained:
        return []
    children: dict[tuple[int, ...], set[int]] = {}  # g-node -> labels of its c-node children
    by_last: dict[int, list[tuple[int, ...]]] = {}
    for c in contained:
        children.setdefault(c[:-1], set()).add(c[-1])
        by_last.setdefault(c[-1], []).append(c)
    remaining = set(contained)
    gens_of: dict[tuple[int, ...], set[tuple[int, ...]]] = {}

    def c_score(c: tuple[int, ...]) -> int:
        gens = gens_of.get(c)
        if gens is None:
            gens = gens_of[c] = {c[:i] + c[i + 1:] for i in range(k)}
        return sum(len(children[g]) for g in gens if g in children)

    def best_candidate() -> tuple[int, ...]:
        pool = [c for c in contained if c in remaining]
        return max(pool, key=lambda c: (c_score(c), len(set(c)), [-x for x in c]))

    out: list[int] = []
    # g-nodes (with children) that are subsequences of ``out``: only grows as ``out`` grows
    g_in: set[tuple[int, ...]] = set()
    g_out = set(children)

    def drop_contained(tests) -> None:
        for c in [c for c in tests if c in remaining and is_subsequence(c, out)]:
            remaining.discard(c)
            children[c[:-1]].discard(c[-1])

    out.extend(best_candidate()[:l_max])
    drop_contained(list(remaining))
    while len(out) < l_max and remaining:
        now_in = [g for g in g_out if is_subsequence(g, out)]
        g_in.update(now_in)
        g_out.difference_update(now_in)
        votes: Counter[int] = Counter()
        for g in g_in:
            kids = children[g]
            if kids:
                votes.update(kids)
        if votes:
            top = max(votes.values())
            x = min(x for x, v in votes.items() if v == top)
            out.append(x)
            # every remaining candidate was not in ``out`` before: a new one must end at x
            drop_contained(by_last.get(x, ()))
        else:
            out.extend(best_candidate()[:l_max - len(out)])
            drop_contained(list(remaining))
    return out


def shrink(db: SequenceDB, candidates: Sequence[tuple[int, ...]], k: int,
           l_max: int) -> tuple[SequenceDB, dict[str, int]]:
    """Shrink every sequence of a sample database to at most ``l_max`` items.

    Parameters
    ----------
    db : SequenceDB
        The sample database ``db_k``.
    candidates : sequence of tuple of int
        The candidate ``k``-sequences ``C_k`` (sorted).
    k : int
    l_max : int

    Returns
    -------
    SequenceDB
        Same number of sequences, each at most ``l_max`` long.
    dict
        How many sequences were compressed and reconstructed (exact
        diagnostics about the sample: not part of a release).
    """
    relevant = np.zeros(db.vocab.size, dtype=bool)
    if candidates:
        relevant[np.fromiter((x for c in candidates for x in c), dtype=np.int64)] = True
    out = delete_irrelevant(db, relevant)
    long_rows = np.flatnonzero(out.lengths > l_max)
    stats = {"compressed": int(long_rows.size), "reconstructed": 0}
    if long_rows.size == 0:
        return out, stats
    items = out.items.tolist()
    offs = out.offsets.tolist()
    new: dict[int, list[int]] = {}
    for r in long_rows.tolist():
        new[r] = compress(items[offs[r]:offs[r + 1]], k)
    still = [r for r in long_rows.tolist() if len(new[r]) > l_max]
    # equal sequences after deletion and compression have equal reconstructions
    distinct = list(dict.fromkeys(tuple(new[r]) for r in still))
    contains = contained_candidates(distinct, candidates, db.vocab.size)
    rebuilt = {q: reconstruct(q, candidates, k, l_max, contained=cont)
               for q, cont in zip(distinct, contains)}
    for r in still:
        new[r] = rebuilt[tuple(new[r])]
        stats["reconstructed"] += 1
    pieces, lens = [], out.lengths.astype(np.int64).copy()
    start = 0
    for r in long_rows.tolist():
        pieces.append(out.items[offs[start]:offs[r]])
        pieces.append(np.asarray(new[r], dtype=np.int32))
        lens[r] = len(new[r])
        start = r + 1
    pieces.append(out.items[offs[start]:])
    return SequenceDB(np.concatenate(pieces), np.concatenate([[0], np.cumsum(lens)]),
                      db.vocab), stats
