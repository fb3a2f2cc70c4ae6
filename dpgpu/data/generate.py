"""Seeded synthetic sequence datasets of any size, for scaling measurements.

Not a privacy mechanism and not private data: a benchmark workload.  The
sequences follow a variable-order Markov chain over a Zipf-distributed
alphabet, generated one position at a time for all sequences at once, so a
1e8-token dataset takes seconds, not hours.
"""

from __future__ import annotations

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
    seed : int
        Seed of NumPy's generator.

    Returns
    -------
    SequenceDB
    """
    n_tokens = check_positive_int(n_tokens, "n_tokens")
    n_items = check_positive_int(n_items, "n_items")
    max_order = check_positive_int(max_order, "max_order")
    zipf = check_positive_real(zipf, "zipf")
    mean_length = check_positive_real(mean_length, "mean_length")
    contexts = check_positive_int(contexts, "contexts")
    rng = np.random.default_rng(seed)
    n_seq = max(1, int(n_tokens / mean_length * 1.05) + 16)
    lengths = rng.geometric(min(1.0, 1.0 / mean_length), size=n_seq).astype(np.int64)
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
