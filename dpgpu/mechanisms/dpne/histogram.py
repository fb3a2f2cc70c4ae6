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
so one user moves the histogram by at most ``GRID`` in L2.  Pairs, and
grams with their weights, are sorted as one packed int64 key each (a value
sort, many times faster than an ``argsort``; the pairs in place); the
kept pairs are bounded and reduced in blocks of whole users whose
histograms are added, and keyed words are drawn only for the users
holding more than ``max_items`` grams.
"""

from __future__ import annotations

import numpy as np

from ...errors import InvalidParameter
from ...ops.keys import distinct_sorted, sorted_unique
from ...privacy import DiscreteGaussian, NoiseKey
from .calibration import unit_weights

#: Keyed-word tags within a level's key (the level number is added * 4).
TAG_SUBSET, TAG_NOISE, TAG_SPURIOUS = 0, 1, 2
#: Occurrence rows per block of :func:`bounded_histogram` (a block holds whole users,
#: so one user with more rows makes a larger block).
PAIR_BLOCK = 1 << 18


def bounded_pairs(users: np.ndarray, grams: np.ndarray, max_items: int, key: NoiseKey,
                  tag: int, *, bound: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct ``(user, gram)`` pairs each user keeps, sorted by user then gram.

    A user holding at most ``max_items`` distinct grams keeps them all; one
    holding more keeps the ``max_items`` whose keyed words (module doc:
    identity ``user * 2**32 + rank of the gram among the user's``) are
    smallest -- a uniformly random subset.  Pairs
    are packed into one int64 key ``user * G + gram`` for the sort.

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
    return _Pairs.of(users, grams).kept(slice(None), max_items, key, tag, bound)


def bounded_histogram(users: np.ndarray, grams: np.ndarray, max_items: int, key: NoiseKey,
                      tag: int, *, bound: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Distinct grams and their integer weights after contribution bounding.

    Each kept pair of :func:`bounded_pairs` adds ``floor(GRID / sqrt(t))``
    with ``t = min(held, max_items)`` (with ``bound=False`` the L2 norm
    exceeds ``GRID``: a deliberately broken variant for the audit test,
    never used by a release).  The pairs are bounded and summed in blocks of
    whole users (about :data:`PAIR_BLOCK` rows each) whose histograms are
    then added: each user's choice and weights depend on its own pairs only,
    so the sum is the same as in one piece, and only one block's
    temporaries are alive at a time.

    Returns
    -------
    grams : (U,) int64, sorted
    weights : (U,) int64
    """
    if users.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    pairs = _Pairs.of(users, grams)
    table = np.asarray(unit_weights(max_items), dtype=np.int64)
    # Block histograms are added like a binary counter: a part is merged into the
    # last one kept while that is no larger, so each gram is re-sorted about
    # log2(blocks) times at most and the parts held add up to about twice the
    # sum's size, even when nearly every pair is a distinct gram.
    stack: list[tuple[np.ndarray, np.ndarray]] = []
    for block in pairs.user_blocks():
        _, g, t = pairs.kept(block, max_items, key, tag, bound)
        part = gram_sums(g, table[np.minimum(t, max_items)])
        while stack and stack[-1][0].size <= part[0].size:
            part = merge_histograms([stack.pop(), part])
        stack.append(part)
    del pairs  # the sorted rows can go before the last parts are added
    return merge_histograms(stack)


class _Pairs:
    """``(user, gram)`` pairs, sorted, packed as ``user * span + g``.

    ``g`` is the gram itself, or its rank in ``values`` when the packed key
    would not fit 62 bits with the gram.
    """

    def __init__(self, packed: np.ndarray, span: int, values: np.ndarray | None):
        self.packed, self.span, self.values = packed, span, values

    @classmethod
    def of(cls, users: np.ndarray, grams: np.ndarray) -> "_Pairs":
        """The pairs of ``(users, grams)`` (non-empty), sorted, duplicates kept.

        Duplicates of a pair are adjacent, so they never straddle two user
        blocks; each block drops its own, and the whole distinct set is never
        held next to the sorted rows.
        """
        span = int(grams.max()) + 1
        if (int(users.max()) + 1) * span >= 2 ** 62:        # compress the gram ids first
            values = sorted_unique(grams).astype(np.int64, copy=False)
            grams, span = np.searchsorted(values, grams), values.size
        else:
            values = None
        packed = users.astype(np.int64)  # a new array: packed and sorted in place
        packed *= span
        packed += grams
        packed.sort()
        return cls(packed, span, values)

    def user_blocks(self) -> list[slice]:
        """Slices of whole users, about :data:`PAIR_BLOCK` rows each, covering every row."""
        # each mark moves back to the first pair of its user; marks in one user coincide
        marks = self.packed[PAIR_BLOCK::PAIR_BLOCK] // self.span * self.span
        cuts = sorted_unique(np.r_[0, np.searchsorted(self.packed, marks), self.packed.size])
        return [slice(lo, hi) for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist())]

    def kept(self, block: slice, max_items: int, key: NoiseKey, tag: int, bound: bool
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`bounded_pairs` of the pairs in ``block`` (whole users)."""
        packed = distinct_sorted(self.packed[block])
        u, g = packed // self.span, packed % self.span
        if self.values is not None:
            g = self.values[g]
        first = np.r_[True, u[1:] != u[:-1]]
        held = np.diff(np.r_[np.flatnonzero(first), u.size])
        t = np.repeat(held, held)
        keep = t <= max_items
        if bound and not keep.all():
            over = np.flatnonzero(~keep)
            if int(u[-1]) >= 2 ** 32 or int(held.max()) > 2 ** 32:
                raise InvalidParameter("contribution bounding: more than 2**32 users, or a user "
                                       "with more than 2**32 distinct grams")
            start = np.repeat(np.flatnonzero(first), held)  # each entry's user's first entry
            rank = (np.arange(u.size) - start)[over]  # of the gram in its user's sorted set
            words = key.packed_words((u[over].astype(np.uint64) << np.uint64(32))
                                     | rank.astype(np.uint64), tag + TAG_SUBSET,
                                     backend="numpy")
            from .subset_numba import smallest_per_user  # noqa: PLC0415 - Numba loads on first use

            keep[over[smallest_per_user(u[over], words, max_items)]] = True
        elif not bound:
            keep[:] = True
        return u[keep], g[keep], t[keep]


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
        return np.zeros(0, dtype=bool)
    noise = DiscreteGaussian(s).sample(key, identities, tag=tag + TAG_NOISE, backend="numpy")
    return weights + noise > threshold
