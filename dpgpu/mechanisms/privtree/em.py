"""EM: top-k frequent strings by k private selections (PrivTree, SIGMOD'16, Section 6.2).

The private baseline of PrivTree's sequence experiments (Fig. 6), "a standard
application of the exponential mechanism": a set ``R`` starts as the ``|I|``
strings of one item; each of ``k`` rounds selects the most frequent string
``r`` of ``R`` with differential privacy and replaces ``r`` in ``R`` by its
``|I|`` one-item extensions ``r x``; the ``k`` selected strings, in the order
selected, are the release.

Data and counts.  Every sequence is cut to its first ``l_top`` items, as the
PST cuts it (:func:`dpgpu.mechanisms.privtree.pst.pst_symbols`), and the
strings are of items only (no ``$`` or ``&``).  A string's frequency is its
number of contiguous occurrences in the cut data, as
:func:`dpgpu.eval.truth.top_k_strings` counts (its ``l_max`` is the
non-private *Truncate* baseline of the same figure).  The first round's
counts are the 1-gram counts, and each later round needs only the counts of
the extensions of the string just selected: one whole-array pass
(:meth:`dpgpu.ops.grams.GramEngine.next_symbol_histogram`) per round.

Selection.  Each round is *report noisy max* with integer noise (DESIGN: no
floating-point exponential sampling; the exponential mechanism itself is
report noisy max with Gumbel noise, a different selection law with the same
guarantee): every candidate's count gets an
independent discrete Laplace draw of scale ``2 Delta / eps_round``, and the
largest noisy count wins, ties to the smallest position in ``R``.  ``R`` is
kept in lexicographic order of item ids, a string before its extensions;
replacing ``r`` by ``r 0 .. r (|I|-1)`` in place keeps that order (``R``
holds no other extension of ``r``: ``r`` has not been selected before), so the
tie-break is the lexicographically smallest string.  ``R`` is stored as
(selected parent, last item) pairs; the candidates are distinct, so the
``k`` strings are too.

Privacy argument
----------------
Neighbouring databases differ in one sequence (added or removed), which after
the cut holds at most ``l_top`` items, hence at most ``l_top`` occurrences of
any non-empty string: every count moves by at most ``Delta = l_top``.

* **One round is eps_round-DP.**  The candidates ``R_t`` are a function of
  the earlier rounds' outputs only (and of the public ``|I|``), so fix them.
  Fix the noise ``Z_j`` of every candidate ``j != i``.  Candidate ``i`` wins
  iff ``c_i + Z_i > c_j + Z_j`` for ``j < i`` and ``>=`` for ``j > i``: the set
  of ``Z_i`` on which ``i`` wins is an up-set ``{Z_i >= r*}`` with
  ``r* = max(max_{j<i} (c_j + Z_j) + 1, max_{j>i} (c_j + Z_j)) - c_i``.  On the
  neighbour every ``c_j`` moves by at most ``Delta``, so its threshold is at
  most ``r* + 2 Delta``.  The discrete Laplace of scale ``b = 2 Delta / eps_round``
  has ``P(X = x + 1) / P(X = x) >= exp(-1/b) = exp(-eps_round / (2 Delta))`` for
  every integer ``x``, hence ``P(X >= a + 2 Delta) >= exp(-eps_round) P(X >= a)``
  for every ``a``; so ``P'(i wins | Z_-i) >= exp(-eps_round) P(i wins | Z_-i)``,
  and likewise the other direction.  Integrating over ``Z_-i`` (the same law on
  both databases), every output has probability within ``exp(eps_round)``.
  (For add/remove neighbours all counts move the same way and ``Delta``
  instead of ``2 Delta`` would do; we keep the general ``2 Delta``.)
* **k rounds.**  Adaptive sequential composition: ``eps_round = epsilon / k``
  rounded down, so ``k * eps_round <= epsilon``.  Noise identities: round
  ``t`` draws the noise of the candidate at position ``p`` at
  ``(step key, tag t, identity p)``, all of a round in one whole-array call,
  so every draw is fresh and drawn once.  The ledger holds the ``k`` rounds
  as one step of ``epsilon``, charged before the data is read.
* **Samplers.**  Round ``t`` draws ``|R_t| = |I| + t (|I| - 1)`` values, each
  within ``tv`` of exact (:mod:`dpgpu.privacy.samplers`), so as implemented it
  is ``(eps_round, (1 + e^eps_round) |R_t| tv)``-DP (the round's output
  depends on all its draws: the exact-noise twin differs from it with
  probability at most ``|R_t| tv``); the sum over the rounds (public: ``|I|``
  and ``k``, :func:`total_draws`) is the step's ``sampling_delta``.

The exact counts and noisy values never leave this module; the release is the
``k`` strings.  As for the PST, the first round's candidates are every item
of the vocabulary, which must be public (:func:`dpgpu.release.add_vocabulary`
marks a release on a vocabulary taken from the data not private).
"""

