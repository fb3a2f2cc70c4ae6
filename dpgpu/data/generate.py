"""Seeded synthetic sequence datasets of any size, for scaling measurements.

Not a privacy mechanism and not private data: a benchmark workload.  The
sequences follow a variable-order Markov chain over a Zipf-distributed
alphabet, generated one position at a time for all sequences at once, so a
1e8-token dataset takes seconds, not hours.  Datasets larger than memory
come in chunks (:func:`markov_chunks`, ``dpgpu generate``), generated in
parallel worker processes.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from typing import Any, Iterable, Iterator

import numpy as np

from ..errors import InvalidParameter
from ..validation import check_positive_int, check_positive_real
from .sequencedb import SequenceDB
from .vocabulary import Vocabulary

_MIX = np.uint64(0x9E3779B97F4A7C15)

#: Most tokens of :func:`markov_sequences` and of ``dpgpu generate``: counts stay far
#: inside int64 (9.2e18), which holds the offsets and the numbers of items written.
MAX_TOKENS = 10**18

#: Longest mean sequence length.  Positions are generated one at a time, so a chunk
#: of 1e7 tokens takes about 2 s at the default mean of 8 but 20 s at this bound; and
#: the data exceed the tokens asked for by up to a sequence, about ``mean_length``.
MAX_MEAN_LENGTH = 100_000

#: Longest context of the chain: each sequence keeps that many past items, and each
#: step looks at up to that many (a context longer than a few items is rarely seen twice).
MAX_ORDER = 64

#: Context classes of the chain by default.
CONTEXTS = 4096

#: Most entries of the chain's table of item orders, ``contexts * n_items``: every
#: chunk builds it anew, with about 16 bytes an entry (1 GB at this bound).
MAX_TABLE = 2**26

#: Largest Zipf exponent.  Item 2 then has ``2**-32`` of item 1's weight (a larger
#: exponent makes about the same data), and ``n_items ** zipf`` stays a float for every
#: alphabet the table holds (at most ``2**(26 * 32)`` with ``MAX_TABLE`` items).
MAX_ZIPF = 32


def markov_sequences(n_tokens: int, *, n_items: int = 100, max_order: int = 3,
                     zipf: float = 1.1, mean_length: float = 8.0, contexts: int = CONTEXTS,
                     seed: int = 0) -> SequenceDB:
    """A database of about ``n_tokens`` items from a variable-order Markov chain.

    Parameters
    ----------
    n_tokens : int
        Total items wanted, at most :data:`MAX_TOKENS` (the result has at
        least this many, within one sequence).
    n_items : int
        Alphabet size; item ``i`` has label ``str(i + 1)``.  At most
        ``MAX_TABLE // contexts`` (:func:`check_n_items`).
    max_order : int
        The context of the next item is the last ``1 + (prev % max_order)``
        items (so the order varies with the previous item).
    zipf : float
        Exponent of the Zipf law of the next item, in ``(0, MAX_ZIPF]``
        (:func:`check_zipf`): with probability 1/2 over the global item
        order (so item frequencies are Zipf-skewed), else over a permutation
        of the alphabet specific to the context.
    mean_length : float
        Mean of the geometric sequence lengths, in ``[1, MAX_MEAN_LENGTH]``.
    contexts : int
        Distinct context classes (contexts are hashed into this many), at
        most :data:`MAX_TABLE`.
    seed : int or tuple of int
        Seed of NumPy's generator (:func:`numpy.random.default_rng`): a
        non-negative integer, or a non-empty tuple of them (as
        :func:`markov_chunks` seeds its chunks).

    Returns
    -------
    SequenceDB

    Raises
    ------
    InvalidParameter
        A parameter out of range, naming it.
    """
    n_tokens = check_positive_int(n_tokens, "n_tokens", maximum=MAX_TOKENS)
    seed = check_seed(seed)
    n_items, max_order, zipf, mean_length, contexts = _chain_options(
        n_items=n_items, max_order=max_order, zipf=zipf, mean_length=mean_length,
        contexts=contexts).values()
    rng = np.random.default_rng(seed)
    n_seq = max(1, int(n_tokens / mean_length * 1.05) + 16)
    lengths = rng.geometric(min(1.0, 1.0 / mean_length), size=n_seq).astype(np.int64)
    # rare (small n_tokens): the 5% margin fell short; a float64 sum cannot wrap around
    # as an int64 one can, and is exact below 2**53
    while lengths.sum(dtype=np.float64) < n_tokens:
        more = rng.geometric(min(1.0, 1.0 / mean_length), size=n_seq).astype(np.int64)
        lengths = np.concatenate([lengths, more])
    total = np.cumsum(lengths)
    n_seq = int(np.searchsorted(total, n_tokens) + 1)
    lengths = lengths[:n_seq]
    cdf = np.cumsum(1.0 / np.arange(1, n_items + 1) ** zipf)
    cdf /= cdf[-1]
    perms = np.argsort(rng.random((contexts, n_items)), axis=1).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    items = np.empty(int(offsets[-1]), dtype=np.int32)
    history = np.zeros((n_seq, max_order), dtype=np.int64)  # last items, newest first
    for t in range(int(lengths.max())):
        live = np.flatnonzero(lengths > t)
        if t == 0:
            ctx = np.zeros(live.size, dtype=np.uint64)
        else:
            order = 1 + history[live, 0] % max_order
            ctx = np.zeros(live.size, dtype=np.uint64)
            for j in range(max_order):
                use = order > j
                ctx[use] = (ctx[use] ^ (history[live[use], j].astype(np.uint64) + np.uint64(1))) \
                    * _MIX
        bucket = (ctx % np.uint64(contexts)).astype(np.int64)
        rank = np.minimum(np.searchsorted(cdf, rng.random(live.size)), n_items - 1)
        # half the draws follow the global Zipf order, half the context's own order
        nxt = np.where(rng.random(live.size) < 0.5, rank, perms[bucket, rank]).astype(np.int32)
        items[offsets[live] + t] = nxt
        history[live, 1:] = history[live, :-1]
        history[live, 0] = nxt
    vocab = Vocabulary([str(i + 1) for i in range(n_items)])
    return SequenceDB(items, offsets, vocab, source={"format": "lines", "tokens": "int"})


def check_seed(value: Any, name: str = "seed") -> int | tuple[int, ...]:
    """Return ``value`` if it is a generator seed: an integer ``>= 0`` or a tuple of them.

    A seed fixes the data, so ``None`` (fresh entropy) and booleans are
    refused, as are negative numbers, which NumPy's generator refuses.

    Parameters
    ----------
    value : any
        The value given: an integer, not a bool, or a non-empty tuple of
        integers.
    name : str
        The parameter's name, for the error message.

    Returns
    -------
    int or tuple of int

    Raises
    ------
    InvalidParameter
        ``value`` is neither.
    """
    if not isinstance(value, tuple):
        return check_positive_int(value, name, minimum=0)
    if not value:
        raise InvalidParameter(f"{name}: a tuple seed needs at least one integer, got ()")
    return tuple(check_positive_int(part, name, minimum=0) for part in value)


def _chain_options(*, n_items: Any, max_order: Any, zipf: Any, mean_length: Any,
                   contexts: Any) -> dict[str, Any]:
    """The Markov chain's parameters of :func:`markov_sequences`, checked."""
    contexts = check_positive_int(contexts, "contexts", maximum=MAX_TABLE)
    return {"n_items": check_n_items(n_items, contexts),
            "max_order": check_positive_int(max_order, "max_order", maximum=MAX_ORDER),
            "zipf": check_zipf(zipf),
            "mean_length": check_mean_length(mean_length),
            "contexts": contexts}


