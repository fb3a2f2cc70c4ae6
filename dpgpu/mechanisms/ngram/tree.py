"""The exploration tree of the N-gram mechanism (Chen et al., CCS'12, Section 4.3).

The tree is built one level at a time: the frontier of level ``i`` (every
node whose noisy count passed its threshold, whose label is not ``&`` and
whose path has budget left) is expanded in one call of
:meth:`~dpgpu.ops.grams.GramEngine.next_symbol_histogram`, and all of its
children get their noise in one draw.  Nodes of a level are stored as arrays;
the children of an expanded node are the ``|I| + 1`` consecutive rows (items,
then ``&``) of the next level -- except on level ``l_max + 1``, where a
node's only child is ``&``: a truncated sequence holds at most ``l_max``
items, so a string of ``l_max + 1`` items never occurs (a public fact, so
leaving those children out costs no privacy; drawing them would only add
false positives).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ...backend import to_numpy
from ...errors import InvalidParameter
from ...ops.lookup import GramIndex
from ...privacy import laplace_scales
from ...progress import Step

log = logging.getLogger("dpgpu")

#: noise(grams, scales) -> int64 noise, one value per gram row (see ngram.Noise).
NoiseFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


class IndexedGrams:
    """Mixin of the gram tables that carry a :class:`~dpgpu.ops.lookup.GramIndex` of ``grams``.

    The index holds its array module, which cannot be pickled, so a pickle
    or a copy leaves the index out, keeping its alphabet size, and builds it
    again from ``grams``.
    """

    grams: np.ndarray
    index: GramIndex | None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        index = state.pop("index")
        state["index_symbols"] = None if index is None else index.radix - 1  # radix: |symbols|+1
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        n_symbols = state.pop("index_symbols")
        self.__dict__.update(state)
        self.index = None if n_symbols is None else GramIndex(self.grams, n_symbols)


@dataclass
class Level(IndexedGrams):
    """The nodes of one tree level (all arrays have one row per node).

    Attributes
    ----------
    grams : (F, i) int32
        Node grams (item ids; ``&`` is ``|I|``).
    noisy : (F,) int64
        Noisy count ``A(v)``: exact count plus integer noise.
    eps : (F,) float
        Privacy parameter of the node's count.
    spent : (F,) float
        Budget used along the path from the root to the node, inclusive.
    theta : (F,) float
        Threshold the node's noisy count is compared with.
    parent : (F,) int64
        Row of the parent in the previous level (-1 on level 1).
    child_start : (F,) int64
        Row of the first child in the next level, -1 when not expanded.
    count : (F,) float
        Consistent count ``c(v)`` (set by :func:`enforce_consistency`).
    """

    grams: np.ndarray
    noisy: np.ndarray
    eps: np.ndarray
    spent: np.ndarray
    theta: np.ndarray
    parent: np.ndarray
    child_start: np.ndarray = field(default=None)
    count: np.ndarray = field(default=None)
    index: GramIndex = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.child_start is None:
            self.child_start = np.full(self.grams.shape[0], -1, dtype=np.int64)

    @property
    def passed(self) -> np.ndarray:
        """Nodes whose noisy count reached their threshold."""
        return self.noisy >= self.theta

    @property
    def expanded(self) -> np.ndarray:
        """Nodes whose children were counted."""
        return self.child_start >= 0


def threshold(l_max: int, eps: np.ndarray, n_items: int) -> np.ndarray:
    """theta = (l_max / eps') * ln(|I| / 2)  (Section 4.3.3; papers/README.md).

    It makes the chance that noise lifts a zero count over theta at most
    ``1 / |I|``.
    """
    return l_max / np.asarray(eps, dtype=float) * math.log(n_items / 2)


def subtree_height(noisy: np.ndarray, theta: np.ndarray, p_max: np.ndarray,
                   levels_left: int) -> np.ndarray:
    """Predicted height ``h_v = min(ceil(log_{P_max}(theta / c(v))), n_max - i)``, at least 1.

    Section 4.3.2; the logarithm is rounded up (Example 4.2).  ``P_max = 0``
    (every child of the Markov parent counted at most 0) takes the formula's
    limit, a height of 1: ``log_p(x)`` with ``x < 1`` goes to 0 as ``p`` does,
    so the children get the whole remaining budget.  Where the logarithm is
    otherwise undefined (``P_max >= 1``: the limit is infinite; ``theta <= 0``)
    the height is ``n_max - i``.
    """
    noisy = np.asarray(noisy, dtype=float)
    p_max = np.asarray(p_max, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.ceil(np.log(theta / noisy) / np.log(p_max))
    ok = (p_max > 0) & (p_max < 1) & (theta > 0) & (noisy > 0) & np.isfinite(h)
    h = np.where(ok, h, np.where(p_max <= 0, 1, levels_left))
    return np.clip(h, 1, levels_left).astype(np.int64)


def children_pmax(noisy_children: np.ndarray) -> np.ndarray:
    """Share of the largest child in each row of a (F, |I|+1) noisy-count matrix."""
    pos = np.maximum(noisy_children, 0).astype(float)
    total = pos.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, pos.max(axis=1) / total, 0.0)


def markov_pmax(levels: list[Level], grams: np.ndarray, pmax_of: list[np.ndarray],
                unigram_pmax: float) -> np.ndarray:
    """``P_max`` of each frontier gram by the chain of Markov assumptions (Section 4.3.2).

    For a gram ``L_1..L_i`` the children distribution is estimated from the
    longest suffix ``L_j..L_i`` (``j >= 2``) that is an expanded node of the
    tree, else from the unigrams.
    """
    out = np.full(grams.shape[0], np.nan)
    i = grams.shape[1]
    for s in range(i - 1, 0, -1):
        todo = np.isnan(out)
        if not todo.any():
            break
        idx = levels[s - 1].index.find(grams[todo, i - s:])
        known = idx >= 0
        known[known] &= levels[s - 1].expanded[idx[known]]
        vals = np.full(idx.shape[0], np.nan)
        vals[known] = pmax_of[s - 1][idx[known]]
        out[todo] = vals
    return np.where(np.isnan(out), unigram_pmax, out)


def build_tree(engine: Any, *, epsilon: float, l_max: int, n_max: int, allocation: str,
               noise: NoiseFn, sensitivity: float | None = None, max_draws: int | None = None, min_eps: float = 0.0,
               thresholds: bool = True, progress: Callable[[str], None] = lambda msg: None) -> list[Level]:
    """Build the exploration tree (Algorithm 1, lines 2-15).

    Parameters
    ----------
    engine : GramEngine
        The truncated database with end markers (one histogram call per level).
    epsilon : float
        Budget of every root-to-leaf path.
    l_max, n_max : int
    allocation : {"adaptive", "uniform"}
        Section 4.3.2's adaptive allocation, or ``epsilon / n_max`` per level.
    noise : callable
        ``noise(child_grams, scales) -> int64`` integer noise per child.
    sensitivity : float, optional
        Paths one sequence can touch (default ``l_max``); noise scale is
        ``sensitivity / eps_v``.
    max_draws : int, optional
        Public cap on the noisy counts drawn; when a level would exceed it,
        only the frontier nodes with the largest noisy counts are expanded.
    min_eps : float
        A node whose children would get a budget below this is not expanded.
    thresholds : bool
        Compare counts with theta (4.3.3).  ``False`` sets theta to 0: every
        count "passes" and every node with a positive count is expanded (the
        non-private *Baseline*, whose counts are exact).

    Returns
    -------
    list of Level
        Levels 1 .. height.
    """
    n_items = engine.vocab.size
    end_id = engine.vocab.end_id
    sensitivity = l_max if sensitivity is None else sensitivity
    eps1 = epsilon / n_max
    if max_draws is not None and max_draws < n_items:
        raise InvalidParameter(f"max_draws: must be at least |I| = {n_items}, got {max_draws}")
    drawn = n_items
    root = to_numpy(engine.next_symbol_histogram(np.zeros((1, 0), dtype=np.int32)))[0, :n_items]
    grams = np.arange(n_items, dtype=np.int32)[:, None]
    eps = np.full(n_items, eps1)
    theta_of = (lambda e: threshold(l_max, e, n_items)) if thresholds else \
        (lambda e: np.zeros(np.shape(e)))
    level = Level(grams=grams,
                  noisy=root.astype(np.int64) + noise(grams, laplace_scales(eps, sensitivity)),
                  eps=eps, spent=eps.copy(), theta=theta_of(eps),
                  parent=np.full(n_items, -1, dtype=np.int64))
    level.index = GramIndex(grams, engine.n_symbols)
    levels = [level]
    pmax_of: list[np.ndarray] = []
    unigram_pmax = float(children_pmax(level.noisy[None, :])[0])
    progress(Step(f"level 1: {n_items} nodes", 1, n_max))
    tol = epsilon * 1e-9
    for i in range(1, n_max):
        remaining = epsilon - level.spent
        frontier = np.flatnonzero(level.passed & (level.noisy > 0) & (remaining > tol)
                                  & (level.grams[:, -1] != end_id))
        # children: the items and '&', or '&' alone once a node holds l_max items
        symbols = np.arange(0 if i < l_max else end_id, n_items + 1, dtype=np.int32)
        width = symbols.size
        pmax_of.append(np.zeros(level.grams.shape[0]))
        if frontier.size == 0:
            break
        if allocation == "uniform":
            eps_v = np.full(frontier.size, eps1)
            ok = remaining[frontier] >= eps1 - tol
            frontier, eps_v = frontier[ok], eps_v[ok]
            if frontier.size == 0:
                break
        else:
            p_max = markov_pmax(levels, level.grams[frontier], pmax_of, unigram_pmax)
            h = subtree_height(level.noisy[frontier], level.theta[frontier], p_max, n_max - i)
            eps_v = remaining[frontier] / h
        ok = eps_v >= min_eps
        frontier, eps_v = frontier[ok], eps_v[ok]
        if max_draws is not None:
            room = max(0, (max_draws - drawn) // width)
            if frontier.size > room:
                log.warning("ngram: the public cap of %d noisy counts stops the expansion of "
                            "level %d at its %d largest nodes", max_draws, i, room)
                keep = np.sort(np.argsort(-level.noisy[frontier], kind="stable")[:room])
                frontier, eps_v = frontier[keep], eps_v[keep]
        if frontier.size == 0:
            break
        contexts = level.grams[frontier]
        hist = to_numpy(engine.next_symbol_histogram(contexts))[:, symbols]
        child_grams = np.concatenate([np.repeat(contexts, width, axis=0),
                                      np.tile(symbols, frontier.size)[:, None]], axis=1)
        child_eps = np.repeat(eps_v, width)
        noisy = hist.reshape(-1).astype(np.int64) + noise(child_grams,
                                                          laplace_scales(child_eps, sensitivity))
        drawn += child_grams.shape[0]
        level.child_start[frontier] = np.arange(frontier.size, dtype=np.int64) * width
        pmax_of[-1][frontier] = children_pmax(noisy.reshape(frontier.size, width))
        level = Level(grams=child_grams, noisy=noisy, eps=child_eps,
                      spent=np.repeat(level.spent[frontier], width) + child_eps,
                      theta=theta_of(child_eps),
                      parent=np.repeat(frontier.astype(np.int64), width))
        level.index = GramIndex(child_grams, engine.n_symbols)
        levels.append(level)
        progress(Step(f"level {i + 1}: expanded {frontier.size} nodes into "
                      f"{child_grams.shape[0]}", i + 1, n_max))
    return levels
