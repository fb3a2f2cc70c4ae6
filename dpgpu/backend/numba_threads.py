"""dpgpu's Numba parallel loops, safe for callers on several threads.

Numba runs ``prange`` loops on one of three threading layers.  The OpenMP
and TBB layers accept parallel loops started from several Python threads at
once; the ``workqueue`` layer, Numba's fallback where neither runtime is
installed (a slim container, a Mac without ``libomp``), aborts the whole
process when that happens ("Terminating: Nested parallel kernel launch
detected").  A Dask worker with several threads, or a user's own thread
pool, can do exactly that.

:func:`one_caller_when_unsafe` wraps each of dpgpu's parallel functions so
that, while the layer is not known to be safe, one call runs at a time (the
loop itself still uses every thread).  The layer is only known after a
parallel loop has run, so the first calls take the lock too; once the
layer is OpenMP or TBB, calls go straight through.

Imported lazily with the Numba modules: importing :mod:`dpgpu` must not
import Numba.
"""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable

import numba

#: Threading layers that run parallel loops from several threads at once.
SAFE_LAYERS = frozenset({"omp", "tbb"})

_lock = threading.Lock()
_safe = False  # set once a loop has run on a layer in SAFE_LAYERS


def _layer_is_safe() -> bool:
    global _safe
    if not _safe:
        try:
            _safe = numba.threading_layer() in SAFE_LAYERS
        except ValueError:  # no parallel loop has run yet: no layer chosen
            return False
    return _safe


def one_caller_when_unsafe(function: Callable) -> Callable:
    """``function`` (a Numba ``parallel=True`` dispatcher), called one caller at a
    time unless Numba's threading layer is known to accept concurrent callers.

    Parameters
    ----------
    function : numba dispatcher
        Called from Python only (the wrapper is a Python function).

    Returns
    -------
    callable
        Same arguments and result; ``.dispatcher`` is ``function``.
    """

    @functools.wraps(function, updated=())
    def call(*args: Any) -> Any:
        if _layer_is_safe():
            return function(*args)
        with _lock:
            return function(*args)

    call.dispatcher = function
    return call