def check_mean_length(value: Any, name: str = "mean_length") -> float:
    """Return ``value`` as a float if it is a mean sequence length in ``[1, MAX_MEAN_LENGTH]``.

    Parameters
    ----------
    value : any
        The value given; a real number, not a bool.
    name : str
        The parameter's name, for the error message.

    Returns
    -------
    float

    Raises
    ------
    InvalidParameter
        ``value`` is not a finite number in the range (a sequence has at
        least one item; see :data:`MAX_MEAN_LENGTH` for the upper bound).
    """
    x = check_positive_real(value, name)
    if not 1 <= x <= MAX_MEAN_LENGTH:
        raise InvalidParameter(f"{name}: must be in [1, {MAX_MEAN_LENGTH:,}] (a mean sequence "
                               f"length), got {value!r}")
    return x


def check_zipf(value: Any, name: str = "zipf") -> float:
    """Return ``value`` as a float if it is a Zipf exponent in ``(0, MAX_ZIPF]``.

    Parameters
    ----------
    value : any
        The value given; a real number, not a bool.
    name : str
        The parameter's name, for the error message.

    Returns
    -------
    float

    Raises
    ------
    InvalidParameter
        ``value`` is not a finite number in the range (see :data:`MAX_ZIPF`).
    """
    x = check_positive_real(value, name)
    if x > MAX_ZIPF:
        raise InvalidParameter(f"{name}: at most {MAX_ZIPF} (item 2 then has 2**-{MAX_ZIPF} of "
                               f"item 1's weight), got {value!r}")
    return x


