"""ChaCha20 words on the CPU, one identity at a time, compiled with Numba.

The same function as :func:`dpgpu.privacy.rng.words_xp` (the array-namespace
reference), for the NumPy backend: the vectorised version
spends most of its time moving the 16 state rows through memory, the scalar
loop keeps them in registers (about 4x faster on one core).  Identities are
spread over Numba's threads; each is computed alone, so the words do not
depend on the number of threads.  The test suite checks both against the
RFC 8439 vector and against each other, bit for bit.

Imported lazily: importing :mod:`dpgpu` must not import Numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..backend.numba_threads import one_caller_when_unsafe
from .rng import _CONSTANTS

_U = np.uint32
_C0, _C1, _C2, _C3 = (_U(c) for c in _CONSTANTS)


@njit(inline="always")
def _rotl(v, n):
    return _U((v << _U(n)) | (v >> _U(32 - n)))


@njit(inline="always")
def _quarter(a, b, c, d):
    a = _U(a + b)
    d = _rotl(_U(d ^ a), 16)
    c = _U(c + d)
    b = _rotl(_U(b ^ c), 12)
    a = _U(a + b)
    d = _rotl(_U(d ^ a), 8)
    c = _U(c + d)
    b = _rotl(_U(b ^ c), 7)
    return a, b, c, d


@one_caller_when_unsafe
@njit(cache=True, parallel=True)
def words_cpu(key, ids, tag, out):  # pragma: no cover - compiled; tested through NoiseKey
    """Fill ``out[k, i]`` with word ``k`` of identity ``ids[i]`` (see rng.py for the layout)."""
    n_words, m = out.shape
    k0, k1, k2, k3 = _U(key[0]), _U(key[1]), _U(key[2]), _U(key[3])
    k4, k5, k6, k7 = _U(key[4]), _U(key[5]), _U(key[6]), _U(key[7])
    t = _U(tag)
    for i in prange(m):  # identities are independent: any order gives the same words
        lo = _U(ids[i] & np.uint64(0xFFFFFFFF))
        hi = _U(ids[i] >> np.uint64(32))
        for blk in range((n_words + 7) // 8):
            ctr = _U(blk)
            x0, x1, x2, x3 = _C0, _C1, _C2, _C3
            x4, x5, x6, x7, x8, x9, x10, x11 = k0, k1, k2, k3, k4, k5, k6, k7
            x12, x13, x14, x15 = ctr, t, lo, hi
            for _ in range(10):
                x0, x4, x8, x12 = _quarter(x0, x4, x8, x12)
                x1, x5, x9, x13 = _quarter(x1, x5, x9, x13)
                x2, x6, x10, x14 = _quarter(x2, x6, x10, x14)
                x3, x7, x11, x15 = _quarter(x3, x7, x11, x15)
                x0, x5, x10, x15 = _quarter(x0, x5, x10, x15)
                x1, x6, x11, x12 = _quarter(x1, x6, x11, x12)
                x2, x7, x8, x13 = _quarter(x2, x7, x8, x13)
                x3, x4, x9, x14 = _quarter(x3, x4, x9, x14)
            res = (x0 + _C0, x1 + _C1, x2 + _C2, x3 + _C3, x4 + k0, x5 + k1, x6 + k2, x7 + k3,
                   x8 + k4, x9 + k5, x10 + k6, x11 + k7, x12 + ctr, x13 + t, x14 + lo, x15 + hi)
            for j in range(min(8, n_words - 8 * blk)):
                out[8 * blk + j, i] = (np.uint64(_U(res[2 * j]))
                                       | (np.uint64(_U(res[2 * j + 1])) << np.uint64(32)))
