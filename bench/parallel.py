"""Run a benchmark's repetitions in parallel: processes on the CPU, threads on a GPU (``--jobs``).

The reproduction scripts repeat releases with different keys; the
repetitions are independent, so they run at once::

    ap = argparse.ArgumentParser()
    add_jobs_argument(ap)
    args = ap.parse_args()
    jobs = use_jobs(args.jobs, backend_name)     # before any Numba work
    rows = run_repetitions(lambda r: one_run(db, seed=1000 + r), range(reps), jobs)

``run_repetitions`` returns the results in the order of its items, whatever
order the workers finish in, so for the same seeds the results are the same
as those of the serial loop (``--jobs 1``).

* On the CPU backend the workers are forked processes: they inherit the
  loaded data and the function (a closure is fine; only the item index goes
  to a worker and only the result comes back, pickled), so a result should
  be small (numbers, not releases).  Each worker runs Numba's parallel loops
  on ``cores / jobs`` threads, so the pool does not oversubscribe the cores.
* On the GPU backend (``use_jobs(n, "cupy")``, or once this process has used
  the GPU: a CUDA context does not survive a fork) the workers are threads
  of this process, each issuing its device work on its own CUDA stream, so
  the releases' kernels and copies overlap on the one device while the host
  parts (NumPy, and Numba with a thread-safe layer) run side by side.  Each
  thread runs its repetition inside ``device_memory_share(1 / jobs)``, so
  the work dpgpu sizes from the GPU's free memory takes only that share of
  it and the ``jobs`` threads together do not exhaust the device.

Timings taken inside a repetition measure runs that share the machine with
``jobs - 1`` others.
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any, Callable, Iterable

from dpgpu.backend import device_memory_share, gpu_available, gpu_in_use

_WORK: tuple[Callable[[Any], Any], list] | None = None
_THREADS = False  # set by use_jobs for the GPU backend
_STREAMS = threading.local()


def default_jobs() -> int:
    """The number of CPU cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def add_jobs_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--jobs N`` (default: the number of cores)."""
    parser.add_argument("--jobs", type=_positive, default=default_jobs(),
                        help="repetitions run at once: worker processes, or threads on a GPU "
                             f"(default: the number of cores, here {default_jobs()}; 1 runs "
                             "them in turn)")


def use_jobs(jobs: int, backend: str | None = None) -> int:
    """The number of workers to use; call it before any Numba work.

    On the CPU backend the workers are processes, and Numba's threading
    layer is set to a fork-safe one (``forksafe``: TBB, else the work queue),
    since GNU OpenMP cannot be used again in a forked child; returns 1
    (serial) when the process already started OpenMP threads.  On the GPU
    backend (``"cupy"``) the workers are threads, and the layer is set to a
    thread-safe one (``threadsafe``: TBB or OpenMP); returns 1 when neither
    is installed or the work queue, which is not thread-safe, already runs.
    """
    global _THREADS
    if jobs < 1:
        raise ValueError(f"jobs: expected a positive integer, got {jobs!r}")
    if jobs == 1:
        return 1
    _THREADS = backend == "cupy"
    if _THREADS:
        if not _threadsafe_numba():
            print("parallel: no thread-safe Numba threading layer (TBB or OpenMP); the "
                  "repetitions run in turn", file=sys.stderr)
            return 1
        return jobs
    numba = sys.modules.get("numba")
    if numba is None:
        os.environ.setdefault("NUMBA_THREADING_LAYER", "forksafe")
    elif _numba_layer() is None:
        numba.config.THREADING_LAYER = "forksafe"
    return 1 if _omp_started() else jobs


def _threadsafe_numba() -> bool:
    """Whether Numba's parallel loops may run in several threads at once here.

    The work queue layer aborts the process on concurrent use.  When no
    layer has started yet, a thread-safe one (TBB or OpenMP) is selected if
    one is installed and the user did not ask for the work queue.
    """
    layer = _numba_layer()
    if layer is not None:
        return layer != "workqueue"
    if os.environ.get("NUMBA_THREADING_LAYER") == "workqueue" \
            or not _threadsafe_layer_installed():
        return False
    numba = sys.modules.get("numba")
    if numba is None:
        os.environ["NUMBA_THREADING_LAYER"] = "threadsafe"
    else:
        numba.config.THREADING_LAYER = "threadsafe"
    return True


def _threadsafe_layer_installed() -> bool:
    """Whether Numba can load TBB or OpenMP here (without starting either)."""
    for pool in ("numba.np.ufunc.tbbpool", "numba.np.ufunc.omppool"):
        try:
            importlib.import_module(pool)
            return True
        except ImportError:
            continue
    return False


def _numba_layer() -> str | None:
    """The threading layer Numba launched in this process, None before any parallel code."""
    numba = sys.modules.get("numba")
    if numba is None:
        return None
    try:
        return numba.threading_layer()
    except ValueError:  # no layer launched yet
        return None


def _omp_started() -> bool:
    """Whether Numba runs GNU OpenMP threads here (a forked child could not use them)."""
    if _numba_layer() != "omp":
        return False
    print("parallel: Numba already runs OpenMP threads in this process; the repetitions run "
          "in turn (call use_jobs before any Numba work)", file=sys.stderr)
    return True


def _init_worker(threads: int) -> None:
    """Share the cores: each of the workers runs Numba's parallel loops on ``threads`` threads."""
    numba = sys.modules.get("numba")
    if numba is None:
        os.environ["NUMBA_NUM_THREADS"] = str(threads)  # read when Numba is imported
    else:
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))


