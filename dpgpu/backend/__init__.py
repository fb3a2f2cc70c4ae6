"""Array backends: NumPy on the CPU, CuPy on an NVIDIA GPU.

The backend is resolved once per run, in this order: an explicit ``backend=``
argument, the ``DPGPU_BACKEND`` environment variable, then auto-detection
(CuPy if ``cupy.is_available()``, else NumPy).  Asking for ``cupy`` where it
cannot be used is an error; dpgpu never falls back silently.

Importing this module imports neither CuPy nor Numba.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import Any, Iterator

import numpy as np

from ..errors import BackendUnavailable, InvalidParameter
from ..validation import check_positive_real

log = logging.getLogger("dpgpu")

BACKENDS = ("numpy", "cupy")


@dataclass(frozen=True)
class Backend:
    """An array namespace and the facts about where it runs.

    Attributes
    ----------
    name : str
        ``"numpy"`` or ``"cupy"``.
    xp : module
        The array module (``numpy`` or ``cupy``).
    """

    name: str
    xp: ModuleType

    @property
    def is_gpu(self) -> bool:
        """True when arrays live on a GPU."""
        return self.name == "cupy"

    def asarray(self, a: Any, dtype: Any = None):
        """Move ``a`` into this backend's namespace (a no-op when already there)."""
        return self.xp.asarray(a, dtype=dtype)

    def to_numpy(self, a: Any) -> np.ndarray:
        """Return ``a`` as a host NumPy array."""
        return to_numpy(a)

    def device_name(self) -> str:
        """A human-readable name of the device arrays live on."""
        if not self.is_gpu:
            return "cpu"
        props = self.xp.cuda.runtime.getDeviceProperties(self.xp.cuda.Device().id)
        name = props["name"]
        return name.decode() if isinstance(name, bytes) else str(name)

    def synchronize(self) -> None:
        """Wait for queued device work (for timing); a no-op on the CPU."""
        if self.is_gpu:
            self.xp.cuda.Device().synchronize()


_SHARE = threading.local()  # .value: this thread's share of free device memory


def free_device_memory(backend: Any) -> int:
    """Bytes of device memory the calling thread may plan its work with.

    This is the device's free memory now, times the thread's share (1 unless
    set by :func:`device_memory_share`), so that threads working on one GPU
    at once do not each size their work from all of it.

    Parameters
    ----------
    backend : Backend
        A GPU backend (anything with ``is_gpu`` true and the CuPy module as
        ``xp``).

    Returns
    -------
    int

    Raises
    ------
    InvalidParameter
        When ``backend`` does not run on a GPU.
    """
    if not backend.is_gpu:
        raise InvalidParameter(f"backend: {getattr(backend, 'name', backend)!r} "
                               "has no device memory")
    free, _ = backend.xp.cuda.runtime.memGetInfo()
    return int(free * getattr(_SHARE, "value", 1.0))


@contextlib.contextmanager
def device_memory_share(fraction: float) -> Iterator[float]:
    """Let the current thread plan with only ``fraction`` of the free device memory.

    The share is thread-local (other threads keep theirs) and the previous
    share comes back on exit, so the contexts nest.  It scales what
    :func:`free_device_memory` returns in this thread.

    Parameters
    ----------
    fraction : float
        A finite number in ``(0, 1]``; e.g. ``1 / jobs`` for ``jobs``
        threads sharing one GPU.

    Yields
    ------
    float
        ``fraction``, as a float.

    Raises
    ------
    InvalidParameter
        When ``fraction`` is not a finite number in ``(0, 1]``.
    """
    share = check_positive_real(fraction, "fraction")
    if share > 1:
        raise InvalidParameter(f"fraction: must be at most 1, got {fraction!r}")
    previous = getattr(_SHARE, "value", 1.0)
    _SHARE.value = share
    try:
        yield share
    finally:
        _SHARE.value = previous


def to_numpy(a: Any) -> np.ndarray:
    """Return any NumPy or CuPy array (or array-like) as a host NumPy array."""
    if hasattr(a, "__cuda_array_interface__") and hasattr(a, "get"):
        return a.get()
    return np.asarray(a)


def backend_of(array: Any, backend: "str | Backend | None" = None) -> Backend:
    """The backend for work on ``array``: ``backend`` when given, else the array's own.

    Functions that take an array and return one follow their input when no
    backend is named, so NumPy in gives NumPy out on a GPU machine too.
    """
    if backend is not None:
        return get_backend(backend)
    on_gpu = hasattr(array, "__cuda_array_interface__")
    return get_backend("cupy" if on_gpu else "numpy")


def gpu_available() -> bool:
    """True when CuPy imports and sees a usable CUDA device."""
    return _cupy_module() is not None


def gpu_in_use() -> bool:
    """True when this process has already found a usable GPU (so CUDA is initialised).

    A CUDA context does not survive ``fork``: code that forks workers must
    not do so once this is true.  Never initialises CUDA itself.
    """
    return _cupy_module.cache_info().currsize > 0 and _cupy_module() is not None


@lru_cache(maxsize=1)
def _cupy_module() -> ModuleType | None:
    # NVRTC's precompiled headers (CUDA 12.8 or later; CuPy reads the variable on import):
    # a fresh machine's first releases wait about half as long for CuPy to compile its
    # kernels (bench/results/first-use-cupy-*).  A value the user set is kept.
    os.environ.setdefault("CUPY_NVRTC_USE_PCH", "1")
    try:
        import cupy  # noqa: PLC0415 - imported lazily on purpose

        if cupy.is_available():
            return cupy
    except Exception:  # ImportError, missing driver, broken CUDA install
        return None
    return None


def get_backend(backend: "str | Backend | None" = None) -> Backend:
    """Resolve the backend for a run.

    Parameters
    ----------
    backend : {"numpy", "cupy", "auto"}, Backend or None
        Explicit choice.  ``None`` reads ``DPGPU_BACKEND`` and otherwise
        auto-detects.

    Returns
    -------
    Backend

    Raises
    ------
    InvalidParameter
        For an unknown name.
    BackendUnavailable
        When ``cupy`` is asked for but cannot be used.
    """
    if isinstance(backend, Backend):
        return backend
    source = "argument"
    if backend is None:
        backend = os.environ.get("DPGPU_BACKEND") or "auto"
        source = "DPGPU_BACKEND" if backend != "auto" else "auto-detection"
    name = str(backend).strip().lower()
    if name not in BACKENDS + ("auto",):
        raise BackendUnavailable(
            f"backend: unknown backend {backend!r} (from {source}); "
            f"choose one of {', '.join(BACKENDS + ('auto',))}"
        )
    if name == "auto":
        name = "cupy" if gpu_available() else "numpy"
    result = _make(name)
    if name not in _announced:  # once per process: later calls pass the name on
        _announced.add(name)
        log.info("backend: %s (chosen by %s)", name, source)
    return result


#: Backends whose choice has been logged.
_announced: set[str] = set()


@lru_cache(maxsize=None)
def _make(name: str) -> Backend:
    if name == "numpy":
        return Backend("numpy", np)
    cupy = _cupy_module()
    if cupy is None:
        raise BackendUnavailable(
            "backend: 'cupy' was asked for but CuPy cannot use a GPU here "
            "(install dpgpu[cuda13] or dpgpu[cuda12] and check the NVIDIA driver)"
        )
    return Backend("cupy", cupy)
