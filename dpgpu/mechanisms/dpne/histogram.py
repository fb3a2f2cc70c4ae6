"""The weighted-Gaussian histogram of one level, its noise and its threshold.

Input: one row per occurrence, ``(user, gram)`` with ``gram`` an integer
index of the level's candidate space and ``identity`` its noise identity.
Each user keeps at most ``max_items`` distinct grams, a uniformly random
subset chosen by keyed words: the ``max_items`` smallest of the words
:meth:`NoiseKey.packed_words` gives identities ``user * 2**32 + r`` for
``r = 0 .. t - 1``, word ``r`` going to the user's ``r``-th gram in
ascending order.  The identities of distinct users are disjoint and each
user's choice depends on its own grams only (``user * G ^ gram``, hashed,
was used before: not injective across users, so two users' choices could
share a word), and it adds the
integer weight ``floor(GRID / sqrt(t))`` to each of its ``t`` kept grams,
so one user moves the histogram by at most ``GRID`` in L2.

The rows are grouped by user without sorting them (already in user order,
or a counting sort on the user ids), each user's few grams are sorted on
their own, and the weights are added in a table of sums keyed by gram, so
only the distinct grams are sorted, once (:mod:`.counting_numba`).  Users
are bounded in blocks of whole users, and keyed words are drawn only for
the users holding more than ``max_items`` grams.
"""

from __future__ import annotations

import numpy as np

from ...errors import InvalidParameter
from ...ops.bounding import merged_sums
from ...ops.keys import array_module, sorted_unique
from ...privacy import DiscreteGaussian, NoiseKey
from .calibration import unit_weights

#: Keyed-word tags within a level's key (the level number is added * 4); TAG_ORDER: the
#: DPSU baselines' Policy-Laplace user order (:func:`.policy.fill_order`).
TAG_SUBSET, TAG_NOISE, TAG_SPURIOUS, TAG_ORDER = 0, 1, 2, 3
#: Occurrence rows per block of :func:`bounded_histogram` (a block holds whole users,
#: so one user with more rows makes a larger block).
PAIR_BLOCK = 1 << 18
#: Slots of the table of sums a bounded histogram starts with (doubled as it fills).
TABLE_START = 1 << 10


