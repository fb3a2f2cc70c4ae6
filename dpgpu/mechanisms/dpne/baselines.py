"""DPSU baselines of the DPNE paper (Section 3.1.2, Tables 4 and 5): DP set union over n-grams.

Each gram of length ``1 .. T`` is an item of DPSU (Gopi et al., ICML'20);
nothing uses the structure of n-grams.

* ``dpsu-all``: one DPSU over the union of all k-grams, ``k = 1 .. T``,
  each user keeping ``T * Delta_0`` of them, with the whole budget.
* ``dpsu-even``: one DPSU per ``k`` (``Delta_0`` each), the budget split
  evenly: Gaussian noise ``sigma_k = sqrt(T) sigma*`` (zCDP composition, as
  DPNE's equal schedule) and thresholds at ``delta / (2T)`` each; Laplace
  noise at ``epsilon / T`` and thresholds at ``delta / T`` each (basic
  composition; the paper's "about epsilon / sqrt(T)" is the advanced
  composition of the same split).
* ``dpsu-single``: one DPSU over the ``T``-grams alone with the whole budget
  (the paper runs it once per ``k``; call it once per ``max_n``).

Policies.  ``weighted``: the weighted-Gaussian histogram of
:mod:`.histogram` (L2 sensitivity ``GRID``), discrete Gaussian noise, the
threshold of :func:`.calibration.dpsu_integer_threshold` -- the privacy
argument of the module doc of :mod:`dpgpu.mechanisms.dpne` with one level.
``laplace``: Policy Laplace (:mod:`.policy`): each user adds ``GRID`` units
by integer l1-descent towards the cutoff ``Gamma = rho + alpha * lambda``;
the final histogram has L1 sensitivity ``GRID`` (contractivity, see
:mod:`.policy`), so discrete Laplace noise of scale ``lambda = GRID /
epsilon`` makes the noisy histogram ``epsilon``-DP on the grams both
neighbours keep (every kept gram is noised, zero weight included), and the
threshold ``rho = max_t ceil(GRID / t) + c_t``
(``P[L > c_t] <= 1 - (1 - delta)**(1/t)``) keeps the grams only the added
user holds unreleased except with probability ``delta``: ``(epsilon,
delta)``-DP.  This integer policy raises a user's *lowest* grams first, so
it favours rare grams and releases fewer than Gopi et al.'s real-valued
rule (equal shares capped by the gaps), whose integer rounding we have not
proved contractive.

Policy Gaussian is not offered: no integer form of it is private.  Its
real-valued proof rests on each user's step being an exact projection onto
the ball ``{z >= 0, ||z||_2 <= 1}``, which never increases distances.  On
the integer grid, any step that fills a gap vector exactly when it fits the
budget ``S`` can only be non-expanding if it maps to a nearest integer point
of the ball, and those maps expand distances: at ``S = 64`` the gaps
``(1, 65)`` and ``(2, 65)`` (distance 1) leave residual gaps ``(1, 1)`` and
``(0, 2)`` (distance sqrt 2).  Floor rounding of the scaled step fares
worse: a 131-user example at ``S = 64`` ends with neighbouring histograms
64.19 grid units apart, above the sensitivity the noise is calibrated to,
and such excesses can add up over users.  Keeping the histogram real and
thresholding ``H_w + Z_w / S`` with discrete Gaussian ``Z`` does not help:
the decision ``Z_w > S (rho - H_w)`` depends on ``H`` only through the
integer ``floor(S (rho - H_w))``, so the privacy is that of the rounded
histogram, whose L2 distance between neighbours can exceed ``S`` by up to
one unit in every gram whose weight differs -- and in set union that
number has no public bound.  (Real-valued Gaussian noise itself is ruled
out by the integer-noise rule of DESIGN.md.)

Noise is keyed by the gram's id in its run (:func:`release_run`: its gram id
plus the offset of its length), which is injective within the run's
``(key, tag)`` by construction -- content hashes, used before, collide for
long grams over big alphabets (two grams, one noise value); the noise law is
unchanged, the values a seed draws are not.  The per-user subset choice is
keyed by the user and the rank of the gram among the user's own, under its
own key (:func:`~.histogram.bounded_pairs`): distinct users draw disjoint
words.  Both are pseudorandom values drawn independently for every
distinct input, and item ids, user ids
and gram ids are ranks that adding a user may shift; a shift only relabels
which independent value a gram or a pair gets.  So the privacy argument
couples the two neighbours' randomness by gram and user *content*: under
that coupling every other user keeps the same grams with the same weights
(weighted policy) or is water-filled in the same relative order (Policy
Laplace: users in a keyed random order, gram ties by content, never by
id; :func:`.policy.fill_order`), and each gram gets the same noise.
Then the bounded histograms differ in at most ``b`` grams
(:func:`differing_draws`, public): the ``cap`` grams the added user keeps
under the weighted policy, and under Policy Laplace at most ``GRID + cap``
per run (integer histograms within L1 distance ``GRID`` on the grams both
keep, plus the ``cap`` grams only the added user keeps: Policy Laplace
noises every kept gram, zero weight included, see :mod:`.policy`).
Every other gram gets the
same decision in both.  With the sampler within ``tv`` of exact noise per
draw, replacing it by exact noise on those ``b`` draws changes each event's
probability by at most ``b * tv`` on either side, so the step is ``(epsilon,
delta + (1 + e^epsilon) b tv)``-DP.  As for DPNE, the user's ``delta`` is the
total: the runs are calibrated at ``delta`` less the samplers' allowance
``min(1e-9, delta / 100)``, which the ledger charges ``(1 + e^epsilon) b tv``
against (refusing, before any data is read, a ``delta`` too small for it).
Every supported gram gets its noise,
however many there are: no cap on the support, whose size depends on the
data, decides what is released.

Counting over Dask (``engine="dask"``), as DPNE does: the database is split
by user (:func:`dpgpu.scale.partitions.partition` with ``by_user=True``),
every partition gives its grams the ids of the whole database
(:func:`gram_ids`: lexicographic ranks, one length at a time) and bounds
its users' contributions where their data is: the weighted histogram, or
for Policy Laplace the kept ``(user, gram)`` pairs, which the client
water-fills in the orders of :func:`.policy.fill_order` (the policy is sequential
over users: a keyed random user order, grams by content).  The subset
choice is keyed by the user and its own grams, under its own key, derived from the
release's (:data:`BOUNDING`): the partitions receive only it, never the key
of the noise, which the client alone draws.  The release is the same on
both engines for the same key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import Context, Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

from ...errors import InvalidParameter
from ...ops.keys import sorted_unique, sorted_unique_ints
from ...privacy import DiscreteGaussian, DiscreteLaplace, laplace_scale, sampling_delta
from ...scale.partitions import Partitions, partition
from .calibration import GRID, dpsu_integer_threshold
from .histogram import TAG_NOISE, TAG_ORDER, bounded_histogram, bounded_pairs, \
    merge_histograms, noisy_release
from .levels import Positions
from .policy import content_ranks, fill_order, label_ranks, policy_histogram

METHODS = ("dpsu-all", "dpsu-even", "dpsu-single")
POLICIES = ("weighted", "laplace")


#: Policy-Laplace cutoffs (grid units) stay below this (int64 weights).
MAX_CUTOFF = 2.0 ** 62

#: Label of the key of the per-user subset choice, derived from the release key:
#: the only key the partitions (Dask workers) receive.
BOUNDING = "dpsu: contribution bounding"


@dataclass
class GramOccurrences:
    """One partition's k-gram occurrences, ``k = 1 .. T``, with their global gram ids.

    The id of a k-gram is its rank among the distinct k-grams of the whole
    database in lexicographic order, so every partition holding all the
    texts of some users gives the same ids as the whole database.  It is
    assigned one length at a time (:func:`gram_ids`): a k-gram's *code* is
    ``prefix_id * n_items + last_item`` (the item itself for ``k = 1``), the
    client takes the union of the partitions' codes, and each partition looks
    its codes up in it.

    Attributes
    ----------
    pos : Positions
    n_items : int
    starts : tuple of numpy.ndarray of int64
        ``starts[k-1]``: the window starts of length ``k`` (lengths assigned so far).
    ids : tuple of numpy.ndarray of int64
        ``ids[k-1]``: the global gram id of each of those windows.
    code : numpy.ndarray of int64 or None
        Codes of the windows of the next length (between :meth:`next_codes`
        and :meth:`assign`).
    """

    pos: Positions
    n_items: int
    starts: tuple = ()
    ids: tuple = ()
    code: np.ndarray | None = None

    @classmethod
    def of(cls, db: Any, n_items: int) -> "GramOccurrences":
        """The occurrences of a database (or of one partition of it), no ids yet.

        Parameters
        ----------
        db : SequenceDB
        n_items : int
            Size of the whole database's vocabulary.

        Returns
        -------
        GramOccurrences
        """
        return cls(Positions.of(db), n_items)

    def next_codes(self) -> "GramOccurrences":
        """This state with the codes of the windows of the next length."""
        k = len(self.ids) + 1
        starts = self.pos.windows(k)
        if k == 1:
            return replace(self, code=self.pos.items[starts].astype(np.int64))  # int32 items
        from .counting_numba import window_codes  # noqa: PLC0415 - Numba loads on first use

        return replace(self, code=window_codes(self.starts[-1], self.ids[-1], starts,
                                               self.pos.items, k, self.n_items))

    def distinct_codes(self) -> np.ndarray:
        """Sorted distinct codes of :meth:`next_codes`."""
        return sorted_unique_ints(self.code)

    def assign(self, values: np.ndarray) -> "GramOccurrences":
        """Record the global ids of the next length.

        Parameters
        ----------
        values : numpy.ndarray of int64
            Sorted distinct codes of the whole database at that length (a
            superset of this partition's).

        Returns
        -------
        GramOccurrences
        """
        from .counting_numba import code_ranks  # noqa: PLC0415 - Numba loads on first use

        k = len(self.ids) + 1
        return replace(self, starts=self.starts + (self.pos.windows(k),),
                       ids=self.ids + (code_ranks(self.code, values, self.n_items),),
                       code=None)

    def occurrences(self, ks: list[int], offsets: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
        """``(user, gram)`` of every occurrence of the grams of lengths ``ks``.

        Gram ids of length ``ks[i]`` are shifted by ``offsets[i]`` (one item
        space for the run).
        """
        users = np.concatenate([self.pos.users[self.starts[k - 1]] for k in ks])
        grams = np.concatenate([self.ids[k - 1] + offsets[i] for i, k in enumerate(ks)])
        return users, grams

    def histogram(self, ks: list[int], offsets: np.ndarray, cap: int, key: Any, tag: int
                  ) -> tuple[np.ndarray, np.ndarray]:
        """Weighted bounded histogram of the run's grams (:func:`~.histogram.bounded_histogram`)."""
        return bounded_histogram(*self.occurrences(ks, offsets), cap, key, tag)

    def kept_pairs(self, ks: list[int], offsets: np.ndarray, cap: int, key: Any, tag: int
                   ) -> tuple[np.ndarray, np.ndarray]:
        """The ``(user, gram)`` pairs each user keeps (:func:`~.histogram.bounded_pairs`)."""
        u, g, _ = bounded_pairs(*self.occurrences(ks, offsets), cap, key, tag)
        return u, g


def gram_ids(occ: Partitions, max_n: int) -> tuple[Partitions, list[np.ndarray]]:
    """Assign the global gram ids of lengths ``1 .. max_n`` in every partition.

    Parameters
    ----------
    occ : Partitions
        Of :class:`GramOccurrences` without ids, each holding all the texts
        of its users.
    max_n : int

    Returns
    -------
    occ : Partitions
        With ``ids`` of every length.
    values : list of numpy.ndarray of int64
        ``values[k-1]``: the sorted distinct codes of the k-grams of the
        whole database (gram id ``j`` has code ``values[k-1][j]``).
    """
    values = []
    for _ in range(max_n):
        occ = occ.map(GramOccurrences.next_codes)
        parts = occ.gather(GramOccurrences.distinct_codes)
        values.append(parts[0] if len(parts) == 1 else sorted_unique(np.concatenate(parts)))
        occ = occ.map(GramOccurrences.assign, values[-1])
    return occ, values


def gram_rows(values: list[np.ndarray], n_items: int) -> list[np.ndarray]:
    """The item matrices of the gram ids of :func:`gram_ids`.

    Parameters
    ----------
    values : list of numpy.ndarray of int64
        Sorted distinct codes per length.
    n_items : int

    Returns
    -------
    list of numpy.ndarray of int32
        ``rows[k-1]``: the ``(G_k, k)`` matrix, row ``j`` the items of gram ``j``.
    """
    rows: list[np.ndarray] = []
    for k, v in enumerate(values, 1):
        last = (v if k == 1 else v % n_items).astype(np.int32)[:, None]
        rows.append(last if k == 1 else np.concatenate([rows[-1][v // n_items], last], axis=1))
    return rows


def runs(method: str, max_n: int) -> list[list[int]]:
    """The gram lengths of each DPSU run of ``method``.

    Parameters
    ----------
    method : {"dpsu-all", "dpsu-even", "dpsu-single"}
        Any other value is taken as ``"dpsu-single"``.
    max_n : int

    Returns
    -------
    list of list of int
        ``dpsu-all``: one run of ``1 .. max_n``; ``dpsu-even``: one run per
        length; ``dpsu-single``: one run of ``max_n``.
    """
    if method == "dpsu-all":
        return [list(range(1, max_n + 1))]
    if method == "dpsu-even":
        return [[k] for k in range(1, max_n + 1)]
    return [[max_n]]


def run_noise(policy: str, epsilon: float, n_runs: int, sigma_star: float) -> Any:
    """The sampler of each of ``n_runs`` even runs (``sigma_star``: the weighted policy's budget).

    Parameters
    ----------
    policy : {"weighted", "laplace"}
    epsilon : float
        The release's epsilon.
    n_runs : int
    sigma_star : float
        ``zcdp_sigma`` of the release's ``(epsilon, delta / 2)`` (weighted policy).

    Returns
    -------
    DiscreteGaussian or DiscreteLaplace
        ``N_Z(0, s**2)`` with ``s`` the least float at or above ``GRID sigma_star
        sqrt(n_runs)`` (:func:`even_sigma`), or discrete Laplace of scale ``GRID
        n_runs / epsilon``.
    """
    if policy == "weighted":
        return DiscreteGaussian(GRID * even_sigma(sigma_star, n_runs))
    return DiscreteLaplace(laplace_scale(epsilon, GRID * n_runs))


def even_sigma(sigma_star: float, n_runs: int) -> float:
    """``sigma_star sqrt(n_runs)`` rounded up: never below the exact product.

    The float ``sigma_star * math.sqrt(n_runs)`` is rounded to nearest twice and
    lands below the real number for about half the run counts (``n_runs = 3``:
    one unit in the last place), which would account slightly less zCDP than
    the runs spend.  Compared exactly (squares of rationals) and stepped up
    until it is not below; unchanged where it already was.  ``GRID`` is a
    power of two, so ``GRID * even_sigma(...)`` is exact as well.
    """
    s = sigma_star * math.sqrt(n_runs)
    exact_square = Fraction(sigma_star) ** 2 * n_runs
    while Fraction(s) ** 2 < exact_square:
        s = math.nextafter(s, math.inf)
    return s


def calibrate(policy: str, noise: Any, delta: float, n_runs: int, cap: int,
              alpha: float) -> tuple[Any, int, int]:
    """Sampler, integer threshold and cutoff of one of ``n_runs`` even runs.

    Parameters
    ----------
    policy : {"weighted", "laplace"}
    noise : DiscreteGaussian or DiscreteLaplace
        The runs' sampler (:func:`run_noise`).
    delta : float
        The release's delta for the mechanism (the samplers' allowance left out).
    n_runs : int
    cap : int
        Distinct grams each user keeps in the run.
    alpha : float
        Policy Laplace cutoff ``Gamma = rho + alpha * lambda``.

    Returns
    -------
    (sampler, int, int)
        ``noise``, the integer threshold and the cutoff (0 for the weighted policy).

    Raises
    ------
    InvalidParameter
        Policy Laplace only: naming ``alpha``, when ``alpha * lambda`` (the
        cutoff's part above ``rho``) is not below :data:`MAX_CUTOFF` (2**62
        grid units).
    """
    if policy == "weighted":
        return noise, dpsu_integer_threshold(noise.sigma, delta / (2 * n_runs), cap), 0
    rho = laplace_threshold(noise.scale, delta / n_runs, cap)
    if not alpha * noise.scale < MAX_CUTOFF:
        raise InvalidParameter(f"alpha: {alpha:g} puts the Policy-Laplace cutoff above 2**62 "
                               "grid units; lower alpha")
    return noise, rho, rho + math.ceil(alpha * noise.scale)


def laplace_threshold(scale: float, delta: float, cap: int) -> int:
    """``max_t ceil(GRID / t) + c_t`` with ``P[L > c_t] <= 1 - (1 - delta)**(1/t)``.

    ``L`` is discrete Laplace, ``P[L > c] = p**(c + 1) / (1 + p)`` with
    ``p = exp(-1 / scale)``.  Floats find ``c_t``; each is then checked, and
    raised where needed, against :func:`laplace_tail_bound`, a rigorous upper
    bound on the tail: the float ``p ** (c + 1)`` carries the rounding of ``p``
    to the power ``c + 1`` (relative error up to about ``(c + 1) 1.1e-16``,
    1.6e-12 at scale 2560, 2.3e-11 at 23040), more than the ``1e-12`` kept
    off ``q``.  That margin covers the few roundings of ``q`` itself.
    """
    p = math.exp(-1 / scale)
    best = 0
    for t in range(1, cap + 1):
        q = -math.expm1(math.log1p(-delta) / t) * (1 - 1e-12)
        c = max(0, math.ceil(math.log(q * (1 + p)) / math.log(p)) - 1)
        while p ** (c + 1) / (1 + p) > q:
            c += 1
        share = Decimal(q)                  # exact: the float's own value
        while laplace_tail_bound(scale, c) > share:
            c += 1
        best = max(best, -(-GRID // t) + c)
    return best


def laplace_tail_bound(scale: float, c: int) -> Decimal:
    """An upper bound on ``P[L > c] = exp(-(c + 1) / scale) / (1 + exp(-1 / scale))``.

    ``L``: discrete Laplace of scale ``scale`` (the float itself, exactly as a
    decimal), ``c >= 0``.  Decimal arithmetic at 50 digits, whose ``exp`` is
    correctly rounded: ``1 / scale`` and ``y = (c + 1) / scale`` are within
    ``1e-49`` relative of the real quotients, so ``exp(-y)`` is within a factor
    ``exp(1e-49 y) (1 + 1e-49)`` of the real one and the quotient within
    ``(3 + y) 1e-49`` relative; the factor ``1 + (1 + y) 1e-40`` is far above that.
    """
    with localcontext(Context(prec=50)):     # every operation below at 50 digits
        x = 1 / Decimal(scale)
        y = (c + 1) * x
        tail = (-y).exp() / (1 + (-x).exp())
        return tail * (1 + (1 + y) * Decimal("1e-40"))


def release_runs(db: Any, plan: list[list[int]], caps: list[int], calib: list[tuple],
                 policy: str, max_n: int, key: Any, engine: str = "local",
                 client: Any = None) -> list[np.ndarray]:
    """Every DPSU run of a baseline: the released grams per length.

    The per-user bounding runs where the user's data is (partitions by
    user, :func:`dpgpu.scale.partitions.partition`) with a key derived from
    ``key`` (:data:`BOUNDING`); the noise is drawn here, with ``key``.

    Parameters
    ----------
    db : SequenceDB
    plan : list of list of int
        Gram lengths of each run (:func:`runs`).
    caps : list of int
        Distinct grams each user keeps, per run.
    calib : list of (sampler, int, int)
        Noise, integer threshold and cutoff of each run (:func:`calibrate`).
    policy : {"weighted", "laplace"}
    max_n : int
    key : NoiseKey
        The release's key (it never leaves this process).
    engine : {"local", "dask"}
        Where the bounded histograms are built (same release for the same key).
    client : dask.distributed.Client or str, optional
        With ``engine="dask"`` (see :func:`dpgpu.scale.partitions.run_client`).

    Returns
    -------
    list of numpy.ndarray of int32
        ``levels[k-1]``: the ``(|S_k|, k)`` released k-grams (empty for the
        lengths no run covers).
    """
    n_items = db.vocab.size
    bounding = key.derive(BOUNDING)  # what partitions (Dask workers) may hold
    occ = partition(db, engine, client, by_user=True).map(GramOccurrences.of, n_items)
    occ, values = gram_ids(occ, max_n)
    rows = gram_rows(values, n_items)
    levels = [np.zeros((0, k), dtype=np.int32) for k in range(1, max_n + 1)]
    item_rank = label_ranks(db.vocab.labels) if policy == "laplace" else None
    for i, (ks, cap, (noise, threshold, cutoff)) in enumerate(zip(plan, caps, calib)):
        offsets = np.cumsum([0] + [rows[k - 1].shape[0] for k in ks])
        content = content_ranks([rows[k - 1] for k in ks], item_rank) \
            if policy == "laplace" else None
        keys, weights = bounded_run(occ, policy, ks, offsets, cap, cutoff, bounding, 4 * i,
                                    content)
        out = release_run(keys, weights, rows, ks, offsets, noise, threshold, key, 4 * i)
        for k, grams in zip(ks, out):
            levels[k - 1] = grams
    return levels


def bounded_run(occ: Partitions, policy: str, ks: list[int], offsets: np.ndarray, cap: int,
                cutoff: int, bounding: Any, tag: int, content: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """The integer histogram of one DPSU run before noise, bounded per user in its partition.

    ``weighted``: each partition's weighted bounded histogram, added here
    (disjoint users).  ``laplace``: each partition's kept ``(user, gram)``
    pairs, water-filled here (:func:`.policy.water_fill` is sequential over
    users) in the orders of :func:`.policy.fill_order`.

    Parameters
    ----------
    occ : Partitions
        Of :class:`GramOccurrences` with ids (:func:`gram_ids`).
    policy : {"weighted", "laplace"}
    ks : list of int
        The run's gram lengths.
    offsets : numpy.ndarray of int64
        Start of each length's ids in the run's item space, and its size last.
    cap : int
        Distinct grams each user keeps.
    cutoff : int
        Policy Laplace ``Gamma`` (unused by ``weighted``).
    bounding : NoiseKey
        Key of the subset choice (tag ``tag + TAG_SUBSET``) and of Policy
        Laplace's user order (``tag + TAG_ORDER``).
    tag : int
        The run's base tag.
    content : numpy.ndarray of int64
        Policy Laplace only: :func:`.policy.content_ranks` of the run's grams.

    Returns
    -------
    keys : numpy.ndarray of int64
        Sorted supported items of the run.
    weights : numpy.ndarray of int64
    """
    if policy == "weighted":
        return merge_histograms(occ.gather(GramOccurrences.histogram, ks, offsets, cap,
                                           bounding, tag))
    parts = occ.gather(GramOccurrences.kept_pairs, ks, offsets, cap, bounding, tag)
    u, g = fill_order(np.concatenate([p[0] for p in parts]),
                      np.concatenate([p[1] for p in parts]), content, bounding, tag + TAG_ORDER)
    ranks, weights = policy_histogram(u, g, int(offsets[-1]), GRID, cutoff)
    ids = np.empty_like(content)
    ids[content] = np.arange(content.size)          # content rank -> gram id
    ids = ids[ranks]
    order = np.argsort(ids)
    return ids[order], weights[order]


def release_run(keys: np.ndarray, weights: np.ndarray, rows: list[np.ndarray], ks: list[int],
                offsets: np.ndarray, noise: Any, threshold: int, key: Any,
                tag: int) -> list[np.ndarray]:
    """Noise and threshold of one DPSU run over the grams of lengths ``ks``.

    The noise identity of a gram is its key in the run's item space (gram
    id plus its length's offset): distinct grams of the run have distinct
    keys, so no two share a draw.

    Parameters
    ----------
    keys, weights : numpy.ndarray of int64
        The run's bounded histogram (:func:`bounded_run`): distinct keys.
    rows : list of numpy.ndarray of int32
        Item matrices of the gram ids (:func:`gram_rows`).
    ks : list of int
    offsets : numpy.ndarray of int64
        Start of each length's ids in the run's item space.
    noise : DiscreteGaussian or DiscreteLaplace
    threshold : int
    key : NoiseKey
        The release's key (noise tag ``tag + TAG_NOISE``).
    tag : int

    Returns
    -------
    list of numpy.ndarray of int32
        Released rows per length of ``ks``.
    """
    level = np.searchsorted(offsets, keys, side="right") - 1
    out = []
    ident = keys.astype(np.int64, copy=False)
    if isinstance(noise, DiscreteGaussian):
        mask = noisy_release(weights, ident, noise.sigma, threshold, key, tag)
    else:
        mask = weights + noise.sample(key, ident, tag=tag + TAG_NOISE,
                                      backend="numpy") > threshold
    for i, k in enumerate(ks):
        sel = mask & (level == i)
        out.append(rows[k - 1][keys[sel] - offsets[i]])
    return out


def differing_draws(policy: str, caps: list[int]) -> int:
    """Public bound on the noise draws whose input one user can change (module doc).

    Parameters
    ----------
    policy : {"weighted", "laplace"}
    caps : list of int
        Distinct grams each user keeps, per run.

    Returns
    -------
    int
        ``sum(caps)`` for the weighted policy.  For Policy Laplace, per run,
        ``GRID`` for the grams both neighbours keep (l1 distance ``GRID``)
        plus ``cap`` for those only the added user keeps.
    """
    return sum(caps) if policy == "weighted" else sum(GRID + c for c in caps)


def sampling_cost(noise: Any, n_draws: int, epsilon: float) -> float:
    """Sampling delta of ``n_draws`` draws (see :func:`dpgpu.privacy.sampling_delta`)."""
    return sampling_delta(noise.tv_per_draw, n_draws, epsilon)

