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

from ..validation import check_positive_int, check_positive_real
from .sequencedb import SequenceDB
from .vocabulary import Vocabulary

_MIX = np.uint64(0x9E3779B97F4A7C15)


def markov_sequences(n_tokens: int, *, n_items: int = 100, max_order: int = 3,
                     zipf: float = 1.1, mean_length: float = 8.0, contexts: int = 4096,
                     seed: int = 0) -> SequenceDB:
    """A database of about ``n_tokens`` items from a variable-order Markov chain.

    Parameters
    ----------
    n_tokens : int
        Total items wanted (the result has at least this many, within one
        sequence).
    n_items : int
        Alphabet size; item ``i`` has label ``str(i + 1)``.
    max_order : int
        The context of the next item is the last ``1 + (prev % max_order)``
        items (so the order varies with the previous item).
    zipf : float
        Exponent of the Zipf law of the next item: with probability 1/2 over
        the global item order (so item frequencies are Zipf-skewed), else
        over a permutation of the alphabet specific to the context.
    mean_length : float
        Mean of the geometric sequence lengths (>= 1).
    contexts : int
        Distinct context classes (contexts are hashed into this many).
    seed : int or tuple of int
        Seed of NumPy's generator (:func:`numpy.random.default_rng`).

    Returns
    -------
    SequenceDB
    """
    n_tokens = check_positive_int(n_tokens, "n_tokens")
    n_items, max_order, zipf, mean_length, contexts = _chain_options(
        n_items=n_items, max_order=max_order, zipf=zipf, mean_length=mean_length,
        contexts=contexts).values()
    rng = np.random.default_rng(seed)
    n_seq = max(1, int(n_tokens / mean_length * 1.05) + 16)
    lengths = rng.geometric(min(1.0, 1.0 / mean_length), size=n_seq).astype(np.int64)
    while lengths.sum() < n_tokens:  # rare (small n_tokens): the 5% margin fell short
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


def _chain_options(*, n_items: Any, max_order: Any, zipf: Any, mean_length: Any,
                   contexts: Any) -> dict[str, Any]:
    """The Markov chain's parameters of :func:`markov_sequences`, checked."""
    return {"n_items": check_positive_int(n_items, "n_items"),
            "max_order": check_positive_int(max_order, "max_order"),
            "zipf": check_positive_real(zipf, "zipf"),
            "mean_length": check_positive_real(mean_length, "mean_length"),
            "contexts": check_positive_int(contexts, "contexts")}


#: Tokens per chunk of :func:`markov_chunks` (a generating process needs about 27 B per token).
CHUNK_TOKENS = 10_000_000


def markov_chunks(n_tokens: int, *, seed: int = 0, chunk_tokens: int = CHUNK_TOKENS,
                  jobs: int = 1, n_items: int = 100, max_order: int = 3, zipf: float = 1.1,
                  mean_length: float = 8.0, contexts: int = 4096) -> Iterator[SequenceDB]:
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
        Total items wanted.
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
    chunk_tokens = check_positive_int(chunk_tokens, "chunk_tokens")
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