def bounded_pairs(users: np.ndarray, grams: np.ndarray, max_items: int, key: NoiseKey,
                  tag: int, *, bound: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``(user, gram)`` pairs each user keeps, sorted by user then gram.

    A user holding at most ``max_items`` distinct grams keeps them all; one
    holding more keeps the ``max_items`` whose keyed words (module doc:
    identity ``user * 2**32 + rank of the gram among the user's``) are
    smallest -- a uniformly random subset.

    Parameters
    ----------
    users, grams : (M,) integer arrays
        One row per occurrence (duplicates allowed), both ``>= 0``.
    max_items : int
        ``Delta_k``.
    key : NoiseKey
        The level's key (subset choice uses tag ``tag + TAG_SUBSET``).
    tag : int
        The level's base tag.
    bound : bool
        ``False`` keeps every gram (for the audit's broken variant only).

    Returns
    -------
    users, grams : (P,) int64
        The kept pairs.
    held : (P,) int64
        How many distinct grams the pair's user holds (before bounding).
    """
    if users.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    runs = _Runs.of(users, grams)
    ids, g, t, keep = runs.kept(0, runs.ids.size, max_items, key, tag, bound)
    return np.repeat(ids, t)[keep], g[keep].astype(np.int64), np.repeat(t, t)[keep]


def bounded_histogram(users: np.ndarray, grams: np.ndarray, max_items: int, key: NoiseKey,
                      tag: int, *, bound: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Distinct grams and their integer weights after contribution bounding.

    Each kept pair of :func:`bounded_pairs` adds ``floor(GRID / sqrt(t))``
    with ``t = min(held, max_items)`` (with ``bound=False`` the L2 norm
    exceeds ``GRID``: a deliberately broken variant for the audit test,
    never used by a release).  The users are bounded in blocks of whole
    users (about :data:`PAIR_BLOCK` rows each) whose weights are added to
    one table of sums keyed by gram: each user's choice and weights depend
    on its own pairs only, so the sums are those of one piece, and only one
    block's temporaries are alive at a time.

    Returns
    -------
    grams : (U,) int64, sorted
    weights : (U,) int64
    """
    if users.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    from .counting_numba import add_runs  # noqa: PLC0415 - Numba loads on first use

    runs = _Runs.of(users, grams)
    table = np.asarray(unit_weights(max_items), dtype=np.int64)
    slots = np.zeros((TABLE_START, 2), dtype=np.int64)  # (gram, sum); gram -1: empty
    slots[:, 0] = -1
    count = 0
    for lo, hi in runs.blocks():
        _, g, t, keep = runs.kept(lo, hi, max_items, key, tag, bound)
        slots, count = add_runs(slots, count, g, t, keep, table[np.minimum(t, max_items)])
    del runs  # the grouped rows can go before the sums are sorted, and the table too
    used = slots[:, 0] >= 0
    grams, sums = slots[used, 0], slots[used, 1]
    del slots, used
    return gram_sums(grams, sums)


class _Runs:
    """Occurrence rows grouped by user: the grams of each user contiguous, users ascending.

    Attributes
    ----------
    values : numpy.ndarray
        The grams, grouped (read only).
    starts : (S + 1,) numpy.ndarray of int64
        Run ``j`` (one user) is ``values[starts[j]:starts[j + 1]]``.
    ids : (S,) numpy.ndarray of int64
        The user of each run, ascending.
    """

    def __init__(self, values: np.ndarray, starts: np.ndarray, ids: np.ndarray):
        self.values, self.starts, self.ids = values, starts, ids

    @classmethod
    def of(cls, users: np.ndarray, grams: np.ndarray) -> "_Runs":
        """The rows ``(users, grams)`` (non-empty) grouped by user.

        Rows already in user order (a database without a user column, or
        sorted by user) are kept as they are, not copied; otherwise a
        counting sort groups them when the ids span no more values than
        there are rows, and a stable argsort when they are sparser.
        """
        from .counting_numba import group_by_user, user_runs  # noqa: PLC0415 - Numba on use

        starts, ids = user_runs(users)
        if starts.size:
            return cls(grams, starts, ids)
        low, high = int(users.min()), int(users.max())
        if high - low < users.size:
            return cls(*group_by_user(users, grams, low, high - low + 1))
        order = np.argsort(users, kind="stable")
        values = grams[order]
        starts, ids = user_runs(users[order])
        return cls(values, starts, ids)

    def blocks(self) -> list[tuple[int, int]]:
        """Ranges ``(lo, hi)`` of runs, about :data:`PAIR_BLOCK` rows each, covering every run."""
        marks = np.arange(PAIR_BLOCK, int(self.starts[-1]), PAIR_BLOCK)
        # the run holding each mark starts a block; marks in one run coincide
        cuts = sorted_unique(np.r_[0, np.searchsorted(self.starts, marks, side="right") - 1,
                                   self.ids.size])
        return list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))

    def kept(self, lo: int, hi: int, max_items: int, key: NoiseKey, tag: int, bound: bool
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """:func:`bounded_pairs` of runs ``lo .. hi - 1``, by run.

        Each user's distinct grams are sorted into a buffer of the block's size
        (:func:`~.counting_numba.distinct_in_runs`).

        Returns
        -------
        ids : (S,) int64
            The runs' users.
        grams : (P,) numpy.ndarray
            Their distinct grams, run after run, ascending in each.
        t : (S,) int64
            Distinct grams per run (held before bounding).
        keep : (P,) bool
            The grams kept.
        """
        from .counting_numba import distinct_in_runs  # noqa: PLC0415 - Numba on use
        from .subset_numba import smallest_per_user  # noqa: PLC0415 - Numba on use

        starts = self.starts[lo:hi + 1]
        grams = np.empty(int(starts[-1] - starts[0]), dtype=self.values.dtype)
        t = distinct_in_runs(self.values, starts, grams)
        ids = self.ids[lo:hi]
        grams = grams[:int(t.sum())]
        keep = np.ones(grams.size, dtype=bool)
        over = t > max_items
        if bound and over.any():
            if int(ids[-1]) >= 2 ** 32 or int(t.max()) > 2 ** 32:
                raise InvalidParameter("contribution bounding: more than 2**32 users, or a user "
                                       "with more than 2**32 distinct grams")
            held = t[over]
            user = np.repeat(ids[over], held)
            rank = np.arange(user.size) - np.repeat(np.cumsum(held) - held, held)  # in its user
            words = key.packed_words((user.astype(np.uint64) << np.uint64(32))
                                     | rank.astype(np.uint64), tag + TAG_SUBSET,
                                     backend="numpy")
            rows = np.flatnonzero(np.repeat(over, t))
            keep[rows] = False
            keep[rows[smallest_per_user(user, words, max_items)]] = True
        return ids, grams, t, keep


def merge_histograms(parts: list[tuple[np.ndarray, np.ndarray]]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The sum of bounded histograms ``(grams, weights)`` of disjoint sets of users.

    Each user's contributions were bounded inside one part, so the sum is
    the histogram of the union.  One part is returned as it is.  The parts
    are sorted runs, which a stable sort (timsort) merges in about linear time.

    Parameters
    ----------
    parts : list of (grams, weights)
        :func:`bounded_histogram` of each part (at least one).

    Returns
    -------
    grams : (U,) int64, sorted
    weights : (U,) int64
    """
    if len(parts) == 1:
        return parts[0]
    if array_module(parts[0][0]) is not np:  # GPU parts: summed on the GPU
        return merged_sums(parts)
    return gram_sums(np.concatenate([g for g, _ in parts]).astype(np.int64, copy=False),
                     np.concatenate([w for _, w in parts]), kind="stable")


def gram_sums(grams: np.ndarray, weights: np.ndarray, *, kind: str | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct ``grams`` and the exact sum of ``weights`` per gram.

    Parameters
    ----------
    grams : (M,) int64 array, ``>= 0``
    weights : (M,) int64 array, ``>= 0``
    kind : str or None
        NumPy's sort kind: ``"stable"`` when ``grams`` is a few sorted runs.
        The sums do not depend on it.

    Returns
    -------
    grams : (U,) int64, sorted
    sums : (U,) int64
    """
    grams = grams.astype(np.int64, copy=False)
    weights = weights.astype(np.int64, copy=False)
    if grams.size == 0:
        return grams, weights
    bits = int(weights.max()).bit_length()
    if int(grams.max()).bit_length() + bits <= 63:  # gram and weight in one int64: a value sort
        packed = grams << bits
        packed |= weights
        packed.sort(kind=kind)
        keys, parts = packed >> bits, packed & ((1 << bits) - 1)
    else:
        order = np.argsort(grams, kind=kind)
        keys, parts = grams[order], weights[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.add.reduceat(parts, starts)


def noisy_release(weights: np.ndarray, identities: np.ndarray, s: float, threshold: int,
                  key: NoiseKey, tag: int) -> np.ndarray:
    """Mask of the grams whose ``weight + N_Z(0, s**2) > threshold`` (noise keyed by identity)."""
    if weights.size == 0:
        return array_module(weights).zeros(0, dtype=bool)
    noise = DiscreteGaussian(s).sample(key, identities, tag=tag + TAG_NOISE)  # their backend
    return weights + noise > threshold
