"""DPNE's per-partition level work as whole arrays of the run's backend (the GPU path).

:class:`DeviceOccurrences` holds a partition's text positions and level
state as arrays of the backend (CuPy on a GPU) and does each level's work
with the sorts and searches of :mod:`dpgpu.ops.bounding`, where the host
path (:class:`~dpgpu.mechanisms.dpne.Occurrences`) runs Numba loops.  Both
give the same bounded histograms, candidate keys and indices bit for bit,
so the release is the same on both for the same key; only the released
grams (and the level's supported keys and weights, for the noise) leave the
partition.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...backend import backend_of, get_backend
from ...ops import bounding
from ...ops.keys import index_dtype
from .calibration import unit_weights
from .histogram import TAG_SUBSET
from .levels import MAX_REMAIN, Positions


def device_positions(db: Any, backend: str) -> Positions:
    """:class:`~.levels.Positions` of ``db`` as arrays of ``backend``."""
    xp = get_backend(backend).xp
    n_seq = db.lengths.size
    owner = db.users if db.users is not None else np.arange(n_seq, dtype=index_dtype(n_seq))
    offsets = xp.asarray(db.offsets)
    return Positions(xp.asarray(db.items), xp.asarray(np.repeat(owner, db.lengths)),
                     bounding.remaining_lengths(offsets, MAX_REMAIN), offsets)


def device_bounded_histogram(users: Any, grams: Any, max_items: int, key: Any, tag: int
                             ) -> tuple[Any, Any]:
    """:func:`~.histogram.bounded_histogram` on the arrays' own backend."""
    be = backend_of(users)
    weight_of = be.xp.asarray(np.asarray(unit_weights(max_items), dtype=np.int64))

    def words(identities: Any) -> Any:
        return key.packed_words(identities, tag + TAG_SUBSET, backend=be)

    return bounding.bounded_sums(users, grams, max_items, weight_of, words)


@dataclass
class DeviceOccurrences:
    """The state of :class:`~dpgpu.mechanisms.dpne.Occurrences`, as arrays of one backend.

    Attributes
    ----------
    pos : Positions
        With arrays of the backend.
    idx1, idx_prev, valid, cand : arrays of the backend or None
        As for :class:`~dpgpu.mechanisms.dpne.Occurrences`.
    """

    pos: Positions
    idx1: Any = None
    idx_prev: Any = None
    valid: Any = None
    cand: Any = None

    @classmethod
    def of(cls, db: Any, backend: str) -> "DeviceOccurrences":
        """The occurrences of a database (or a partition of it) on ``backend``."""
        return cls(device_positions(db, backend))

    def first_histogram(self, cap: int, key: Any, tag: int) -> tuple[Any, Any]:
        """Bounded histogram of the items (level 1)."""
        return device_bounded_histogram(self.pos.users, self.pos.items, cap, key, tag)

    def candidates(self, k: int, n_right: int, both: bool) -> "DeviceOccurrences":
        """The valid k-gram occurrences and their candidate keys (see ``Occurrences``)."""
        right, shift = (self.idx_prev, 1) if both else (self.idx1, k - 1)
        valid, cand = bounding.candidate_keys(self.pos.fits(k), self.idx_prev, right, shift,
                                              n_right)
        return replace(self, idx1=None if both else self.idx1, valid=valid, cand=cand)

    def level_histogram(self, cap: int, key: Any, tag: int) -> tuple[Any, Any]:
        """Bounded histogram of the candidate keys of :meth:`candidates`."""
        return device_bounded_histogram(self.pos.users[self.valid], self.cand, cap, key, tag)

    def released(self, out: np.ndarray, first: bool) -> "DeviceOccurrences":
        """Record the released level (host array): sorted item ids or candidate keys."""
        xp = backend_of(self.pos.items).xp
        dtype = index_dtype(out.size)
        released = xp.asarray(out)
        if first:
            idx = bounding.index_of(self.pos.items, released, dtype)
            return replace(self, idx1=idx, idx_prev=idx)
        idx = xp.full(self.pos.items.size, -1, dtype=dtype)
        idx[self.valid] = bounding.index_of(self.cand, released, dtype)
        return replace(self, idx_prev=idx, valid=None, cand=None)
