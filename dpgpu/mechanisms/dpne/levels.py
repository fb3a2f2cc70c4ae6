"""Level machinery of DPNE: occurrences, valid k-grams, the implicit candidate space.

A released level ``S_k`` is a sorted ``(|S_k|, k)`` matrix of item ids with,
for each gram, ``pre`` (index in ``S_{k-1}`` of ``gram[:-1]``) and ``suf``
(index in ``S_{k-1}`` of ``gram[1:]``, both-side rule).  An occurrence of a
k-gram at text position ``p`` is valid iff its prefix and its suffix (or,
single-side, its last item) are released; its candidate index is
``a * n_right + b`` with ``a, b`` those indices, so the level's histogram
never looks at invalid k-grams and ``V_k`` is never built.  ``V_k`` itself is
the join of ``S_{k-1}`` (grouped by ``suf``) with the right set (grouped by
``pre``; single-side: every pair), enumerated chunk by chunk when spurious
grams are drawn.

The candidate key is also the noise identity of the candidate, for its
noise (supported) and its Bernoulli bit (unsupported) alike: an injective,
public index of ``V_k`` (``a < |S_{k-1}|``, ``b < n_right``; computed from
released sets only).  :func:`identities` (content keys, hashed when they
do not fit 63 bits, so they may collide) is not a noise identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from ...ops import bounding
from ...ops import keys as K
from ...ops.keys import index_dtype

#: Candidates per chunk when the implicit V_k is enumerated.
CHUNK = 1 << 20
#: Remaining lengths :class:`Positions` records exactly (it keeps one byte per position);
#: longer windows are checked against the sequence ends.
MAX_REMAIN = 255


@dataclass
class Level:
    """One released level: grams ``(n, k)`` int32 and join indices ``pre``/``suf``."""

    grams: np.ndarray
    pre: np.ndarray
    suf: np.ndarray


@dataclass
class Positions:
    """Flat text positions: the item and user of each, and the items left in its sequence.

    One position costs 5 to 9 bytes (items and offsets are the database's own
    arrays): ``remain`` only answers "does a window of ``k`` items start
    here?", so it is clipped to one byte and the rare windows longer than
    ``MAX_REMAIN`` are checked against ``offsets``.

    Attributes
    ----------
    items : numpy.ndarray of int32
        The database's items (shared, not copied).
    users : numpy.ndarray of int32 or int64
        The user of each position (its sequence without a user column);
        int64 only when the ids need it.
    remain : numpy.ndarray of uint8
        ``min(items left in the sequence from here, MAX_REMAIN)``.
    offsets : numpy.ndarray of int64
        The database's sequence offsets (shared).
    """

    items: np.ndarray
    users: np.ndarray
    remain: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, db) -> "Positions":
        """From a :class:`~dpgpu.data.sequencedb.SequenceDB` (each sequence its own user
        when the data has no user column)."""
        from .counting_numba import remaining_lengths  # noqa: PLC0415 - Numba on first use

        n_seq = db.lengths.size
        owner = db.users if db.users is not None else np.arange(n_seq, dtype=index_dtype(n_seq))
        return cls(db.items, np.repeat(owner, db.lengths),
                   remaining_lengths(db.offsets, MAX_REMAIN), db.offsets)

    def fits(self, k: int) -> np.ndarray:
        """Mask of the positions where a length-``k`` window starts (arrays of any backend)."""
        xp = K.array_module(self.remain)
        mask = self.remain >= min(k, MAX_REMAIN)
        if k > MAX_REMAIN:  # remain is clipped there: measure up to the sequence's end
            starts = xp.flatnonzero(mask)
            ends = self.offsets[xp.searchsorted(self.offsets, starts, side="right")]
            mask[starts[ends - starts < k]] = False
        return mask

    def windows(self, k: int) -> np.ndarray:
        """Start positions of every length-``k`` window (int64)."""
        return np.flatnonzero(self.fits(k))

    def rows(self, k: int, starts: np.ndarray) -> np.ndarray:
        """``(M, k)`` int32 item matrix of the windows at ``starts``."""
        return self.items[starts[:, None] + np.arange(k)[None, :]].astype(np.int32)


def index_of(values: np.ndarray, released: np.ndarray, dtype: type = np.int64) -> np.ndarray:
    """Index of each value in the sorted ``released``, -1 where absent.

    ``released`` (distinct, ``>= 0``) goes into an open-addressing table
    (:func:`dpgpu.ops.grams_numba.key_table`, at most half full) and every value
    is looked up there, straight into the array of ``dtype``: time linear in
    both sizes, and no temporaries the size of ``values``.  CuPy arrays are
    searched on the GPU instead (:func:`dpgpu.ops.bounding.index_of`).

    Parameters
    ----------
    values : (M,) integer array
    released : (R,) integer array
        Sorted, distinct, non-negative.
    dtype : type
        Of the result (indices below ``R`` and -1 must fit it).

    Returns
    -------
    (M,) numpy.ndarray of ``dtype``
    """
    if K.array_module(values) is not np:  # a binary search each on the GPU
        return bounding.index_of(values, released, dtype)
    from ...ops.grams_numba import find_indices, key_table  # noqa: PLC0415 - Numba on use

    bits = (2 * released.size + 1).bit_length()  # 2**bits > 2 R + 1: at least 2 slots
    slot_keys, slot_index = key_table(np.asarray(released, dtype=np.int64), bits)
    out = np.empty(values.size, dtype=dtype)
    find_indices(slot_keys, slot_index, bits, values, out)
    return out


def identities(rows: np.ndarray, n_items: int) -> np.ndarray:
    """Content keys of grams: exact packed keys, 64-bit hashes when they do not fit.

    Hashes of distinct grams can collide, so these are not noise identities
    (DPNE keys its draws by item id and candidate key, see the module doc).
    """
    k = rows.shape[1]
    return K.rows_keys(np.ascontiguousarray(rows), n_items + 3, K.fits_exact(k, n_items + 2))


def first_level(grams: np.ndarray) -> Level:
    """``S_1`` from sorted item ids (join indices 0: the empty 0-gram)."""
    zero = np.zeros(grams.size, dtype=np.int64)
    return Level(grams.astype(np.int32)[:, None], zero, zero.copy())


class Space:
    """The candidate space of level ``k``: pairs ``(a, b)`` of left and right indices.

    Parameters
    ----------
    left : Level
        ``S_{k-1}``.
    first : Level
        ``S_1``.
    both : bool
        Both-side rule (right set ``S_{k-1}``, pairs joined on the overlap)
        or single-side (right set ``S_1``, every pair).
    """

    def __init__(self, left: Level, first: Level, both: bool):
        self.left, self.both = left, both
        self.right = left if both else first
        self.n_right = self.right.grams.shape[0]
        lg = left.suf if both else np.zeros(left.grams.shape[0], dtype=np.int64)
        rg = self.right.pre if both else np.zeros(self.n_right, dtype=np.int64)
        groups = int(max(lg.max(initial=-1), rg.max(initial=-1))) + 1
        self._lsort, self._rsort = np.argsort(lg, kind="stable"), np.argsort(rg, kind="stable")
        lc, rc = np.bincount(lg, minlength=groups), np.bincount(rg, minlength=groups)
        self._lstart, self._rstart = np.cumsum(lc) - lc, np.cumsum(rc) - rc
        self._rcount = rc
        block = lc * rc
        self._bstart = np.cumsum(block) - block
        self.size = int(block.sum())
        #: Whether every candidate key ``a * n_right + b`` fits int64 (else the level
        #: is not extracted; both sizes are released values).
        self.keys_fit = left.grams.shape[0] * max(self.n_right, 1) <= K.INT63

    def keys(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Candidate keys ``a * n_right + b``: distinct for distinct pairs (noise identities)."""
        return a.astype(np.int64) * self.n_right + b

    def rows(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Item matrix of candidates ``(a, b)``: ``S_{k-1}[a]`` followed by the right's last item."""
        return np.concatenate([self.left.grams[a], self.right.grams[b, -1:]], axis=1)

    def chunks(self, xp: Any = np) -> Iterator[tuple[Any, Any]]:
        """Every valid candidate ``(a, b)``, ``CHUNK`` at a time, as arrays of ``xp``."""
        bstart, rcount, lstart, rstart, lsort, rsort = (
            xp.asarray(a) for a in (self._bstart, self._rcount, self._lstart, self._rstart,
                                    self._lsort, self._rsort))
        for lo in range(0, self.size, CHUNK):
            i = xp.arange(lo, min(lo + CHUNK, self.size), dtype=xp.int64)
            m = xp.searchsorted(bstart, i, side="right") - 1
            off = i - bstart[m]
            r = rcount[m]
            yield lsort[lstart[m] + off // r], rsort[rstart[m] + off % r]
