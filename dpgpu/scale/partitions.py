"""One interface for the counting reductions of every mechanism, here or on Dask.

A mechanism states its counting as functions of one *partition state* (a
part of the sequences, or what a worker built from it) and asks for
whole-partition calls:

* :meth:`Partitions.map` replaces every state by ``fn(state, ...)``
  (building an engine, moving to the next tree level);
* :meth:`Partitions.gather` returns ``fn(state, ...)`` of every partition;
* :meth:`Partitions.sum` adds those results (exact integer counts).

``engine="local"`` holds one partition, the whole database, in this process:
the calls run inline, so the local path is the same code with one part.
``engine="dask"`` (:mod:`dpgpu.scale.dask`) splits the database into
partitions held on Dask workers; the calls run there and only their results
come back.  Everything random stays on the client, drawn once at the
identity of what is noised, and the partition functions are deterministic:
for the same key both engines give the same release, bit for bit.

A mechanism runs inside :func:`engine_run`: a Dask client that the engine
opens itself (``engine="dask"`` without a client, or with a scheduler's
address) lives for that run only and is closed, with the local cluster it
started, when the run returns or raises.

Importing this module does not import Dask.
"""

from __future__ import annotations

import contextlib
import copy
from contextvars import ContextVar
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ..errors import InvalidParameter
from ..validation import check_choice

#: The values of a mechanism's ``engine`` argument.
ENGINES = ("local", "dask")

#: The clients the current :func:`engine_run` opened, by scheduler address
#: (``None``: a local cluster); ``None`` outside a run.
_RUN_CLIENTS: ContextVar["dict[str | None, Any] | None"] = ContextVar("dpgpu_run_clients",
                                                                      default=None)


class Partitions:
    """Partition states and the calls a mechanism makes over all of them.

    Subclasses run ``fn(state, *args, *row_args)`` once per partition, where
    ``row_args`` are the ``per_row`` arrays cut to the partition's rows.

    Parameters
    ----------
    states : list
        One state per partition (objects, or futures of the Dask engine).
    rows : list of (numpy.ndarray of int64 or None)

    Attributes
    ----------
    rows : list of (numpy.ndarray of int64 or None)
        The input's sequence indices of each partition (``None``: all of them,
        in order).
    """

    def __init__(self, states: list[Any], rows: list[np.ndarray | None]):
        self.states, self.rows = states, rows

    def __len__(self) -> int:
        return len(self.states)

    def map(self, fn: Callable[..., Any], *args: Any,
            per_row: Sequence[np.ndarray] = ()) -> "Partitions":
        """Partitions whose states are ``fn(state, *args, *row_args)``.

        Parameters
        ----------
        fn : callable
            Deterministic, and importable by name (a module-level function or
            a method of a module-level class) where it may run on another
            machine; it must not modify ``state`` in place.
        *args
            Passed to every call.
        per_row : sequence of numpy.ndarray
            Arrays with one entry per input sequence; each call gets the
            entries of its partition's rows.

        Returns
        -------
        Partitions
            Of the same engine, over the same rows.
        """
        return self._like(self._apply(fn, args, per_row))

    def gather(self, fn: Callable[..., Any], *args: Any,
               per_row: Sequence[np.ndarray] = ()) -> list[Any]:
        """``fn(state, *args, *row_args)`` of every partition, in partition order."""
        return self._results(self._apply(fn, args, per_row))

    def sum(self, fn: Callable[..., Any], *args: Any,
            per_row: Sequence[np.ndarray] = ()) -> np.ndarray:
        """The sum over partitions of ``fn(state, ...)`` (equal-shape arrays, exact in int64)."""
        parts = self.gather(fn, *args, per_row=per_row)
        total = np.array(parts[0], copy=True)
        for part in parts[1:]:
            total += part
        return total

    # ------------------------------------------------------------ for engines
    def _like(self, states: list[Any]) -> "Partitions":
        """A partition set of this engine over the same rows with new ``states``."""
        out = copy.copy(self)
        out.states = states
        return out

    def _row_args(self, per_row: Sequence[np.ndarray], i: int) -> list[Any]:
        rows = self.rows[i]
        return [np.asarray(a) if rows is None else np.asarray(a)[rows] for a in per_row]

    def _apply(self, fn: Callable[..., Any], args: tuple, per_row: Sequence[np.ndarray]
               ) -> list[Any]:
        raise NotImplementedError

    def _results(self, outputs: list[Any]) -> list[Any]:
        raise NotImplementedError


