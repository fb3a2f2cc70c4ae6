"""Exact subsequence supports of candidates, on the CPU (Numba) or the GPU (CUDA).

The hot loop of PFS^2: every sequence against every candidate.  The CPU
path is the Numba kernel of :func:`dpgpu.eval.truth.subsequence_supports`
(:func:`dpgpu.eval.subseq_numba.support_counts`, parallel over chunks of
sequences), called on bounded chunks of the sequences so that signals are
handled between calls; the GPU path launches
``dpgpu_subseq_supports`` of ``kernels/subseq.cu``, whose per-element logic
(``kernels/subseq.cuh``) takes the same steps on the same prefix-grouped
layout (:func:`dpgpu.eval.truth.group_by_prefix`): one thread per sequence
and group, where the CPU loop skips the groups whose first item the
sequence lacks (their threads stop at that item) and tests a group much
larger than the sequence from the sequence's items.  Both return the same
exact integers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ...backend import Backend, cuda
from ...data.sequencedb import SequenceDB
from ...eval.truth import group_by_prefix


def supports(db: SequenceDB, weights: np.ndarray, patterns: Sequence[tuple[int, ...]],
             backend: Backend) -> np.ndarray:
    """Weighted supports of ``patterns`` in ``db`` (sum of weights of containing sequences).

    Parameters
    ----------
    db : SequenceDB
    weights : numpy.ndarray of int64
        One weight per sequence (multiplicities of deduplicated sequences).
    patterns : sequence of tuple of int
        Non-empty item patterns.
    backend : Backend

    Returns
    -------
    numpy.ndarray of int64
    """
    if not patterns:
        return np.zeros(0, dtype=np.int64)
    if not backend.is_gpu:
        return supports_cpu(db, weights, patterns)
    return supports_gpu(db, weights, patterns)


#: Steps (:func:`sequence_work`) one call of the Numba support kernel is given at most (but
#: :data:`MIN_CHUNK_SEQUENCES` sequences at least), so that signals such as SIGTERM,
#: handled only between calls, wait seconds, not minutes.
CHUNK_WORK = 1 << 28
#: Fewest sequences a call of the Numba support kernel counts (but the last).
MIN_CHUNK_SEQUENCES = 256


def supports_cpu(db: SequenceDB, weights: np.ndarray,
                 patterns: Sequence[tuple[int, ...]]) -> np.ndarray:
    """:func:`supports` with the Numba kernel, called on chunks of sequences.

    The patterns are grouped once (:func:`dpgpu.eval.truth.group_by_prefix`);
    each call counts ``max(MIN_CHUNK_SEQUENCES, CHUNK_WORK // w)`` sequences,
    ``w`` the :func:`sequence_work` of the longest, and the chunks' supports
    are added: the same integers as one call over all the sequences.  Each
    call also sets up scratch of the patterns' and the vocabulary's sizes,
    so the fewer calls the better.
    """
    import numba  # noqa: PLC0415 - CPU path only

    from ...eval.subseq_numba import support_counts  # noqa: PLC0415 - imports numba

    pre_flat, pre_off, grp_off, ext_item, members = group_by_prefix(list(patterns))
    w = np.ascontiguousarray(weights, dtype=np.int64)
    step = max(MIN_CHUNK_SEQUENCES,
               CHUNK_WORK // sequence_work(pre_flat, pre_off, grp_off,
                                           int(db.lengths.max(initial=0))))
    counts = np.zeros(ext_item.size, dtype=np.int64)
    for a in range(0, len(db), step):
        b = min(a + step, len(db))
        counts += support_counts(db.items, db.offsets[a:b + 1], w[a:b], pre_flat, pre_off,
                                 grp_off, ext_item, db.vocab.size,
                                 max(1, min(b - a, 4 * numba.get_num_threads())))
    result = np.empty(ext_item.size, dtype=np.int64)
    result[members] = counts
    return result


def sequence_work(pre_flat: np.ndarray, pre_off: np.ndarray, grp_off: np.ndarray,
                  longest: int) -> int:
    """A bound on the steps the Numba support kernel takes on one sequence of ``longest`` items.

    The kernel (:func:`dpgpu.eval.subseq_numba.sequence_hits`) tries each
    group of empty prefix, and, at each distinct item of the sequence, the
    groups whose prefix starts with it; a try matches the prefix (a step per
    item of it) and then tests the group's ``G`` patterns, a step each, or,
    when they outnumber the items left ``WALK_RATIO`` times, looks those
    items up (counted as ``WALK_RATIO`` steps each): at most
    ``min(G, WALK_RATIO * longest)`` steps.  Each group is tried once at
    most, so the bound is also at most the sum over all groups.

    Parameters
    ----------
    pre_flat, pre_off, grp_off : numpy.ndarray
        The patterns grouped by prefix (:func:`dpgpu.eval.truth.group_by_prefix`).
    longest : int
        The sequence's length (at least that of every sequence to count).

    Returns
    -------
    int
        At least 1.
    """
    from ...eval.subseq_numba import WALK_RATIO  # noqa: PLC0415 - imports numba

    pre_len = np.diff(pre_off)
    cost = pre_len + np.minimum(np.diff(grp_off), WALK_RATIO * longest)
    starts = pre_len > 0
    by_first = np.bincount(pre_flat[pre_off[:-1][starts]], weights=cost[starts])
    tried = cost[~starts].sum() + longest * by_first.max(initial=0)
    return 1 + int(min(cost.sum(), tried))


def supports_gpu(db: SequenceDB, weights: np.ndarray,
                 patterns: Sequence[tuple[int, ...]]) -> np.ndarray:
    """:func:`supports` with the CUDA kernel ``dpgpu_subseq_supports``."""
    import cupy  # noqa: PLC0415 - GPU path only

    pre_flat, pre_off, grp_off, ext_item, members = group_by_prefix(list(patterns))
    n_seq, n_groups = len(db), pre_off.size - 1
    out = cupy.zeros(ext_item.size, dtype=cupy.uint64)
    if n_seq and db.items.size:
        dev = [cupy.asarray(a) for a in (db.items, db.offsets, np.asarray(weights, np.int64),
                                          np.append(pre_flat, np.int32(0)), pre_off, grp_off,
                                          ext_item)]
        cuda.launch(cuda.function("subseq", "dpgpu_subseq_supports"), n_seq * n_groups,
                    (dev[0], dev[1], dev[2], np.int64(n_seq), dev[3], dev[4], dev[5], dev[6],
                     np.int64(n_groups), out))
    counts = cupy.asnumpy(out).view(np.int64)
    result = np.empty(ext_item.size, dtype=np.int64)
    result[members] = counts
    return result
