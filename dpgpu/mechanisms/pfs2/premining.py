"""Pre-mining phase of PFS^2 (Algorithm 3, lines 2-9).

* ``|D|~``: the number of sequences plus discrete Laplace noise of scale
  ``1 / eps_1``;
* ``l_max = min(l_1, l_2)``: ``l_2`` is the first length at which the
  noisy length counts ``alpha_0 + alpha_1 + .. + alpha_l2`` reach ``eta |D|~``
  (``alpha_0`` counts the empty sequences, which any ``l_max`` covers); the
  counts of distinct lengths read disjoint sequences, so the whole length
  histogram costs ``eps_2`` (parallel composition, Theorem 7);
* ``L_f``: the largest ``y <= l_max`` whose noisy maximal support of
  ``y``-sequences ``beta_y`` reaches ``theta |D|~``.  ``beta`` is
  non-increasing in ``y`` (a sequence's support is at most its prefix's),
  so, as in Zeng et al. (the paper's ref. [8]), ``L_f`` is found by binary
  search with ``ceil(log2 l_max)`` noisy queries of ``eps_3 / ceil(log2 l_max)``
  each (sensitivity 1 each; sequential composition).

Queries are clipped from below at a public floor (half the noisy absolute
threshold): ``max(beta_y, floor)`` still has sensitivity 1 and bounds the
patterns that must be looked at (only those with support above the floor;
without it, proving that no y-pattern reaches a low target can mean walking
the subsequences of the longest sequences).  The floor departs from the
paper's comparison of ``beta_y`` itself only where the noise exceeds half
the threshold, which is rare when the threshold is many noise scales
(``ceil(log2 l_max) / eps_3``) large, as on MSNBC at ``theta = 0.015``.
Where it is a few scales or less the floor makes a length that no sequence
reaches pass more often (2,000 sequences at ``theta = 0.05``: 0.31 instead
of 0.19 per probe), so ``L_f`` comes out longer than the paper's would: more,
smaller samples and a smaller share of ``eps_5`` per level.  Privacy is
unaffected.

Evaluating the comparisons (exact, not private)
-----------------------------------------------
The binary search only needs, at each length ``y`` it probes, the answer of
``max(beta_y, floor) + noise >= threshold``.  The noise of a probe is keyed
by the probed length alone (data independent), so the comparison is the
exact question "is ``max(beta_y, floor) >= t``" with the integer
``t = ceil(threshold) - noise`` (:meth:`MaximalSupports.at_least`); the
released ``L_f`` is the same as with every ``beta_y`` computed in full.
Nothing is computed for the lengths that are not probed.
:meth:`MaximalSupports.exact` gives ``max(beta_y, floor)`` itself by the
same search.

For one length ``y`` the search (:class:`_LengthSearch`) is a depth-first
branch and bound over patterns, extended one item at a time from the empty
prefix; it looks for a pattern whose support beats a running value
``best`` (the floor, the target minus one, or a known lower bound) and
stops once ``best`` reaches a stopping value (the target, or a known upper
bound).  Supports are anti-monotone, so:

* only sequences of at least ``y`` items, and only items whose own support
  exceeds the floor (the *alphabet* ``X``), can matter;
* the sequences are deduplicated (a distinct sequence weighs its
  multiplicity), and the structures below are built once per database
  (:class:`_Index`) and shared by all lengths;
* a node (prefix ``P``, ``r = y - |P|`` items still to add) keeps, per
  sequence that can still contain a completion, the end ``e`` of the
  leftmost match of ``P``; a sequence can only contain a completion when
  ``r`` items follow ``e`` (*room*), so the room-bounded support is an
  upper bound of every completion of ``P`` -- a node whose bound is at most
  ``best`` is cut;
* the room-bounded supports of all children ``P x`` (``x`` in ``X``) come
  from one look-up of the next occurrence of every item after every ``e``
  (a table of next occurrences when it fits in :data:`NEXT_CELLS`, else
  one read of the items after ``e`` when these windows are short, a Numba
  loop of :mod:`.premining_numba`, else binary searches in a sorted array
  of ``(item, position)`` keys; the root's from the first occurrences);
  the child's match ends are the next occurrence of its item (a second
  read of the short windows, only where some child's bound beats ``best``,
  lists them for all those children, so no child reads its parent's windows
  again; else the table,
  else a Numba loop that reads the first :data:`_SCAN` items after ``e``
  and searches the keys beyond).  Children are visited best first (by
  the tail bound below when there is a tail table, else by this bound), so
  the first descent is a greedy path that gives a lower bound after ``y``
  levels; the children of a node at ``r = 1`` are the length-``y``
  patterns themselves, whose bounds are their exact supports;
* *tail table*: for every tail ``Q`` of ``rq`` items (``|X|^rq`` at most
  :data:`TAIL_PATTERNS`) and every sequence, the start of the rightmost
  match of ``Q``.  A completion ``P A Q`` (``|A| = r - rq``) is contained in
  a sequence only when ``Q`` starts more than ``r - rq`` positions after
  ``e``, so ``max_Q`` of the weight of those sequences bounds the node
  much more tightly than the room; at ``r = rq`` it is the exact best
  completion, so nodes at depth ``y - rq`` are leaves;
* *universal suffixes*: a sequence whose remainder after ``e`` holds ``r``
  consecutive blocks each containing every item of ``X`` contains every
  completion, so the weight of these sequences is a lower bound of the
  best completion (it may raise ``best`` without descending), and they are
  left out of the tail computation (they add the same weight to every
  ``Q``);
* lengths are related monotonically: ``max(beta_y, floor)`` is at least any
  lower bound known at a longer length and at most any upper bound known
  at a shorter one (and at most the weight of the sequences of at least
  ``y`` items); :class:`MaximalSupports` keeps what each search proved and
  answers from it when it can.

The support kernel of :func:`dpgpu.eval.truth.subsequence_supports`
counts whole patterns from scratch and does not give the match ends that
the room and tail bounds need, so the search keeps them itself; its
results are checked against all patterns mined by
:func:`~dpgpu.eval.truth.frequent_subsequences` (the computation used
before, ``tests/test_pfs2_premining.py``).

Finding the largest support of a fixed length is NP-hard in general (it
contains the longest common subsequence of many strings), so the search is
exponential in the worst case: on data where all patterns of a length have
nearly the same support (long random sequences over a few items) a query
whose target falls just above the largest support has to rule out most
patterns.  Queries far from the largest support end after a few nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ...data.sequencedb import SequenceDB, concat_ranges
from ...errors import InvalidParameter
from ...eval.truth import _dedupe
from ...privacy import DiscreteLaplace, PrivacyLedger, laplace_scale, sampling_delta
from ...privacy.samplers import LAPLACE_TV_BOUND
from ...scale.partitions import Partitions, partition
from ..lengths import coverage_length, length_counts, noisy_count, noisy_length_histogram

#: Public floor of the maximal-support queries, as a fraction of the noisy threshold.
BETA_FLOOR = 0.5
#: Noise tags (domain separation within one step's key).
TAG_SIZE, TAG_LENGTHS, TAG_BETA = 1, 2, 3
#: Most tails ``|X|^rq`` in the tail table of a length search.
TAIL_PATTERNS = 256
#: Longest tail ``rq`` of the tail table.
TAIL_LENGTH = 8
#: Most cells (sequences x tails) of the tail table.
TAIL_CELLS = 2 ** 22
#: Largest alphabet ``|X|`` for which universal suffixes are looked for.
UNIVERSAL_ITEMS = 64
#: Most cells (items x positions) of the next-occurrence table (else binary searches).
NEXT_CELLS = 2 ** 23
#: Most cells (items x sequences) of one vectorised next-occurrence search.
_CHUNK_CELLS = 2 ** 22
#: Without the next-occurrence table, children are counted by reading the windows after the
#: matches when they hold at most this many items per (item, sequence) pair.
_WINDOW_RATIO = 1.0
#: Positions after a match read for the next occurrence of an item before a binary search.
_SCAN = 32
#: Runs of sequences per thread in the parallel window kernels.
_RUNS_PER_THREAD = 4
#: Fewest sequences that the window kernels read in parallel.
_PARALLEL_ROWS = 2 ** 16


@dataclass(frozen=True)
class PreMining:
    """Public results of the pre-mining phase (all differentially private).

    Attributes
    ----------
    n_noisy : int
        Noisy number of sequences ``|D|~`` (at least 1).
    l_max : int
        Length constraint of the sample databases.
    L_f : int
        Estimated length of the longest frequent sequence (number of samples).
    """

    n_noisy: int
    l_max: int
    L_f: int


def tv_delta(n_draws: int, epsilon: float) -> float:
    """Sampling delta of a step drawing ``n_draws`` discrete-Laplace values."""
    return sampling_delta(LAPLACE_TV_BOUND, n_draws, epsilon)


def noisy_size(db: SequenceDB, ledger: PrivacyLedger, epsilon: float,
               data: Partitions | None = None) -> int:
    """``|D|~``: ``|D|`` + discrete Laplace ``(1 / eps_1)``, at least 1.

    ``|D|`` is summed over the partitions ``data`` of ``db`` (default: ``db``
    itself, in this process), where they are.
    """
    step = ledger.charge("pfs2: noisy |D|", epsilon, sampling_delta=tv_delta(1, epsilon))
    size = (data if data is not None else partition(db)).sum(_size)[0]
    return noisy_count(int(size), step.key, epsilon, tag=TAG_SIZE)


def length_constraint(db: SequenceDB, ledger: PrivacyLedger, epsilon: float, n_noisy: int,
                      l_upper: int, eta: float, data: Partitions | None = None) -> int:
    """``l_max = min(l_1, l_2)`` from the noisy length histogram of lengths ``0 .. l_1``.

    An empty sequence, which the paper's data do not have, is covered by any
    ``l_max``.  The exact histogram is summed over the partitions ``data`` of
    ``db`` (default: ``db`` itself).
    """
    step = ledger.charge("pfs2: noisy length histogram (lengths 0..l_1, disjoint)", epsilon,
                         sampling_delta=tv_delta(l_upper + 1, epsilon))
    exact = (data if data is not None else partition(db)).sum(_length_counts, l_upper)
    return coverage_length(noisy_length_histogram(exact, step.key, epsilon, tag=TAG_LENGTHS),
                           n_noisy, eta)


def search_queries(l_max: int) -> int:
    """Noisy queries of the binary search for ``L_f`` in ``1 .. l_max``, at least 1.

    ``ceil(log2 l_max)``: each halves the interval.

    Parameters
    ----------
    l_max : int
        At least 1 (``l_1`` bounds it, so ``search_queries(l_1)`` bounds every run's).

    Returns
    -------
    int
    """
    return max(1, math.ceil(math.log2(l_max)))


def max_frequent_length(db: SequenceDB, ledger: PrivacyLedger, epsilon: float, l_max: int,
                        threshold: float, data: Partitions | None = None) -> int:
    """``L_f`` by binary search on the noisy maximal supports (see the module doc).

    Parameters
    ----------
    db : SequenceDB
    ledger : PrivacyLedger
    epsilon : float
        ``eps_3``.
    l_max : int
    threshold : float
        Noisy absolute threshold ``theta |D|~``.
    data : Partitions, optional
        The partitions of ``db`` (:func:`dpgpu.scale.partitions.partition`;
        default: ``db`` itself): the search runs on the client over what
        they send (:meth:`MaximalSupports.of`).

    Returns
    -------
    int
        ``L_f`` in ``1 .. l_max``.

    Notes
    -----
    Probe ``y`` passes when ``max(beta_y, floor) + noise >= threshold``;
    both sides but ``threshold`` are integers, so this is
    ``max(beta_y, floor) >= ceil(threshold) - noise``, decided exactly by
    :meth:`MaximalSupports.at_least` without computing ``beta_y`` in full.
    """
    queries = search_queries(l_max)
    step = ledger.charge(f"pfs2: noisy maximal supports (binary search, {queries} queries)",
                         epsilon, sampling_delta=tv_delta(queries, epsilon))
    if l_max == 1:
        return 1
    floor = max(1, int(BETA_FLOOR * threshold))
    beta = MaximalSupports.of(db, floor, data)
    sampler = DiscreteLaplace(laplace_scale(epsilon, queries))
    lo, hi = 1, l_max
    while lo < hi:
        mid = (lo + hi + 1) // 2
        noise = int(sampler.sample(step.key, np.array([mid]), tag=TAG_BETA, backend="numpy")[0])
        if beta.at_least(mid, math.ceil(threshold) - noise):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _size(part: SequenceDB) -> np.ndarray:
    return np.array([len(part)], dtype=np.int64)


def _length_counts(part: SequenceDB, l_upper: int) -> np.ndarray:
    return length_counts(part.lengths, l_upper)


def _distinct(part: SequenceDB) -> tuple[SequenceDB, np.ndarray]:
    return _dedupe(part)


def _item_supports(distinct: tuple[SequenceDB, np.ndarray]) -> np.ndarray:
    """Weight of the distinct sequences holding each item (the partition's item supports)."""
    from .premining_numba import window_item_weights  # noqa: PLC0415 - imports numba

    src, weights = distinct
    return window_item_weights(src.items, src.offsets[:-1] - 1, src.offsets[1:],
                               np.asarray(weights, dtype=np.int64), src.vocab.size,
                               _chunks(len(src)))


def _kept_distinct(distinct: tuple[SequenceDB, np.ndarray], keep: np.ndarray
                   ) -> tuple[np.ndarray, ...]:
    """Distinct sequences restricted to the items ``keep``, deduplicated again.

    Returns the distinct non-empty restrictions as ``(items, offsets)`` and
    their multiplicities.
    """
    src, weights = distinct
    mask = keep[src.items]
    if mask.all() and src.lengths.all():  # nothing to drop: already distinct
        return src.items, src.offsets, weights
    kept_before = np.zeros(src.items.size + 1, dtype=np.int64)  # kept items before each position
    np.cumsum(mask, out=kept_before[1:])
    lengths = np.diff(kept_before[src.offsets])
    kept = SequenceDB(src.items[mask], np.concatenate([[0], np.cumsum(lengths[lengths > 0])]),
                      src.vocab)
    uniq, weights = _dedupe(kept, weights[lengths > 0])
    return uniq.items, uniq.offsets, weights


class MaximalSupports:
    """Exact ``max(beta_y, floor)`` of one database, per length, on demand (not private).

    ``beta_y`` is the largest support of a length-``y`` subsequence pattern
    (the number of sequences containing it; 0 when no sequence has ``y``
    items).  Each length is searched only when asked (:class:`_LengthSearch`
    on the structures of :class:`_Index`, built on first use); what a
    search proves is kept as lower and upper bounds and shared between
    lengths through the monotonicity of ``beta``.

    Parameters
    ----------
    db : SequenceDB
        Read once (deduplicated) when the object is made.
    floor : int
        Public floor (``>= 0``): the answers are ``max(beta_y, floor)``.
    weights : numpy.ndarray of int, optional
        Multiplicity of each sequence of ``db`` (default 1 each).

    Raises
    ------
    InvalidParameter
        When ``floor`` is not an integer ``>= 0``.
    """

    def __init__(self, db: SequenceDB, floor: int, weights: np.ndarray | None = None):
        self.floor = _check_floor(floor)
        if weights is not None and (np.shape(weights) != (len(db),) or np.any(
                np.asarray(weights) < 0)):
            raise InvalidParameter("weights: expected one multiplicity >= 0 per sequence")
        self._start(*_dedupe(db, weights))

    def _start(self, src: SequenceDB, weights: np.ndarray) -> None:
        """Begin with the distinct sequences ``src`` of multiplicities ``weights``."""
        self._src, self._weights = src, weights
        self._index: _Index | None = None
        self._lower: dict[int, int] = {}
        self._upper: dict[int, int] = {}
        self._searches: dict[int, _LengthSearch] = {}

    @classmethod
    def of(cls, db: SequenceDB, floor: int, data: Partitions | None = None
           ) -> "MaximalSupports":
        """The maximal supports of ``db``, from what its partitions ``data`` send.

        The partitions send only what the answers depend on: their sequences
        restricted to the items of support above ``floor`` (an item of support
        at most ``floor`` is in no pattern of larger support, and dropping it
        keeps every pattern made of the other items in the same sequences),
        deduplicated with multiplicities.  Item supports are summed first
        (each partition deduplicates its sequences once, for both rounds).
        The client merges the parts, so the answers are those of the whole
        database, computed in this process.

        Parameters
        ----------
        db : SequenceDB
        floor : int
        data : Partitions, optional
            The partitions of ``db`` (default: ``db`` itself, in this process).

        Returns
        -------
        MaximalSupports
        """
        floor = _check_floor(floor)
        parts = (data if data is not None else partition(db)).map(_distinct)
        keep = parts.sum(_item_supports) > floor
        pieces = parts.gather(_kept_distinct, keep)
        items = np.concatenate([p[0] for p in pieces])
        lengths = np.concatenate([np.diff(p[1]) for p in pieces])
        weights = np.concatenate([p[2] for p in pieces])
        kept = SequenceDB(items, np.concatenate([[0], np.cumsum(lengths)]), db.vocab)
        if len(pieces) > 1:  # the same sequence may come from several partitions
            return cls(kept, floor, weights)
        beta = cls.__new__(cls)
        beta.floor = floor
        beta._start(kept, weights)
        return beta

    def bounds(self, length: int) -> tuple[int, int]:
        """Known ``(lower, upper)`` bounds of ``max(beta_length, floor)``.

        Parameters
        ----------
        length : int
            ``>= 1``.

        Returns
        -------
        tuple of int
            From the floor, the weight of the sequences of at least
            ``length`` items, and the results of earlier searches at this
            and other lengths (``beta`` is non-increasing in the length).
        """
        y = _check_length(length)
        lower = max([self.floor] + [v for k, v in self._lower.items() if k >= y])
        heavy = int(self._weights[self._src.lengths >= y].sum())
        upper = min([max(self.floor, heavy)] + [v for k, v in self._upper.items() if k <= y])
        return lower, max(lower, upper)

    def exact(self, length: int) -> int:
        """``max(beta_length, floor)``.

        Parameters
        ----------
        length : int
            ``>= 1``.

        Returns
        -------
        int
        """
        y = _check_length(length)
        lower, upper = self.bounds(y)
        if lower < upper:
            lower = self._search(y).run(lower, upper)
        self._lower[y] = self._upper[y] = lower
        return lower

    def at_least(self, length: int, target: int) -> bool:
        """Whether ``max(beta_length, floor) >= target``.

        Parameters
        ----------
        length : int
            ``>= 1``.
        target : int

        Returns
        -------
        bool

        Notes
        -----
        The search cuts every prefix whose bound is below ``target`` and
        stops at the first pattern (or lower bound) reaching it, so it is
        much cheaper than :meth:`exact` when ``target`` is far from the
        answer.
        """
        y = _check_length(length)
        target = int(target)
        lower, upper = self.bounds(y)
        if lower >= target:
            return True
        if upper < target:
            return False
        found = self._search(y).run(target - 1, target)
        if found >= target:
            self._lower[y] = max(self._lower.get(y, 0), found)
            return True
        self._upper[y] = min(self._upper.get(y, target - 1), target - 1)
        return False

    @property
    def nodes(self) -> int:
        """Search nodes assessed so far, over all lengths (a measure of the work done)."""
        return sum(search.nodes for search in self._searches.values())

    def _search(self, y: int) -> "_LengthSearch":
        if self._index is None:
            self._index = _Index(self._src, self._weights, self.floor)
        if y not in self._searches:
            self._searches[y] = _LengthSearch(self._index, y)
        return self._searches[y]


def maximal_support(db: SequenceDB, length: int, floor: int = 0) -> int:
    """``max(beta_length, floor)``: the largest support of a length-``length`` pattern, clipped.

    Parameters
    ----------
    db : SequenceDB
    length : int
        Pattern length ``y >= 1``.
    floor : int
        Returned when no pattern of that length is contained in more than
        ``floor`` sequences (default 0).

    Returns
    -------
    int

    See Also
    --------
    MaximalSupports : several lengths of one database, and threshold queries.
    """
    return MaximalSupports(db, floor).exact(length)


def _check_floor(floor: Any) -> int:
    if int(floor) != floor or floor < 0:
        raise InvalidParameter(f"floor: expected an integer >= 0, got {floor!r}")
    return int(floor)


def _check_length(length: int) -> int:
    if int(length) != length or length < 1:
        raise InvalidParameter(f"length: expected an integer >= 1, got {length!r}")
    return int(length)


class _Index:
    """The search structures of one deduplicated database, shared by all lengths.

    Positions are indices into ``src.items``; ``m = n + 1`` exceeds every
    position and every sequence end.

    Parameters
    ----------
    src : SequenceDB
        Distinct sequences.
    weights : numpy.ndarray of int64
        Their multiplicities.
    floor : int
        No search is asked to beat less than ``floor``, so the items of
        support at most ``floor`` (they are in no pattern of larger support)
        are left out: the alphabet ``X`` is the rest, ranked ``0 .. |X|-1``.
    """

    def __init__(self, src: SequenceDB, weights: np.ndarray, floor: int):
        from .premining_numba import first_occurrences  # noqa: PLC0415 - imports numba

        self.w = np.asarray(weights, dtype=np.int64)
        self.wf = self.w.astype(np.float64)  # exact: weights sum to far less than 2**53
        self.lengths = src.lengths.astype(np.int64)
        n = src.items.size
        self.m = n + 1
        # positions, sequence numbers (distinct sequences: at most m), ends + lengths; the
        # narrow types keep more of what the search reads in the caches
        self.dtype = dtype = np.int32 if self.m < 2 ** 30 else np.int64
        self.start, self.end = src.offsets[:-1].astype(dtype), src.offsets[1:].astype(dtype)
        alphabet = np.flatnonzero(_item_supports((src, self.w)) > floor)
        self.n_items = k = alphabet.size
        rank = np.full(src.vocab.size, -1, dtype=np.min_scalar_type(-(k + 1)))  # fits rank + 1
        rank[alphabet] = np.arange(k)
        self.rank_at = rank[src.items]  # rank of the item at each position, or -1
        self._keys: np.ndarray | None = None
        # per item of X, the sequences holding it, where it first occurs and the room after it
        self.first_at, seq, pos = first_occurrences(self.rank_at, src.offsets, k)
        self.first_seq, self.first_pos = seq.astype(dtype), pos.astype(dtype)
        self.first_room = self.end[seq] - self.first_pos
        self.next_table = self._next_table(self.rank_at) if k * self.m <= NEXT_CELLS else None
        self._universal: dict | None = None
        self._tails: list[np.ndarray] = []
        self.max_tail = 0
        while (k >= 1 and self.max_tail < TAIL_LENGTH and k ** (self.max_tail + 1) <= TAIL_PATTERNS
               and k ** (self.max_tail + 1) * max(1, len(src)) <= TAIL_CELLS):
            self.max_tail += 1

    # ------------------------------------------------------------ next item
    @property
    def keys(self) -> np.ndarray:
        """Sorted keys ``rank * m + position`` of the items of X, then a sentinel.

        Built on first use: searches whose windows are all read, or looked
        up in the next-occurrence table, never need them.
        """
        if self._keys is None:
            from .premining_numba import positions_by_item  # noqa: PLC0415 - imports numba

            shifted = self.rank_at + 1  # positions outside X group first, and are dropped
            held = np.bincount(shifted, minlength=self.n_items + 1)
            by_rank = positions_by_item(shifted, self.n_items + 1)[held[0]:]
            self._keys = np.empty(by_rank.size + 1, dtype=np.int64)
            np.add(np.repeat(np.arange(self.n_items, dtype=np.int64) * self.m, held[1:]),
                   by_rank, out=self._keys[:-1])
            self._keys[-1] = (self.n_items + 1) * self.m
        return self._keys

    def _next_table(self, ranks: np.ndarray) -> np.ndarray:
        """``t[r, p]``: first position ``>= p`` holding rank ``r`` (``m`` if none; ``p <= n``)."""
        n = ranks.size
        table = np.empty((self.n_items, n + 1), dtype=self.dtype)
        pos = np.arange(n + 1, dtype=self.dtype)
        for r in range(self.n_items):
            hit = np.where(np.append(ranks == r, False), pos, self.m)
            table[r] = np.minimum.accumulate(hit[::-1])[::-1]
        return table

    def next(self, r: int, pos: np.ndarray) -> np.ndarray:
        """First position ``>= pos`` holding rank ``r`` (``>= m`` if none).

        It may lie in a later sequence: callers compare it with the end of
        the sequence of ``pos``.
        """
        if self.next_table is not None:
            return self.next_table[r, pos]
        base = r * self.m
        return self.keys[np.searchsorted(self.keys, base + pos)] - base

    def next_before(self, r: int, e: np.ndarray, limit: np.ndarray) -> np.ndarray:
        """Per sequence, the first position of rank ``r`` after ``e`` (``>= limit`` if none before).

        With the next-occurrence table, a look-up; without it, the first
        :data:`_SCAN` positions after ``e`` are read and the rest searched
        (:func:`.premining_numba.next_in_window`).
        """
        if self.next_table is not None:
            return self.next_table[r, e + 1]
        from .premining_numba import next_in_window  # noqa: PLC0415 - imports numba

        return next_in_window(self.rank_at, self.keys, self.m, r, e, limit, _SCAN,
                              e.size >= _PARALLEL_ROWS)

    def next_all(self, pos: np.ndarray, a: int, b: int) -> np.ndarray:
        """:meth:`next` for ranks ``a .. b-1`` at once: shape ``(b - a, pos.size)``."""
        if self.next_table is not None:
            return self.next_table[a:b, pos]
        base = np.arange(a, b, dtype=np.int64)[:, None] * self.m
        found = self.keys[np.searchsorted(self.keys, (base + pos).ravel())]
        return found.reshape(b - a, -1) - base

    # ------------------------------------------------------- universal rests
    def universal(self, y: int) -> np.ndarray:
        """``u[p]``: greedy blocks holding all of ``X`` in the rest of ``p``'s sequence.

        The rest of the sequence from ``p`` contains every pattern over
        ``X`` of at most ``u[p]`` items (one item per block).  Exact up to
        ``y`` (larger values read ``>= y``); entry ``n`` is 0 (an empty
        rest).  Computed on first use and extended when a longer ``y`` asks.
        """
        st = self._universal
        if st is None:
            st = self._universal = {"u": np.zeros(self.m, dtype=np.int32), "done": 0}
            # only sequences holding every item of X can hold a block
            held = np.bincount(self.first_seq, minlength=self.lengths.size)
            long_seq = np.flatnonzero(held == self.n_items)
            pos = concat_ranges(self.start[long_seq], self.lengths[long_seq])
            seq_end = np.repeat(self.end[long_seq], self.lengths[long_seq])
            block_end = np.full(pos.size, -1, dtype=np.int64)  # end of the first block
            for r in range(self.n_items):
                block_end = np.maximum(block_end, self.next(r, pos))
            complete = block_end < seq_end
            st["last"] = complete & (block_end + 1 == seq_end)  # the block ends the sequence
            st["inner"] = complete & ~st["last"]
            st["after"] = np.searchsorted(pos, block_end[st["inner"]] + 1)  # rest after it
            st["pos"], st["count"] = pos, np.zeros(pos.size, dtype=np.int32)
            st["reach"] = np.ones(pos.size, dtype=bool)  # the rest holds r blocks
        while st["done"] < y and st["reach"].any():
            st["done"] += 1
            reach = st["last"] & (st["done"] == 1)
            reach[st["inner"]] = st["reach"][st["after"]]
            st["reach"] = reach
            st["count"] += reach
            st["u"][st["pos"]] = st["count"]
        return st["u"]

    # ------------------------------------------------------------ tail table
    def tails(self, rq: int) -> np.ndarray:
        """Start of the rightmost match of every tail ``Q`` of ``rq`` items in every sequence.

        Shape ``(sequences, |X|^rq)``, column ``sum_i rank(Q_i) |X|^(rq-1-i)``;
        -1 where ``Q`` does not occur.  ``1 <= rq <= max_tail``.
        """
        while len(self._tails) < rq:
            prev = self._tails[-1] if self._tails else self.end[:, None]
            cols = []
            for r in range(self.n_items):
                base = r * self.m
                j = np.searchsorted(self.keys, base + prev.astype(np.int64)) - 1
                here = self.keys[np.maximum(j, 0)] - base  # last item r before the rest
                ok = (prev >= 0) & (j >= 0) & (here >= self.start[:, None])
                cols.append(np.where(ok, here, -1).astype(self.dtype))
            self._tails.append(np.concatenate(cols, axis=1))
        return self._tails[rq - 1]


def _chunks(n: int) -> int:
    """Runs of ``n`` sequences for the parallel kernels of :mod:`.premining_numba` (1: serial)."""
    import numba  # noqa: PLC0415 - imported on first use

    return 1 if n < _PARALLEL_ROWS else _RUNS_PER_THREAD * numba.get_num_threads()


class _Children(NamedTuple):
    """The children of a search node that :meth:`_LengthSearch._child_bounds` listed.

    Child ``r``'s sequences are ``seq[at[r]:at[r + 1]]``, its match ends
    ``end[at[r]:at[r + 1]]`` (empty for the children it did not list).
    """

    at: np.ndarray
    seq: np.ndarray
    end: np.ndarray


class _LengthSearch:
    """Branch and bound for the largest support of length-``y`` patterns (module doc).

    Parameters
    ----------
    index : _Index
    y : int
        Pattern length.
    """

    def __init__(self, index: _Index, y: int):
        self.ix, self.y = index, y
        self.nodes = 0
        self.rq = min(index.max_tail, y)
        self.tails = index.tails(self.rq) if self.rq else None
        self.universal = index.universal(y) if 0 < index.n_items <= UNIVERSAL_ITEMS else None

    def _root_bounds(self, room: int) -> np.ndarray:
        """:meth:`_child_bounds` of the empty prefix (from the first occurrences)."""
        from .premining_numba import weights_with_room  # noqa: PLC0415 - imports numba

        ix = self.ix
        return weights_with_room(ix.first_at, ix.first_seq, ix.first_room, ix.w, room)

    def _child_bounds(self, idx: np.ndarray, e: np.ndarray, room: int, best: int | None
                      ) -> tuple[np.ndarray, "_Children | None"]:
        """Per item ``x``: weight of the sequences holding ``x`` after ``e``, ``room`` items early.

        That is, with at least ``room`` items after it: the room-bounded
        support of the child ``P x`` (its support when ``room`` is 0).
        When the windows are read for it and ``best`` is given, the children
        of bound above ``best`` are listed on the way (else ``None``:
        :meth:`_child` finds each one when it is visited).
        """
        ix = self.ix
        if ix.next_table is None:
            from .premining_numba import (  # noqa: PLC0415 - imports numba
                window_children, window_item_weights, window_size)

            size = window_size(ix.end, idx, e, room)
            if size <= _WINDOW_RATIO * ix.n_items * idx.size:  # short: read them
                if best is None:
                    return window_item_weights(ix.rank_at, e, ix.end[idx] - room, ix.w[idx],
                                               ix.n_items, _chunks(idx.size)), None
                kids, at, seq, end = window_children(ix.rank_at, ix.end, ix.w, idx, e, room,
                                                     ix.n_items, best, _chunks(idx.size))
                return kids, _Children(at, seq, end)
        limit = ix.end[idx] - room
        w = ix.wf[idx]
        out = np.empty(ix.n_items, dtype=np.float64)
        step = max(1, _CHUNK_CELLS // max(1, idx.size))
        for a in range(0, ix.n_items, step):
            b = min(ix.n_items, a + step)
            out[a:b] = (ix.next_all(e + 1, a, b) < limit) @ w
        return np.rint(out).astype(np.int64), None

    def _child(self, idx: np.ndarray | None, e: np.ndarray | None, r: int, room: int,
               made: "_Children | None" = None) -> tuple[np.ndarray, np.ndarray]:
        """The sequences and match ends of the child extending the prefix by rank ``r``.

        ``idx is None``: the prefix is empty (the child is the item itself);
        ``made``: the children that :meth:`_child_bounds` listed.
        """
        ix = self.ix
        if made is not None:
            a, b = made.at[r], made.at[r + 1]
            return made.seq[a:b], made.end[a:b]
        if idx is None:
            a, b = ix.first_at[r], ix.first_at[r + 1]
            ok = ix.first_room[a:b] > room
            return ix.first_seq[a:b][ok], ix.first_pos[a:b][ok]
        limit = ix.end[idx] - room
        nxt = ix.next_before(r, e, limit)
        ok = nxt < limit
        return idx[ok], nxt[ok]

    def _assess(self, idx: np.ndarray, e: np.ndarray, left: int, best: int,
                weight: int | None = None) -> tuple[int, int]:
        """Lower and upper bounds of the best completion of a node by ``left`` items.

        Parameters
        ----------
        idx, e : numpy.ndarray
            The node's sequences (room for ``left`` items) and match ends.
        left : int
            Items still to add.
        best : int
            The running value to beat.
        weight : int, optional
            The weight of ``idx`` when known (its parent's bound of it).

        Returns
        -------
        best : int
            ``best`` raised to the weight of the universal rests, or to the
            exact best completion when ``left`` is the tail length.
        upper : int
            Upper bound of the support of every completion (the tail bound,
            else the room-bounded support).
        """
        ix, rq = self.ix, self.rq
        self.nodes += 1
        sure = 0
        idx_t, e_t = idx, e
        if self.universal is not None and idx.size:
            rest = np.where(e + 1 < ix.end[idx], e + 1, ix.m - 1)
            full = self.universal[rest] >= left
            sure = int(ix.w[idx[full]].sum())
            best = max(best, sure)
            idx_t, e_t = idx[~full], e[~full]
        if not (rq and left >= rq):
            return best, int(ix.w[idx].sum()) if weight is None else weight
        from .premining_numba import tail_weights  # noqa: PLC0415 - imports numba

        upper = sure + int(tail_weights(self.tails, idx_t, e_t + (left - rq), ix.w,
                                        _chunks(idx_t.size)).max())
        if left == rq:  # the exact best completion
            best = max(best, upper)
        return best, upper

    def run(self, beat: int, stop: int) -> int:
        """Largest support of a length-``y`` pattern above ``beat``, or ``beat``.

        Parameters
        ----------
        beat : int
            Value to beat (at least the floor).
        stop : int
            The search ends as soon as it reaches this value.

        Returns
        -------
        int
            ``max(beta_y, beat)`` when it is below ``stop``; otherwise a
            value ``>= stop`` that is at most ``max(beta_y, beat)``.

        Notes
        -----
        With a tail table, the children of a node are assessed together
        and visited in decreasing order of their tail bounds (close to the
        best completion; their room bounds barely differ on dense data).
        Without one, a child is only built when it is visited, in
        decreasing order of its room bound.
        """
        ix, y, rq = self.ix, self.y, self.rq
        best = int(beat)
        if best >= stop or ix.n_items == 0:
            return best
        root = np.flatnonzero(ix.lengths >= y)
        if int(ix.w[root].sum()) <= best:
            return best
        best, bound = self._assess(root, ix.start[root] - 1, y, best)
        if best >= stop:
            return best
        # stack entries: (bound, depth, sequences, match ends, rank, made); rank -1: an
        # assessed node; else a child not yet assessed, with its parent's sequences and ends
        # (None: the empty prefix) and the children its parent listed (made, else None)
        stack = [(bound, 0, root, ix.start[root] - 1, -1, None)]
        while stack:
            bound, d, idx, e, r, made = stack.pop()
            if bound <= best:
                continue
            left = y - d  # items still to add
            if r >= 0:
                idx, e = self._child(idx, e, r, left, made)
                best, bound = self._assess(idx, e, left, best, bound)
                if best >= stop:
                    return best
                if bound <= best:
                    continue
            # at left == 1 the children are the patterns: their bounds are the exact supports
            kids, made = (self._root_bounds(left - 1), None) if d == 0 else \
                self._child_bounds(idx, e, left - 1, best if left > 1 else None)
            if left == 1:
                best = max(best, int(kids.max()))
                if best >= stop:
                    return best
                continue
            order = np.lexsort((np.arange(kids.size), -kids)).tolist()  # best first
            parent = idx if d else None
            if not rq:
                for c in order[::-1]:
                    if kids[c] > best:
                        stack.append((int(kids[c]), d + 1, parent, e, c, made))
                continue
            children = []
            for c in order:
                if kids[c] <= best:
                    break
                ci, ce = self._child(parent, e, c, left - 1, made)
                best, upper = self._assess(ci, ce, left - 1, best, int(kids[c]))
                if best >= stop:
                    return best
                if upper > best and left - 1 > rq:
                    children.append((upper, -c, ci, ce))
            children.sort(key=lambda t: t[:2])
            for upper, c, ci, ce in children:
                stack.append((upper, d + 1, ci, ce, -1, None))
        return best