from __future__ import annotations

import logging
import time
from fractions import Fraction
from typing import Any

import numpy as np

from ...backend import get_backend, to_numpy
from ...data.sequencedb import SequenceDB, check_db
from ...errors import InvalidParameter
from ...ops.grams import GramEngine
from ...privacy import DiscreteLaplace, PrivacyLedger, laplace_scale, sampling_delta
from ...privacy.tables import float_at_most
from ...release import ReleaseWriter, add_vocabulary, encode_id_grams, note_users
from ...report import Displayed
from ...validation import check_positive_int, check_positive_real

log = logging.getLogger("dpgpu")

#: Most noisy values one release draws over its k rounds (``sum_t |R_t|``, public): about a
#: microsecond of work each.
MAX_DRAWS = 100_000_000
#: Samplers' allowance (the PST's and N-gram's).
MAX_SAMPLING_DELTA = 1e-6


def _sensitivity(l_top: int) -> int:
    """Occurrences of one string in one sequence cut to ``l_top`` items: at most ``l_top``."""
    return l_top


def total_draws(n_items: int, k: int) -> int:
    """``sum_t |R_t|``, ``|R_t| = |I| + t (|I| - 1)``: the noisy values ``k`` rounds draw."""
    return k * n_items + (n_items - 1) * k * (k - 1) // 2


def check_draws(n_items: int, k: int, *, public: bool) -> None:
    """Refuse ``k`` rounds over ``n_items`` items that draw more than :data:`MAX_DRAWS` values.

    Parameters
    ----------
    n_items, k : int
    public : bool
        Whether ``n_items`` is public (a public vocabulary's size): only then
        does the message state it and the number of draws.

    Raises
    ------
    InvalidParameter
        Naming ``k``.
    """
    draws = total_draws(n_items, k)
    if draws > MAX_DRAWS:
        over = f"over {n_items:,} items draw {draws:,}" if public else "over the data's items draw"
        raise InvalidParameter(f"k: {k} rounds {over} noisy values, more than the "
                               f"{MAX_DRAWS:,} allowed; lower k or use a smaller vocabulary")


def calibrate(epsilon: float, k: int, l_top: int) -> tuple[float, float]:
    """A round's budget, ``epsilon / k`` rounded down, and its discrete Laplace scale
    ``2 Delta / eps_round`` rounded up (module doc).

    Raises
    ------
    InvalidParameter
        A scale past the samplers' limit, naming ``epsilon`` or ``l_top``.
    """
    eps_round = float_at_most(Fraction(epsilon) / k)
    if eps_round <= 0:
        raise InvalidParameter(f"epsilon: {epsilon:g} split over k = {k} rounds leaves no "
                               "budget per round; raise epsilon or lower k")
    return eps_round, laplace_scale(eps_round, 2 * _sensitivity(l_top), name="l_top")


