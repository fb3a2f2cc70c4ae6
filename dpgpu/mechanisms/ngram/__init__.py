"""N-gram: variable-length n-grams and synthetic sequences (Chen, Ács, Castelluccia, CCS'12).

Algorithm 1 of the paper: truncate every sequence to its first ``l_max``
items and end it with ``&`` (the truncated database: a cut sequence ends
after its ``l_max``-th item, so every n-gram is followed by an item or by
``&`` and the children of a node account for all of its count), build an
exploration tree of noisy n-gram counts level by level (``n <= n_max``),
make it consistent and turn it into a synthetic database.

Why ``&`` follows a cut sequence too: Section 4.3.4 takes a node's count to
be the sum of its children's, and Theorem 4.1 reconstructs the *truncated*
database from its n-grams; both hold only if every occurrence is followed
by an item or ``&`` (``test_theorem_4_1_on_truncated_databases``).  The
price is that ``P(& | context)`` pools real ends with cuts, so the Markov
extension of Section 4.3.5 ends runs too early.  Leaving ``&`` off cut
sequences raises the MSNBC top-K (Table 5) by about one pattern at K >= 60
but breaks both properties, so it is not done.

Privacy argument (Theorem 5.1)
------------------------------
Neighbouring databases differ in one sequence.  After truncation a sequence
holds at most ``l_max`` items followed by the end marker ``&``.  A
root-to-leaf path of the tree starts at an item (the root's children are
the items; ``&`` is never a root child), so one sequence
touches at most ``l_max`` paths, and the count of a node changes by the
number of touched paths through it.  Every node's count gets discrete
Laplace noise of scale ``l_max / eps_v`` (``P[k] ~ exp(-eps_v |k| / l_max)``,
the integer analogue of the paper's Laplace mechanism), and the budgets of
the nodes on any path add up to at most ``epsilon``: level 1 uses
``epsilon / n_max``; a node expanded with remaining path budget ``r`` and
predicted subtree height ``h_v`` gives its children ``r / h_v`` (adaptive),
or every level gets ``epsilon / n_max`` (uniform).  The paper's proof then
bounds the likelihood ratio of the whole tree by
``exp(sum over touched paths of (path budget) / l_max) <= exp(epsilon)``.
Every decision (which nodes to expand, ``eps_v``, thresholds) uses noisy
counts and public parameters only; consistency (4.3.4) and synthesis (4.3.5)
are post-processing.

The samplers are within a total-variation distance ``tv`` of exact discrete
Laplace per draw (:mod:`dpgpu.privacy.samplers`); the ledger charges
``(1 + e^epsilon) * n_max * l_max * tv`` as sampling delta.  Why that
suffices: fix a neighbouring pair and let ``M'`` draw *exactly* the noise of
the counts the differing sequence changes -- at most ``l_max`` per level,
one per root-to-leaf path it touches (:func:`_sensitivity`) -- and every
other count as the release does.  Given the released levels so far (the
same in both), a level's candidate list is the same (level 1 is every item
of the vocabulary, which must be public for that; a release on a vocabulary
taken from the data is marked not private), and every count the
sequence does not touch is equal and gets the same keyed draw in both,
hence the same value; so ``M'`` is the exact mechanism of the proof above
on the touched counts, epsilon-DP, and it differs from the release in at
most ``n_max * l_max`` draws on either dataset.  The number of candidates
drawn does not enter: ``max_draws`` (a public cap on the number of noisy
counts, fixed before any data is read; the frontier with the largest noisy
counts is expanded first when it binds) only bounds the work.

Noise identities: each count's noise is drawn from the run's keyed ChaCha20
stream (tag: the gram length) at the gram's row in its level's candidate
list -- the children of the expanded nodes, in the order of the released
parent level, fixed by released values only -- so the identities of one
level are distinct by construction (content hashes of long grams could
collide: two grams, one noise value), and the same key gives the same
release on NumPy and CuPy.
"""

from __future__ import annotations

import logging
import math
import time
from decimal import Decimal
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from ...backend import get_backend, to_numpy
from ...data.sequencedb import SequenceDB, check_db, synthetic_like
from ...errors import InvalidParameter
from ...ops.grams import GramEngine
from ...privacy import DiscreteLaplace, PrivacyLedger, laplace_scale, sampling_delta
from ...privacy.samplers import LAPLACE_TV_BOUND, MAX_LAPLACE_SCALE
from ...release import ReleaseWriter, add_vocabulary, encode_id_grams, note_users
from ...progress import stage_reporter
from ...report import Displayed
from ...scale.partitions import check_engine, engine_run
from ...validation import check_bool, check_choice, check_positive_int, check_positive_real
from .consistency import enforce_consistency
from .synthesis import ModelLevel, decompose, extend, model_level
from .tree import Level, build_tree

