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

Only sequences still longer than ``l_max`` after step 1 are compressed, and
only those still longer after step 2 are reconstructed.  Both steps run on
all those sequences at once in Numba kernels (:mod:`.shrink_numba`, in
parallel over the sequences); ``Contain_k`` of each sequence to
reconstruct is listed, in the same kernel, by the containment loop of the
support count (:func:`dpgpu.eval.subseq_numba.sequence_hits`,
prefix-grouped layout).  Algorithm 2 then runs on array state: for every
contained candidate still to place, how many of its items the output
matches greedily so far (the output only grows, so a candidate is contained
exactly when its match is complete; its g-node is matched exactly when it
is one item short), and the number of remaining c-nodes under each g-node,
which is what c-scores count.  The plain-Python statement of Algorithm 2
that this must equal is the oracle of ``tests/test_pfs2.py``.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ...data.sequencedb import SequenceDB, concat_ranges
from ...eval.truth import group_by_prefix

#: Longest repeated pattern that consecutive-pattern compression looks for.
MAX_PATTERN = 3


class CandidateTables(NamedTuple):
    """``C_k`` as arrays for :func:`.shrink_numba.reconstruct_rows` (see its module docstring)."""

    cand: np.ndarray
    pre_id: np.ndarray
    gen_id: np.ndarray
    n_distinct: np.ndarray
    pre_flat: np.ndarray
    pre_off: np.ndarray
    grp_off: np.ndarray
    ext_item: np.ndarray
    members: np.ndarray


def candidate_tables(candidates: Sequence[tuple[int, ...]], k: int) -> CandidateTables:
    """Arrays of the distinct, non-empty candidate ``k``-sequences ``candidates``."""
    candidates = [tuple(c) for c in candidates]
    if k < 1 or any(len(c) != k for c in candidates) or len(set(candidates)) < len(candidates):
        raise ValueError(f"candidates must be distinct sequences of k = {k} >= 1 items")
    pre_flat, pre_off, grp_off, ext_item, members = group_by_prefix(candidates)
    pre_id = np.empty(len(candidates), dtype=np.int64)
    pre_id[members] = np.repeat(np.arange(grp_off.size - 1), np.diff(grp_off))
    group = {candidates[members[grp_off[g]]][:-1]: g for g in range(grp_off.size - 1)}
    gen_id = np.full((len(candidates), k), -1, dtype=np.int64)
    for i, c in enumerate(candidates):
        gens = dict.fromkeys(c[:t] + c[t + 1:] for t in range(k))  # distinct, in order
        ids = [group.get(g, -1) for g in gens]
        gen_id[i, :len(ids)] = ids
    return CandidateTables(np.array(candidates, dtype=np.int32).reshape(-1, k), pre_id, gen_id,
                           np.array([len(set(c)) for c in candidates], dtype=np.int64),
                           pre_flat, pre_off, grp_off, ext_item, members)


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
    return keep_items(db, relevant[db.items])


def keep_items(db: SequenceDB, keep: np.ndarray) -> SequenceDB:
    """The subsequences of ``db``'s sequences made of the items marked in ``keep``.

    Parameters
    ----------
    db : SequenceDB
    keep : numpy.ndarray of bool, shape (total items,)
        One flag per item of ``db.items``.

    Returns
    -------
    SequenceDB
        The same number of sequences, in order.
    """
    seq = np.repeat(np.arange(len(db)), db.lengths)
    lens = np.bincount(seq[keep], minlength=len(db)).astype(np.int64)
    return SequenceDB(db.items[keep], np.concatenate([[0], np.cumsum(lens)]), db.vocab)