def select(engine: GramEngine, n_items: int, k: int, sampler: DiscreteLaplace, key: Any, *,
           n_trials: int = 1) -> list[list[tuple[int, ...]]]:
    """Run the ``k`` noisy-max rounds (module doc) on the counts of ``engine``.

    ``n_trials`` independent runs at once (a forest, as the audit runs
    them): trial ``i`` draws the noise of its candidate at position ``p`` of
    round ``t`` at identity ``i |R_t| + p`` (tag ``t``); a release is the one
    trial, identity ``p``.  Each round's noise is one whole-array call, and
    the extension counts one histogram call per length of the strings
    selected (one call for a release).

    Parameters
    ----------
    engine : GramEngine
        The cut database (items only).
    n_items : int
        ``|I|``.
    k : int
        Rounds.
    sampler : DiscreteLaplace
    key : NoiseKey
    n_trials : int

    Returns
    -------
    list of list of tuple of int
        Per trial, the ``k`` selected strings (item ids) in the order selected.
    """
    grams, counts = engine.count(1)
    first = np.zeros(n_items, dtype=np.int64)
    first[to_numpy(grams)[:, 0]] = to_numpy(counts)
    trials = np.arange(n_trials, dtype=np.int64)[:, None]
    # R in lexicographic order, a row per trial: candidate = chosen[trial][parent] + (item,),
    # parent -1 the empty string
    parent = np.full((n_trials, n_items), -1, dtype=np.int64)
    item = np.tile(np.arange(n_items, dtype=np.int64), (n_trials, 1))
    count = np.tile(first, (n_trials, 1))
    chosen: list[list[tuple[int, ...]]] = [[] for _ in range(n_trials)]
    for t in range(k):
        m = count.shape[1]
        ids = (trials * m + np.arange(m, dtype=np.int64)[None, :]).astype(np.uint64)
        noise = sampler.sample(key, ids.ravel(), tag=t, backend="numpy").reshape(n_trials, m)
        p = np.argmax(count + noise, axis=1)[:, None]  # the first of the largest
        par = np.take_along_axis(parent, p, 1)[:, 0].tolist()
        last = np.take_along_axis(item, p, 1)[:, 0].tolist()
        for run, j, x in zip(chosen, par, last):
            run.append((run[j] if j >= 0 else ()) + (x,))
        if t == k - 1:
            break
        ext = _extension_counts(engine, [run[-1] for run in chosen], n_items)
        # replace the selected candidate by its n_items extensions, in place
        j = np.arange(m + n_items - 1, dtype=np.int64)[None, :]
        inside = (j >= p) & (j < p + n_items)
        old = np.clip(np.where(j < p, j, j - n_items + 1), 0, m - 1)
        slot = np.clip(j - p, 0, n_items - 1)
        parent = np.where(inside, t, np.take_along_axis(parent, old, 1))
        item = np.where(inside, slot, np.take_along_axis(item, old, 1))
        count = np.where(inside, np.take_along_axis(ext, slot, 1),
                         np.take_along_axis(count, old, 1))
    return chosen


def _extension_counts(engine: GramEngine, strings: list[tuple[int, ...]],
                      n_items: int) -> np.ndarray:
    """``(len(strings), n_items)`` counts of every ``s x``: one histogram call per length."""
    out = np.zeros((len(strings), n_items), dtype=np.int64)
    by_length: dict[int, list[int]] = {}
    for i, s in enumerate(strings):
        by_length.setdefault(len(s), []).append(i)
    for rows in by_length.values():
        uniq, inverse = np.unique(np.asarray([strings[i] for i in rows], dtype=np.int32),
                                  axis=0, return_inverse=True)
        hist = to_numpy(engine.next_symbol_histogram(uniq))[:, :n_items]
        out[rows] = hist[inverse.ravel()]
    return out