log = logging.getLogger("dpgpu")

VARIANTS = ("adaptive", "uniform", "no-approx", "baseline")
#: Default public cap on the number of noisy counts one release draws.
MAX_DRAWS = 10_000_000
#: Default n_max: the longest n-gram counted (the N-gram paper's).
N_MAX = 5
#: Largest n_max accepted (the papers use up to 5; deeper trees only cost time).
MAX_N = 64
#: Most items a synthetic database may hold (4 GB of int32 ids).
MAX_SYNTHETIC_ITEMS = 1_000_000_000
#: Windows per batched model lookup in :meth:`NGramRelease.estimate`.
_LOOKUP_CHUNK = 65536


class NGramRelease(Displayed):
    """The output of :func:`ngram`: tree, n-gram model, synthetic data and report.

    Attributes
    ----------
    levels : list of Level
        The exploration tree (noisy counts ``noisy``, consistent ``count``).
    model : list of ModelLevel
        Grams of length 1, 2, ... with estimated counts (tree levels, then
        the levels added by joins).
    synthetic : SequenceDB or None
        The synthetic database, in the input's vocabulary and format.
    report : dict
        Public parameters, budget, ledger steps, backend, timings.
    """

    def __init__(self, levels: list[Level], model: list[ModelLevel],
                 synthetic: SequenceDB | None, report: dict, vocab: Any):
        self.levels, self.model, self.synthetic = levels, model, synthetic
        self.report, self.vocab = report, vocab

    def _sizes(self) -> dict[str, int | None]:
        return {"grams": sum(len(lvl.grams) for lvl in self.levels),
                "synthetic": None if self.synthetic is None else len(self.synthetic)}

    def ngrams(self) -> list[tuple[tuple[str, ...], int, float]]:
        """Every tree node as ``(labels, noisy count, consistent count)``.

        Returns
        -------
        list of (tuple of str, int, float)
            One entry per node of the exploration tree (not the grams the
            model's joins add), level by level (length 1 first), in each
            level's order: the gram's labels, its noisy count (the exact
            count plus integer noise; it may be negative) and its consistent
            count (Section 4.3.4).  The labels are the vocabulary's strings,
            and the end marker is the string ``"&"``, last in a gram that ends
            a sequence (or its first ``l_max`` items).  With an item labelled
            ``&`` in the vocabulary the two read the same here;
            :meth:`to_pandas` tells them apart (the marker is
            :data:`dpgpu.END` in its ``gram`` column), as does the
            ``%26``-encoded item in ``ngrams.tsv`` (:meth:`save`).
        """
        out = []
        for lvl in self.levels:
            for g, a, c in zip(lvl.grams.tolist(), lvl.noisy.tolist(), lvl.count.tolist()):
                out.append((self.vocab.decode(g), a, c))
        return out

    def estimate(self, labels: Sequence[Any]) -> float:
        """Estimated number of occurrences of an item string (``&`` may end it).

        The count of the string's node when the model has it, else the
        estimate of its prefix times the conditional probability of its last
        symbol given the longest context the model knows (Markov chaining).

        Parameters
        ----------
        labels : sequence of labels
            Item labels, optionally followed by ``"&"`` (occurrences that end
            a sequence, or its first ``l_max`` items).  Entries are turned
            into strings (``[1, 2]`` is ``["1", "2"]``); a single string is
            refused, not split into characters.  An item labelled ``&`` wins
            over the end marker (:meth:`dpgpu.Vocabulary.encode_string`).

        Returns
        -------
        float
            The estimated count (0 for a string the model gives no weight).

        Raises
        ------
        InvalidParameter
            When ``labels`` is a string, a set or a mapping, holds no item,
            holds a label that is not in the vocabulary, or has ``&`` before
            its end (:meth:`dpgpu.Vocabulary.encode_string`).
        """
        ids = self.vocab.encode_string(labels)
        found = self._window_counts(ids)
        longest = len(found)

        def count(start: int, stop: int) -> float | None:  # model count of ids[start:stop]
            return found[stop - start - 1][start] if stop - start <= longest else None

        est = count(0, 1)
        for j in range(2, len(ids) + 1):
            direct = count(0, j)
            if direct is not None:
                est = direct
                continue
            est = (est or 0.0) * _conditional(count, j, longest)
        return float(est or 0.0)

    def _window_counts(self, ids: np.ndarray) -> list[list[float | None]]:
        """Model count of every window of ``ids`` up to the model's longest gram.

        Entry ``[m - 1][s]`` is the count of ``ids[s:s + m]``, or None when
        the model lacks it: one batched lookup per gram length (in chunks of
        ``_LOOKUP_CHUNK`` windows), so ``len(ids) * len(self.model)`` lookups
        in all instead of one per sub-gram of every prefix.
        """
        found = []
        for m in range(1, min(len(ids), len(self.model)) + 1):
            lvl = self.model[m - 1]
            windows = np.lib.stride_tricks.sliding_window_view(ids, m)
            values: list[float | None] = []
            for c in range(0, windows.shape[0], _LOOKUP_CHUNK):
                rows = to_numpy(lvl.index.find(np.ascontiguousarray(
                    windows[c:c + _LOOKUP_CHUNK], dtype=np.int32)))
                hit = rows >= 0
                counts = to_numpy(lvl.count[rows[hit]]).tolist() if hit.any() else []
                it = iter(counts)
                values += [float(next(it)) if h else None for h in hit.tolist()]
            found.append(values)
        return found

    def top_k(self, k: int, *, min_length: int = 2) -> list[tuple[tuple[str, ...], float]]:
        """The ``k`` item strings of length >= ``min_length`` with the largest estimated counts.

        Parameters
        ----------
        k : int
            How many strings (at least 1).
        min_length : int
            Shortest string length.  Default 2: single items are left out, as
            in the paper's top-k evaluation (Section 6.2.2); PST's
            :meth:`~dpgpu.mechanisms.privtree.pst.PSTRelease.top_k` starts at 1.

        Returns
        -------
        list of (tuple of str, float)
            ``(labels, estimated count)`` of the model's grams of items (no
            ``&``), largest first; fewer than ``k`` when the model holds fewer.

        Raises
        ------
        InvalidParameter
            When ``k`` or ``min_length`` is not a positive integer.
        """
        k = check_positive_int(k, "k")
        min_length = check_positive_int(min_length, "min_length")
        rows = []
        for lvl in self.model[min_length - 1:]:
            items_only = np.all(lvl.grams != self.vocab.end_id, axis=1)
            rows += list(zip(lvl.grams[items_only].tolist(), lvl.count[items_only].tolist()))
        rows.sort(key=lambda r: (-r[1], r[0]))
        return [(self.vocab.decode(g), c) for g, c in rows[:k]]

    def save(self, out_dir: Any, *, force: bool = False) -> Any:
        """Write the release directory: report.json, ngrams.tsv, synthetic.<ext>.

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
                           progress=lambda msg: log.info("ngram: %s", msg)) as rel:
            grams = [encode_id_grams(self.vocab, lvl.grams) for lvl in self.levels]
            rel.write_columns("ngrams.tsv", ["gram", "noisy_count", "count"], [
                np.concatenate(grams) if grams else [],
                np.concatenate([to_numpy(lvl.noisy) for lvl in self.levels]) if grams else [],
                [repr(c) for lvl in self.levels for c in lvl.count.tolist()]])
            report = dict(self.report)
            if self.synthetic is not None:
                report.update(rel.synthetic_entries(self.synthetic))
            return rel.finish(report)


@engine_run()
def ngram(db: SequenceDB, epsilon: float, *, l_max: int = 20, n_max: int | None = None,
          variant: str = "adaptive", seed: int | None = None, backend: Any = None,
          synthetic: bool = True, max_draws: int = MAX_DRAWS, engine: str = "local",
          client: Any = None, progress: Callable[[str], None] | None = None) -> NGramRelease:
    """Release noisy variable-length n-grams and a synthetic database (N-gram, CCS'12).

    Parameters
    ----------
    db : SequenceDB
        The sequences (one per individual); its vocabulary must hold an item.
    epsilon : float
        Privacy budget, finite and ``> 0`` (epsilon-DP with respect to adding
        or removing one sequence; see the module docstring).
    l_max : int
        Items kept per sequence (sets the sensitivity).  Default 20.
    n_max : int, optional
        Longest n-gram counted, ``1 .. MAX_N`` (64).  Default :data:`N_MAX`
        (5).  At most ``l_max + 1`` (``l_max`` items and ``&``): a larger value is lowered
        to it (with a warning where it was given), since no longer gram
        occurs in the truncated database.
    variant : {"adaptive", "uniform", "no-approx", "baseline"}
        ``adaptive``: the paper's method.  ``uniform``: ``epsilon / n_max``
        per level.  ``no-approx``: missing children get count 0 instead of
        the Markov estimate.  ``baseline``: exact n-gram counts, **not
        private**, for measuring the n-gram model's approximation error.
    seed : int, optional
        Makes the release reproducible (recorded as ``"seeded": true``).
        Default: a fresh 256-bit key.
    backend : str or Backend, optional
        ``"numpy"`` or ``"cupy"`` (default: ``DPGPU_BACKEND`` or auto).
    synthetic : bool
        Also generate the synthetic database.
    max_draws : int
        Work cap: the most noisy counts the tree draws, at least the
        vocabulary's size (level 1 draws one per item).  Default
        :data:`MAX_DRAWS`.  See the module docstring; it does not enter the
        privacy accounting.
    engine : {"local", "dask"}
        Count on this machine, or over Dask partitions (same release for the
        same key; see :mod:`dpgpu.scale.dask`).
    client : dask.distributed.Client or str, optional
        With ``engine="dask"``: a client, or a scheduler's address; default: a
        local cluster of two workers.  One the run opens is closed when it ends.
    progress : callable, optional
        Receives one line per finished stage.

    Returns
    -------
    NGramRelease
        The tree, the n-gram model, the synthetic database (None with
        ``synthetic=False``, or when it would pass
        :data:`MAX_SYNTHETIC_ITEMS` items: the report then says why) and the
        report.

    Raises
    ------
    InvalidParameter
        A parameter out of range, named (nothing is released): ``db`` not a
        :class:`~dpgpu.SequenceDB` or with an empty vocabulary; ``epsilon``
        not finite and ``> 0``; ``l_max``, ``n_max`` or ``max_draws`` not a
        positive integer, ``n_max`` above :data:`MAX_N`, ``max_draws`` below
        the vocabulary's size; a ``variant``, ``engine`` or ``backend`` not
        among the choices (or ``"cupy"`` where it cannot run); a bad
        ``seed``, ``synthetic`` or ``progress``; a ``client`` without
        ``engine="dask"``, or ``engine="dask"`` without Dask; a noise scale
        past the samplers' limit, naming ``l_max``, or ``epsilon`` when even
        ``l_max = 1`` passes it (:func:`check_parameters`); and, except for
        ``variant="baseline"``, an ``epsilon`` (with ``l_max`` and
        ``n_max``) whose samplers' accounted delta passes the run's
        allowance of ``1e-6``, naming ``epsilon``.
    """
    check_db(db, "db", items=True)
    epsilon, l_max, tree_height = check_parameters(epsilon, l_max, n_max)
    variant = check_choice(variant, "variant", VARIANTS)
    max_draws = check_positive_int(max_draws, "max_draws")
    if max_draws < db.vocab.size:  # level 1 draws a count per item; before any budget
        raise InvalidParameter(f"max_draws: must be at least |I| = {db.vocab.size}, got "
                               f"{max_draws}")
    engine = check_engine(engine, db, client)
    if n_max is not None and tree_height < n_max:
        log.warning("ngram: n_max %d is lowered to l_max + 1 = %d: a truncated sequence holds "
                    "at most l_max items and '&'", n_max, tree_height)
    n_max = tree_height
    progress = stage_reporter(progress, "ngram")
    synthetic = check_bool(synthetic, "synthetic")
    be = get_backend(backend)
    private = variant != "baseline"
    timings: dict[str, float] = {}
    t0 = time.perf_counter()

    ledger = PrivacyLedger(epsilon, max_sampling_delta=1e-6, seed=seed)
    n_items = db.vocab.size
    draws = min(max_draws, _possible_nodes(n_items, n_max))
    if private:  # the draws one sequence can change (module doc), never the candidates
        touched = n_max * _sensitivity(l_max)
        step = ledger.charge("ngram: exploration tree counts", epsilon,
                             sampling_delta=sampling_delta(LAPLACE_TV_BOUND, touched, epsilon),
                             hint="l_max and n_max")
        noise = _laplace_noise(step.key, draws)
    else:
        noise = _no_noise
    if engine == "dask":
        from ...scale.dask import DaskGramEngine  # noqa: PLC0415 - optional

        counter = DaskGramEngine(db, l_max, end="all", backend=be.name, client=client)
    else:
        counter = GramEngine(db, l_max, end="all", backend=be)
    timings["prepare_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    levels = build_tree(counter, epsilon=epsilon, l_max=l_max, n_max=n_max,
                        allocation="adaptive" if variant in ("adaptive", "no-approx")
                        else "uniform",
                        thresholds=private,
                        noise=noise, sensitivity=_sensitivity(l_max), max_draws=draws,
                        progress=progress,
                        min_eps=2 * l_max / MAX_LAPLACE_SCALE)  # scales <= 2**51, rounded up
    timings["tree_s"] = time.perf_counter() - t
    t = time.perf_counter()
    enforce_consistency(levels, approximate=variant != "no-approx")
    model = [model_level(lvl.grams, lvl.count, counter.n_symbols) for lvl in levels]
    timings["consistency_s"] = time.perf_counter() - t
    t = time.perf_counter()  # the model's joins (top_k and estimate read them too)
    model = extend(model, l_max, db.vocab.end_id, counter.n_symbols, progress)
    timings["extension_s"] = time.perf_counter() - t
    synth, skipped = None, _synthetic_too_large(model) if synthetic else None
    if synthetic and not skipped:
        t = time.perf_counter()
        items, lengths = decompose(model, db.vocab.end_id)
        synth = synthetic_like(db, items, lengths)
        timings["synthetic_s"] = time.perf_counter() - t
        progress(f"synthetic database: {len(synth)} sequences")
    timings["total_s"] = time.perf_counter() - t0
    report = {
        "mechanism": "ngram",
        "paper": "Chen, Acs, Castelluccia: Differentially private sequential data "
                 "publication via variable-length n-grams (CCS 2012)",
        "private": private,
        "parameters": {"epsilon": epsilon, "l_max": l_max, "n_max": n_max, "variant": variant,
                       "max_draws": max_draws},
        "epsilon": ledger.spent_epsilon if private else math.inf,
        "delta": ledger.spent_delta if private else 1.0,
        "ledger": ledger.to_dict(),
        "seeded": ledger.seeded,
        "backend": be.name, "device": be.device_name(), "engine": engine,
        "input": {"format": db.source.get("format")},
        "tree": {"levels": [int(lvl.grams.shape[0]) for lvl in levels]},
        "model": {"levels": [int(m.grams.shape[0]) for m in model]},
        "timings": {k: round(v, 4) for k, v in timings.items()},
    }
    if skipped:
        report["synthetic_skipped"] = skipped
        log.warning("ngram: %s", skipped)
    if not private:
        report["warning"] = "baseline: exact n-gram counts; this output is NOT private"
        log.warning("ngram: %s", report["warning"])
    add_vocabulary(report, db.vocab)
    note_users(report, db)
    return NGramRelease(levels, model, synth, report, db.vocab)


def _conditional(count: Callable[[int, int], float | None], stop: int, longest: int) -> float:
    """``P(last symbol | context)`` for the prefix ``ids[:stop]`` of :meth:`NGramRelease.estimate`.

    The longest context ``ids[start:stop - 1]`` (``start >= 1``, so a proper
    suffix of the prefix, at least one symbol) whose extension by the last
    symbol the model holds, with a positive count: ``count(start, stop) /
    count(start, stop - 1)``; 0 when there is none.  Starts whose gram
    ``ids[start:stop]`` is longer than the model's ``longest`` grams are
    skipped (the model holds none of them).
    """
    for start in range(max(1, stop - longest), stop - 1):
        joint = count(start, stop)
        if joint is None:
            continue
        context = count(start, stop - 1)
        if context:
            return joint / context
    return 0.0


def check_parameters(epsilon: float, l_max: int, n_max: int | None) -> tuple[float, int, int]:
    """Check the budget and the tree's size without data: :func:`ngram` does, and a command
    may before it reads its input.

    Parameters
    ----------
    epsilon, l_max, n_max
        As for :func:`ngram` (``n_max`` None: :data:`N_MAX`).

    Returns
    -------
    epsilon : float
    l_max : int
    n_max : int
        At most ``l_max + 1`` (:func:`ngram` says when it lowers it).

    Raises
    ------
    InvalidParameter
        A value out of range, named; a noise scale of level 1 (the largest,
        over a budget of ``epsilon / n_max``) past the samplers' limit,
        naming ``l_max`` (:func:`dpgpu.privacy.laplace_scale`), or
        ``epsilon`` when even ``l_max = 1`` passes it, with the ``epsilon``
        given and its share per level.
    """
    epsilon = check_positive_real(epsilon, "epsilon")
    l_max = check_positive_int(l_max, "l_max")
    n_max = min(check_positive_int(N_MAX if n_max is None else n_max, "n_max", maximum=MAX_N),
                l_max + 1)
    share = epsilon / n_max  # level 1's budget, the smallest of a path (module doc)
    try:  # at l_max = 1: too small an epsilon (or too many levels), named as typed
        laplace_scale(share, name="l_max")
    except InvalidParameter:
        def show(x: Decimal) -> str:  # three digits, also past the floats' range
            return f"{float(x):.3g}" if 0 < float(x) < math.inf else f"{x:.3g}"

        budget = f"a budget of {epsilon:g}"
        if n_max > 1:
            budget = (f"{epsilon:g} over the n_max = {n_max} levels gives level 1 (the "
                      f"noisiest) {budget} / {n_max} = {show(Decimal(epsilon) / n_max)}, which")
        raise InvalidParameter(
            f"epsilon: too small; {budget} makes the noise scale "
            f"{show(Decimal(n_max) / Decimal(epsilon))} even at l_max = 1, past the samplers' "
            f"limit of 2**52; raise epsilon" + (" or lower n_max" if n_max > 1 else "")
        ) from None
    laplace_scale(share, _sensitivity(l_max), name="l_max")
    return epsilon, l_max, n_max


def _sensitivity(l_max: int) -> int:
    """Root-to-leaf paths one sequence can touch: its at most ``l_max`` items."""
    return l_max


def _synthetic_too_large(model: list[ModelLevel]) -> str | None:
    """Why no synthetic database is made, when it would pass :data:`MAX_SYNTHETIC_ITEMS` items.

    Decomposition publishes as many items as the model's 1-gram total, which
    at a tiny epsilon is mostly noise and can reach 1e14.  The total is
    post-processing of the released counts, so skipping the synthetic data
    (the tree and the model are still released) costs no privacy.
    """
    total = float(model[0].count.sum()) if model else 0.0
    if total <= MAX_SYNTHETIC_ITEMS:
        return None
    return (f"no synthetic data: the noisy model holds {total:.3g} items, more than the "
            f"synthetic database's limit of {MAX_SYNTHETIC_ITEMS:.0e} (epsilon too small for "
            "synthetic data); the n-grams are released")


def _possible_nodes(n_items: int, n_max: int) -> int:
    """Nodes a full exploration tree could have: |I| * sum_{i<n_max} (|I|+1)^i."""
    return n_items * sum((n_items + 1) ** i for i in range(n_max))


def _no_noise(grams: np.ndarray, scales: np.ndarray) -> np.ndarray:
    return np.zeros(grams.shape[0], dtype=np.int64)


def _laplace_noise(key: Any, max_draws: int):
    """noise(grams, scales): discrete Laplace, tag the gram length, identity the gram's row.

    The tree builder asks once per level, with the level's candidate list
    (module doc); a second call for one length would reuse identities.
    """
    drawn = [0]
    lengths: set[int] = set()

    def noise(grams: np.ndarray, scales: np.ndarray) -> np.ndarray:
        drawn[0] += grams.shape[0]
        n = grams.shape[1]
        if drawn[0] > max_draws or n in lengths:  # the tree builder keeps to both; guards
            raise RuntimeError("ngram drew more noisy counts than its public cap, or one "
                               "level twice")
        lengths.add(n)
        ids = np.arange(grams.shape[0], dtype=np.int64)
        out = np.empty(grams.shape[0], dtype=np.int64)
        for scale in np.unique(scales):
            rows = np.flatnonzero(scales == scale)
            out[rows] = _laplace(float(scale)).sample(key, ids[rows], tag=n, backend="numpy")
        return out

    return noise


@lru_cache(maxsize=256)
def _laplace(scale: float) -> DiscreteLaplace:
    """The sampler of one scale (its exact tables are built once)."""
    return DiscreteLaplace(scale)