class LocalPartitions(Partitions):
    """One partition in this process: the calls run inline (``engine="local"``)."""

    def _apply(self, fn: Callable[..., Any], args: tuple, per_row: Sequence[np.ndarray]
               ) -> list[Any]:
        return [fn(state, *args, *self._row_args(per_row, i))
                for i, state in enumerate(self.states)]

    def _results(self, outputs: list[Any]) -> list[Any]:
        return outputs


class HeldData:
    """A dataset already held in partitions somewhere (as :func:`partition` would cut it).

    :class:`dpgpu.scale.loading.DistributedDB` (read on Dask workers) is one.
    Mechanisms take it in place of a SequenceDB: they read ``vocab``,
    ``source`` and ``len`` here and count through :meth:`partitions`.
    """

    vocab: Any
    source: dict

    def __len__(self) -> int:
        raise NotImplementedError

    def partitions(self, *, by_user: bool = False) -> Partitions:
        """The partitions, each holding whole users with ``by_user`` (see :func:`partition`)."""
        raise NotImplementedError


def check_engine(engine: Any, db: Any = None, client: Any = None) -> str:
    """Return ``engine`` if it is one of :data:`ENGINES` and fits ``db`` and ``client``.

    Parameters
    ----------
    engine : {"local", "dask"}
    db : optional
        The mechanism's input: held data (:class:`HeldData`) needs ``"dask"``.
    client : dask.distributed.Client or str, optional
        The mechanism's ``client``: only with ``"dask"``, a client or the
        address of a scheduler (``tcp://host:8786``).

    Returns
    -------
    str

    Raises
    ------
    InvalidParameter
        Naming ``engine`` or ``client``.
    """
    engine = check_choice(engine, "engine", ENGINES)
    if isinstance(db, HeldData) and engine != "dask":
        raise InvalidParameter(f"engine: the data were read on Dask workers "
                               f"({type(db).__name__}); use engine='dask', not {engine!r}")
    if client is not None:
        if engine != "dask":
            raise InvalidParameter(f"client: only with engine='dask' (this run would count "
                                   f"locally and ignore the client), not engine={engine!r}")
        from .dask import check_client  # noqa: PLC0415 - optional dependency

        check_client(client)
    return engine


@contextlib.contextmanager
def engine_run() -> Iterator[None]:
    """The extent of one run: the Dask clients :func:`run_client` opens in it close at its end.

    A context manager, and a decorator (``@engine_run()``) of every
    mechanism: the clients, and the local clusters they started, are closed
    when the run returns or raises.  A client the caller passed is never
    closed here.
    """
    opened: dict[str | None, Any] = {}
    token = _RUN_CLIENTS.set(opened)
    try:
        yield
    finally:
        _RUN_CLIENTS.reset(token)
        if opened:
            from .dask import close  # noqa: PLC0415 - only where Dask was used

            for client in opened.values():
                close(client)


def run_client(client: Any = None) -> Any:
    """The Dask client to count on: ``client``, or one the current :func:`engine_run` owns.

    Parameters
    ----------
    client : dask.distributed.Client or str, optional
        A client is returned as it is.  For a scheduler's address, or
        ``None`` (a local cluster of two workers), the run connects once
        (:func:`dpgpu.scale.dask.connect`) and closes the client at its end.

    Returns
    -------
    dask.distributed.Client

    Raises
    ------
    InvalidParameter
        Outside :func:`engine_run` (nothing would close the client), when
        Dask is not installed, or no scheduler answers at ``client``.
    """
    if client is not None and not isinstance(client, str):
        return client
    from .dask import connect, require_distributed  # noqa: PLC0415 - optional dependency

    require_distributed()  # without Dask, say that first
    opened = _RUN_CLIENTS.get()
    if opened is None:
        raise InvalidParameter("client: engine='dask' outside a mechanism's run needs a "
                               "dask.distributed.Client (or the calls inside `with "
                               "dpgpu.scale.partitions.engine_run():`, which closes the client "
                               "it opens)")
    if client not in opened:
        opened[client] = connect(client, name="client")
    return opened[client]


