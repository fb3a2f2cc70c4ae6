"""PFS^2: differentially private frequent subsequence mining (Xu et al., ICDE'16).

Algorithm 3 of the paper.  Support of a pattern = number of sequences that
contain it as a (non-contiguous) subsequence.  Pre-mining
(:mod:`.premining`) estimates ``|D|~``, the sample length constraint
``l_max`` and ``L_f``; the database is split at random into ``L_f``
disjoint sample databases; then for ``k = 1 .. L_f``: candidates ``C_k``
(all items, then the GSP join of the frequent ``(k-1)``-sequences), the
``k``-th sample shrunk to ``l_max`` (:mod:`.shrink`), noisy local supports
compared with the relaxed threshold (:mod:`.relax`), and noisy supports of
the survivors on the full, untruncated database.

Privacy argument (Theorems 6 and 7)
-----------------------------------
Neighbouring databases differ by one sequence (added or removed).  The
budget is split ``eps_1 .. eps_5`` (default ``0.025, 0.025, 0.05, 0.45,
0.45`` of ``epsilon``, the paper's experiments), all noise is discrete
Laplace (the paper's geometric mechanism, Theorem 2):

* ``|D|~``: sensitivity 1, scale ``1 / eps_1``;
* length counts ``alpha_l`` (``0 <= l <= l_1``): one sequence changes one count by
  1, scale ``1 / eps_2`` for the whole histogram (parallel composition,
  Theorem 4); ``l_max`` is post-processing;
* ``L_f``: binary search over the non-increasing maximal supports, at most
  ``ceil(log2 l_max)`` queries of sensitivity 1 at ``eps_3 / ceil(log2 l_max)``
  each (sequential composition; see :mod:`.premining` for why this replaces
  the paper's unexplained ``G(eps_3 / ceil(log l_max))`` on every ``beta_i``);
* sample pruning: each sequence goes to sample ``j`` with probability
  ``1 / L_f``, independently of every other sequence and of the data (a
  keyed ChaCha20 word per sequence *index*; what makes parallel composition
  valid is this independence, not which identity keys it, and index keys
  keep duplicate sequences from being forced into one sample).  The added
  sequence lands in one sample only, so among the ``L_f`` levels only one
  level's local supports see it.  Shrinking is a local transformation
  (it reads one sequence, ``C_k`` and ``l_max``), a shrunk sequence has at
  most ``l_max`` items and so contains at most ``C(l_max, k)`` distinct
  ``k``-sequences: the local supports of ``C_k`` have sensitivity
  ``Delta_k = min(C(l_max, k), |C_k|)`` and get scale ``Delta_k / eps_4``
  (Theorem 6); the ledger charges ``eps_4`` once, as a parallel step over
  the ``L_f`` disjoint samples.  The relaxed threshold uses public values
  only (``theta``, ``zeta``, ``Delta_k``, ``eps_4``, ``|D|~ / L_f``);
* supports on ``D``: one sequence changes each survivor's support by at most
  1, scale ``|C'_k| / eps'`` with ``eps' = eps_5 / L_f`` per level (the
  ``L_f`` shares of ``eps_5`` are charged level by level and sum to at most
  ``eps_5``, unlike the authors' code, whose ``eps_3 / (L - 1)`` per level
  overspends).

Total ``eps_1 + eps_2 + eps_3 + eps_4 + eps_5 = epsilon`` (Theorem 7).
Candidates of level ``k`` depend only on noisy outputs of earlier levels.
Noise is never conditioned on the data (no re-drawing, no absolute value):
the authors' code re-draws supports above the true ``|D|`` and takes
``|noise + count|``; neither is done here.  Noise identities: a level's
noise is drawn at each candidate's position in the level's sorted candidate
list (tag ``k``; the list is built from released values only, and
positions are distinct, where content hashes of long patterns could
collide), the length counts at the length, ``beta`` queries at the level
queried.

The samplers are within total variation ``LAPLACE_TV_BOUND`` of exact per
draw; every step charges the matching sampling delta, the pruning step for a
public cap ``max_candidates`` on the local draws (when a level ``k >= 2``
would exceed it, the candidates whose generating sequences have the largest
noisy supports are kept; level 1's candidates are the whole vocabulary, so
``max_candidates`` must be at least its size: keeping some items would need
a rule that either ignores the data, and so drops items whatever their
support, or ranks them by support, which costs budget the paper does not
spend); ``max_candidates`` is at most ``MAX_CANDIDATES_LIMIT``, which bounds
the run's memory whatever the data (so a vocabulary above it is refused).
The sampling deltas of all the steps together have a public bound
(:func:`sampling_bound`: ``|D|~``, ``l_1 + 1`` length counts,
``ceil(log2 l_1)`` maximal-support queries, ``max_candidates`` local
supports, and at most ``max_candidates`` supports on ``D`` in all, each
step at its own epsilon), which the ledger's allowance must hold: parameters
whose bound it does not are refused before any data is read, so no step
can fail later on what the data gives.

Counting over Dask (``engine="dask"``): the exact supports are sums over
sequences, so each partition of the sequences counts its own (its part of
every sample, shrunk there) and the client adds them; the split into samples
and all noise are drawn on the client as above, so the release is the same
as a local run's for the same key.  Pre-mining counts on the partitions
too: ``|D|`` and the length histogram are sums, and the maximal-support
search runs on the client over the partitions' sequences restricted to the
items above its floor, deduplicated (:meth:`.premining.MaximalSupports.of`).

The release holds noisy supports, the noisy ``|D|~``, ``l_max``, ``L_f`` and
per-level candidate counts (all DP outputs) -- never exact counts.

The paper's ablation baselines RR, SR (Fig. 4) and PL (Fig. 7) run through
``variant=``; their budgets and privacy arguments are in :mod:`.variants`.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from ...backend import Backend, get_backend
from ...data.sequencedb import SequenceDB, check_db
from ...errors import InvalidParameter
from ...eval.truth import _dedupe
from ...privacy import DiscreteLaplace, PrivacyLedger, laplace_scale
from ...privacy.ledger import split_budget
from ...privacy.rng import NoiseKey
from ...privacy.tables import float_at_least, float_at_most
from ...progress import Step, stage_reporter
from ...release import ReleaseWriter, add_vocabulary, encode_id_grams, note_users
from ...report import Displayed
from ...scale.partitions import Partitions, check_engine, engine_run, partition
from ...validation import check_choice, check_positive_int, check_positive_real, \
    check_positive_reals, check_probability
from .candidates import capped_candidates
from .premining import (PreMining, length_constraint, max_frequent_length, noisy_size,
                        search_queries, tv_delta)
from .relax import relaxed_threshold
from .shrink import shrink
from .support import supports
from .variants import UNRELAXED, VARIANTS, pl_epsilons, pl_share, random_deletion

log = logging.getLogger("dpgpu")

#: The paper's budget split eps_1 .. eps_5 (Section VII-A).
BUDGET_SPLIT = (0.025, 0.025, 0.05, 0.45, 0.45)
#: Default public cap on the number of noisy local supports one release draws.
MAX_CANDIDATES = 1_000_000
#: Largest ``max_candidates`` accepted: candidates are Python tuples, about 1 KB and 30 us
#: each while a level is built and counted, so this bounds a run by about 4 GB whatever
#: the data (a vocabulary's level 1 draws one per item, so it bounds the vocabulary too).
MAX_CANDIDATES_LIMIT = 4_000_000
#: Largest l_upper accepted (the length histogram has l_upper bins).
MAX_L_UPPER = 1_000_000
#: Noise tag of the random partition (levels use tags 1 .. L_f).
TAG_PARTITION = 0
#: The samplers' allowance of a run (pure epsilon: on top of it).
MAX_SAMPLING_DELTA = 1e-6
#: The options, besides epsilon, that set the number of draws (for the ledger's message).
DRAWS_HINT = "max_candidates and l_upper"


@dataclass
class Level:
    """Public record of one mining level.

    Attributes
    ----------
    k : int
    candidates : int
        ``|C_k|`` (after the public cap).
    sensitivity : int
        ``Delta_k``.
    relaxed_threshold : float
        ``theta'`` on the sample (RR, SR: ``theta |D|~ / L_f``; PL: ``theta |D|~``
        on the shrunk ``D``).
    survivors : int
        ``|C'_k|`` (PL: the candidates released).
    support_noise_scale : float or None
        Scale of the Laplace noise on the survivors' supports
        (``|C'_k| / eps_k``); None when none survived.
    frequent : list of (tuple of int, int)
        The released patterns with their noisy supports.
    local_noisy : dict
        Noisy local support of every candidate (a DP output; used by audits;
        PL: its noisy support on the shrunk ``D``).
    capped : bool
        Whether ``max_candidates`` cut ``C_k``.
    """

    k: int
    candidates: int
    sensitivity: int
    relaxed_threshold: float
    survivors: int
    support_noise_scale: float | None
    frequent: list[tuple[tuple[int, ...], int]]
    local_noisy: dict[tuple[int, ...], int]
    capped: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary (no patterns)."""
        return {"k": self.k, "candidates": self.candidates, "sensitivity": self.sensitivity,
                "relaxed_threshold": round(self.relaxed_threshold, 6),
                "survivors": self.survivors, "support_noise_scale": self.support_noise_scale,
                "frequent": len(self.frequent),
                "capped": self.capped}


class PFS2Release(Displayed):
    """The output of :func:`pfs2`: frequent subsequences with noisy supports.

    Attributes
    ----------
    patterns : list of tuple of int
        Frequent sequences (item ids), by length, then noisy support (descending).
    supports : numpy.ndarray of int64
        Their noisy supports.
    levels : list of Level
    report : dict
    """

    def __init__(self, levels: list[Level], report: dict, vocab: Any):
        rows = [r for lvl in levels for r in sorted(lvl.frequent, key=lambda r: (-r[1], r[0]))]
        self.patterns = [p for p, _ in rows]
        self.supports = np.array([s for _, s in rows], dtype=np.int64)
        self.levels, self.report, self.vocab = levels, report, vocab

    def _sizes(self) -> dict[str, int]:
        return {"patterns": len(self.patterns)}

    def frequent(self) -> list[tuple[tuple[str, ...], int]]:
        """Every released pattern as ``(labels, noisy support)``.

        Returns
        -------
        list of (tuple of str, int)
            The item labels of each frequent pattern and its noisy support
            on the whole database, in the order of :attr:`patterns`: by
            length, then by noisy support, largest first.
        """
        return [(self.vocab.decode(p), int(s)) for p, s in zip(self.patterns, self.supports)]

    def save(self, out_dir: Any, *, force: bool = False) -> Any:
        """Write the release directory: ``report.json`` and ``frequent.tsv``.

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
        with ReleaseWriter(out_dir, force=force,
                           progress=lambda msg: log.info("pfs2: %s", msg)) as rel:
            rel.write_columns("frequent.tsv", ["pattern", "support"],
                              [encode_id_grams(self.vocab, self.patterns), self.supports])
            return rel.finish(self.report)


@engine_run()
def pfs2(db: SequenceDB, epsilon: float, threshold: float, *, l_upper: int = 20,
         eta: float = 0.85, zeta: float = 0.3, budget_split: Sequence[float] = BUDGET_SPLIT,
         max_candidates: int = MAX_CANDIDATES, variant: str = "pfs2", seed: int | None = None,
         backend: Any = None, engine: str = "local", client: Any = None,
         progress: Callable[[str], None] | None = None) -> PFS2Release:
    """Mine frequent subsequences under epsilon-DP (PFS^2, ICDE'16).

    Parameters
    ----------
    db : SequenceDB
        One sequence per individual.
    epsilon : float
        Privacy budget (adding or removing one sequence; module docstring).
    threshold : float
        Relative support threshold ``theta`` in ``(0, 1)``: a pattern is
        frequent when contained in at least ``theta |D|`` sequences.
    l_upper : int
        ``l_1``, the upper bound on the sample length constraint.  Default 20.
    eta : float
        Share of sequences that must fit ``l_max`` (default 0.85).
    zeta : float
        Relaxation parameter in ``(0, 1)`` (default 0.3).
    budget_split : sequence of 5 floats
        Weights of ``eps_1 .. eps_5`` (default the paper's).
    max_candidates : int
        Public cap on the noisy local supports drawn, at least the
        vocabulary's size (level 1 draws one per item) and at most
        :data:`MAX_CANDIDATES_LIMIT`.  With ``epsilon`` it
        sets the samplers' accounted delta (module doc): lower it to run at
        a larger ``epsilon``.
    variant : {"pfs2", "rr", "sr", "pl"}
        PFS^2 (default) or one of the paper's baselines (:mod:`.variants`):
        ``"rr"`` random deletion and ``"sr"`` shrinking on the samples, both
        without threshold relaxation (Fig. 4); ``"pl"`` no sampling, the
        supports counted on the whole database shrunk to ``l_max`` (Fig. 7).
    seed : int, optional
        Reproducible release (recorded as ``"seeded": true``).
    backend : str or Backend, optional
        ``"numpy"`` (Numba CPU kernel) or ``"cupy"`` (CUDA kernel).
    engine : {"local", "dask"}
        Count supports on this machine, or over Dask partitions of the
        sequences (same release for the same key; see :func:`mine`).
    client : dask.distributed.Client or str, optional
        With ``engine="dask"``: a client, or a scheduler's address; default: a
        local cluster of two workers.  One the run opens is closed when it ends.
    progress : callable, optional
        Receives one line per finished stage.

    Returns
    -------
    PFS2Release

    Raises
    ------
    InvalidParameter
        For invalid parameters, before any data is read; among them an
        ``epsilon`` (with ``max_candidates`` and ``l_upper``) whose samplers'
        accounted delta passes the run's allowance.
    """
    check_db(db, "db")
    epsilon = check_positive_real(epsilon, "epsilon")
    threshold = check_probability(threshold, "threshold")
    zeta = check_probability(zeta, "zeta")
    eta = check_probability(eta, "eta")
    l_upper = check_positive_int(l_upper, "l_upper", maximum=MAX_L_UPPER)
    max_candidates = check_positive_int(max_candidates, "max_candidates")
    weights = check_positive_reals(budget_split, "budget_split")
    if len(weights) != 5:
        raise InvalidParameter("budget_split: expected 5 weights (eps_1 .. eps_5)")
    check_max_candidates(max_candidates, db.vocab.size)
    variant = check_choice(variant, "variant", VARIANTS)
    engine = check_engine(engine, db, client)
    eps = split_budget(epsilon, weights)
    steps = pl_epsilons(eps) if variant == "pl" else eps
    ledger = PrivacyLedger(epsilon, max_sampling_delta=MAX_SAMPLING_DELTA, seed=seed)
    ledger.check_sampling("pfs2: all steps (public bound)", max(steps),
                          sampling_bound(steps, l_upper, max_candidates), hint=DRAWS_HINT)
    check_noise_scales(steps, l_upper, max_candidates)
    progress = stage_reporter(progress, "pfs2")
    be = get_backend(backend)
    data = partition(db, engine, client)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    progress("pre-mining: noisy size and length constraint")
    n_noisy = noisy_size(db, ledger, eps[0], data)
    l_max = length_constraint(db, ledger, eps[1], n_noisy, l_upper, eta, data)
    progress(f"pre-mining: |D|~={n_noisy}, l_max={l_max}; searching the longest frequent length")
    L_f = max_frequent_length(db, ledger, eps[2], l_max, threshold * n_noisy, data)
    pre = PreMining(n_noisy, l_max, L_f)
    timings["pre_mining_s"] = time.perf_counter() - t0
    progress(f"pre-mining: |D|~={n_noisy}, l_max={l_max}, L_f={L_f}")
    t = time.perf_counter()
    levels = mine(db, ledger, pre, threshold=threshold, eps_prune=eps[3], eps_support=eps[4],
                  zeta=zeta, max_candidates=max_candidates, backend=be,
                  data=data, progress=progress, variant=variant)
    timings["mining_s"] = time.perf_counter() - t
    timings["total_s"] = time.perf_counter() - t0
    report = {
        "mechanism": "pfs2",
        "paper": "Xu, Su, Cheng, Li, Xiong: Differentially private frequent sequence mining "
                 "via sampling-based candidate pruning (ICDE 2016)",
        "private": True,
        "parameters": {"epsilon": epsilon, "threshold": threshold, "l_upper": l_upper,
                       "eta": eta, "zeta": zeta, "budget_split": list(weights),
                       "max_candidates": max_candidates, "variant": variant},
        "epsilon": ledger.spent_epsilon,
        "delta": ledger.spent_delta,
        "ledger": ledger.to_dict(),
        "seeded": ledger.seeded,
        "backend": be.name, "device": be.device_name(), "engine": engine,
        "input": {"format": db.source.get("format")},
        "pre_mining": {"n_sequences_noisy": n_noisy, "l_max": l_max, "L_f": L_f},
        "levels": [lvl.to_dict() for lvl in levels],
        "timings": {k: round(v, 4) for k, v in timings.items()},
    }
    add_vocabulary(report, db.vocab)
    note_users(report, db)
    return PFS2Release(levels, report, db.vocab)


def sampling_bound(epsilons: Sequence[float], l_upper: int, max_candidates: int) -> float:
    """Public bound on the sampling delta that all the steps of a run charge together.

    Parameters
    ----------
    epsilons : sequence of 5 (or 4) floats
        ``eps_1 .. eps_5``; for PL (:func:`.variants.pl_epsilons`) ``eps_1 ..
        eps_3`` and the share of its levels, which draw at most
        ``max_candidates`` values in all.
    l_upper : int
        ``l_1``: ``l_1 + 1`` length counts drawn (lengths ``0 .. l_1``), and
        ``l_max <= l_1`` bounds the maximal-support queries by ``ceil(log2 l_1)``.
    max_candidates : int
        Bounds the local supports drawn, and the supports on ``D`` of all
        levels together (survivors are candidates), each level's at an
        ``eps_5`` share of at most ``eps_5``.

    Returns
    -------
    float
        At least the sum of the steps' sampling deltas, whatever the data;
        infinite where a step's is (an epsilon whose ``e^epsilon`` overflows).
    """
    e1, e2, e3, *mining = epsilons
    queries = search_queries(l_upper)
    parts = (tv_delta(1, e1), tv_delta(l_upper + 1, e2), tv_delta(queries, e3),
             *(tv_delta(max_candidates, e) for e in mining))
    if not all(map(math.isfinite, parts)):
        return math.inf
    return float_at_least(sum(map(Fraction, parts), Fraction(0)))


def check_noise_scales(epsilons: Sequence[float], l_upper: int, max_candidates: int) -> None:
    """Refuse parameters under which some step's noise could pass the samplers' limit.

    Every step's largest possible scale is public: ``1 / eps_1`` (``|D|~``),
    ``1 / eps_2`` (the length histogram), ``ceil(log2 l_upper) / eps_3`` (the
    maximal-support queries), ``max_candidates / eps_4`` (a level's pruning:
    ``Delta_k <= max_candidates``) and ``max_candidates`` over an
    ``l_upper``-th of ``eps_5`` (a level's supports: ``|C'_k| <= max_candidates``,
    ``L_f <= l_upper``).  Checking them before any data is read keeps a run from
    failing mid-way, its budget spent, on what the data gives (module doc).

    PL (:mod:`.variants`) has no pruning step, and its levels' supports have
    ``Delta_k <= max_candidates`` at an ``l_upper``-th of ``eps_4 + eps_5``.

    Parameters
    ----------
    epsilons : sequence of 5 (or 4) floats
        ``eps_1 .. eps_5``, or PL's ``eps_1 .. eps_3`` and ``eps_4 + eps_5``
        (:func:`.variants.pl_epsilons`).
    l_upper : int
        ``l_1``.
    max_candidates : int
        The cap on a level's candidates.

    Raises
    ------
    InvalidParameter
        Naming ``epsilon``, the step, and what else lowers its scale.
    """
    queries = search_queries(l_upper)
    pruning = [("pruning (eps_4)", epsilons[3], max_candidates, "max_candidates")
               ] if len(epsilons) == 5 else []
    share = "eps_5" if pruning else "eps_4 + eps_5"
    steps = (("noisy |D| (eps_1)", epsilons[0], 1, None),
             ("length histogram (eps_2)", epsilons[1], 1, None),
             ("maximal-support queries (eps_3)", epsilons[2], queries, "l_upper"),
             *pruning,
             # the least of split_budget(share, [1] * L_f) for any L_f <= l_upper (0 where a
             # tiny epsilon left the share nothing, which split_budget would refuse as its total)
             (f"level supports ({share} over l_upper levels)",
              float_at_most(Fraction(epsilons[-1]) / l_upper), max_candidates,
              "max_candidates or l_upper"))
    for step, eps, sensitivity, lower in steps:
        try:
            laplace_scale(eps, sensitivity)
        except InvalidParameter:
            raise InvalidParameter(
                f"epsilon: too small for the {step} step with max_candidates={max_candidates} "
                f"and l_upper={l_upper}: its noise could need a scale of "
                f"{sensitivity / eps if eps else math.inf:.3g}, beyond what the samplers draw; "
                "raise epsilon or that step's share of budget_split"
                + (f", or lower {lower}" if lower else "")
            ) from None


def check_max_candidates(max_candidates: int, n_items: int) -> None:
    """Refuse a ``max_candidates`` below the vocabulary's size or above the public limit.

    Level 1 draws one noisy local support per item (module doc), so
    ``max_candidates`` must be at least the vocabulary's size; it must be at
    most :data:`MAX_CANDIDATES_LIMIT`, which bounds the run's memory whatever
    the data.  Both depend on parameters only (the vocabulary is public).

    Parameters
    ----------
    max_candidates : int
    n_items : int
        The vocabulary's size.

    Raises
    ------
    InvalidParameter
        Naming ``max_candidates``.
    """
    if max_candidates > MAX_CANDIDATES_LIMIT:
        raise InvalidParameter(
            f"max_candidates: at most {MAX_CANDIDATES_LIMIT} (each candidate takes about "
            f"1 KB of memory while a level is built), got {max_candidates}")
    if n_items > MAX_CANDIDATES_LIMIT:
        raise InvalidParameter(
            f"max_candidates: the vocabulary's {n_items} items need at least as many, above "
            f"the limit of {MAX_CANDIDATES_LIMIT} (level 1 draws a noisy local support for "
            "every item); use a smaller vocabulary")
    if max_candidates < n_items:
        raise InvalidParameter(
            f"max_candidates: {max_candidates} is below the vocabulary's {n_items} items; "
            "level 1 draws a noisy local support for every item (no private rule picks "
            "some of them without spending budget), so it must be at least that")


def support_sensitivity(l_max: int, k: int, n_candidates: int) -> int:
    """``Delta_k = min(C(l_max, k), |C_k|)``: local supports one shrunk sequence changes.

    A sequence of at most ``l_max`` items holds at most ``C(l_max, k)``
    distinct length-``k`` subsequences, and supports count a sequence once
    per candidate it holds (Theorem 6).
    """
    return min(math.comb(l_max, k), n_candidates)

def mine(db: SequenceDB, ledger: PrivacyLedger, pre: PreMining, *, threshold: float,
         eps_prune: float, eps_support: float, zeta: float, max_candidates: int,
         backend: Backend, data: Partitions | None = None,
         progress: Callable[[str], None] = lambda msg: None,
         variant: str = "pfs2") -> list[Level]:
    """The mining phase (Algorithm 3, lines 11-23): partition, prune, count.

    The exact supports are sums over sequences, so they are counted per
    partition of ``data`` (:mod:`dpgpu.scale.partitions`: this process, or
    Dask workers) and added on the client; the random split into samples
    (keyed by sequence index), every noise draw and every decision stay on
    the client.  Shrinking reads one sequence at a time (a local
    transformation), so shrinking each partition's part of a sample gives
    the same supports as shrinking the whole sample.

    The baselines of :mod:`.variants` change the levels: ``"sr"`` and
    ``"rr"`` compare the local supports with the unrelaxed ``theta |D|~ /
    L_f``, ``"rr"`` cutting the samples by :func:`.variants.random_deletion`
    instead of shrinking them; ``"pl"`` draws no samples and releases the
    noisy supports of all of ``C_k`` on the whole database shrunk to
    ``l_max``, level ``k`` at an ``L_f``-th of ``eps_prune + eps_support``.

    Parameters
    ----------
    db : SequenceDB
    ledger : PrivacyLedger
        Charged ``eps_prune`` (parallel over the samples) and ``eps_support``
        (``L_f`` sequential shares); PL: ``L_f`` sequential shares of their sum.
    pre : PreMining
    threshold : float
        Relative threshold.
    eps_prune, eps_support : float
        ``eps_4`` and ``eps_5``.
    zeta : float
    max_candidates : int
        At least the vocabulary's size.
    backend : Backend
        Where each partition counts (by name on Dask workers).
    data : Partitions, optional
        The partitions of ``db`` (:func:`dpgpu.scale.partitions.partition`);
        default: ``db`` itself, in this process.
    progress : callable
    variant : {"pfs2", "rr", "sr", "pl"}
        Checked by :func:`pfs2`.

    Returns
    -------
    list of Level

    Raises
    ------
    InvalidParameter
        When ``max_candidates`` is below the vocabulary's size
        (:func:`check_max_candidates`), or when a level's noise scale passes
        the samplers' limit: naming ``max_candidates`` (it bounds ``|C_k|``,
        so ``Delta_k``, and ``|C'_k|``), or ``epsilon`` where even a
        sensitivity of 1 is too much.  :func:`pfs2` refuses such parameters
        before any data is read (:func:`check_noise_scales`).
    """
    L_f, l_max = pre.L_f, pre.l_max
    n_items = db.vocab.size
    check_max_candidates(max_candidates, n_items)
    data = data if data is not None else partition(db)
    count = _cut_supports if variant == "rr" else _sample_supports
    if variant == "pl":
        data = data.map(_whole_data, L_f)
        eps_level = split_budget(pl_share(eps_prune, eps_support), [1.0] * L_f)
    else:
        prune = ledger.charge_parallel(
            f"pfs2: sample-based candidate pruning ({L_f} disjoint samples)",
            [(eps_prune, 0.0)] * L_f, sampling_delta=tv_delta(max_candidates, eps_prune),
            hint=DRAWS_HINT)
        assignment = sample_assignment(len(db), L_f, prune.key)
        if variant == "rr":
            data = data.map(_cut_mining_data, L_f, l_max, prune.key.derive("random deletion"),
                            per_row=(assignment, np.arange(len(db), dtype=np.int64)))
        else:
            data = data.map(_mining_data, L_f, per_row=(assignment,))
        eps_level = split_budget(eps_support, [1.0] * L_f)
    abs_threshold = threshold * pre.n_noisy
    levels: list[Level] = []
    prev: dict[tuple[int, ...], int] = {}
    budget_left = max_candidates
    for k in range(1, L_f + 1):
        if k == 1:  # never capped (check_max_candidates)
            cands, capped = [(i,) for i in range(n_items)], False
        else:
            cands, capped = capped_candidates(prev, budget_left)
        if not cands:
            break
        budget_left -= len(cands)
        sens = support_sensitivity(l_max, k, len(cands))
        if variant == "pl":  # the level's only step, charged before its count
            eps_local = eps_level[k - 1]
            key = ledger.charge(f"pfs2 (PL): level {k} supports on D shrunk to l_max",
                                eps_local, sampling_delta=tv_delta(len(cands), eps_local),
                                hint=DRAWS_HINT).key
        else:
            eps_local, key = eps_prune, prune.key
        local = data.sum(count, k, cands, l_max, backend.name)
        local_scale = laplace_scale(eps_local, sens, name="max_candidates")  # Delta_k <= |C_k|
        local_noisy = local + DiscreteLaplace(local_scale).sample(
            key, np.arange(len(cands)), tag=k, backend="numpy")  # identity: position
        if variant == "pl":
            relaxed = abs_threshold
        elif variant in UNRELAXED:
            relaxed = threshold * pre.n_noisy / L_f
        else:
            relaxed = relaxed_threshold(threshold, pre.n_noisy / L_f, sens, eps_prune, zeta)
        kept = np.flatnonzero(local_noisy >= relaxed)
        survivors = [cands[i] for i in kept.tolist()]
        frequent: list[tuple[tuple[int, ...], int]] = []
        scale = None
        if variant == "pl":  # no second count: the survivors' supports are released
            scale = local_scale
            warn_of_noise(k, scale, abs_threshold)
            frequent = list(zip(survivors, local_noisy[kept].tolist()))
        elif survivors:
            eps_k = eps_level[k - 1]
            step = ledger.charge(f"pfs2: level {k} supports on D", eps_k,
                                 sampling_delta=tv_delta(len(survivors), eps_k), hint=DRAWS_HINT)
            scale = laplace_scale(eps_k, len(survivors), name="max_candidates")  # |C'_k|
            warn_of_noise(k, scale, abs_threshold)
            noisy = data.sum(_full_supports, survivors, backend.name) + DiscreteLaplace(
                scale).sample(step.key, kept, tag=k, backend="numpy")
            frequent = [(c, int(v)) for c, v in zip(survivors, noisy.tolist())
                        if v >= abs_threshold]
        levels.append(Level(k, len(cands), sens, relaxed, len(survivors), scale, frequent,
                            dict(zip(cands, local_noisy.tolist())), capped))
        sampled = "" if variant == "pl" else f"{len(survivors)} survive the sample, "
        progress(Step(f"level {k}: {len(cands)} candidates, {sampled}{len(frequent)} frequent",
                      k, pre.L_f))
        if not frequent:
            break
        prev = dict(frequent)
    return levels


#: A level whose supports let a pattern held by no sequence pass the threshold with at
#: least this probability gets a warning (:func:`warn_of_noise`).
NOISE_WARNING_CHANCE = 0.01


def warn_of_noise(k: int, scale: float, threshold: float) -> float:
    """Warn when level ``k``'s noisy supports are mostly noise near ``threshold``.

    The chance that discrete Laplace noise of ``scale`` lifts a support of
    0 to the threshold ``T`` is ``exp(-ceil(T) / scale) / (1 + exp(-1 /
    scale))``; from :data:`NOISE_WARNING_CHANCE` up, the patterns released at
    that level are largely noise.  Every quantity is public or released
    (the noisy ``|D|`` and the survivors' number), so the warning discloses
    nothing more.

    Returns
    -------
    float
        That chance.
    """
    chance = math.exp(-math.ceil(threshold) / scale) / (1.0 + math.exp(-1.0 / scale))
    if chance >= NOISE_WARNING_CHANCE:
        log.warning("pfs2: level %d: support noise of scale %.4g against a threshold of %.4g: "
                    "a pattern no sequence holds is released with probability %.2g, so this "
                    "level's patterns are largely noise (raise --epsilon or --threshold, or "
                    "lower --l-upper)", k, scale, threshold, chance)
    return chance


def sample_assignment(n: int, n_samples: int, key: NoiseKey) -> np.ndarray:
    """The sample of each of ``n`` sequences: a uniform, independent random partition.

    Sequence ``i`` goes to sample ``word(i) mod n_samples``, one keyed
    ChaCha20 word per sequence index (independent uniform assignment; the
    modulo bias is below ``n_samples / 2**64``).  Drawn on the client.

    Returns
    -------
    numpy.ndarray of int64
        Values in ``0 .. n_samples - 1``.
    """
    words = key.words(np.arange(n, dtype=np.int64), TAG_PARTITION, 1, backend="numpy")[0]
    return (words % np.uint64(n_samples)).astype(np.int64)


def sample_databases(db: SequenceDB, n_samples: int, assignment: np.ndarray
                     ) -> list[tuple[SequenceDB, np.ndarray]]:
    """The disjoint samples of ``db`` (sequence ``i`` in ``assignment[i]``), deduplicated.

    Parameters
    ----------
    db : SequenceDB
    n_samples : int
    assignment : numpy.ndarray of int64
        One sample per sequence (:func:`sample_assignment`).

    Returns
    -------
    list of (SequenceDB, numpy.ndarray of int64)
        Each sample's distinct sequences and their multiplicities.
    """
    return [_dedupe(db.select(assignment == j)) for j in range(n_samples)]


@dataclass
class MiningData:
    """One partition's data for the mining phase (built where the partition is).

    Attributes
    ----------
    full : (SequenceDB, numpy.ndarray of int64)
        The partition's distinct sequences and multiplicities.
    samples : list of (SequenceDB, numpy.ndarray of int64)
        The partition's part of each sample database, deduplicated.
    """

    full: tuple[SequenceDB, np.ndarray]
    samples: list[tuple[SequenceDB, np.ndarray]]


def _mining_data(part: SequenceDB, n_samples: int, assignment: np.ndarray) -> MiningData:
    """The :class:`MiningData` of one partition (``assignment``: its sequences' samples)."""
    return MiningData(_dedupe(part), sample_databases(part, n_samples, assignment))


def _cut_mining_data(part: SequenceDB, n_samples: int, l_max: int, key: NoiseKey,
                     assignment: np.ndarray, index: np.ndarray) -> MiningData:
    """RR's :class:`MiningData`: the samples cut by :func:`.variants.random_deletion`.

    ``index`` holds the partition's sequences' indices in ``db``; a sequence
    in sample ``j`` is cut under tag ``j + 1``, its level.
    """
    cut = random_deletion(part, l_max, key, index, assignment + 1)
    return MiningData(_dedupe(part), sample_databases(cut, n_samples, assignment))


def _whole_data(part: SequenceDB, n_levels: int) -> MiningData:
    """PL's :class:`MiningData`: every level's "sample" is the whole partition."""
    full = _dedupe(part)
    return MiningData(full, [full] * n_levels)


def _cut_supports(data: MiningData, k: int, cands: list[tuple[int, ...]], l_max: int,
                  backend: str) -> np.ndarray:
    """Exact supports of ``cands`` in sample ``k``, already cut to ``l_max`` (RR)."""
    return supports(*data.samples[k - 1], cands, get_backend(backend))


def _sample_supports(data: MiningData, k: int, cands: list[tuple[int, ...]], l_max: int,
                     backend: str) -> np.ndarray:
    """Exact supports of ``cands`` in the partition's part of sample ``k``, shrunk to ``l_max``."""
    sample, weights = data.samples[k - 1]
    shrunk, _ = shrink(sample, cands, k, l_max)
    return supports(shrunk, weights, cands, get_backend(backend))


def _full_supports(data: MiningData, patterns: list[tuple[int, ...]],
                   backend: str) -> np.ndarray:
    """Exact supports of ``patterns`` in the partition (untruncated)."""
    return supports(*data.full, patterns, get_backend(backend))
