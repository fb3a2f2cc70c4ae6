"""Exact n-gram counting and next-symbol histograms on the array engine.

A :class:`GramEngine` holds a database as a few padded blocks (sequences
grouped by length, so nothing is padded to the longest sequence) on the
run's backend, and answers whole-level questions in one call:

* :meth:`GramEngine.count` -- every distinct contiguous n-gram and its count;
* :meth:`GramEngine.count_levels` -- the same for every n up to a bound, in
  one pass over the windows (:mod:`dpgpu.ops.levels`);
* :meth:`GramEngine.next_symbol_histogram` -- for a frontier of context
  strings of one length, the count of every symbol that follows each context
  (the level histogram of an N-gram exploration tree or a prediction suffix
  tree).

Counts are exact.  Keys are exact packed integers when they fit 63 bits;
otherwise 64-bit hashes whose collisions are detected by comparing the
windows themselves, and on a collision the level is recounted by exact
lexicographic sorting (never merged silently).
"""

from __future__ import annotations

import logging
from functools import cached_property
from typing import Any

import numpy as np

from ..backend import free_device_memory, get_backend
from ..validation import check_positive_int
from . import keys as K
from .levels import row_suffix_keys, run_sums, shorter_level

log = logging.getLogger("dpgpu")

#: Upper bound on padded cells per block (int32): 2**25 cells = 128 MiB.
MAX_BLOCK_CELLS = 2 ** 25
#: Exact key spaces up to this size are counted with a dense histogram on the CPU.
DENSE_KEY_SPACE = 2 ** 24
#: The same on the GPU (at most 1 GiB of bins), where scattered atomic adds beat sorting.
GPU_DENSE_KEY_SPACE = 2 ** 27


