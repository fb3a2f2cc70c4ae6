"""DPNE: differentially private n-gram extraction (Kim, Gopi, Kulkarni, Yekhanin, NeurIPS'21).

Algorithm 1 of the paper, scalable form: ``S_1`` by weighted-Gaussian DP set
union (DPSU, Gopi et al. ICML'20), then for ``k = 2 .. T`` a weighted-Gaussian
histogram over the *valid* k-grams ``V_k = (S_1 x S_{k-1}) ∩ (S_{k-1} x S_1)``
(or ``S_{k-1} x S_1``, single-side), thresholded at ``rho_k``.  The output is
the sets ``S_1 .. S_T`` -- no counts.  With the both-side rule the union is
downward closed (Proposition 2.1).

Privacy argument (Theorem 2.1, discretised)
-------------------------------------------
``delta`` is the release's total: the samplers' allowance
``min(1e-9, delta / 100)`` is kept out of it (see *Sampler accounting*) and
the mechanism is calibrated at the rest, ``delta' = delta - allowance``
(below, ``delta`` is that ``delta'``).

Neighbouring databases differ in all the texts of one user.  At every level
a user keeps at most ``Delta_k`` distinct valid k-grams (a uniformly random
subset, chosen with keyed randomness) and adds the integer
``w_t = floor(GRID / sqrt(t))`` to each of its ``t`` kept grams, so its
vector of contributions has L2 norm at most ``GRID``: the histogram ``H_k``
(on the grid, ``GRID`` units per unit weight) has L2 sensitivity ``GRID``
whatever ``V_k`` is, and ``V_k`` depends only on earlier *released* sets.
Each level adds discrete Gaussian noise ``N_Z(0, (GRID sigma_k)**2)`` to every
entry of ``H_k`` on ``V_k`` (zero entries included -- see below), which is
``1/(2 sigma_k**2)``-zCDP (Canonne, Kamath & Steinke 2020, Theorem 14,
multivariate); the levels compose to ``sum 1/(2 sigma_k**2) = 1/(2
sigma***2)``-zCDP (the analogue of Proposition 2.3), which gives
``(epsilon, delta/2)`` through CKS20 Corollary 13 (:func:`~.calibration.zcdp_sigma`).
The threshold ``rho_1`` is Theorem 2.1's, computed on the grid from the exact
discrete tail (:func:`~.calibration.dpsu_integer_threshold`): grams held by
the differing user alone stay unreleased except with probability
``delta/2``.  So the release is ``(epsilon, delta)``-DP.  ``rho_k`` for
``k >= 2`` does not affect privacy: it is set from ``eta`` so that the
expected number of spurious k-grams is at most ``eta min(|S_{k-1}|, |V_k|)``
(Proposition 2.2).

Why this discretisation: the paper's weights ``1/sqrt(t)`` are real and its
noise continuous; dpgpu adds only integer noise from keyed, fixed-work
samplers.  Rounding the weights down keeps the sensitivity at ``GRID``; the
discrete Gaussian's (epsilon, delta) profile is accounted through zCDP,
which costs about 6 % more noise than the analytic Gaussian calibration of
Theorem 2.1 (``sigma* = 5.10`` instead of ``4.81`` at ``epsilon = 1,
delta/2 = 5e-8``); the report lists both.

Scalable form (Section 2): ``V_k`` is never built.  Supported candidates get
their noisy weight; every *unsupported* valid candidate is released
independently with probability ``p_k = P[N_Z > c_k]`` -- exactly the law of
a zero entry of ``H_k`` after noise, so the total is the paper's
``Binomial(|V_k| - |supp H_k|, p_k)`` uniformly random valid, unsupported
k-grams.  Those draws are keyed Bernoulli bits over ``V_k``, enumerated in
chunks from the join of ``S_{k-1}`` with itself.

Noise identities: every draw is keyed by ``(key, tag, identity)`` and the
identities of one ``(key, tag)`` are distinct *by construction*, so the draws
are independent.  Level 1 (tag ``1``) uses the item id; level ``k`` uses the
candidate key ``a * n_right + b`` (:class:`~.levels.Space`), for the noise of
supported candidates (tag ``4k + 1``) and the Bernoulli bits of unsupported
ones (tag ``4k + 2``, drawn packed only: candidate ``c`` takes word ``c % 8`` of
the block of ``c // 8``, :meth:`~dpgpu.privacy.NoiseKey.packed_words`) alike:
``(a, b)`` are indices into the released
``S_{k-1}`` and right set, so the key is an injective index of ``V_k``
computed from released sets only (a level whose keys would not fit 63 bits
is not extracted).  Content hashes were used before; they collide for long
grams over big vocabularies (two grams, one noise value).  The noise *law*
is unchanged; the values a given seed draws differ from earlier versions.

Sampler accounting: every draw is within ``tv`` of exact
(:mod:`dpgpu.privacy.samplers`); the ledger charges
``(1 + e^epsilon) * sum_k Delta_k * tv`` as sampling delta, against the
allowance ``min(1e-9, delta / 100)`` kept out of the user's ``delta``
(``sampling_within_delta``, :mod:`dpgpu.privacy.ledger`), so the release is
``(epsilon, delta' + sampling delta)``-DP with that sum at most ``delta``.
The sampling delta depends on the parameters only (``epsilon``,
``Delta_k``, ``sigma_k``), so a ``delta`` too small to hold it is refused
(:class:`~dpgpu.errors.InvalidParameter` naming ``delta``) before any data
is read.  Why that charge suffices: fix a neighbouring pair and let ``M'``
be the mechanism that draws *exactly* the noise (or Bernoulli bit) of the at most ``Delta_k``
candidates the differing user keeps at each level ``k``, and draws every
other value as DPNE does.  Couple the pair by gram content (the identities
are injective, so the keyed values are independent per candidate, whatever
ids a vocabulary taken from the data gives; adding a user only relabels
which independent value an item gets).  Given the released ``S_1 ..
S_{k-1}`` (the same in both), ``V_k`` is the same, and every candidate the
differing user does not keep has the same weight -- or is unsupported in
both -- and the same keyed draw in both, hence the same decision.  So
``M'`` is, level by level, a mixture over the shared draws of exact
discrete Gaussian mechanisms on the user's kept candidates, and is
``(epsilon, delta)``-DP by the argument above.  On either dataset DPNE and
``M'`` differ in at most ``sum_k Delta_k`` draws, each within ``tv``, so
DPNE is ``(epsilon, delta + (1 + e^epsilon) sum_k Delta_k tv)``-DP.  The
bound depends on the parameters only: no level is cut short for the
sake of the sampling delta.  (Earlier versions counted every candidate of
``V_k`` and stopped at a public draw cap, which ended extraction at level 2
once ``|S_1|`` passed about 1,400 at epsilon 1.)

Work cap: the unsupported candidates take one keyed Bernoulli bit each, so
a level costs time linear in ``|V_k|`` (about 60 ns per candidate on one
CPU core).  ``max_candidates`` (public) bounds it: a level whose ``V_k`` is
larger is not extracted, and the report says so.  ``|V_k|`` is computed
from released sets only, so this stopping rule costs no privacy.  The
report shows the vocabulary's size and fingerprint only when the
vocabulary is public (:func:`dpgpu.release.vocabulary_facts`).

Release vocabulary (DPNE and the baselines, :func:`release_of`): the
mechanism computes with the database's item ids, but when the vocabulary is
taken from the data (not ``vocab.public``) those ids are ranks among *all*
the labels of the data, in an order (numeric when every label is an
integer, else text) that one added user's token can flip.  Released as
they are, the ids, their gaps, the order of the released grams and the
vocabulary itself would tell neighbours apart with certainty.  So the
release's vocabulary is made of the labels of the released grams alone,
in the text order of the labels (:func:`.policy.label_ranks`, which
depends on each label alone), every level is re-encoded into it, and its
rows are sorted lexicographically in those ids: the release object, its
pickle and ``ngrams.tsv`` are functions of the released set of grams.  A
public vocabulary is kept with its ids (they are public) and its order.

Counting over Dask (``engine="dask"``): the database is split by user, all
the texts of a user in one partition (:func:`dpgpu.scale.partitions.partition`
with ``by_user=True``), and each partition bounds its users' contributions
and builds its bounded histogram where the data is; the client adds the
histograms of the partitions (disjoint users: the sum is the histogram of
the whole database) and draws every noise value and Bernoulli bit.  The
subset choice is keyed by the user and its own grams, so a worker makes the same
choice as a local run, and the release is the same for the same key.  That
choice has its own key, derived from the release's (``"dpne: contribution
bounding"``): the workers receive only it, never the key of the noise, so
nothing that runs on or travels to a worker can undo the noise.

Baselines: ``dpne(..., method="dpsu-all" | "dpsu-even" | "dpsu-single")``
runs the paper's DPSU baselines instead (:mod:`.baselines`, with their own
privacy argument; ``policy="laplace"`` for Policy Laplace), on either engine.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from ...backend import get_backend, to_numpy
from ...data.sequencedb import SequenceDB, check_db
from ...data.vocabulary import Vocabulary
from ...errors import InvalidParameter
from ...ops.keys import array_module, index_dtype, sorted_unique
from ...privacy import Bernoulli, DiscreteGaussian, PrivacyLedger, analytic_gaussian_sigma, \
    dpsu_threshold, sampling_delta, split_gaussian_sigma
from ...privacy.calibration import MAX_ITEMS
from ...privacy.samplers import MAX_GAUSSIAN_SIGMA
from ...progress import Step, stage_reporter
from ...release import ReleaseWriter, encode_id_grams, names_users, vocabulary_facts
from ...report import Displayed
from ...scale.partitions import check_engine, engine_run, partition
from ...validation import check_choice, check_positive_int, check_positive_real, \
    check_probability
from .calibration import GRID, TAIL_RESOLUTION, dpsu_integer_threshold, tail_probability, \
    tail_threshold, zcdp_sigma
from .histogram import TAG_SPURIOUS, bounded_histogram, merge_histograms, noisy_release
from .baselines import METHODS, POLICIES, calibrate, differing_draws, release_runs, run_noise, \
    runs, sampling_cost
from .device import DeviceOccurrences
from .levels import Level, Positions, Space, first_level, index_of
from .policy import ORDER_TIES, label_ranks

log = logging.getLogger("dpgpu")

RULES = ("both", "single")
SCHEDULES = ("equal", "geometric")
#: Largest max_n accepted (the paper extracts up to 9-grams).
MAX_N = 64
#: Default ``max_candidates``: the largest ``|V_k|`` a level is extracted with
#: (one keyed Bernoulli bit per unsupported candidate; about 6 s per level at
#: this size on one CPU core).
MAX_CANDIDATES = 10 ** 8
#: Largest contribution bound accepted (the paper uses up to a few hundred;
#: calibrating the threshold takes time linear in it): ``calibrate dpsu``'s too.
MAX_CONTRIBUTION = MAX_ITEMS
#: The options, besides epsilon, that set the draws one user can change (for the ledger's message).
DRAWS_HINT = "contribution and max_n"

__all__ = ["dpne", "DPNERelease", "RULES", "SCHEDULES", "METHODS", "POLICIES",
           "MAX_CANDIDATES"]


class DPNERelease(Displayed):
    """The output of :func:`dpne`: the released k-gram sets and the report.

    Attributes
    ----------
    levels : list of numpy.ndarray
        ``levels[k-1]`` is the ``(|S_k|, k)`` int32 matrix of released k-grams,
        ids of :attr:`vocab`.
    report : dict
        Public parameters, budget, ledger, backend, timings (no counts of the data).
    vocab : Vocabulary
        The release vocabulary (:func:`release_of`): the public vocabulary
        given, or, for one taken from the data, the labels of the released
        grams alone, in text order.
    """

    def __init__(self, levels: list[np.ndarray], report: dict, vocab: Any):
        self.levels, self.report, self.vocab = levels, report, vocab

    def _sizes(self) -> dict:
        """Released grams in all, for the repr."""
        return {"grams": sum(self.counts())}

    def counts(self) -> list[int]:
        """Released k-grams per ``k``.

        Returns
        -------
        list of int
            ``counts[k-1]`` is ``|S_k|``, the number of released k-grams,
            for ``k = 1 .. len(levels)``: DPNE stops at the first level it
            does not extract (an empty ``S_{k-1}``, no valid candidate, or
            a cap: ``max_candidates`` or candidate keys past 63 bits, named
            in the report's ``stopped``), so there may be fewer than
            ``max_n`` entries; a baseline gives ``max_n`` (0 for the lengths
            none of its runs covers).
        """
        return [int(g.shape[0]) for g in self.levels]

    def grams(self) -> list[tuple[str, ...]]:
        """Every released gram as a tuple of labels, shortest first.

        Returns
        -------
        list of tuple of str
            The item labels of every gram of :attr:`levels`, ``S_1`` first,
            each level in its row order (no counts: DPNE releases sets).
        """
        return [self.vocab.decode(g) for lvl in self.levels for g in lvl.tolist()]

    def save(self, out_dir: Any, *, force: bool = False):
        """Write ``ngrams.tsv`` (columns ``k``, ``gram``; no counts) and ``report.json``.

        Parameters
        ----------
        out_dir : str or path-like
            The release directory; its folder must exist.
        force : bool
            Replace an existing release directory.

        Returns
        -------
        pathlib.Path
            ``out_dir``.

        Raises
        ------
        InputError
            When ``out_dir`` exists and ``force`` is not set, or may not be
            replaced even with ``force``: it is not a dpgpu release (holds no
            ``report.json``), is a symbolic link or not a directory, or is or
            holds the current folder (:func:`dpgpu.release.check_release_target`);
            or when its folder does not exist.
        """
        grams = [encode_id_grams(self.vocab, lvl) for lvl in self.levels]
        with ReleaseWriter(out_dir, force=force,
                           progress=lambda msg: log.info("dpne: %s", msg)) as w:
            w.write_columns("ngrams.tsv", ("k", "gram"), [
                [lvl.shape[1] for lvl in self.levels for _ in range(lvl.shape[0])],
                np.concatenate(grams) if grams else []])
            return w.finish(self.report)


def release_of(levels: list[Any], report: dict, vocab: Vocabulary) -> DPNERelease:
    """The release of DPNE or of a baseline: its levels in the release vocabulary (module doc).

    A public vocabulary is kept, with its ids and the levels' order.  A
    vocabulary taken from the data is replaced by the labels of the released
    grams alone, in the text order of :func:`.policy.label_ranks` (which
    depends on each label alone), with their names if the vocabulary has
    names, still marked not public; every level is re-encoded into it and
    its rows sorted lexicographically in the new ids.  The release then
    depends on the released grams only: not on unreleased labels, their
    number, or the data's numeric-or-text sort of the labels.

    Parameters
    ----------
    levels : list of array_like of int
        ``levels[k-1]``: the ``(|S_k|, k)`` released k-grams as ids of ``vocab``
        (items only).
    report : dict
        The release's report (its ``vocabulary`` entry,
        :func:`dpgpu.release.vocabulary_facts`, is ``{"public": False}`` for a
        vocabulary taken from the data, whichever of the two it describes).
    vocab : Vocabulary
        The database's vocabulary.

    Returns
    -------
    DPNERelease
    """
    levels = [np.ascontiguousarray(to_numpy(g), dtype=np.int32) for g in levels]
    if not vocab.public:
        used = np.unique(np.concatenate([g.ravel() for g in levels])) if levels else \
            np.zeros(0, dtype=np.int32)
        labels = [vocab.labels[i] for i in used.tolist()]
        rank = label_ranks(labels)                  # new id of each used label
        order = np.argsort(rank)
        remap = np.full(vocab.size, -1, dtype=np.int32)
        remap[used] = rank
        names = None if vocab.names is None else [vocab.names[i] for i in used[order].tolist()]
        vocab = Vocabulary([labels[i] for i in order.tolist()], names, public=False)
        levels = [np.ascontiguousarray(g[np.lexsort(g.T[::-1])])
                  for g in (remap[lvl] for lvl in levels)]
    return DPNERelease(levels, report, vocab)


def sigma_schedule(sigma_star: float, max_n: int, schedule: str, decay: float) -> list[float]:
    """``sigma_1 .. sigma_T`` with ``sum sigma_k**-2 = sigma***-2``.

    Equal, or geometric: ``sigma_k = c sigma_{k-1}`` with ``c = decay``.

    Raises
    ------
    InvalidParameter
        Naming ``decay``, when ``decay ** (2 (max_n - 1))`` lies outside the
        floats, so that some level's share of the budget would round to 0.
    """
    if schedule == "equal":
        return split_gaussian_sigma(sigma_star, [1.0] * max_n)
    # weights decay**(-2k), scaled so the largest is 1 (in logs: no overflow on the way)
    logs = [-2 * k * math.log(decay) for k in range(max_n)]
    top = max(logs)
    weights = [math.exp(x - top) for x in logs]
    if min(weights) == 0.0:
        raise InvalidParameter(f"decay: {decay:g} makes sigma_k differ by a factor of "
                               f"{decay:g}**{max_n - 1} between levels 1 and {max_n}, beyond "
                               "floating point; choose a decay nearer 1 or a smaller max_n")
    return split_gaussian_sigma(sigma_star, weights)


@engine_run()
def dpne(db: SequenceDB, epsilon: float, delta: float, *, max_n: int = 9,
         contribution: int | Sequence[int] = 300, eta: float | None = None,
         rule: str | None = None, schedule: str | None = None, decay: float | None = None,
         seed: int | None = None, backend: Any = None, max_candidates: int | None = None,
         method: str = "dpne", policy: str = "weighted", alpha: float | None = None,
         engine: str = "local",
         client: Any = None, progress: Callable[[str], None] | None = None) -> DPNERelease:
    """Extract n-grams under user-level ``(epsilon, delta)``-DP (DPNE, Algorithm 1).

    Parameters
    ----------
    db : SequenceDB
        Texts as item sequences; ``db.users`` groups them by user (without
        it every sequence is its own user).  n-grams never cross sequences.
    epsilon : float
        Finite, ``> 0``.
    delta : float
        In ``(0, 1)``: the release's total delta, the samplers' accounted
        distance from exact noise included (``min(1e-9, delta / 100)`` of it
        is kept for them and the mechanism is calibrated at the rest; the
        report's ``delta`` is what was spent, at most this).
    max_n : int
        ``T``, the longest n-gram.
    contribution : int or sequence of int
        ``Delta_0`` for every level, or ``Delta_1 .. Delta_T``.
    eta : float, optional
        Tolerated share of spurious k-grams, in ``(0, 1)`` (default 0.01);
        ``eta / max_candidates`` must exceed ``2**-79`` (the resolution of
        the level thresholds: ``eta > 1.7e-16`` at the default
        ``max_candidates``).
    rule : {"both", "single"}, optional
        Valid k-grams: ``(S_1 x S_{k-1}) ∩ (S_{k-1} x S_1)`` (the default)
        or ``S_{k-1} x S_1``.
    schedule : {"equal", "geometric"}, optional
        ``sigma_k`` all equal (the default), or ``sigma_k = decay * sigma_{k-1}``.
    decay : float, optional
        ``c`` of the geometric schedule, finite, ``> 0`` (default 1).
        ``eta``, ``rule``, ``schedule`` and ``decay`` are DPNE's: given to a
        baseline, or ``decay`` without the geometric schedule, they are
        refused rather than ignored.
    seed : int or None
        Reproducible noise (recorded as seeded); ``None`` draws a fresh key.
    backend : str, Backend or None
        Where the level work runs: NumPy (Numba loops on the host) or CuPy
        (the GPU, :mod:`.device`); the same release for the same key.
    max_candidates : int or None
        Work cap: a level whose candidate space ``V_k`` is larger is not
        extracted (its unsupported candidates take one keyed Bernoulli bit
        each; see the module doc).  Public, decided on released sets only, so
        it costs no privacy.  ``None``: :data:`MAX_CANDIDATES`.  DPNE only:
        the baselines draw no bits for unsupported grams.
    method : {"dpne", "dpsu-all", "dpsu-even", "dpsu-single"}
        DPNE, or one of the paper's DPSU baselines (:mod:`.baselines`;
        ``dpsu-single`` releases ``max_n``-grams only).
    policy : {"weighted", "laplace"}
        DPSU update policy of the baselines (DPNE is weighted-Gaussian).
    alpha : float, optional
        Policy Laplace cutoff ``Gamma = rho + alpha * lambda`` (default 5;
        Policy Laplace only).
    engine : {"local", "dask"}
        Build the bounded histograms on this machine, or over Dask
        partitions holding all the texts of each of their users: every
        worker bounds its users' contributions and the client adds the
        bounded histograms (same release for the same key; the baselines
        too, see :mod:`.baselines`).
    client : dask.distributed.Client or str, optional
        With ``engine="dask"``: a client, or a scheduler's address; default: a
        local cluster of two workers.  One the run opens is closed when it ends.
    progress : callable, optional
        Receives a message (a :class:`dpgpu.progress.Step`) per released
        level (default: logged at INFO level).

    Returns
    -------
    DPNERelease

    Raises
    ------
    InvalidParameter
        For invalid parameters, before any data is read: among them a
        ``delta`` too small for the samplers' accounted delta or for the
        thresholds' resolution, and an ``eta`` too small for the latter.
    """
    db = check_db(db)
    epsilon = check_positive_real(epsilon, "epsilon")
    delta = check_probability(delta, "delta")
    progress = stage_reporter(progress, "dpne")
    max_n = check_positive_int(max_n, "max_n", maximum=MAX_N)
    caps = _contributions(contribution, max_n)
    method = check_choice(method, "method", ("dpne",) + METHODS)
    policy = check_choice(policy, "policy", POLICIES)
    if method == "dpne" and policy != "weighted":
        raise InvalidParameter("policy: DPNE uses the weighted policy; other policies are "
                               "for the dpsu-* methods")
    _refuse_unused(method, policy, eta=eta, rule=rule, schedule=schedule, decay=decay,
                   alpha=alpha)
    eta = check_probability(0.01 if eta is None else eta, "eta")
    rule = check_choice(rule or "both", "rule", RULES)
    schedule = check_choice(schedule or "equal", "schedule", SCHEDULES)
    decay = 1.0 if decay is None else check_positive_real(decay, "decay")
    alpha = 5.0 if alpha is None else check_positive_real(alpha, "alpha")
    engine = check_engine(engine, db, client)
    _warn_weak_delta(delta, len(db))
    be = get_backend(backend)
    t0 = time.perf_counter()
    if method != "dpne":
        return _baseline(db, epsilon, delta, method, policy, max_n, caps[0], alpha, seed, be,
                         max_candidates, t0, engine, client)

    ledger = PrivacyLedger(epsilon, delta, seed=seed, sampling_within_delta=True)
    mech_delta = ledger.mechanism_delta  # delta less the samplers' allowance (module doc)
    sigma_star = zcdp_sigma(epsilon, mech_delta / 2)
    sigmas = sigma_schedule(sigma_star, max_n, schedule, decay)
    grid_sigmas = [GRID * s for s in sigmas]
    if max(grid_sigmas) > MAX_GAUSSIAN_SIGMA:
        # the equal schedule has the smallest largest sigma_k: where it fits, decay is at fault
        equal = max(sigma_schedule(sigma_star, max_n, "equal", 1.0))
        if GRID * equal <= MAX_GAUSSIAN_SIGMA:
            k = grid_sigmas.index(max(grid_sigmas)) + 1
            raise InvalidParameter(
                f"decay: {decay:g} makes sigma_{k} = {max(sigmas):.3g}, above "
                f"{MAX_GAUSSIAN_SIGMA / GRID:g} (equal sigmas would be {equal:.3g} at "
                f"epsilon={epsilon:g}, delta={delta:g}); bring decay nearer 1")
        raise InvalidParameter(f"epsilon: {epsilon:g} needs sigma_k above "
                               f"{MAX_GAUSSIAN_SIGMA / GRID:g} whatever the schedule; raise "
                               "epsilon or delta")
    max_candidates = check_positive_int(MAX_CANDIDATES if max_candidates is None
                                        else max_candidates, "max_candidates")
    if Fraction(eta) / max_candidates <= TAIL_RESOLUTION:  # q_k >= eta / max_candidates
        raise InvalidParameter(
            f"eta: {eta:g} is below what the level thresholds resolve: eta / max_candidates "
            f"must exceed 2**-79, i.e. eta > {float(TAIL_RESOLUTION * max_candidates):.6g} at "
            f"max_candidates={max_candidates}; raise eta or lower max_candidates")
    differing = differing_draws("weighted", caps)  # sum_k Delta_k (module doc), never |V_k|
    tv = max(max(DiscreteGaussian(s).tv_per_draw for s in set(grid_sigmas)),
             eta * 2.0 ** -52 + 2.0 ** -64)
    step = ledger.charge(f"dpne: weighted-Gaussian DPSU + {max_n - 1} levels (zCDP composition)",
                         epsilon, mech_delta, sampling_delta=sampling_delta(tv, differing, epsilon),
                         hint=DRAWS_HINT)
    rho1 = dpsu_integer_threshold(grid_sigmas[0], mech_delta / 2, caps[0])

    both = rule == "both"
    bounding = step.key.derive("dpne: contribution bounding")  # what workers may hold
    kind, args = _occurrences(be)
    occ = partition(db, engine, client, by_user=True).map(kind.of, *args)
    s1_ids = to_numpy(_dpsu(merge_histograms(occ.gather(kind.first_histogram, caps[0], bounding,
                                                        0)), grid_sigmas[0], rho1, step.key, 0))
    first = first_level(s1_ids)
    levels, thresholds, stop = [first], [rho1], None
    progress(Step(f"k=1: {first.grams.shape[0]} grams", 1, max_n))
    occ = occ.map(kind.released, s1_ids, True)
    for k in range(2, max_n + 1):
        prev = levels[-1]
        if prev.grams.shape[0] == 0:
            break
        space = Space(prev, first, both)
        if not space.keys_fit:
            stop = (f"level {k}: the candidate keys ({prev.grams.shape[0]} x {space.n_right} "
                    "pairs) do not fit 63 bits")
            break
        if space.size == 0:
            break
        if space.size > max_candidates:  # released sets only decide
            stop = (f"level {k}: |V_k| = {space.size} exceeds max_candidates = "
                    f"{max_candidates}")
            break
        q = Fraction(eta) * min(Fraction(1), Fraction(prev.grams.shape[0], space.size))
        c_k = tail_threshold(grid_sigmas[k - 1], q)
        occ = occ.map(kind.candidates, k, space.n_right, both)
        keys, weights = merge_histograms(occ.gather(kind.level_histogram, caps[k - 1],
                                                    bounding, 4 * k))
        # identity of a candidate: its key a * n_right + b (injective in V_k, module doc)
        mask = noisy_release(weights, keys, grid_sigmas[k - 1], c_k, step.key, 4 * k)
        spurious = _spurious(space, keys, float(tail_probability(grid_sigmas[k - 1], c_k)),
                             step.key, 4 * k + TAG_SPURIOUS)
        out = to_numpy(sorted_unique(array_module(keys).concatenate([keys[mask], spurious])))
        la, lb = out // space.n_right, out % space.n_right
        levels.append(Level(space.rows(la, lb), la, lb if both else np.zeros_like(lb)))
        thresholds.append(c_k)
        progress(Step(f"k={k}: {out.size} grams", k, max_n))
        occ = occ.map(kind.released, out, False)

    counts = [int(lv.grams.shape[0]) for lv in levels]
    report = {
        "mechanism": "dpne", "method": "dpne",
        "paper": "Kim, Gopi, Kulkarni, Yekhanin: Differentially private n-gram extraction "
                 "(NeurIPS 2021)",
        "private": True,
        "parameters": {"epsilon": epsilon, "delta": delta, "max_n": max_n,
                       "contribution": caps, "eta": eta, "rule": rule, "schedule": schedule,
                       "decay": decay if schedule == "geometric" else None,
                       "max_candidates": max_candidates},
        "epsilon": ledger.spent_epsilon, "delta": ledger.spent_delta,
        "calibration": {"accounting": "discrete Gaussian, zCDP composition (CKS20 Thm 14, "
                                      "Cor 13)",
                        "grid": GRID, "sigma_star": sigma_star, "sigmas": sigmas,
                        "thresholds_grid": thresholds,
                        "rho_1": thresholds[0] / GRID,
                        "delta_mechanism": mech_delta,
                        "sampling_allowance": ledger.max_sampling_delta,
                        "paper_sigma_star": analytic_gaussian_sigma(epsilon, mech_delta / 2),
                        "paper_rho_1": dpsu_threshold(sigma_schedule(
                            analytic_gaussian_sigma(epsilon, mech_delta / 2), max_n, schedule,
                            decay)[0], mech_delta / 2, caps[0])},
        "released": {"per_k": counts, "total": sum(counts)},
        "stopped": stop,
        "sampling": {"draws_one_user_can_change": differing},
        "ledger": ledger.to_dict(),
        "seeded": ledger.seeded,
        "backend": be.name, "device": be.device_name(), "engine": engine,
        "vocabulary": vocabulary_facts(db.vocab),
        "input": {"format": db.source.get("format"), "users": names_users(db)},
        "timings": {"total_s": round(time.perf_counter() - t0, 4)},
    }
    return release_of([lv.grams for lv in levels], report, db.vocab)


def _refuse_unused(method: str, policy: str, **given: Any) -> None:
    """Refuse an option that ``method`` (and ``policy``) would ignore, naming it."""
    for name, value in given.items():
        if value is None:
            continue
        if name == "alpha":
            if method == "dpne" or policy != "laplace":
                raise InvalidParameter("alpha: applies to the dpsu-* methods with policy "
                                       "'laplace' only")
        elif method != "dpne":
            raise InvalidParameter(f"{name}: applies to method 'dpne' only, not {method!r}")
        elif name == "decay" and given["schedule"] != "geometric":
            raise InvalidParameter("decay: applies to schedule 'geometric' only")


def _warn_weak_delta(delta: float, n_sequences: int) -> None:
    """Warn when ``delta`` is not below ``1 / n_sequences``.

    At such a delta an ``(epsilon, delta)``-DP mechanism may publish some
    user's data outright.  There are at least as many sequences as users, so
    every delta at or above ``1 / users`` is warned of.  The warning is for the
    data holder choosing delta: it depends on the data's size (the count
    itself is not logged) and is not part of the release.
    """
    if delta * n_sequences >= 1:
        log.warning("dpne: delta=%g is at least 1 / (number of sequences): at such a delta a "
                    "release may publish some user's data outright; choose delta well below "
                    "1 / (number of users), e.g. 1e-7 for a million users", delta)


def _contributions(contribution: Any, max_n: int) -> list[int]:
    if isinstance(contribution, np.ndarray) and contribution.ndim == 0:
        contribution = contribution.item()
    if isinstance(contribution, (list, tuple, range, np.ndarray)):
        contribution = list(contribution.tolist() if isinstance(contribution, np.ndarray)
                            else contribution)
        if len(contribution) != max_n:
            raise InvalidParameter(f"contribution: expected {max_n} values, "
                                   f"got {len(contribution)}")
        return [check_positive_int(c, "contribution", maximum=MAX_CONTRIBUTION)
                for c in contribution]
    return [check_positive_int(contribution, "contribution", maximum=MAX_CONTRIBUTION)] * max_n


def _occurrences(be: Any) -> tuple[type, tuple]:
    """The class holding a partition's occurrences, and the arguments of its ``of``.

    On a GPU backend, :class:`~.device.DeviceOccurrences` keeps them on the device; on
    NumPy, :class:`Occurrences` runs the Numba loops.
    """
    return (DeviceOccurrences, (be.name,)) if be.is_gpu else (Occurrences, ())


def _dpsu(histogram: tuple[np.ndarray, np.ndarray], s: float, threshold: int, key: Any,
          tag: int) -> np.ndarray:
    """Weighted-Gaussian DPSU of a bounded histogram ``(keys, weights)``: the released keys, sorted.

    The keys (distinct item ids) are the noise identities.
    """
    keys, weights = histogram
    return keys[noisy_release(weights, keys, s, threshold, key, tag)]


@dataclass
class Occurrences:
    """One partition's text positions and what the level loop knows of them.

    A partition holds all the texts of each of its users, so contribution
    bounding (:func:`~.histogram.bounded_histogram`, keyed by user and gram)
    runs where the user's data is, and the client only adds the bounded
    histograms of the partitions (:func:`~.histogram.merge_histograms`).

    Per text position the state holds a few bytes only: the released
    indices are int32 whenever the released set allows
    (:func:`dpgpu.ops.keys.index_dtype`), and the valid occurrences of the level
    being counted are a mask, not an array of start positions.

    Attributes
    ----------
    pos : Positions
    idx1 : numpy.ndarray of int32 or int64, or None
        Index of each position's item in ``S_1`` (-1 when not released);
        dropped once the both-side rule no longer needs it.
    idx_prev : numpy.ndarray of int32 or int64, or None
        Index in ``S_{k-1}`` of the (k-1)-gram starting at each position.
    valid : numpy.ndarray of bool or None
        Whether a valid occurrence of the level being counted starts at each position.
    cand : numpy.ndarray of int64 or None
        Their candidate keys ``a * n_right + b``, in position order.
    """

    pos: Positions
    idx1: np.ndarray | None = None
    idx_prev: np.ndarray | None = None
    valid: np.ndarray | None = None
    cand: np.ndarray | None = None

    @classmethod
    def of(cls, db: SequenceDB) -> "Occurrences":
        """The occurrences of a database (or of one partition of it)."""
        return cls(Positions.of(db))

    def first_histogram(self, cap: int, key: Any, tag: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounded histogram of the items (level 1)."""
        return bounded_histogram(self.pos.users, self.pos.items, cap, key, tag)

    def candidates(self, k: int, n_right: int, both: bool) -> "Occurrences":
        """The valid k-gram occurrences: prefix and suffix (or last item) released.

        The window at ``p`` is valid when it fits its sequence, ``idx_prev[p]``
        (its prefix) is released and so is its right part, read at ``p +
        shift``: the suffix in ``idx_prev`` (``shift = 1``) or the last item
        in ``idx1`` (``shift = k - 1``).  The positions whose right part
        would lie past the end are never valid, since their window does not fit.
        One pass marks them and one writes their keys
        (:func:`~.counting_numba.candidate_keys`).
        """
        from .counting_numba import candidate_keys  # noqa: PLC0415 - Numba loads on first use

        right, shift = (self.idx_prev, 1) if both else (self.idx1, k - 1)
        valid = self.pos.fits(k)
        cand = candidate_keys(valid, self.idx_prev, right, shift, n_right)
        return replace(self, idx1=None if both else self.idx1, valid=valid, cand=cand)

    def level_histogram(self, cap: int, key: Any, tag: int) -> tuple[np.ndarray, np.ndarray]:
        """Bounded histogram of the candidate keys of :meth:`candidates`."""
        return bounded_histogram(self.pos.users[self.valid], self.cand, cap, key, tag)

    def released(self, out: np.ndarray, first: bool) -> "Occurrences":
        """Record the released level: sorted item ids (``first``) or candidate keys."""
        dtype = index_dtype(out.size)
        if first:
            idx = index_of(self.pos.items, out, dtype)
            return replace(self, idx1=idx, idx_prev=idx)
        idx = np.full(self.pos.items.size, -1, dtype=dtype)
        idx[self.valid] = index_of(self.cand, out, dtype)
        return replace(self, idx_prev=idx, valid=None, cand=None)


