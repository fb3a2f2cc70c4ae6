"""ChaCha20 words on the GPU: the ``dpgpu_chacha_words`` kernel of ``kernels/chacha.cu``.

The same words as :func:`dpgpu.privacy.rng.words_xp` (the array-namespace
reference) and :mod:`dpgpu.privacy._chacha_cpu`, bit for bit, in one launch
instead of some 200 element-wise CuPy operations per block.

Importing this module imports neither CuPy nor NVRTC.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import cuda


def words_gpu(key_words: np.ndarray, ids: Any, tag: int, n_words: int):
    """``(n_words, M)`` uint64 words of the CuPy uint64 identities ``ids`` under ``tag``."""
    import cupy  # noqa: PLC0415 - GPU path only

    m = ids.shape[0]
    out = cupy.empty((n_words, m), dtype=cupy.uint64)
    if out.size:
        cuda.launch(cuda.function("chacha", "dpgpu_chacha_words"), -(-n_words // 8) * m,
                    (cupy.asarray(key_words, dtype=cupy.uint32),
                     cupy.ascontiguousarray(ids, dtype=cupy.uint64), np.int64(m),
                     np.int64(tag), np.int32(n_words), out))
    return out