class EMRelease(Displayed):
    """The output of :func:`em_top_k`: ``k`` item strings and the report.

    Attributes
    ----------
    selected : list of tuple of int
        The selected strings (item ids), in the order selected.
    report : dict
    vocab : Vocabulary
    """

    def __init__(self, selected: list[tuple[int, ...]], report: dict, vocab: Any):
        self.selected, self.report, self.vocab = selected, report, vocab

    def _sizes(self) -> dict[str, int]:
        return {"strings": len(self.selected)}

    def strings(self) -> list[tuple[str, ...]]:
        """The ``k`` selected strings as item labels, in the order selected.

        Returns
        -------
        list of tuple of str
        """
        return [self.vocab.decode(s) for s in self.selected]

    def save(self, out_dir: Any, *, force: bool = False) -> Any:
        """Write the release directory: ``report.json`` and ``topk.tsv`` (rank, string).

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
            As :class:`dpgpu.release.ReleaseWriter` raises it (an existing
            ``out_dir`` without ``force``, or one that may not be replaced).
        """
        with ReleaseWriter(out_dir, force=force,
                           progress=lambda msg: log.info("em: %s", msg)) as rel:
            rel.write_columns("topk.tsv", ["rank", "string"],
                              [np.arange(1, len(self.selected) + 1),
                               encode_id_grams(self.vocab, self.selected)])
            return rel.finish(self.report)


def em_top_k(db: SequenceDB, epsilon: float, k: int, *, l_top: int = 20,
             seed: int | None = None, backend: Any = None) -> EMRelease:
    """Select ``k`` frequent item strings with ``k`` noisy-max rounds (PrivTree's EM baseline).

    Parameters
    ----------
    db : SequenceDB
        One sequence per individual.
    epsilon : float
        Privacy budget (epsilon-DP for adding or removing one sequence),
        ``epsilon / k`` per round.
    k : int
        Number of strings (rounds).
    l_top : int
        Items kept per sequence (its first ``l_top``).  Default 20.
    seed : int, optional
        Reproducible noise (recorded as seeded).  Default: a fresh key.
    backend : str or Backend, optional
        Where the counts are made (the noise is drawn on the host).

    Returns
    -------
    EMRelease

    Raises
    ------
    InvalidParameter
        A parameter out of range, named, before any budget is spent or data
        counted: ``epsilon`` not finite and positive, ``k`` or ``l_top`` not
        a positive integer, more than :data:`MAX_DRAWS` noisy values (``k``
        and the vocabulary's size), a noise scale or sampling delta the
        samplers cannot give (``epsilon``, ``l_top``).
    """
    check_db(db, "db", items=True)
    if not isinstance(db, SequenceDB):
        raise InvalidParameter("db: em_top_k counts on this machine: pass a SequenceDB")
    epsilon = check_positive_real(epsilon, "epsilon")
    k = check_positive_int(k, "k")
    l_top = check_positive_int(l_top, "l_top")
    n_items = db.vocab.size
    check_draws(n_items, k, public=db.vocab.public)
    eps_round, scale = calibrate(epsilon, k, l_top)
    sampler = DiscreteLaplace(scale)
    t0 = time.perf_counter()
    be = get_backend(backend)
    ledger = PrivacyLedger(epsilon, max_sampling_delta=MAX_SAMPLING_DELTA, seed=seed)
    # sum over the rounds of (1 + e^eps_round) |R_t| tv (module doc)
    step = ledger.charge(f"em: {k} noisy-max selections, epsilon / k each", epsilon,
                         sampling_delta=sampling_delta(sampler.tv_per_draw,
                                                       total_draws(n_items, k), eps_round),
                         hint="k")
    selected = select(GramEngine(db, l_top, backend=be), n_items, k, sampler, step.key)[0]
    report = {
        "mechanism": "em-top-k",
        "paper": "Zhang, Xiao, Xie: PrivTree (SIGMOD 2016), Section 6.2: the EM baseline "
                 "(report noisy max with discrete Laplace noise)",
        "private": True,
        "parameters": {"epsilon": epsilon, "k": k, "l_top": l_top},
        "selection": {"rounds": k, "epsilon_per_round": eps_round,
                      "sensitivity": _sensitivity(l_top), "noise_scale": scale},
        "epsilon": ledger.spent_epsilon,
        "delta": ledger.spent_delta,
        "ledger": ledger.to_dict(),
        "seeded": ledger.seeded,
        "backend": be.name, "device": be.device_name(),
        "input": {"format": db.source.get("format")},
        "timings": {"total_s": round(time.perf_counter() - t0, 4)},
    }
    add_vocabulary(report, db.vocab)
    note_users(report, db)
    return EMRelease(selected, report, db.vocab)
