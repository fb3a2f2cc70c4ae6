"""Exact subsequence supports of candidates, on the CPU (Numba) or the GPU (CUDA).

The hot loop of PFS^2: every sequence against every candidate.  The CPU
path is :func:`dpgpu.eval.truth.subsequence_supports` (a Numba kernel,
parallel over chunks of sequences); the GPU path launches
``dpgpu_subseq_supports`` of ``kernels/subseq.cu``, whose per-element logic
(``kernels/subseq.cuh``) takes the same steps on the same prefix-grouped
layout (:func:`dpgpu.eval.truth.group_by_prefix`): one thread per sequence
and group, where the CPU loop skips the groups whose first item the
sequence lacks (their threads stop at that item).  Both return the same
exact integers.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ...backend import Backend, cuda
from ...data.sequencedb import SequenceDB
from ...eval.truth import group_by_prefix, subsequence_supports


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
        return subsequence_supports(db, patterns, weights=weights)
    return supports_gpu(db, weights, patterns)


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
