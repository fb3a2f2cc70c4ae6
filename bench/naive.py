"""The naive Python baselines the benchmarks compare against, in the same run."""

from __future__ import annotations

import math
import random
import time
from collections import Counter

import numpy as np


def naive_grams(rows: list[list[int]], n_max: int, l_max: int) -> list[Counter]:
    """Count n-grams (n <= n_max) of each row's first l_max items with a Counter, one by one."""
    out = []
    for n in range(1, n_max + 1):
        c = Counter()
        for row in rows:
            row = row[:l_max]
            for i in range(len(row) - n + 1):
                c[tuple(row[i:i + n])] += 1
        out.append(c)
    return out


def naive_seconds(db, n_max: int = 5, l_max: int | None = 20, *,
                  sample_tokens: int | None = None) -> float:
    """Seconds :func:`naive_grams` takes on a SequenceDB (rows listed beforehand).

    With ``sample_tokens``, the loop runs on the first sequences holding that many
    tokens and its time is scaled up to the whole database (the loop's work is
    linear in the tokens), for corpora on which it would run for minutes.
    """
    n_rows = len(db)
    if sample_tokens is not None:
        n_rows = int(min(np.searchsorted(np.cumsum(db.lengths), sample_tokens) + 1, n_rows))
    rows = [db.sequence_ids(i)[:l_max].tolist() for i in range(n_rows)]
    sampled = sum(map(len, rows))
    t0 = time.perf_counter()
    naive_grams(rows, n_max, l_max)
    seconds = time.perf_counter() - t0
    whole = int(np.minimum(db.lengths, l_max).sum()) if l_max is not None else db.n_events
    return seconds * whole / max(sampled, 1)


def db_rows(db) -> list[list[int]]:
    """Every sequence of a SequenceDB as a list of item ids."""
    items, offsets = db.items.tolist(), db.offsets.tolist()
    return [items[a:b] for a, b in zip(offsets[:-1], offsets[1:])]


def naive_pst_histograms(rows: list[list[int]], l_top: int, contexts: list[tuple],
                         n_items: int) -> dict[tuple, Counter]:
    """The next-symbol histogram of every node of a prediction suffix tree, one symbol at a time.

    The work of a PST build (PrivTree, SIGMOD'16, Section 4) without its noise:
    each sequence is read as ``$ x_1 .. x_l &`` cut to ``l_top`` symbols after
    ``$`` (``&`` is ``n_items``, ``$`` is ``n_items + 1``), and every symbol is
    counted in the histogram of each node whose context ends right before it --
    the suffixes of what precedes it, longest first stopping at the first that
    is not a node (``contexts`` holds the tree's node contexts in text order, so
    it is closed under suffixes).
    """
    nodes = set(contexts)
    hist = {c: Counter() for c in nodes}
    start, end = n_items + 1, n_items
    for row in rows:
        s = [start] + row[:l_top] + ([end] if len(row) < l_top else [])
        for i in range(1, len(s)):
            for k in range(i + 1):
                ctx = tuple(s[i - k:i])
                if ctx not in nodes:
                    break
                hist[ctx][s[i]] += 1
    return hist


def naive_dpne_histograms(users: dict, released: list[set], contribution: int,
                          seed: int = 0) -> list[Counter]:
    """DPNE's level histograms ``H_k`` (NeurIPS'21, Algorithm 1) without noise, user by user.

    ``users`` maps a user to the list of its sequences (lists of item ids) and
    ``released[k - 1]`` is the set of released k-grams (tuples).  Level ``k``
    takes, for every user, its distinct k-grams whose prefix and suffix were
    released at level ``k - 1`` (any gram at level 1), keeps at most
    ``contribution`` of them chosen at random, and adds ``1 / sqrt(t)`` for each
    of its ``t`` kept grams.
    """
    rng = random.Random(seed)
    out = []
    for k in range(1, len(released) + 1):
        previous = released[k - 2] if k > 1 else None
        h = Counter()
        for texts in users.values():
            grams = {tuple(r[i:i + k]) for r in texts for i in range(len(r) - k + 1)}
            if previous is not None:
                grams = [g for g in grams if g[:-1] in previous and g[1:] in previous]
            if len(grams) > contribution:
                grams = rng.sample(sorted(grams), contribution)
            weight = 1 / math.sqrt(len(grams)) if grams else 0.0
            for g in grams:
                h[g] += weight
        out.append(h)
    return out
