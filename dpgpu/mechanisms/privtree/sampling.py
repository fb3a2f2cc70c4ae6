"""Using a released PST: count queries (Eq. 12), top-k strings, synthetic sequences.

All of it reads the released noisy histograms only (post-processing).  The
node that predicts the next symbol after a string is the deepest node whose
predictor string is a suffix of it *and whose histogram is not all zero*
(a zero histogram predicts nothing; its parent's is used instead).

Synthetic sequences (Section 4.1) are sampled in batch: every sequence
advances one symbol per step, all of them in one array operation on the
run's backend.  A sequence starts at ``$``, takes the symbol drawn from the
predicting node's histogram, and stops at ``&`` or when it reaches
``max_length`` items (the documented length cap; the model was built from
sequences cut to ``l_top`` symbols, so the default cap is ``l_top``).  The
uniform draws are keyed words (:meth:`dpgpu.privacy.NoiseKey.words`) at the
identity (sequence number, step), so a key gives the same synthetic data on
NumPy and CuPy.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...backend import get_backend, to_numpy
from ...ops.keys import array_module, index_dtype
from ...ops.lookup import GramIndex


def child_table(levels: list[Any], n_symbols: int) -> tuple[np.ndarray, np.ndarray]:
    """Every node's children, by the symbol their contexts prepend to the node's.

    A node of depth ``d`` is the child of the node of depth ``d - 1`` whose
    context is its own without the oldest symbol (found with a
    :class:`~dpgpu.ops.lookup.GramIndex` of that depth); a node without
    one is in no table, as a lookup by context never reaches it either, and
    so is one whose oldest symbol lies outside the alphabet.

    Parameters
    ----------
    levels : list of PSTLevel
    n_symbols : int
        Symbol ids a context may hold are ``0 .. n_symbols - 1``.

    Returns
    -------
    first : (n_nodes + 1,) int64
        Per global node row (levels concatenated), where its children begin
        in ``kids``, or -1 if it has none; the last entry is a -1 sentinel.
    kids : (n_parents * n_symbols + 1,) int64
        ``kids[first[p] + s]``: global row of the child of ``p`` that
        prepends ``s``, or -1; the last entry is a -1 sentinel.
    """
    sizes = [int(lvl.contexts.shape[0]) for lvl in levels]
    offsets = np.cumsum([0] + sizes)
    parent, child, sym = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], \
        [np.zeros(0, dtype=np.int64)]
    for d in range(1, len(levels)):
        ctx = np.asarray(levels[d].contexts)
        row = GramIndex(np.asarray(levels[d - 1].contexts), n_symbols).find(ctx[:, 1:])
        found = np.flatnonzero((row >= 0) & (ctx[:, 0] >= 0) & (ctx[:, 0] < n_symbols))
        parent.append(row[found] + offsets[d - 1])
        child.append(found + offsets[d])
        sym.append(ctx[found, 0].astype(np.int64))
    parents, slot = np.unique(np.concatenate(parent), return_inverse=True)
    first = np.full(offsets[-1] + 1, -1, dtype=np.int64)
    first[parents] = np.arange(parents.size, dtype=np.int64) * n_symbols
    kids = np.full(parents.size * n_symbols + 1, -1, dtype=np.int64)
    kids[slot * n_symbols + np.concatenate(sym)] = np.concatenate(child)
    return first, kids


class Model:
    """Lookup tables of a PST's noisy histograms on one backend.

    A context is found by walking down from the root, one symbol (newest
    first) per depth, through a table of each node's children (built once
    from the levels' contexts).

    Parameters
    ----------
    levels : list of PSTLevel
        With ``hist`` set.
    n_items : int
        ``|I|`` (``&`` is ``n_items``, ``$`` is ``n_items + 1``).
    backend : str or Backend, optional

    Attributes
    ----------
    height : int
        Number of depths (the root is depth 0).
    """

    def __init__(self, levels: list[Any], n_items: int, backend: Any = None):
        self.be = get_backend(backend)
        xp = self.be.xp
        self.n_items = n_items
        self.end_id, self.start_id = n_items, n_items + 1
        self.height = len(levels)
        self.hist = xp.asarray(np.concatenate([lvl.hist for lvl in levels]))
        self.total = self.hist.sum(axis=1)
        first, kids = child_table(levels, n_items + 2)
        self.first, self.kids = xp.asarray(first), xp.asarray(kids)
        self._cum: Any = None  # running sums of each row, for sampling, made on first use

    def __getstate__(self) -> dict[str, Any]:
        # the backend holds its array module, which cannot be pickled: kept by name
        return {**self.__dict__, "be": self.be.name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, be=get_backend(state["be"]))

    def child(self, node: Any, sym: Any):
        """Global row of the child of each ``node`` whose context prepends ``sym`` to
        the node's, or -1 where there is none (``node`` or ``sym`` -1 included)."""
        xp = self.be.xp
        base = self.first.take(node)  # a node of -1 reads the sentinel: -1
        return self.kids.take(xp.where((base >= 0) & (sym >= 0), base + sym, -1))

    def walk(self, newest: Callable[[int], Any], n_rows: int, depth: int):
        """Global row of the deepest non-empty suffix node of each of ``n_rows`` strings.

        Parameters
        ----------
        newest : callable
            ``newest(d)``: the ``d``-th last symbol of every string (-1 where a
            string is shorter), for ``d = 1 .. depth``.
        n_rows : int
        depth : int
            Longest suffix to look at.
        """
        xp = self.be.xp
        node = xp.zeros(n_rows, dtype=xp.int64)
        cur = node
        for d in range(1, min(depth, self.height - 1) + 1):
            cur = self.child(cur, newest(d))
            alive = cur >= 0
            if not bool(alive.any()):
                break
            node = xp.where(alive & (self.total.take(cur) > 0), cur, node)  # -1: the last row
        return node

    def predictor(self, ctx: Any):
        """Global node of the deepest non-empty suffix node of each row of ``ctx``.

        ``ctx`` is ``(M, m)`` int32, right-aligned, padded with -1 on the left.
        """
        m = ctx.shape[1]
        return self.walk(lambda d: ctx[:, m - d], ctx.shape[0], m)

    def conditional(self, ctx: Any):
        """``(M, |I|+1)`` next-symbol probabilities after each context (Eq. 12's factor)."""
        xp = self.be.xp
        node = self.predictor(ctx)
        tot = self.total[node].astype(xp.float64)
        return self.hist[node] / xp.where(tot > 0, tot, 1.0)[:, None]

    def estimate(self, strings: Any):
        """Eq. 12 for ``(M, l)`` strings of symbol ids: estimated occurrences, float64."""
        xp = self.be.xp
        s = xp.asarray(strings, dtype=xp.int32)
        est = self.hist[0, s[:, 0]].astype(xp.float64)
        for i in range(1, s.shape[1]):
            p = self.conditional(s[:, :i])
            est = est * p[xp.arange(s.shape[0]), s[:, i]]
        return to_numpy(est)

    def top_k(self, k: int, *, min_length: int = 1, max_length: int = 20):
        """The ``k`` item strings with the largest Eq. 12 estimates, best first.

        Level-wise: a string's extensions never have a larger estimate, so
        each level only extends the strings that can still enter the top k.
        """
        xp = self.be.xp
        items = np.arange(self.n_items, dtype=np.int32)
        grams = items[:, None]
        est = to_numpy(self.hist[0, :self.n_items]).astype(np.float64)
        pool: list[tuple[float, tuple[int, ...]]] = []
        for n in range(1, max_length + 1):
            keep = est > 0
            if n >= min_length:
                pool += [(-e, tuple(g)) for g, e in zip(grams[keep].tolist(), est[keep].tolist())]
                pool = sorted(pool)[:k]
                if len(pool) == k:
                    keep &= est >= -pool[-1][0]
                order = np.lexsort(list(grams.T[::-1]) + [-est])
                rank = np.empty_like(order)
                rank[order] = np.arange(order.size)
                keep &= rank < k
            if n == max_length or not keep.any():
                break
            front, front_est = grams[keep], est[keep]
            p = to_numpy(self.conditional(xp.asarray(front)))[:, :self.n_items]
            grams = np.concatenate([np.repeat(front, self.n_items, axis=0),
                                    np.tile(items, front.shape[0])[:, None]], axis=1)
            est = (front_est[:, None] * p).ravel()
        return [g for _, g in pool], np.array([-e for e, _ in pool])

    def sequence_count(self) -> int:
        """Noisy number of sequences: the total of the ``$`` node, else the root's ``&`` count."""
        xp = self.be.xp
        node = int(self.child(xp.zeros(1, dtype=xp.int64), xp.asarray([self.start_id]))[0])
        return int(self.total[node]) if node >= 0 else int(self.hist[0, self.end_id])

    def _symbol(self, node: Any, r: Any):
        """The symbol ``s`` of each row with ``cum[node, s-1] <= r < cum[node, s]``.

        ``cum`` is the running sum of each node's histogram: ``s`` is the
        number of entries of row ``node`` at most ``r``.  All rows are
        bisected together, each within its own row of ``cum`` (a few cache
        lines): every row's answer lies in ``[pos, pos + size]``, and one
        whole-array step halves ``size`` for all rows at once.
        """
        xp = self.be.xp
        if self._cum is None:
            self._cum = xp.cumsum(self.hist, axis=1).ravel()
        cum, size = self._cum, self.hist.shape[1]
        dtype = index_dtype(cum.shape[0] + 1)  # pos reaches cum.shape[0] past a row total
        first = node.astype(dtype) * dtype(size)
        pos = first.copy()  # entries before pos are <= r; the answer is at most pos + size
        while size > 1:
            half = size // 2
            pos += dtype(half) * (cum.take(pos + half) <= r)
            size -= half
        pos += cum.take(pos) <= r
        return (pos - first).astype(xp.int32)

    def sample(self, n: int, max_length: int, key: Any):
        """Sample ``n`` sequences (module doc).

        Memory grows with the items drawn, not with ``n * max_length``
        (:meth:`steps`, :func:`concatenate`).

        Returns
        -------
        items : numpy int32 array
            Items of all sequences, concatenated.
        lengths : numpy int64 array
        """
        lengths, going, symbols = self.steps(n, max_length, key)
        return to_numpy(concatenate(lengths, going, symbols)), to_numpy(lengths)

    def steps(self, n: int, max_length: int, key: Any):
        """Draw ``n`` sequences a symbol a step, all together (module doc).

        Each active sequence keeps only the last ``height - 1`` symbols a
        predictor reads, in a ring (step ``t``'s symbols in row ``t`` modulo
        its height, the ``$`` as step -1).

        Returns
        -------
        lengths : (n,) int64 array
        going, symbols : lists
            Per step: which of the sequences still active go on, and their
            symbols (:func:`concatenate`).
        """
        xp = self.be.xp
        width = max(self.height - 1, 1)  # the longest context a node predicts from
        ring = xp.full((width, n), -1, dtype=xp.int32)
        ring[-1] = self.start_id
        lengths = xp.full(n, max_length, dtype=xp.int64)
        active = xp.arange(n, dtype=xp.int64)
        going, symbols = [], []
        for t in range(max_length):
            if active.size == 0:
                break
            # '$' and the t symbols so far, as far as a node reads
            node = self.walk(lambda d: ring[(t - d) % width].take(active), active.size,
                             min(t + 1, width))
            tot = self.total[node]
            word = key.words(active, t, 1, backend=self.be)[0]
            u = (word >> xp.uint64(11)).astype(xp.float64) * (2.0 ** -53)
            r = xp.floor(u * tot.astype(xp.float64)).astype(xp.int64)
            sym = self._symbol(node, r)
            sym = xp.where(tot > 0, sym, self.end_id)
            ended = sym == self.end_id
            lengths[active[ended]] = t
            going.append(~ended)
            active, sym = active[~ended], sym[~ended]
            symbols.append(sym)
            ring[t % width, active] = sym
        return lengths, going, symbols


def concatenate(lengths: Any, going: list[Any], symbols: list[Any]):
    """The items of all sequences, from what :meth:`Model.sample` keeps of each step.

    Parameters
    ----------
    lengths : (n,) int64 array
        Items per sequence.
    going : list of bool arrays
        Per step ``t``: which of the sequences still active before it go on
        (did not end at it).
    symbols : list of int32 arrays
        Per step ``t``: the item ``t`` of each sequence that went on.  The
        entries of both lists are released as they are written.

    Returns
    -------
    int32 array
        Items of all sequences, concatenated, in the namespace of ``lengths``.
    """
    xp = array_module(lengths)
    at = xp.cumsum(lengths) - lengths  # where the items of each active sequence begin
    items = xp.empty(int(lengths.sum()), dtype=xp.int32)
    for t in range(len(symbols)):
        at = at[going[t]]
        items[at + t] = symbols[t]
        going[t] = symbols[t] = None
    return items
