"""Gram counting over Dask partitions (``engine="dask"``).

A :class:`DaskGramEngine` splits the sequences into partitions, builds a
:class:`~dpgpu.ops.grams.GramEngine` for each partition *on a worker* (the
padded blocks never travel back), and answers the same whole-level questions
as a local engine by summing the partitions' exact answers on the client.
Counting is a reduction, and every mechanism draws its noise once, on the
client, keyed by the identity of what is noised: so for the same key a Dask
run releases exactly what a local run releases.

Requires ``dask[distributed]`` (``pip install dpgpu[dist]``); imported only
when asked for.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..backend import to_numpy
from ..errors import InvalidParameter
from ..validation import check_positive_int

log = logging.getLogger("dpgpu")


def connect(scheduler: str | None = None, n_workers: int = 2) -> Any:
    """A ``dask.distributed.Client``: to ``scheduler`` (an address), else a local cluster."""
    try:
        from dask.distributed import Client, LocalCluster  # noqa: PLC0415
    except ImportError:
        raise InvalidParameter("engine: 'dask' needs dask[distributed] "
                               "(pip install dpgpu[dist])") from None
    if scheduler:
        return Client(scheduler)
    n_workers = check_positive_int(n_workers, "n_workers")
    return Client(LocalCluster(n_workers=n_workers, threads_per_worker=1,
                               dashboard_address=None))


class DaskGramEngine:
    """The :class:`~dpgpu.ops.grams.GramEngine` interface over Dask partitions.

    Parameters
    ----------
    db : SequenceDB
    l_max : int, optional
    start, end : see :class:`~dpgpu.ops.grams.GramEngine`
    backend : str, optional
        Backend name each worker uses (``"numpy"`` or ``"cupy"`` on
        ``dask-cuda`` workers).
    client : dask.distributed.Client
    partitions : int, optional
        Number of partitions (default: twice the number of workers).
    """

    def __init__(self, db: Any, l_max: int | None = None, *, start: bool = False,
                 end: "bool | str" = False, backend: Any = None, client: Any,
                 partitions: int | None = None):
        self.vocab = db.vocab
        self.n_symbols = db.vocab.size + 2
        self.client = client
        n_parts = partitions or 2 * max(1, len(client.scheduler_info()["workers"]))
        n_parts = check_positive_int(n_parts, "partitions")
        bounds = np.linspace(0, len(db), n_parts + 1).astype(np.int64)
        name = backend if isinstance(backend, str) or backend is None else backend.name
        parts = [db.select(np.arange(lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])
                 if hi > lo]
        self.engines = [client.submit(_build, part, l_max, start, end, name, pure=False)
                        for part in parts]
        log.info("dask engine: %d partitions on %d workers", len(self.engines),
                 len(client.scheduler_info()["workers"]))

    def next_symbol_histogram(self, contexts: Any) -> np.ndarray:
        """Sum over partitions of :meth:`GramEngine.next_symbol_histogram`."""
        contexts = np.ascontiguousarray(to_numpy(contexts), dtype=np.int32)
        futures = [self.client.submit(_histogram, e, contexts, pure=False) for e in self.engines]
        return np.sum(self.client.gather(futures), axis=0)

    def count(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Distinct n-grams and their counts, merged over partitions (lexicographic order)."""
        parts = self.client.gather([self.client.submit(_count, e, n, pure=False)
                                    for e in self.engines])
        grams = np.concatenate([g for g, _ in parts]) if parts else np.zeros((0, n), np.int32)
        counts = np.concatenate([c for _, c in parts]) if parts else np.zeros(0, np.int64)
        if grams.shape[0] == 0:
            return grams, counts
        uniq, inverse = np.unique(grams, axis=0, return_inverse=True)
        return uniq, np.bincount(inverse.ravel(), weights=counts,
                                 minlength=uniq.shape[0]).astype(np.int64)


def _build(db: Any, l_max: Any, start: bool, end: Any, backend: Any) -> Any:
    from ..ops.grams import GramEngine  # noqa: PLC0415 - runs on the worker

    return GramEngine(db, l_max, start=start, end=end, backend=backend)


def _histogram(engine: Any, contexts: np.ndarray) -> np.ndarray:
    return to_numpy(engine.next_symbol_histogram(contexts))


def _count(engine: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    grams, counts = engine.count(n)
    return to_numpy(grams), to_numpy(counts)