def _run_one(index: int) -> Any:
    fn, items = _WORK
    return fn(items[index])


def _sync_device() -> None:
    """Finish the work queued so far (legacy stream) before worker threads use its results."""
    import cupy  # noqa: PLC0415 - GPU workers only

    cupy.cuda.Device().synchronize()


def _own_stream() -> None:
    """Give this worker thread its own CUDA stream (CuPy's current stream is per thread)."""
    import cupy  # noqa: PLC0415 - GPU workers only

    _STREAMS.stream = cupy.cuda.Stream(non_blocking=True)
    _STREAMS.stream.use()


def _run_in_thread(fn: Callable[[Any], Any], item: Any, share: float) -> Any:
    """``fn(item)`` planning with ``share`` of the free device memory, its stream synchronised."""
    with device_memory_share(share):
        result = fn(item)
    stream = getattr(_STREAMS, "stream", None)
    if stream is not None:
        stream.synchronize()  # the repetition's device work is done when it returns
    return result


def run_repetitions(fn: Callable[[Any], Any], items: Iterable[Any], jobs: int) -> list:
    """``[fn(x) for x in items]``, with up to ``jobs`` workers.

    Parameters
    ----------
    fn : callable
        One repetition; it may close over large data (the workers inherit
        or share it).
    items : iterable
        One item per repetition (e.g. its seed).
    jobs : int
        From :func:`use_jobs`; 1 runs the loop in this process.

    Returns
    -------
    list
        The results in the order of ``items``.  A repetition's exception is
        raised here.
    """
    global _WORK
    items = list(items)
    jobs = max(1, min(int(jobs), len(items)))
    if jobs == 1:
        return [fn(x) for x in items]
    if _THREADS or gpu_in_use():
        if not _threadsafe_numba():
            return [fn(x) for x in items]
        cuda = gpu_in_use() or gpu_available()  # no fork follows: CUDA may start here
        if cuda:
            _sync_device()
        with ThreadPoolExecutor(jobs, initializer=_own_stream if cuda else None) as pool:
            return list(pool.map(lambda x: _run_in_thread(fn, x, 1 / jobs), items))
    if _omp_started():
        return [fn(x) for x in items]
    _WORK = (fn, items)
    try:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_init_worker,
                                 initargs=(max(1, default_jobs() // jobs),)) as pool:
            return list(pool.map(_run_one, range(len(items))))
    finally:
        _WORK = None