def partition(db: Any, engine: str = "local", client: Any = None, *, by_user: bool = False,
              partitions: int | None = None) -> Partitions:
    """The sequences of ``db`` as partitions of ``engine``; their states are SequenceDBs.

    Parameters
    ----------
    db : SequenceDB
    engine : {"local", "dask"}
        ``"local"``: one partition, ``db`` itself.  ``"dask"``: parts of
        ``db`` scattered to the workers of ``client``.
    client : dask.distributed.Client or str, optional
        With ``engine="dask"``: a client, or a scheduler's address; default:
        a local cluster of two workers.  One the engine opens (see
        :func:`run_client`) is closed when the current :func:`engine_run` ends.
    by_user : bool
        Keep all the sequences of a user in one partition (user-level
        contribution bounding runs where the user's data is).  Without a
        user column every sequence is its own user, and each part's
        ``users`` holds the sequences' indices in ``db`` so that user
        identities stay global.
    partitions : int, optional
        Number of Dask partitions (default: twice the number of workers).

    Returns
    -------
    Partitions

    Notes
    -----
    For :class:`HeldData` (read on the workers) the partitions are its own,
    on its own client; ``client`` and ``partitions`` are not used.
    """
    engine = check_engine(engine, db)
    if isinstance(db, HeldData):
        return db.partitions(by_user=by_user)
    if engine == "local":
        return LocalPartitions([db], [None])
    from .dask import DaskPartitions  # noqa: PLC0415 - optional dependency

    return DaskPartitions.split(db, client, by_user=by_user, partitions=partitions)


def partition_points(points: np.ndarray, engine: str = "local", client: Any = None, *,
                     backend: str = "numpy", partitions: int | None = None) -> Partitions:
    """The rows of a point array as partitions of ``engine``, each state ``(points, node)``.

    Every point starts in node 0 (a single root); ``points`` is a host array
    and each state holds its part on ``backend`` (see :func:`partition`).
    """
    engine = check_engine(engine)
    if engine == "local":
        return LocalPartitions([points], [None]).map(_points_state, backend)
    from .dask import DaskPartitions  # noqa: PLC0415 - optional dependency

    parts = DaskPartitions.split(points, client, partitions=partitions,
                                 take=lambda data, rows, by_user: data[rows])
    return parts.map(_points_state, backend)


def _points_state(points: Any, backend: str) -> tuple:
    from ..backend import get_backend  # noqa: PLC0415 - avoid an import cycle

    xp = get_backend(backend).xp
    return xp.asarray(points), xp.zeros(points.shape[0], dtype=xp.int64)


def split_rows(db: Any, n_parts: int, *, by_user: bool = False) -> list[np.ndarray]:
    """Sequence indices of up to ``n_parts`` non-empty, balanced partitions of ``db``.

    Contiguous ranges; with ``by_user``, the rows sorted by user and cut only
    between users (so a user's sequences are never split).
    """
    n = len(db)
    if n == 0:
        return [np.zeros(0, dtype=np.int64)]
    if by_user and db.users is not None:
        order = np.argsort(db.users, kind="stable")
        users = db.users[order]
        heads = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
        targets = np.linspace(0, n, n_parts + 1)[1:-1]
        cuts = np.append(heads, n)[np.searchsorted(heads, targets)]
    else:
        order = np.arange(n, dtype=np.int64)
        cuts = np.linspace(0, n, n_parts + 1)[1:-1].astype(np.int64)
    bounds = np.unique(np.concatenate([[0], cuts, [n]]).astype(np.int64))
    return [order[lo:hi].astype(np.int64) for lo, hi in zip(bounds[:-1], bounds[1:])]


def part_of(db: Any, rows: np.ndarray, *, by_user: bool = False) -> Any:
    """The sequences ``rows`` of ``db`` as a SequenceDB without ``source``.

    With ``by_user`` and no user column, ``users`` becomes ``rows`` (each
    sequence its own user, identified by its index in ``db``).
    """
    from ..data.sequencedb import SequenceDB  # noqa: PLC0415 - avoid an import cycle

    bare = SequenceDB(db.items, db.offsets, db.vocab, users=db.users)
    part = bare.select(rows)
    if by_user and db.users is None:
        part = SequenceDB(part.items, part.offsets, part.vocab, users=rows)
    return part