def check_n_items(value: Any, contexts: int = CONTEXTS, name: str = "n_items") -> int:
    """Return ``value`` as an int if it is an alphabet size the chain's table can hold.

    The chain keeps an order of the alphabet per context class, a table of
    ``contexts * n_items`` entries built anew for every chunk (about 16 bytes
    an entry), so ``n_items`` is at most ``MAX_TABLE // contexts``: 16,384
    with the default :data:`CONTEXTS`.

    Parameters
    ----------
    value : any
        The value given; an integer, not a bool.
    contexts : int
        The chain's context classes, from 1 to :data:`MAX_TABLE`.
    name : str
        The parameter's name, for the error message.

    Returns
    -------
    int

    Raises
    ------
    InvalidParameter
        ``value`` is not an integer in ``[1, MAX_TABLE // contexts]``.
    """
    n_items = check_positive_int(value, name)
    most = MAX_TABLE // contexts
    if n_items > most:
        raise InvalidParameter(f"{name}: at most {most:,} with {contexts:,} contexts (the "
                               f"chain's table of contexts x items holds {MAX_TABLE:,} entries "
                               f"at most, about 16 bytes each), got {n_items:,}")
    return n_items


#: Tokens per chunk of :func:`markov_chunks` (a generating process needs about 27 B per token).
CHUNK_TOKENS = 10_000_000


def markov_chunks(n_tokens: int, *, seed: int = 0, chunk_tokens: int = CHUNK_TOKENS,
                  jobs: int = 1, n_items: int = 100, max_order: int = 3, zipf: float = 1.1,
                  mean_length: float = 8.0, contexts: int = CONTEXTS) -> Iterator[SequenceDB]:
    """A dataset of about ``n_tokens`` items as consecutive chunks, generated in parallel.

    Chunk ``i`` of ``k = ceil(n_tokens / chunk_tokens)`` is
    ``markov_sequences(size_i, seed=seed if i == 0 else (seed, i), ...)``,
    where ``size_i`` is ``chunk_tokens`` except for the last chunk, which
    asks for the rest.  So the data depend on ``n_tokens``, ``seed``,
    ``chunk_tokens`` and the chain's parameters only, not on ``jobs``, and a
    dataset of one chunk is ``markov_sequences(n_tokens, seed=seed)`` itself.
    Each chunk ends with a whole sequence, so the total is at least
    ``n_tokens`` and exceeds it by less than ``k`` sequences.

    Parameters
    ----------
    n_tokens : int
        Total items wanted: any number, since the chunks are planned as
        they are needed (:data:`MAX_TOKENS` bounds each chunk, and
        ``dpgpu generate``).
    seed : int
        Non-negative seed of the whole dataset.
    chunk_tokens : int
        Items per chunk: memory use is about ``27 * chunk_tokens`` bytes per
        process.
    jobs : int
        Worker processes generating chunks ahead (1: generate here, in
        turn).  At most ``jobs + 1`` chunks are held at once.
    n_items, max_order, zipf, mean_length, contexts
        The chain, as for :func:`markov_sequences`.

    Yields
    ------
    SequenceDB
        The chunks, in order, each with the vocabulary ``1 .. n_items``.

    Raises
    ------
    InvalidParameter
        A parameter out of range, before anything is generated.
    """
    n_tokens = check_positive_int(n_tokens, "n_tokens")
    seed = check_positive_int(seed, "seed", minimum=0)
    chunk_tokens = check_positive_int(chunk_tokens, "chunk_tokens", maximum=MAX_TOKENS)
    jobs = check_positive_int(jobs, "jobs")
    options = _chain_options(n_items=n_items, max_order=max_order, zipf=zipf,
                             mean_length=mean_length, contexts=contexts)
    k = -(-n_tokens // chunk_tokens)
    calls = (partial(markov_sequences, chunk_tokens if i < k - 1 else n_tokens - i * chunk_tokens,
                     seed=seed if i == 0 else (seed, i), **options) for i in range(k))
    return _results(calls, k, jobs)


def _results(calls: Iterable[partial], k: int, jobs: int) -> Iterator[SequenceDB]:
    """What each of the ``k`` ``calls`` returns, in order, from ``jobs`` processes working
    ahead; the calls are made as they are needed (there may be billions of them)."""
    if jobs == 1 or k == 1:
        for call in calls:
            yield call()
        return
    # spawned workers: forking a process that may run threads is unsafe
    pool = ProcessPoolExecutor(min(jobs, k), mp_context=multiprocessing.get_context("spawn"))
    try:
        ahead: deque[Future] = deque()
        for call in calls:
            ahead.append(pool.submit(call))
            if len(ahead) > jobs:
                yield ahead.popleft().result()
        while ahead:
            yield ahead.popleft().result()
    finally:
        pool.shutdown(cancel_futures=True)