class GramEngine:
    """A database on the backend, ready for level-wise gram questions.

    Parameters
    ----------
    db : SequenceDB
    l_max : int, optional
        Keep only each sequence's first ``l_max`` items.  ``None`` keeps all.
    start : bool
        Prepend the start marker ``$`` to every sequence.
    end : bool or {"uncut", "all"}
        Append the end marker ``&``: to every sequence that was not cut
        (``True``, ``"uncut"``), or to every sequence (``"all"``).
    backend : str or Backend, optional
    max_block_cells : int
        Bound on the padded cells of one block (memory per block).

    Attributes
    ----------
    n_symbols : int
        ``|vocab| + 2``: items, ``&`` (id ``|vocab|``) and ``$`` (``|vocab|+1``).
    blocks : list of (tokens, lengths)
        Padded int32 blocks on the backend.
    """

    def __init__(self, db: Any, l_max: int | None = None, *, start: bool = False,
                 end: "bool | str" = False, backend: Any = None,
                 max_block_cells: int = MAX_BLOCK_CELLS):
        self.backend = get_backend(backend)
        self.xp = self.backend.xp
        self.vocab = db.vocab
        self.n_symbols = db.vocab.size + 2
        self.radix = self.n_symbols + 1
        if l_max is not None:
            l_max = check_positive_int(l_max, "l_max")
        self.l_max = l_max
        self._key_cache: tuple[int, Any] = (0, None)
        self._db, self._start, self._end = db, start, end
        self._max_block_cells = min(max_block_cells, _device_cells(self.backend))

    @cached_property
    def blocks(self) -> list:
        """The padded blocks, built on first use (dense CPU counting reads the flat items)."""
        db = self._db
        items = self.backend.asarray(db.items)  # one upload for all blocks
        return [db.padded(width, backend=self.backend, start=self._start, end=self._end,
                          rows=rows, items=items)
                for width, rows in _length_blocks(db.lengths, self.l_max, self._max_block_cells)]

    @cached_property
    def rows_by_length(self) -> np.ndarray:
        """``rows_by_length[L]``: rows of the blocks holding ``L`` valid symbols (host array).

        Read from the device once, so that window counts need no device sync.
        """
        xp = self.xp
        width = max((t.shape[1] for t, _ in self.blocks), default=0)
        total = xp.zeros(width + 1, dtype=xp.int64)
        for _, lengths in self.blocks:
            total += xp.bincount(lengths.astype(xp.int64), minlength=width + 1)
        return self.backend.to_numpy(total)

    def n_windows(self, n: int) -> int:
        """Number of length-``n`` windows inside their sequences, over all blocks."""
        rows = self.rows_by_length
        return int(rows[n:] @ np.arange(1, rows.size - n + 1)) if rows.size > n else 0

    # ------------------------------------------------------------------ counts
    def count(self, n: int):
        """All distinct n-grams with their counts.

        Parameters
        ----------
        n : int
            Gram length (markers count as symbols).

        Returns
        -------
        grams : array of int32, shape (U, n)
            Distinct n-grams as symbol ids, in lexicographic order when keys
            are exact (by hash otherwise).
        counts : array of int64, shape (U,)
        """
        n = check_positive_int(n, "n")
        if K.fits_exact(n, self.n_symbols):
            if self.backend.is_gpu:
                found = self._count_gpu(n)
                if found is not None:
                    return found
            keys, counts = self._count_packed(n)
            return K.decode_packed(keys, n, self.radix), counts
        try:
            return self._count_hashed(n)
        except _Collision:
            # debug: whether the data's grams collide is a (vanishingly rare) fact of the data
            log.debug("64-bit hash collision among %d-grams: recounting exactly", n)
            return self._count_lexicographic(n)

    def count_levels(self, n_max: int) -> list:
        """All distinct n-grams with their counts, for every ``n = 1 .. n_max``.

        The longest level with exact keys is counted from the windows as by
        :meth:`count`; each shorter level follows from the one above it and
        the rows' last symbols (:func:`dpgpu.ops.levels.shorter_level`),
        with no further pass over the windows.  Longer levels, whose keys
        are hashes, are counted one by one.  This pays on the CPU (MSNBC,
        n_max 5: 0.105 s against 0.148 s level by level, ``bench_grams.py``);
        on an H100, counting 1e8 tokens, the per-level kernels win (0.017 s
        against 0.042 s: deriving the shorter levels costs more than four
        more passes over the windows; ``bench_floors.py``).

        Parameters
        ----------
        n_max : int
            Longest gram length (>= 1).

        Returns
        -------
        list of (grams, counts)
            Entry ``n - 1`` equals :meth:`count` ``(n)``: the distinct
            n-grams as an ``(U, n)`` int32 array and their int64 counts.
        """
        n_max = check_positive_int(n_max, "n_max")
        top = n_max
        while top > 1 and not K.fits_exact(top, self.n_symbols):
            top -= 1
        keys, counts = self._count_keys(top)
        levels = [(K.decode_packed(keys, top, self.radix), counts)]
        suffixes = self._suffix_keys(top - 1) if top > 1 else None
        for n in range(top - 1, 0, -1):
            keys, counts = shorter_level(keys, counts, suffixes, n, self.radix)
            levels.append((K.decode_packed(keys, n, self.radix), counts))
        return levels[::-1] + [self.count(n) for n in range(top + 1, n_max + 1)]

    def windows(self, n: int):
        """All valid length-``n`` windows as an ``(M, n)`` int32 matrix (one row per occurrence)."""
        xp = self.xp
        parts = []
        for tokens, lengths in self.blocks:
            n_win = tokens.shape[1] - n + 1
            if n_win <= 0:
                continue
            valid = K.window_valid(lengths, n, n_win)
            r, j = xp.nonzero(valid)
            parts.append(tokens[r[:, None], j[:, None] + xp.arange(n)[None, :]])
        return xp.concatenate(parts) if parts else xp.zeros((0, n), dtype=xp.int32)

    def _packed_blocks(self, n: int) -> list[Any]:
        """Exact keys of every n-window of each block (``None`` where a block is narrower).

        Keys of level ``n`` extend the cached keys of level ``n - 1`` by one
        symbol (one multiply-add), so counting n = 1, 2, ... costs one pass
        per level.  Windows that overlap padding hold a zero digit.
        """
        cached_n, cached = self._key_cache
        if cached_n == n - 1 and cached is not None:
            full = [k[:, :-1] * self.radix + (t[:, n - 1:] + 1)
                    if k is not None and k.shape[1] > 1 else None
                    for k, (t, _) in zip(cached, self.blocks)]
        else:
            full = [K.packed_keys(t, n, self.radix) if t.shape[1] >= n else None
                    for t, _ in self.blocks]
        self._key_cache = (n, full)
        return full

    def _count_keys(self, n: int):
        """Distinct exact keys of the n-grams, increasing, and their counts."""
        if self.backend.is_gpu:
            found = self._count_gpu(n, keys=True)
            if found is not None:
                return found
        return self._count_packed(n)

    def _count_gpu(self, n: int, keys: bool = False):
        """Distinct n-grams (or their keys) and counts by the GPU counting kernels, or ``None``.

        A dense histogram for key spaces up to :data:`GPU_DENSE_KEY_SPACE`
        bins that fit an eighth of the free device memory, else a hash table
        in half the free memory (:func:`dpgpu.ops.gpu_grams.count_grams_gpu`);
        ``None`` when the table would not fit.
        """
        from .gpu_grams import count_grams_gpu  # noqa: PLC0415 - GPU path only

        return count_grams_gpu(self.blocks, n, self.radix, self.n_windows(n),
                               _gpu_dense_space(self.backend),
                               free_device_memory(self.backend) // 2, keys=keys)

    def _count_packed(self, n: int):
        """Distinct exact keys (increasing) and counts, on the CPU or where GPU kernels cannot.

        Small key spaces use a dense histogram on the CPU, a Numba loop over
        the flat items with no padding (:mod:`dpgpu.ops.grams_numba`).
        Otherwise the valid windows' keys are masked and sorted.
        """
        xp = self.xp
        space = self.radix ** n
        if space <= DENSE_KEY_SPACE and not self.backend.is_gpu:
            from .grams_numba import add_dense_counts  # noqa: PLC0415 - Numba loads on first use

            hist = np.zeros(space, dtype=np.int64)
            add_dense_counts(*self._flat_rows(), n, self.radix, hist)
            keys = np.flatnonzero(hist)
            return keys, hist[keys]
        blocks = [(k, lengths) for k, (_, lengths) in zip(self._packed_blocks(n), self.blocks)
                  if k is not None]
        if not blocks:
            return xp.zeros(0, dtype=xp.int64), xp.zeros(0, dtype=xp.int64)
        keys = xp.concatenate([k[K.window_valid(lengths, n, k.shape[1])] for k, lengths in blocks])
        keys.sort()  # in place: no second copy of every window's key
        return run_sums(keys)

    def _flat_rows(self) -> tuple:
        """The database's flat items and the row layout, as the Numba loops take them."""
        db, vocab = self._db, self.vocab
        longest = max(db.max_length, 1)  # an l_max beyond it cuts nothing: no huge buffers
        return (db.items, db.offsets, min(self.l_max or longest, longest),
                vocab.start_id if self._start else -1, vocab.end_id if self._end else -1,
                self._end == "all")

    def _suffix_keys(self, m: int):
        """Packed key of every row's last ``m`` symbols (:func:`~.levels.row_suffix_keys`).

        On the CPU read from the flat items (no padded blocks); rows in any
        order, which the level merge does not depend on.
        """
        if self.backend.is_gpu:
            return row_suffix_keys(self.blocks, m, self.radix, self.xp)
        from .grams_numba import suffix_keys  # noqa: PLC0415 - Numba loads on first use

        out = np.empty(len(self._db), dtype=np.int64)
        suffix_keys(*self._flat_rows(), m, self.radix, out)
        return out

    def _count_hashed(self, n: int):
        xp = self.xp
        win = self.windows(n)
        h = K.hashed_keys(win, n)[:, 0] if win.shape[0] else xp.zeros(0, dtype=xp.uint64)
        uniq, first, inverse, counts = xp.unique(h, return_index=True, return_inverse=True,
                                                 return_counts=True)
        reps = win[first]
        if bool(xp.any(win != reps[inverse.ravel()])):
            raise _Collision
        return reps, counts.astype(xp.int64)

    def _count_lexicographic(self, n: int):
        xp = self.xp
        win = self.windows(n)
        if win.shape[0] == 0:
            return win, xp.zeros(0, dtype=xp.int64)
        order = xp.lexsort(win.T[::-1])
        win = win[order]
        new = xp.concatenate([xp.ones(1, dtype=bool), xp.any(win[1:] != win[:-1], axis=1)])
        starts = xp.flatnonzero(new)
        counts = xp.diff(xp.concatenate([starts, xp.asarray([win.shape[0]])]))
        return win[starts], counts.astype(xp.int64)

    # -------------------------------------------------------------- histograms
    def next_symbol_histogram(self, contexts: Any):
        """Counts of each symbol following each context.

        Parameters
        ----------
        contexts : array of int, shape (F, m)
            ``F`` distinct context strings of one length ``m >= 0`` (symbol
            ids, markers allowed).

        Returns
        -------
        array of int64, shape (F, n_symbols)
            ``out[f, x]`` = occurrences of the (m+1)-gram ``contexts[f] + x``.
        """
        xp = self.xp
        contexts = xp.asarray(contexts, dtype=xp.int32)
        if contexts.ndim != 2:
            raise ValueError("contexts must be a 2-D (F, m) array")
        n_ctx, m = contexts.shape
        out = xp.zeros((n_ctx, self.n_symbols), dtype=xp.int64)
        if n_ctx == 0:
            return out
        exact = K.fits_exact(m, self.n_symbols)
        ctx_keys = K.rows_keys(contexts, self.radix, exact)
        if exact and not self.backend.is_gpu:
            self._add_level_histogram(ctx_keys, m, out)
            return out
        order = xp.argsort(ctx_keys)
        sorted_keys = ctx_keys[order]
        if not exact and bool(xp.any(sorted_keys[1:] == sorted_keys[:-1])):
            log.debug("64-bit hash collision among contexts: matching them exactly")  # as above
            return self._histogram_lexicographic(contexts)
        flat = out.ravel()
        for tokens, lengths in self.blocks:
            n_win = tokens.shape[1] - m
            if n_win <= 0:
                continue
            if exact and self.backend.is_gpu:  # CUDA kernel (dpgpu/ops/gpu_grams.py)
                from .gpu_grams import level_histogram_gpu  # noqa: PLC0415 - GPU path only

                level_histogram_gpu(tokens, lengths, m, sorted_keys, order, self.n_symbols, out=out)
                continue
            valid = K.window_valid(lengths, m + 1, n_win)
            if m:
                head = tokens[:, :tokens.shape[1] - 1]
                wk = (K.packed_keys(head, m, self.radix) if exact else K.hashed_keys(head, m))
                wk = wk[:, :n_win]
            else:
                wk = xp.zeros((tokens.shape[0], n_win), dtype=sorted_keys.dtype)
            r, j = xp.nonzero(valid)
            wk = wk[r, j]
            pos = xp.minimum(xp.searchsorted(sorted_keys, wk), n_ctx - 1)
            hit = sorted_keys[pos] == wk
            ctx = order[pos[hit]]
            r, j = r[hit], j[hit]
            if not exact and m:  # verify: a window whose hash matches must equal the context
                same = xp.all(tokens[r[:, None], j[:, None] + xp.arange(m)[None, :]]
                              == contexts[ctx], axis=1)
                ctx, r, j = ctx[same], r[same], j[same]
            nxt = tokens[r, j + m].astype(xp.int64)
            flat += xp.bincount(ctx.astype(xp.int64) * self.n_symbols + nxt,
                                minlength=flat.size)
        return out

    def _add_level_histogram(self, ctx_keys: np.ndarray, m: int, out: np.ndarray) -> None:
        """The CPU's exact-key histogram: one Numba pass over the flat items.

        Each window's context is looked up in a hash table of the contexts'
        keys, with no padded blocks and no per-window temporaries
        (:func:`dpgpu.ops.grams_numba.add_level_histogram`).
        """
        from .grams_numba import add_level_histogram, key_table  # noqa: PLC0415 - Numba on use

        bits = max(2, int(ctx_keys.size).bit_length() + 1)  # at most half full
        slot_keys, slot_index = key_table(ctx_keys.astype(np.int64, copy=False), bits)
        add_level_histogram(*self._flat_rows(), m, self.radix, slot_keys, slot_index, bits,
                            self.n_symbols, out.ravel())

    def _histogram_lexicographic(self, contexts: Any):
        xp = self.xp
        m = contexts.shape[1]
        grams, counts = self._count_lexicographic(m + 1)
        out = xp.zeros((contexts.shape[0], self.n_symbols), dtype=xp.int64)
        both = xp.concatenate([contexts, grams[:, :m]])
        order = xp.lexsort(both.T[::-1])
        srt = both[order]
        new = xp.concatenate([xp.ones(1, dtype=bool), xp.any(srt[1:] != srt[:-1], axis=1)])
        group = xp.empty(both.shape[0], dtype=xp.int64)
        group[order] = xp.cumsum(new) - 1
        ctx_of_group = xp.full(int(group.max()) + 1, -1, dtype=xp.int64)
        ctx_of_group[group[:contexts.shape[0]]] = xp.arange(contexts.shape[0])
        ctx = ctx_of_group[group[contexts.shape[0]:]]
        keep = ctx >= 0
        scatter_add(out.ravel(), ctx[keep] * self.n_symbols + grams[keep, m].astype(xp.int64),
                    counts[keep])
        return out


class _Collision(Exception):
    """Two different windows share a 64-bit hash."""


def scatter_add(target: Any, index: Any, values: Any) -> None:
    """``target[index] += values`` with repeated indices accumulated (NumPy or CuPy)."""
    K.array_module(target).add.at(target, index, values)


#: Device bytes one padded cell may need at the peak of a level (tokens, cached
#: and new int64 keys, masks and sort temporaries).
_BYTES_PER_CELL = 48


def _device_cells(backend: Any) -> int:
    """Cells per block that fit a quarter of this thread's free GPU memory (no bound on the CPU)."""
    if not backend.is_gpu:
        return MAX_BLOCK_CELLS
    return max(1024, free_device_memory(backend) // 4 // _BYTES_PER_CELL)


def _gpu_dense_space(backend: Any) -> int:
    """Largest key space counted densely on the GPU: 8-byte bins in an eighth of free memory.

    Free memory is this thread's share of it (:func:`~dpgpu.backend.free_device_memory`).
    """
    return min(GPU_DENSE_KEY_SPACE, free_device_memory(backend) // 8 // 8)


def _length_blocks(lengths: np.ndarray, l_max: int | None, max_cells: int):
    """Yield ``(width, rows)``: sequences grouped by length class, in bounded chunks.

    Widths are powers of two (capped at ``l_max``), so a row is never padded
    to more than twice its length (plus markers).
    """
    kept = lengths if l_max is None else np.minimum(lengths, l_max)
    bounds = 2 ** np.arange(0, max(int(kept.max()) if kept.size else 1, 1).bit_length() + 1)
    cls = np.searchsorted(bounds, kept)  # class c holds lengths in (bounds[c-1], bounds[c]]
    for c in range(bounds.size):
        rows = np.flatnonzero(cls == c)
        if rows.size == 0:
            continue
        width = max(int(kept[rows].max()), 1)
        step = max(1, max_cells // (width + 2))
        for s in range(0, rows.size, step):
            yield width, rows[s:s + step]


def count_grams(db: Any, n: int, *, l_max: int | None = None, backend: Any = None):
    """Distinct contiguous ``n``-grams of items and their exact counts.

    Parameters
    ----------
    db : SequenceDB
    n : int
    l_max : int, optional
        Count within each sequence's first ``l_max`` items.
    backend : str or Backend, optional

    Returns
    -------
    grams : array of int32, shape (U, n)
    counts : array of int64, shape (U,)
    """
    return GramEngine(db, l_max, backend=backend).count(n)