def compress_flat(items: np.ndarray, offsets: np.ndarray, k: int,
                  max_pattern: int = MAX_PATTERN) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive-pattern compression (Lemma 2) of every sequence of a flat batch.

    Replaces ``j > k`` consecutive copies of a pattern by ``k`` copies, for
    patterns of ``1 .. max_pattern`` items, in order of increasing length;
    the scan is left to right, and a run is cut where it starts.

    Parameters
    ----------
    items : numpy.ndarray of int32
        Sequence ``s`` is ``items[offsets[s]:offsets[s + 1]]``.
    offsets : numpy.ndarray of int64
    k : int
    max_pattern : int

    Returns
    -------
    buf : numpy.ndarray of int32
        Compressed sequence ``s`` is ``buf[offsets[s]:offsets[s] + lens[s]]``.
    lens : numpy.ndarray of int64
    """
    from .shrink_numba import compress_rows  # noqa: PLC0415 - imports numba

    buf = np.empty_like(items)
    return buf, compress_rows(items, offsets, k, max_pattern, buf)


def reconstruct_flat(items: np.ndarray, offsets: np.ndarray, tables: CandidateTables,
                     l_max: int, n_sym: int) -> tuple[np.ndarray, np.ndarray]:
    """Sequence reconstruction (Algorithm 2) of every sequence of a flat batch.

    Parameters
    ----------
    items, offsets : numpy.ndarray
        As in :func:`compress_flat`; item ids below ``n_sym``.
    tables : CandidateTables
        ``C_k`` (:func:`candidate_tables`); ties between candidates are broken
        by their items, not by their order.
    l_max : int
    n_sym : int
        Number of item ids.

    Returns
    -------
    buf : numpy.ndarray of int32
        Sequence ``s`` is rebuilt as ``buf[s * l_max:s * l_max + lens[s]]``.
    lens : numpy.ndarray of int64
    """
    import numba  # noqa: PLC0415 - imported on first use

    from .shrink_numba import reconstruct_rows  # noqa: PLC0415

    n_seq = offsets.size - 1
    buf = np.zeros(n_seq * l_max, dtype=np.int32)
    if not (n_seq and tables.cand.shape[0]):
        return buf, np.zeros(n_seq, dtype=np.int64)
    groups = (tables.pre_flat, tables.pre_off, tables.grp_off, tables.ext_item, tables.members)
    return buf, reconstruct_rows(items, offsets, groups, tables.cand, tables.pre_id,
                                 tables.gen_id, tables.n_distinct, l_max, n_sym,
                                 min(n_seq, 4 * numba.get_num_threads()), buf)


def compress(seq: Sequence[int], k: int, max_pattern: int = MAX_PATTERN) -> list[int]:
    """:func:`compress_flat` of one sequence."""
    items = np.asarray(seq, dtype=np.int32).reshape(-1)
    buf, lens = compress_flat(items, np.array([0, items.size], dtype=np.int64), k, max_pattern)
    return buf[:lens[0]].tolist()


def reconstruct(seq: Sequence[int], candidates: Sequence[tuple[int, ...]], k: int,
                l_max: int) -> list[int]:
    """:func:`reconstruct_flat` of one sequence: at most ``l_max`` items keeping many candidates."""
    items = np.asarray(seq, dtype=np.int32).reshape(-1)
    n_sym = 1 + max([-1, *items.tolist(), *(x for c in candidates for x in c)])
    buf, lens = reconstruct_flat(items, np.array([0, items.size], dtype=np.int64),
                                 candidate_tables(candidates, k), l_max, n_sym)
    return buf[:lens[0]].tolist()


def shrink(db: SequenceDB, candidates: Sequence[tuple[int, ...]], k: int,
           l_max: int) -> tuple[SequenceDB, dict[str, int]]:
    """Shrink every sequence of a sample database to at most ``l_max`` items.

    Parameters
    ----------
    db : SequenceDB
        The sample database ``db_k``.
    candidates : sequence of tuple of int
        The candidate ``k``-sequences ``C_k`` (distinct).
    k : int
    l_max : int

    Returns
    -------
    SequenceDB
        Same number of sequences, each at most ``l_max`` long.
    dict
        How many sequences were compressed and reconstructed (exact
        diagnostics about the sample: not part of a release).

    Raises
    ------
    ValueError
        When the candidates are not distinct sequences of ``k`` items.
    """
    tables = candidate_tables(candidates, k)
    relevant = np.zeros(db.vocab.size, dtype=bool)
    relevant[tables.cand.reshape(-1)] = True
    out = delete_irrelevant(db, relevant)
    long_rows = np.flatnonzero(out.lengths > l_max)
    still = np.zeros(0, dtype=bool)
    if long_rows.size:
        longs = out.select(long_rows)
        cbuf, clens = compress_flat(longs.items, longs.offsets, k)
        still = clens > l_max
        gather = concat_ranges(longs.offsets[:-1][still], clens[still])
        rbuf, rlens = reconstruct_flat(cbuf[gather],
                                       np.concatenate([[0], np.cumsum(clens[still])]), tables,
                                       l_max, db.vocab.size)
        # rows are read from out.items, cbuf (compressed) or rbuf (reconstructed)
        pool = np.concatenate([out.items, cbuf, rbuf])
        starts = out.offsets[:-1].copy()
        lens = out.lengths.astype(np.int64)
        starts[long_rows] = out.items.size + longs.offsets[:-1]
        lens[long_rows] = clens
        starts[long_rows[still]] = out.items.size + cbuf.size + l_max * np.arange(rlens.size)
        lens[long_rows[still]] = rlens
        out = SequenceDB(pool[concat_ranges(starts, lens)],
                         np.concatenate([[0], np.cumsum(lens)]), db.vocab)
    return out, {"compressed": int(long_rows.size), "reconstructed": int(still.sum())}
