"""Find gram rows among a fixed set of grams (host or device arrays)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import keys as K


class GramIndex:
    """An index of distinct grams of one length, for vectorized membership lookups.

    Parameters
    ----------
    grams : array of int, shape (M, n)
        Distinct grams (symbol ids).
    n_symbols : int
        Symbol alphabet size (items and markers).

    Notes
    -----
    Lookups use exact packed keys when they fit 63 bits, else 64-bit hashes
    whose matches are verified symbol by symbol; should two indexed grams
    share a hash, lookups fall back to an exact dictionary.
    """

    def __init__(self, grams: Any, n_symbols: int):
        xp = K.array_module(grams)
        self.xp = xp
        self.grams = grams
        self.n = int(grams.shape[1])
        self.radix = n_symbols + 1
        self.exact = K.fits_exact(self.n, n_symbols)
        keys = K.rows_keys(grams, self.radix, self.exact)
        self.order = xp.argsort(keys)
        self.sorted = keys[self.order]
        self._dict = None
        if not self.exact and self.sorted.shape[0] > 1 and \
                bool(xp.any(self.sorted[1:] == self.sorted[:-1])):
            rows = grams if xp is np else grams.get()
            self._dict = {tuple(r): i for i, r in enumerate(rows.tolist())}

    def __len__(self) -> int:
        return int(self.grams.shape[0])

    def keys(self):
        """Lookup key of every indexed gram (packed or hashed), in index order."""
        return K.rows_keys(self.grams, self.radix, self.exact)

    def find(self, queries: Any):
        """Row of each query gram in the index, or -1 where it is absent.

        Parameters
        ----------
        queries : array of int, shape (Q, n)

        Returns
        -------
        array of int64, shape (Q,)
        """
        xp = self.xp
        queries = xp.asarray(queries)
        if queries.shape[0] == 0 or len(self) == 0:
            return xp.full(queries.shape[0], -1, dtype=xp.int64)
        if self._dict is not None:
            rows = np.asarray(queries if xp is np else queries.get()).tolist()
            return xp.asarray([self._dict.get(tuple(r), -1) for r in rows], dtype=xp.int64)
        qk = K.rows_keys(queries, self.radix, self.exact)
        pos = xp.minimum(xp.searchsorted(self.sorted, qk), self.sorted.shape[0] - 1)
        hit = self.sorted[pos] == qk
        idx = xp.where(hit, self.order[pos], -1).astype(xp.int64)
        if not self.exact and self.n:
            same = xp.all(self.grams[xp.maximum(idx, 0)] == queries, axis=1)
            idx = xp.where(same, idx, -1)
        return idx
