"""Synthetic sequences from the n-gram model (Chen et al., CCS'12, Section 4.3.5).

Post-processing of the consistent noisy counts only.

1. **Extension.**  From the tree's top level ``h``, level ``n + 1`` is made
   by joining every pair of level-``n`` grams ``g1 = L_1..L_n`` and
   ``g2 = L_2..L_{n+1}``, with the count estimated by the Markov assumption
   ``c(g1) * c(g2) / c(L_2..L_n)``, until ``l_max`` items (and a final
   ``&``) or until nothing joins.
   Joined grams whose estimate is below 1 are dropped (they would be
   published zero times, and so would anything joined from them, since a
   join never increases a count).  Grams ending in ``&`` do not join.
2. **Decomposition.**  From the top level down, each gram ``g`` is published
   (as a sequence, without its ``&``) as many times as its remaining count
   allows, and every occurrence of each of its contiguous sub-grams has that
   many subtracted from its count (Theorem 4.1, Example 4.5).

Where the paper is silent, and why:

* Counts are rounded down and joined grams with an estimate below 1 are
  dropped: a gram is published whole or not at all.
* A gram is published only as often as *every* sub-gram it contains still
  has occurrences left ("update the counts of all nodes supported by g(v)"
  read as: counts never go negative); grams of one level that compete for a
  sub-gram are scaled down together.  The Markov estimates of long grams are
  not consistent with the counts of their parts; publishing them in full
  made the synthetic MSNBC about 50 % larger than the input, while with this
  rule the number of items equals the model's 1-gram total and no n-gram
  count of the synthetic data exceeds the model's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...data.sequencedb import concat_ranges
from ...ops import keys as K
from ...ops.lookup import GramIndex
from ...progress import Step
from .tree import IndexedGrams


@dataclass
class ModelLevel(IndexedGrams):
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
        progress(Step(f"extended to {len(levels)}-grams: {nxt.grams.shape[0]} grams",
                      len(levels), l_max + 1))
    return levels


def decompose(levels: list[ModelLevel], end_id: int) -> tuple[np.ndarray, np.ndarray]:
    """Publish sequences top-down (step 2 of the module docstring).

    Parameters
    ----------
    levels : list of ModelLevel
        Grams of length 1, 2, ... with their estimated counts.
    end_id : int
        Id of ``&``.

    Returns
    -------
    items : int32 array
        Item ids of all synthetic sequences, concatenated.
    lengths : int64 array
        Length of each synthetic sequence.
    """
    from .decompose_numba import publish_level  # noqa: PLC0415 - Numba loads on first use

    base = np.concatenate([[0, 0], np.cumsum([lvl.grams.shape[0] for lvl in levels])])
    remaining = np.concatenate([lvl.count.astype(float) for lvl in levels])
    shrink = [None] + [_shrink_maps(levels[n - 2], levels[n - 1]) for n in range(2, len(levels) + 1)]
    parts_items, parts_len = [], []
    for n in range(len(levels), 0, -1):
        lvl = levels[n - 1]
        own = remaining[base[n]:base[n + 1]]
        copies = np.floor(np.maximum(own, 0)).astype(np.int64)
        subs = _sub_rows(levels, shrink, n, end_id)
        rows = np.concatenate([np.where(idx >= 0, idx + base[s], idx) for s, idx in subs]
                              + [np.zeros((len(copies), 0), dtype=np.int64)], axis=1)
        starts = np.cumsum([0] + [idx.shape[1] for _, idx in subs])
        copies = publish_level(copies, rows, starts, np.array([s for s, _ in subs], dtype=np.int64),
                               remaining, base)
        if not copies.any():
            continue
        own -= copies
        rows = np.repeat(np.arange(lvl.grams.shape[0]), copies)
        seqs = lvl.grams[rows]
        keep = seqs != end_id
        parts_items.append(seqs[keep].astype(np.int32))
        parts_len.append(keep.sum(axis=1))
    if not parts_items:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64)
    return np.concatenate(parts_items), np.concatenate(parts_len).astype(np.int64)


def _shrink_maps(shorter: ModelLevel, level: ModelLevel) -> tuple[np.ndarray, np.ndarray]:
    """Row in ``shorter`` of each gram's prefix and of its suffix (-1 where absent)."""
    g = level.grams
    return (shorter.index.find(np.ascontiguousarray(g[:, :-1])),
            shorter.index.find(np.ascontiguousarray(g[:, 1:])))


def _sub_rows(levels: list[ModelLevel], shrink: list, n: int,
              end_id: int) -> list[tuple[int, np.ndarray]]:
    """Rows of the length-``s`` sub-grams of every level-``n`` gram, for s = 1 .. n - 1.

    Returns ``[(s, idx)]`` with ``idx[i, o]`` the row in level ``s`` of the
    sub-gram at offset ``o`` of gram ``i`` (shape ``(M, n - s + 1)``); -1
    marks a sub-gram the model lacks, -2 the lone end marker, which is no
    1-gram and constrains nothing.  The sub-grams of length ``s`` are the
    prefixes (and, for the last offset, the suffix) of those of length
    ``s + 1``, so each is found by one gather through :func:`_shrink_maps`;
    only where that chain breaks at an absent gram is it looked up directly.
    """
    grams = levels[n - 1].grams
    cur = np.arange(grams.shape[0], dtype=np.int64)[:, None]
    out = []
    for s in range(n - 1, 0, -1):
        prefix, suffix = shrink[s]
        safe = np.maximum(cur, 0)
        nxt = np.concatenate([np.where(cur >= 0, prefix[safe], -1),
                              np.where(cur[:, -1:] >= 0, suffix[safe[:, -1:]], -1)], axis=1)
        r, o = np.nonzero(nxt < 0)
        if r.size:
            nxt[r, o] = levels[s - 1].index.find(grams[r[:, None], o[:, None] + np.arange(s)])
        out.append((s, nxt))
        cur = nxt
    if out:
        ones = out[-1][1]
        ones[grams == end_id] = -2
    return out[::-1]
