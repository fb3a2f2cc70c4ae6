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

from typing import Any

import numpy as np

from ...backend import get_backend, to_numpy
from ...ops.lookup import GramIndex


class Model:
    """Lookup tables of a PST's noisy histograms on one backend.

    Parameters
    ----------
    levels : list of PSTLevel
        With ``hist`` set.
    n_items : int
        ``|I|`` (``&`` is ``n_items``, ``$`` is ``n_items + 1``).
    backend : str or Backend, optional
    """

    def __init__(self, levels: list[Any], n_items: int, backend: Any = None):
        self.be = get_backend(backend)
        xp = self.be.xp
        self.n_items = n_items
        self.end_id, self.start_id = n_items, n_items + 1
        self.hist = xp.asarray(np.concatenate([lvl.hist for lvl in levels]))
        self.total = self.hist.sum(axis=1)
        sizes = [lvl.hist.shape[0] for lvl in levels]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.indexes = [GramIndex(xp.asarray(lvl.contexts), n_items + 2) for lvl in levels]
        self._cum: Any = None  # running sums of each row, for sampling, made on first use

    @property
    def height(self) -> int:
        """Number of depths (root is depth 0)."""
        return len(self.indexes)

    def predictor(self, ctx: Any):
        """Global node of the deepest non-empty suffix node of each row of ``ctx``.

        ``ctx`` is ``(M, m)`` int32, right-aligned, padded with -1 on the left.
        """
        xp = self.be.xp
        m = ctx.shape[1]
        node = xp.zeros(ctx.shape[0], dtype=xp.int64)
        alive = xp.ones(ctx.shape[0], dtype=bool)
        for d in range(1, min(m, self.height - 1) + 1):
            win = ctx[:, m - d:]
            cand = xp.flatnonzero(alive & (win[:, 0] >= 0))
            idx = xp.full(ctx.shape[0], -1, dtype=xp.int64)
            if cand.size:
                idx[cand] = self.indexes[d].find(win[cand])
            alive = idx >= 0
            gid = xp.where(alive, idx + int(self.offsets[d]), 0)
            use = alive & (self.total[gid] > 0)
            node = xp.where(use, gid, node)
            if not bool(alive.any()):
                break
        return node

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
        if self.height > 1:
            idx = int(to_numpy(self.indexes[1].find(
                self.be.xp.asarray([[self.start_id]], dtype=self.be.xp.int32)))[0])
            if idx >= 0:
                return int(self.total[int(self.offsets[1]) + idx])
        return int(self.hist[0, self.end_id])

    def _symbol(self, node: Any, r: Any):
        """The symbol ``s`` of each row with ``cum[node, s-1] <= r < cum[node, s]``.

        ``cum`` is the running sum of each node's histogram: ``s`` is the
        number of entries of row ``node`` at most ``r``.  All rows are
        bisected together, each within its own row of ``cum`` (a few cache
        lines), in ``bit_length(width)`` whole-array steps.
        """
        xp = self.be.xp
        if self._cum is None:
            self._cum = xp.cumsum(self.hist, axis=1).ravel()
        cum, width = self._cum, self.hist.shape[1]
        lo = node.astype(xp.int64) * width
        hi = lo + width
        for _ in range(width.bit_length()):
            mid = (lo + hi) // 2
            open_ = lo < hi
            below = cum[xp.where(open_, mid, 0)] <= r
            lo = xp.where(open_ & below, mid + 1, lo)
            hi = xp.where(open_ & ~below, mid, hi)
        return (lo - node * width).astype(xp.int32)

    def sample(self, n: int, max_length: int, key: Any):
        """Sample ``n`` sequences (module doc).

        Memory grows with the items drawn, not with ``n * max_length``: each
        active sequence keeps only the last ``height - 1`` symbols a
        predictor reads, and every step's symbols are gathered at the end.

        Returns
        -------
        items : numpy int32 array
            Items of all sequences, concatenated.
        lengths : numpy int64 array
        """
        xp = self.be.xp
        width = self.height - 1  # the longest context a node predicts from
        ctx = xp.full((n, max(width, 1)), -1, dtype=xp.int32)  # last symbols, newest last
        ctx[:, -1] = self.start_id
        lengths = xp.full(n, max_length, dtype=xp.int64)
        active = xp.arange(n, dtype=xp.int64)
        rows, symbols = [], []
        for t in range(max_length):
            if active.size == 0:
                break
            seen = min(t + 1, width)  # '$' and the t symbols so far, as far as a node reads
            node = self.predictor(ctx[active, ctx.shape[1] - seen:])
            tot = self.total[node]
            word = key.words(active, t, 1, backend=self.be)[0]
            u = (word >> xp.uint64(11)).astype(xp.float64) * (2.0 ** -53)
            r = xp.floor(u * tot.astype(xp.float64)).astype(xp.int64)
            sym = self._symbol(node, r)
            sym = xp.where(tot > 0, sym, self.end_id)
            ended = sym == self.end_id
            lengths[active[ended]] = t
            active, sym = active[~ended], sym[~ended]
            rows.append(active)
            symbols.append(sym)
            if width > 1:
                ctx[active, :-1] = ctx[active, 1:]
            ctx[active, -1] = sym
        starts = xp.cumsum(lengths) - lengths
        items = xp.empty(int(lengths.sum()), dtype=xp.int32)
        for t, (at, sym) in enumerate(zip(rows, symbols)):  # step t's symbol is item t
            items[starts[at] + t] = sym
        return to_numpy(items), to_numpy(lengths)