def _spurious(space: Space, supported: np.ndarray, p: float, key: Any, tag: int) -> np.ndarray:
    """Keys of valid, unsupported candidates released by their zero entry's noise.

    Each candidate's Bernoulli bit is keyed by its candidate key (distinct in ``V_k``),
    eight keys to a ChaCha block (:meth:`~dpgpu.privacy.Bernoulli.sample_packed`: the
    candidates of one ``a`` come in ascending runs of ``b``).  Every candidate draws its
    bit and only the few hits are looked up among the supported ones (whose bits go
    unused), once for the level: the same set as drawing the unsupported ones alone,
    without a search per candidate.
    """
    xp = array_module(supported)  # the candidates are made where the supported keys are
    if p <= 0:
        return xp.zeros(0, dtype=xp.int64)
    bern = Bernoulli(p)
    hits = [cand[bern.sample_packed(key, cand, tag=tag)]
            for cand in (space.keys(a, b) for a, b in space.chunks(xp))]
    hits = xp.concatenate(hits) if hits else xp.zeros(0, dtype=xp.int64)
    return hits[index_of(hits, supported) < 0]


def _baseline(db: SequenceDB, epsilon: float, delta: float, method: str, policy: str,
              max_n: int, cap0: int, alpha: float, seed: Any, be: Any, max_candidates: Any,
              t0: float, engine: str = "local", client: Any = None) -> DPNERelease:
    """A DPSU baseline (:mod:`.baselines`), charged to the ledger as one step."""
    if max_candidates is not None:
        raise InvalidParameter(f"max_candidates: applies to method 'dpne' only, not {method!r} "
                               "(the baselines draw no bits for unsupported grams)")
    plan = runs(method, max_n)
    caps = [cap0 * len(ks) for ks in plan]
    ledger = PrivacyLedger(epsilon, delta, seed=seed, sampling_within_delta=True)
    mech_delta = ledger.mechanism_delta  # delta less the samplers' allowance
    noise = run_noise(policy, epsilon, len(plan), zcdp_sigma(epsilon, mech_delta / 2))
    differing = differing_draws(policy, caps)
    # Policy Laplace also fails when two users tie on their order words (.policy.ORDER_TIES)
    bad_events = sampling_cost(noise, differing, epsilon) + \
        (ORDER_TIES if policy == "laplace" else 0.0)
    step = ledger.charge(f"{method}: {len(plan)} DPSU run(s), policy {policy}", epsilon,
                         mech_delta, sampling_delta=bad_events, hint=DRAWS_HINT)
    calib = [calibrate(policy, noise, mech_delta, len(plan), c, alpha) for c in caps]
    levels = release_runs(db, plan, caps, calib, policy, max_n, step.key, engine, client)
    counts = [int(x.shape[0]) for x in levels]
    report = {
        "mechanism": "dpne", "method": method,
        "paper": "Kim, Gopi, Kulkarni, Yekhanin: Differentially private n-gram extraction "
                 "(NeurIPS 2021), DPSU baselines (Gopi et al., ICML 2020)",
        "private": True,
        "parameters": {"epsilon": epsilon, "delta": delta, "max_n": max_n,
                       "contribution": cap0, "policy": policy,
                       "alpha": alpha if policy == "laplace" else None},
        "sampling": {"draws_one_user_can_change": differing},
        "epsilon": ledger.spent_epsilon, "delta": ledger.spent_delta,
        "calibration": {"grid": GRID, "delta_mechanism": mech_delta,
                        "sampling_allowance": ledger.max_sampling_delta,
                        "runs": [{"k": ks, "contribution": c, "noise": type(nz).__name__,
                                  "scale_grid": getattr(nz, "sigma", None) or
                                  getattr(nz, "scale", None),
                                  "threshold_grid": thr, "cutoff_grid": cut}
                                 for ks, c, (nz, thr, cut) in zip(plan, caps, calib)]},
        "released": {"per_k": counts, "total": sum(counts)},
        "ledger": ledger.to_dict(),
        "seeded": ledger.seeded,
        "backend": be.name, "device": be.device_name(), "engine": engine,
        "vocabulary": vocabulary_facts(db.vocab),
        "input": {"format": db.source.get("format"), "users": names_users(db)},
        "timings": {"total_s": round(time.perf_counter() - t0, 4)},
    }
    return release_of(levels, report, db.vocab)
