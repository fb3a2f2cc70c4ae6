"""Counting over Dask partitions (``engine="dask"``).

A :class:`DaskGramEngine` splits the sequences into partitions, builds a
:class:`~dpgpu.ops.grams.GramEngine` for each partition *on a worker* (the
padded blocks never travel back), and answers the same whole-level questions
as a local engine by summing the partitions' exact answers on the client.
Counting is a reduction, and every mechanism draws its noise once, on the
client, keyed by the identity of what is noised: so for the same key a Dask
run releases exactly what a local run releases.  Partitions scattered from
the client are data Dask cannot recompute: a worker lost during a run stops
it with a :class:`~dpgpu.errors.DPGPUError` (:func:`gather`), before
anything is released.  Partitions the workers read from the file
(:func:`dpgpu.scale.loading.load_distributed`) are tasks: Dask reads a lost
worker's parts again on another worker, and the run completes with the same
release.

:class:`DaskPartitions` is the Dask engine of
:mod:`dpgpu.scale.partitions`, which the other mechanisms (PFS², PST, DPNE)
use for their counting reductions.

Requires ``dask[distributed]`` (``pip install dpgpu[dist]``); imported only
when asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from typing import Any, Callable, Sequence

import numpy as np

from ..backend import to_numpy
from ..errors import DPGPUError, InvalidParameter
from ..validation import check_positive_int
from .partitions import Partitions, part_of, partition, run_client, split_rows

log = logging.getLogger("dpgpu")

#: Arguments at least this large (bytes of an array, entries of a list) are
#: scattered to the workers once per call instead of travelling with every task.
SCATTER_BYTES, SCATTER_ITEMS = 1 << 20, 1 << 14
#: A local cluster's scheduler without the dashboard; its HTTP server (which it starts
#: anyway) on a free port, so that two runs at once do not warn that port 8787 is taken.
_NO_DASHBOARD = {"dashboard_address": ":0", "scheduler_kwargs": {"dashboard": False}}


def require_distributed() -> Any:
    """The ``dask.distributed`` module, imported here (it is optional).

    Raises
    ------
    InvalidParameter
        Naming ``engine``, when ``dask[distributed]`` is not installed.
    """
    try:
        import dask.distributed as distributed  # noqa: PLC0415 - optional dependency
    except ImportError:
        raise InvalidParameter("engine: 'dask' needs dask[distributed] "
                               "(pip install dpgpu[dist])") from None
    return distributed


def connect(scheduler: str | None = None, n_workers: int = 2, *, quiet: bool = False,
            gpus: bool = False, name: str = "scheduler") -> Any:
    """A ``dask.distributed.Client``: to ``scheduler`` (an address), else a local cluster.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``), e.g. of a
        ``dask-cuda`` cluster spanning several GPU machines.
    n_workers : int
        Workers of the local CPU cluster started when no address is given.
    quiet : bool
        Show Dask's messages from WARNING up only (its default is INFO).
    gpus : bool
        The workers count on the GPU: the local cluster is a ``dask-cuda``
        ``LocalCUDACluster``, one worker per visible GPU.  Without
        ``dask-cuda`` installed, a warning says so and the ``n_workers``
        workers of a CPU cluster share the GPU.
    name : str
        The parameter ``scheduler`` came from, named in errors.

    Returns
    -------
    dask.distributed.Client

    Raises
    ------
    InvalidParameter
        When ``dask[distributed]`` is not installed, ``scheduler`` is empty,
        or no Dask scheduler answers at ``scheduler`` within Dask's connect
        timeout (``distributed.comm.timeouts.connect``, 30 s by default):
        nothing listens there, or a service that is not Dask does.
    """
    distributed = require_distributed()
    if quiet:  # after the import, which sets the levels from Dask's configuration
        logging.getLogger("distributed").setLevel(logging.WARNING)
    if scheduler is not None:
        if not str(scheduler).strip():
            raise InvalidParameter(f"{name}: an empty scheduler address (leave it out for a "
                                   "local cluster)")
        try:
            _handshake(scheduler)
            return distributed.Client(scheduler)
        # unreachable, refused, not Dask, or not an address (asyncio's timeout: Python 3.10)
        except (OSError, ValueError, asyncio.TimeoutError) as exc:
            raise InvalidParameter(f"{name}: cannot connect to {scheduler!r} ({exc})") from None
    n_workers = check_positive_int(n_workers, "n_workers")
    cluster, size = distributed.LocalCluster, {"n_workers": n_workers}
    if gpus:
        try:
            from dask_cuda import LocalCUDACluster  # noqa: PLC0415 - optional, GPU machines
        except ImportError:
            log.warning("dask-cuda is not installed: the %d workers of the local cluster share "
                        "one GPU (pip install dpgpu[dist-gpu] for one worker per GPU)", n_workers)
        else:
            cluster, size = LocalCUDACluster, {}  # one worker per visible GPU
    with _interrupts_to_this_process() as ignored:
        client = distributed.Client(cluster(threads_per_worker=1, **size, **_NO_DASHBOARD))
    from .local_workers import LocalWorkerSetup  # noqa: PLC0415 - imports distributed
    try:
        client.register_plugin(LocalWorkerSetup(ignored))  # workers restarted later too
    except BaseException:  # a Ctrl-C now, say: the cluster is not left running
        close(client)
        raise
    return client


@contextlib.contextmanager
def _interrupts_to_this_process() -> Any:
    """Start a local cluster whose worker processes ignore SIGINT.

    Ctrl-C in a terminal interrupts the whole process group: worker
    processes interrupted while starting or counting printed tracebacks,
    and an interrupt while the cluster started left the run hanging until
    a second Ctrl-C.  SIGINT is ignored while the cluster starts, a setting
    the worker processes keep (across ``exec``, and Python then installs no
    handler of its own); so this process alone handles a later interrupt,
    closing the cluster.  A Ctrl-C in those seconds of start-up is lost.
    Only in the main thread, where Python handles signals, and only where
    its SIGINT handler is Python's own; the block gets whether SIGINT was
    ignored.
    """
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield False
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield True
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _handshake(address: str) -> None:
    """Connect to ``address`` and read Dask's handshake, within Dask's connect timeout.

    ``distributed.Client`` bounds the connection but not the handshake read
    after it: a service that is not Dask may never answer (the client would
    wait forever), or answer with bytes read as a frame length (a
    MemoryError).  This probe runs in an event loop on a thread of its own,
    so that a caller's running loop (Jupyter) does not matter, and it has
    ended when the call returns.

    Parameters
    ----------
    address : str
        The scheduler's address.

    Raises
    ------
    OSError
        Nothing answered at ``address`` in time, or what answered is not Dask.
    ValueError
        ``address`` is not an address.
    """
    import dask  # noqa: PLC0415 - optional dependency
    from dask.utils import parse_timedelta  # noqa: PLC0415
    from distributed.comm import connect as open_comm  # noqa: PLC0415
    from distributed.security import Security  # noqa: PLC0415

    timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")
    options = Security().get_connection_args("client")  # as the Client's own (TLS, ...)
    failed: list[BaseException] = []

    async def probe() -> None:
        comm = await asyncio.wait_for(open_comm(address, timeout=timeout, **options), timeout)
        await comm.close()

    def run() -> None:
        try:
            asyncio.run(probe())
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=run, name="dpgpu-connect", daemon=True)
    thread.start()
    thread.join(timeout + 5)  # the probe gives up after ``timeout``; this is a safety net
    if thread.is_alive() or failed and isinstance(failed[0], asyncio.TimeoutError):
        raise OSError(f"no Dask scheduler answered within {timeout:g} s")
    if failed and isinstance(failed[0], (OSError, ValueError)):
        raise failed[0]
    if failed:  # e.g. a MemoryError: another protocol's bytes read as a frame length
        raise OSError(f"what answers there is not a Dask scheduler: "
                      f"{type(failed[0]).__name__} reading its answer")


def check_client(client: Any) -> Any:
    """Return ``client`` if it is a ``dask.distributed.Client`` or a scheduler's address.

    Raises
    ------
    InvalidParameter
        Naming ``client`` (or ``engine`` when Dask is not installed).
    """
    if isinstance(client, str):
        if not client.strip():
            raise InvalidParameter("client: an empty scheduler address (pass None for a "
                                   "local cluster)")
        return client
    if not isinstance(client, require_distributed().Client):
        raise InvalidParameter(f"client: expected a dask.distributed.Client or a scheduler's "
                               f"address (str), got {type(client).__name__}")
    return client


def gather(client: Any, futures: Any) -> Any:
    """``client.gather(futures)``, a lost worker reported as a :class:`~dpgpu.errors.DPGPUError`.

    Raises
    ------
    DPGPUError
        A worker (or the connection to the cluster) was lost and Dask could
        not recompute what it held (partitions scattered from the client),
        so the run stops before releasing anything and must be repeated.
    """
    from distributed import KilledWorker  # noqa: PLC0415 - optional dependency
    from distributed.client import FutureCancelledError  # noqa: PLC0415
    from distributed.comm import CommClosedError  # noqa: PLC0415

    try:
        return client.gather(futures)
    except (FutureCancelledError, KilledWorker, CommClosedError) as exc:
        raise DPGPUError(f"a Dask worker was lost during the run ({type(exc).__name__}: {exc}); "
                         "nothing was released: repeat the run") from exc


def close(client: Any) -> None:
    """Close a client of :func:`connect`, and the local cluster it started (if any)."""
    cluster = getattr(client, "cluster", None)
    client.close()
    if cluster is not None:
        cluster.close()


class DaskPartitions(Partitions):
    """:class:`~dpgpu.scale.partitions.Partitions` held on Dask workers.

    The states are futures; calls are tasks on the workers that hold them,
    and only :meth:`gather` and :meth:`sum` bring results to the client.

    Parameters
    ----------
    client : dask.distributed.Client
    states : list of distributed.Future
    rows : list of numpy.ndarray of int64
    """

    def __init__(self, client: Any, states: list[Any], rows: list[np.ndarray]):
        super().__init__(states, rows)
        self.client = client

    @classmethod
    def split(cls, db: Any, client: Any = None, *, by_user: bool = False,
              partitions: int | None = None, take: Callable[..., Any] = part_of
              ) -> "DaskPartitions":
        """Scatter the parts of ``db`` to the workers (see :func:`~.partitions.partition`).

        ``take(db, rows, by_user=...)`` cuts one part (default: a SequenceDB of
        those sequences; any indexable data with a length works).  ``client``
        as for :func:`~.partitions.run_client`.
        """
        client = run_client(client)
        n_workers = len(client.scheduler_info()["workers"])
        n_parts = check_positive_int(2 * max(1, n_workers) if partitions is None else partitions,
                                 "partitions")
        rows = split_rows(db, n_parts, by_user=by_user)
        futures = client.scatter([take(db, r, by_user=by_user) for r in rows], hash=False)
        log.info("dask engine: %d partitions on %d workers", len(futures), n_workers)
        return cls(client, futures, rows)

    def _apply(self, fn: Callable[..., Any], args: tuple, per_row: Sequence[np.ndarray]
               ) -> list[Any]:
        shared = [self._share(a) for a in args]
        return [self.client.submit(fn, state, *shared, *self._row_args(per_row, i), pure=False)
                for i, state in enumerate(self.states)]

    def _results(self, outputs: list[Any]) -> list[Any]:
        return gather(self.client, outputs)

    def _share(self, arg: Any) -> Any:
        """``arg``, or a future of it on every worker when it is large."""
        big = (isinstance(arg, np.ndarray) and arg.nbytes >= SCATTER_BYTES) or \
            (isinstance(arg, (list, tuple)) and len(arg) >= SCATTER_ITEMS)
        return self.client.scatter(arg, broadcast=True, hash=False) if big else arg


class DaskGramEngine:
    """The :class:`~dpgpu.ops.grams.GramEngine` interface over Dask partitions.

    Parameters
    ----------
    db : SequenceDB or DistributedDB
        A DistributedDB (:mod:`dpgpu.scale.loading`) is counted in its own
        partitions.
    l_max : int, optional
    start, end : see :class:`~dpgpu.ops.grams.GramEngine`
    backend : str, optional
        Backend name each worker uses (``"numpy"`` or ``"cupy"`` on
        ``dask-cuda`` workers).
    client : dask.distributed.Client or str, optional
        A client or a scheduler's address; default: a local cluster of two
        workers (see :func:`~.partitions.run_client`; not used for a
        DistributedDB).
    partitions : int, optional
        Number of partitions (default: twice the number of workers).
    """

    def __init__(self, db: Any, l_max: int | None = None, *, start: bool = False,
                 end: "bool | str" = False, backend: Any = None, client: Any = None,
                 partitions: int | None = None):
        self.vocab = db.vocab
        self.n_symbols = db.vocab.size + 2
        name = backend if isinstance(backend, str) or backend is None else backend.name
        self.parts = partition(db, "dask", client, partitions=partitions).map(
            _build, l_max, start, end, name)

    def next_symbol_histogram(self, contexts: Any) -> np.ndarray:
        """Sum over partitions of :meth:`GramEngine.next_symbol_histogram`."""
        contexts = np.ascontiguousarray(to_numpy(contexts), dtype=np.int32)
        return self.parts.sum(_histogram, contexts)

    def count(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Distinct n-grams and their counts, merged over partitions (lexicographic order)."""
        return _merged(self.parts.gather(_count, n), n)

    def count_levels(self, n_max: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Every level of :meth:`GramEngine.count_levels`, each merged over partitions."""
        n_max = check_positive_int(n_max, "n_max")
        parts = self.parts.gather(_count_levels, n_max)
        return [_merged([p[n - 1] for p in parts], n) for n in range(1, n_max + 1)]


def _merged(parts: list, n: int) -> tuple[np.ndarray, np.ndarray]:
    """One level's (grams, counts) of several partitions, equal grams summed, in order."""
    grams = np.concatenate([g for g, _ in parts]) if parts else np.zeros((0, n), np.int32)
    counts = np.concatenate([c for _, c in parts]) if parts else np.zeros(0, np.int64)
    if grams.shape[0] == 0:
        return grams, counts
    uniq, inverse = np.unique(grams, axis=0, return_inverse=True)
    total = np.zeros(uniq.shape[0], dtype=np.int64)
    np.add.at(total, inverse.ravel(), counts)
    return uniq, total


def _build(db: Any, l_max: Any, start: bool, end: Any, backend: Any) -> Any:
    from ..ops.grams import GramEngine  # noqa: PLC0415 - runs on the worker

    return GramEngine(db, l_max, start=start, end=end, backend=backend)


def _histogram(engine: Any, contexts: np.ndarray) -> np.ndarray:
    return to_numpy(engine.next_symbol_histogram(contexts))


def _count(engine: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    grams, counts = engine.count(n)
    return to_numpy(grams), to_numpy(counts)


def _count_levels(engine: Any, n_max: int) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(to_numpy(g), to_numpy(c)) for g, c in engine.count_levels(n_max)]
