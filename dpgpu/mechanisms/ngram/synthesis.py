"""Synthetic sequences from the n-gram model (Chen et al., CCS'12, Section 4.3.5).

Post-processing of the consistent noisy counts only.

1. **Extension.**  From the tree's top level ``h``, level ``n + 1`` is made
   by joining every pair of level-``n`` grams ``g1 = L_1..L_n`` and
   ``g2 = L_2..L_{n+1}``, with the count estimated by the Markov assumption
   ``c(g1) * c(g2) / c(L_2..L_n)``, until ``l_max`` items (and a final
   ``&``) or until nothing joins.
   Joined grams whose estimate is below one half are dropped (they would be
   published zero times, and so would anything joined from them, since a
   join never increases a count).  Grams ending in ``&`` do not join.
2. **Decomposition.**  From the top level down, each gram ``g`` that ends
   in ``&`` is published ``floor(c(g))`` times (as a sequence, without its
   ``&``), and every occurrence of each of its contiguous sub-grams has that
   many subtracted from its count (Theorem 4.1, Example 4.5).

Where the paper is silent, and why:

* Joined grams with an estimate below 1 are dropped and counts are rounded
  down: a gram is published whole or not at all, and rounding small
  estimates up made the synthetic data far larger than the input.
* Only grams ending in ``&`` are published.  Every sequence of the
  truncated database ends in ``&``, so with exact counts nothing else is
  left over (Theorem 4.1); with noisy counts and Markov estimates, what a
  gram without ``&`` has left is estimation error, and publishing it as a
  sequence of its own (the paper's literal reading) roughly doubled the
  number of items on MSNBC and lowered the top-K agreement.  The number of
  synthetic sequences is then close to the (noisy) number of input
  sequences.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...data.sequencedb import concat_ranges
from ...ops import keys as K
from ...ops.lookup import GramIndex


@dataclass
class ModelLevel:
    """The grams of one length with their (estimated) counts."""

    grams: np.ndarray
    count: np.ndarray
    index: GramIndex


def model_level(grams: np.ndarray, count: np.ndarray, n_symbols: int) -> ModelLevel:
    """A :class:`ModelLevel` of the grams with a positive count."""
    keep = count > 0
    grams, count = grams[keep], count[keep]
    return ModelLevel(grams, count, GramIndex(grams, n_symbols))


def join_level(level: ModelLevel, prefixes: ModelLevel, end_id: int,
               n_symbols: int) -> ModelLevel:
    """Level ``n + 1`` from joining the grams of level ``n`` (``prefixes`` is level ``n - 1``)."""
    g, c = level.grams, level.count
    n = g.shape[1]
    radix = n_symbols + 1
    exact = K.fits_exact(n - 1, n_symbols)
    head_keys = K.rows_keys(np.ascontiguousarray(g[:, :-1]), radix, exact)
    order = np.argsort(head_keys, kind="stable")
    heads = head_keys[order]
    left = np.flatnonzero(g[:, -1] != end_id)
    tail_keys = K.rows_keys(np.ascontiguousarray(g[left, 1:]), radix, exact)
    lo = np.searchsorted(heads, tail_keys, side="left")
    hi = np.searchsorted(heads, tail_keys, side="right")
    n_pairs = hi - lo
    g1 = np.repeat(left, n_pairs)
    g2 = order[concat_ranges(lo, n_pairs)]
    if not exact:  # verify hash matches symbol by symbol
        same = np.all(g[g1, 1:] == g[g2, :-1], axis=1)
        g1, g2 = g1[same], g2[same]
    denom = prefixes.count[prefixes.index.find(g[g2, :-1])] if g2.size else np.zeros(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(denom > 0, c[g1] * c[g2] / denom, 0.0)
    keep = est >= 1.0
    grams = np.concatenate([g[g1[keep]], g[g2[keep], -1:]], axis=1)
    return ModelLevel(grams, est[keep], GramIndex(grams, n_symbols))


def extend(levels: list[ModelLevel], l_max: int, end_id: int, n_symbols: int,
           progress: Callable[[str], None] = lambda msg: None) -> list[ModelLevel]:
    """Join levels up to ``l_max`` items and an end marker (step 1 of the module docstring)."""
    levels = list(levels)
    while len(levels) <= l_max and len(levels) >= 2 and levels[-1].grams.shape[0]:
        nxt = join_level(levels[-1], levels[-2], end_id, n_symbols)
        if len(levels) == l_max:  # l_max items and then only the end marker
            ends = nxt.grams[:, -1] == end_id
            nxt = ModelLevel(nxt.grams[ends], nxt.count[ends], GramIndex(nxt.grams[ends],
                                                                          n_symbols))
        if nxt.grams.shape[0] == 0:
            break
        levels.append(nxt)
        progress(f"extended to {len(levels)}-grams: {nxt.grams.shape[0]} grams")
    return levels


def decompose(levels: list[ModelLevel], end_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Publish sequences top-down (step 2 of the module docstring).

    Returns
    -------
    items : int32 array
        Item ids of all synthetic sequences, concatenated.
    lengths : int64 array
        Length of each synthetic sequence.
    """
    remaining = [lvl.count.astype(float).copy() for lvl in levels]
    parts_items, parts_len = [], []
    for n in range(len(levels), 0, -1):
        lvl = levels[n - 1]
        complete = lvl.grams[:, -1] == end_id
        copies = np.where(complete, np.floor(np.maximum(remaining[n - 1], 0)), 0).astype(np.int64)
        if not copies.any():
            continue
        for s in range(1, n):
            for o in range(n - s + 1):
                idx = levels[s - 1].index.find(np.ascontiguousarray(lvl.grams[:, o:o + s]))
                hit = (idx >= 0) & (copies > 0)
                np.subtract.at(remaining[s - 1], idx[hit], copies[hit])
        rows = np.repeat(np.arange(lvl.grams.shape[0]), copies)
        seqs = lvl.grams[rows]
        keep = seqs != end_id
        parts_items.append(seqs[keep].astype(np.int32))
        parts_len.append(keep.sum(axis=1))
    if not parts_items:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
    return np.concatenate(parts_items), np.concatenate(parts_len).astype(np.int64)
