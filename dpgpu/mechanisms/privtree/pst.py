"""Private prediction suffix tree (PrivTree, SIGMOD'16, Section 4).

Every sequence is read as ``$ x_1 ... x_l &`` and cut to its first ``l_top``
symbols after ``$`` (``&`` included): a sequence of ``l_top`` or more items
keeps its first ``l_top`` items and loses ``&`` (Section 4.2).  A node's
predictor string (context) ``w`` has the histogram ``hist(w)[x]`` = number of
occurrences of ``w x`` for ``x`` in ``I ∪ {&}``; the root has the empty
context.  Children prepend a symbol of ``I`` or ``$``; a context starting
with ``$`` is never split (C1).  The tree is grown level by level on the
array engine (:func:`grow`): ``bincount`` gives the histograms of a
whole level (one call per block of :data:`BLOCK` events).  With
``engine="dask"`` each Dask partition of the sequences counts its own
histograms and the client adds them
(:func:`grow_partitions`); the noise is drawn once, on the client, so the
release is the same as a local run's for the same key.

Privacy argument
----------------
Neighbouring databases differ in one sequence (added or removed).

* **Tree (Theorem 4.1).**  The score ``c(v) = ||hist(v)||_1 - max hist(v)``
  (Eq. 13) is monotone (Lemma 4.1).  Adding a sequence is ``l <= l_top``
  one-symbol steps; each step increments ``hist(w)[x_i]`` for the contexts
  ``w`` that are suffixes of ``$ x_1 .. x_{i-1}`` -- one root-to-leaf path --
  and moves each of their scores by at most one.  The split test of
  :mod:`.core` with ``beta = |I| + 1``, ``sensitivity = l_top`` and budget
  ``eps_tree = epsilon - eps_hist`` (``epsilon / beta`` up to rounding;
  :func:`calibrate`) is then ``eps_tree``-DP (Theorem 4.1 with integer
  noise: see :mod:`.core`).
* **Leaf histograms (Theorem 4.2).**  Each symbol of the sequence is counted
  in the histogram of exactly one leaf, so the leaf histograms have L1
  sensitivity ``l_top``; each count gets discrete Laplace noise of scale
  ``l_top / eps_hist`` with ``eps_hist = epsilon (beta - 1) / beta``
  (rounded down).
* Inner histograms are sums of leaf histograms, negatives are set to 0,
  count queries (Eq. 12), top-k strings and synthetic sequences use the
  released histograms only: post-processing.  Total: ``epsilon``-DP by
  sequential composition, plus the samplers' accounted ``sampling_delta``
  for at most ``max_nodes`` split draws and ``l_top`` counts.  The counts
  need only ``l_top``, by the hybrid argument of :mod:`dpgpu.mechanisms.ngram`:
  given the released tree (the same on both neighbours), every leaf count
  the added sequence does not touch is equal and gets the same keyed draw,
  so the exact mechanism differs from the release in at most the ``l_top``
  touched draws, whatever the number of leaves or symbols.

``max_nodes`` is a public cap: when a level would take the tree past it,
the tree is cut above that level (all its nodes become leaves).  The cut is
a function of the uncapped PrivTree's output (the number of nodes per
level), so it is post-processing.  Every node releases ``|I| + 1`` counts, so
``max_nodes * (|I| + 1)`` bounds the counts a run makes and writes; it may be
at most :data:`MAX_HISTOGRAM_CELLS` (:func:`node_limit`, checked from public
inputs before any budget is spent), and the default cap is lowered to fit a
large vocabulary.  Noise identities are positions (tag: the
depth): a node's position in its depth's list of nodes for its split test,
``position * beta + symbol`` for a count of its histogram.  The lists are
fixed by released splits only, and positions are distinct, so no two draws
of a depth share a value (hashes of long contexts could collide).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from ...backend import get_backend, to_numpy
from ...data.sequencedb import SequenceDB, check_db, synthetic_like
from ...errors import InvalidParameter
from ...privacy import DiscreteLaplace, PrivacyLedger, laplace_scale, sampling_delta, \
    split_budget
from ...privacy.samplers import LAPLACE_TV_BOUND
from ...progress import Step, stage_reporter
from ...release import ReleaseWriter, add_vocabulary, note_users
from ...report import Displayed
from ...scale.partitions import LocalPartitions, Partitions, check_engine, engine_run, \
    partition
from ...validation import check_bool, check_positive_int, check_positive_real
from . import sampling
from ...ops.keys import index_dtype
from .core import SplitTest, split_params

log = logging.getLogger("dpgpu")

#: Events a step of :meth:`Events.histograms` and :meth:`Events.descend` works on at once.
BLOCK = 1 << 20
#: Default public cap on the number of tree nodes (lowered for large vocabularies:
#: :func:`node_limit`).
MAX_NODES = 1_000_000
#: Most histogram counts a release holds, ``max_nodes * (|I| + 1)`` (every node, inner ones
#: too, has a count for each item and ``&``): int64 counts held about three times over while
#: they are made (exact, noisy, released; then the sampler's running sums), about 30 bytes
#: a count at the peak, and 3 to 8 bytes a count as text in ``pst.json``: a few GB of memory
#: and a file of under a GB.
MAX_HISTOGRAM_CELLS = 100_000_000
#: Noisy counts drawn at once by :func:`noisy_histograms`.
HIST_BLOCK = 1 << 22
#: Largest max_length accepted for synthetic sequences.
MAX_SYNTHETIC_LENGTH = 100_000
#: Most synthetic sequences, and most items they may hold (``n_synthetic * max_length``):
#: they are sampled and written in memory, about 50 bytes a sequence and 10 an item at
#: the peak (10,000,000 sequences of 17 items on average took 2.2 GB), so both limits
#: keep it to a few GB.
MAX_SYNTHETIC = 10_000_000
MAX_SYNTHETIC_ITEMS = 200_000_000


@dataclass
class PSTLevel:
    """The nodes of one depth (one row per node).

    Attributes
    ----------
    contexts : (F, depth) int32
        Predictor strings, oldest symbol first (``$`` is ``|I| + 1``).
    tree : (F,) int64
        Which tree of a forest the node belongs to (0 in a release).
    leaf : (F,) bool
    child_start : (F,) int64
        Row of the first of the ``beta`` children in the next level, -1 for leaves.
    hist : (F, beta) int64
        Noisy histogram over ``I ∪ {&}`` (leaves: noisy counts; inner: sums of
        leaves; then negatives set to 0).
    """

    contexts: np.ndarray
    tree: np.ndarray
    leaf: np.ndarray
    child_start: np.ndarray
    hist: np.ndarray = None


def pst_symbols(db: SequenceDB, l_top: int) -> tuple[np.ndarray, np.ndarray]:
    """The database as ``$ x_1 .. x_l &`` cut to ``l_top`` symbols after ``$`` (module doc).

    Works with masks (one byte per item), not with index arrays of every item.

    Returns
    -------
    flat : int32 array
        All sequences' symbols, concatenated (``$`` is ``|I| + 1``, ``&`` is ``|I|``).
    events : array of :func:`index_dtype` ``(flat.size)``
        Position in ``flat`` of every predicted symbol (every symbol but ``$``).
    """
    kept = np.minimum(db.lengths, l_top).astype(np.int64)
    ends = db.lengths < l_top
    size = 1 + kept + ends
    starts = np.cumsum(size) - size
    flat = np.full(int(size.sum()), db.vocab.end_id, dtype=np.int32)
    is_item = np.ones(flat.size, dtype=bool)
    is_item[starts] = False
    is_item[(starts + 1 + kept)[ends]] = False
    flat[is_item] = db.items[_kept_items(db, l_top)]
    del is_item
    flat[starts] = db.vocab.start_id
    events = np.arange(flat.size, dtype=index_dtype(flat.size))
    return flat, events[flat != db.vocab.start_id]


def _kept_items(db: SequenceDB, l_top: int) -> np.ndarray:
    """Mask of the items of ``db.items`` among their sequence's first ``l_top``."""
    long = np.flatnonzero(db.lengths > l_top)
    # +1 where a long sequence's cut tail begins, -1 where it ends; the tails are disjoint
    edges = np.zeros(db.items.size + 1, dtype=np.int8)
    edges[db.offsets[long] + l_top] = 1
    edges[db.offsets[long + 1]] = -1
    return np.cumsum(edges[:-1], dtype=np.int8) == 0


def _sensitivity(l_top: int) -> int:
    """Root-to-leaf paths (and leaf counts) one sequence can move: its ``l_top`` symbols."""
    return l_top


def scores(hist: Any):
    """``||hist||_1 - max hist`` per row (Eq. 13)."""
    return hist.sum(axis=1) - hist.max(axis=1)


@dataclass
class Events:
    """One partition's predicted symbols and the current tree node of each (:func:`grow`).

    Indices are int32 where their bound allows (:func:`index_dtype`): two
    four-byte words per event, the largest arrays of a run.

    Attributes
    ----------
    flat : array of int32
        The partition's symbols (:func:`pst_symbols`), in the backend's namespace.
    pos : array of :func:`index_dtype` ``(flat.size)``
        Position in ``flat`` of every event still in a node of the current
        level; ``flat[pos]`` is the predicted symbol.
    node : array of int32 or int64
        Its node's row in the current level (int64 only for levels of
        ``2**31`` nodes or more).
    backend : str
        Backend name the arrays belong to.
    """

    flat: Any
    pos: Any
    node: Any
    backend: str

    @classmethod
    def of(cls, flat: Any, events: Any, n_trees: int, backend: str) -> "Events":
        """The events of ``n_trees`` roots (every event in every tree's root)."""
        xp = get_backend(backend).xp
        flat = xp.asarray(flat)
        pos = xp.tile(xp.asarray(events, dtype=index_dtype(flat.shape[0])), n_trees)
        node = xp.repeat(xp.arange(n_trees, dtype=index_dtype(n_trees)), int(events.shape[0]))
        return cls(flat, pos, node, backend)

    def histograms(self, n_nodes: int, beta: int) -> np.ndarray:
        """Exact ``(n_nodes, beta)`` histograms of the current level (a ``bincount`` a block)."""
        xp = get_backend(self.backend).xp
        n_bins = n_nodes * beta
        hist = xp.zeros(n_bins, dtype=xp.int64)
        # blocks of at least n_bins events: a block's bincount takes at most 8 bytes an event
        for part in _blocks(self.pos.shape[0], max(BLOCK, n_bins)):
            keys = self.node[part].astype(index_dtype(n_bins))
            keys *= beta
            keys += self.flat[self.pos[part]]
            hist += xp.bincount(keys, minlength=n_bins)
        return to_numpy(hist).reshape(n_nodes, beta)

    def descend(self, split: np.ndarray, child_start: np.ndarray, depth: int,
                n_items: int) -> "Events":
        """The events of the split nodes, moved to their children (a new object).

        ``child_start`` is in the next level's node dtype (:func:`grow_partitions`).
        The new arrays are filled a block of events at a time.
        """
        xp = get_backend(self.backend).xp
        child_start = xp.asarray(child_start)
        keep = xp.asarray(split)[self.node]
        n_kept = int(xp.count_nonzero(keep))
        pos = xp.empty(n_kept, dtype=self.pos.dtype)
        node = xp.empty(n_kept, dtype=child_start.dtype)
        done = 0
        for part in _blocks(keep.shape[0], BLOCK):
            kept = keep[part]
            at = slice(done, done + int(xp.count_nonzero(kept)))
            pos[at] = self.pos[part][kept]
            slot = self.flat[pos[at] - (depth + 1)]  # the symbol the child prepends
            xp.minimum(slot, n_items, out=slot)  # '$' is slot n_items
            node[at] = child_start[self.node[part][kept]] + slot
            done = at.stop
        return Events(self.flat, pos, node, self.backend)


def _blocks(size: int, step: int):
    """Slices of ``range(size)``, ``step`` long (the last one shorter)."""
    return (slice(lo, lo + step) for lo in range(0, size, step))


def _partition_events(part: SequenceDB, l_top: int, backend: str) -> Events:
    """The :class:`Events` of one partition of the database (one tree)."""
    flat, events = pst_symbols(part, l_top)
    return Events.of(flat, events, 1, backend)


def grow(flat: Any, events: Any, n_items: int, test: SplitTest, *, n_trees: int = 1,
         max_nodes: int = MAX_NODES, backend: Any = None
         ) -> tuple[list[PSTLevel], list[np.ndarray]]:
    """Grow ``n_trees`` independent PrivTree PSTs over one database, level by level.

    Every predicted symbol (an *event*) carries the index of its node in the
    current level, like a point in a spatial tree: ``bincount`` gives the
    histograms of the whole level, and the events of a split node move to the
    child named by the symbol ``depth + 1`` places before them.

    Returns
    -------
    levels : list of PSTLevel
        Without histograms.
    exact : list of (F, beta) int64
        The exact histograms of each level's nodes (private; never released).
    """
    # no name here holds the roots' events: grow_partitions frees each level's as it goes
    return grow_partitions(
        LocalPartitions([Events.of(flat, events, n_trees, get_backend(backend).name)], [None]),
        n_items, test, n_trees=n_trees, max_nodes=max_nodes)


def grow_partitions(parts: Partitions, n_items: int, test: SplitTest, *, n_trees: int = 1,
                    max_nodes: int = MAX_NODES, max_depth: int = 1,
                    progress: Callable[[str], None] = lambda msg: None
                    ) -> tuple[list[PSTLevel], list[np.ndarray]]:
    """:func:`grow` over partitions whose states are :class:`Events`.

    Each level's histograms are summed over the partitions
    (:mod:`dpgpu.scale.partitions`: this process, or Dask workers); the split
    decisions (keyed noise) are taken once, on the client, and sent back to
    move the partitions' events.  Every event's context lies within its own
    sequence, so partitions never need each other's symbols.

    Parameters
    ----------
    parts : Partitions
        States: the :class:`Events` of every partition, at the roots.
    n_items : int
    test : SplitTest
    n_trees : int
    max_nodes : int
    max_depth : int
        Deepest level the data allows (for the progress bar only).
    progress : callable
        Receives a :class:`dpgpu.progress.Step` per level.

    Returns
    -------
    levels, exact : see :func:`grow`
    """
    beta = n_items + 1
    start_id = n_items + 1
    child_syms = np.append(np.arange(n_items, dtype=np.int32), np.int32(start_id))
    contexts = np.zeros((n_trees, 0), dtype=np.int32)
    tree = np.arange(n_trees, dtype=np.int64)
    levels, exact, total = [], [], n_trees
    depth = 0
    while True:
        n_nodes = contexts.shape[0]
        hist = parts.sum(Events.histograms, n_nodes, beta)
        testable = np.flatnonzero(contexts[:, 0] != start_id) if depth else np.arange(n_trees)
        split = np.zeros(n_nodes, dtype=bool)
        split[testable] = test.decide(scores(hist[testable]), depth,
                                      testable.astype(np.uint64), "numpy")  # positions
        n_split = int(split.sum())
        if total + n_split * beta > max_nodes:
            log.warning("privtree: the public cap of %d nodes cuts the tree at depth %d",
                        max_nodes, depth)
            split[:] = False
            n_split = 0
        child_start = np.full(n_nodes, -1, dtype=np.int64)
        child_start[split] = np.arange(n_split, dtype=np.int64) * beta
        levels.append(PSTLevel(contexts, tree, ~split, child_start))
        exact.append(hist)
        progress(Step(f"depth {depth}: {n_nodes} nodes, {n_split} split", depth + 1,
                      max_depth + 1))
        if n_split == 0:
            return levels, exact
        parts = parts.map(Events.descend, split,
                          child_start.astype(index_dtype(n_split * beta)), depth, n_items)
        contexts = np.concatenate([np.tile(child_syms, n_split)[:, None],
                                   np.repeat(contexts[split], beta, axis=0)], axis=1)
        tree = np.repeat(tree[split], beta)
        total += n_split * beta
        depth += 1


def calibrate(epsilon: float, l_top: int, n_items: int):
    """The PST's budgets and noise (module doc): ``epsilon / beta`` for the tree, the rest
    for the leaf histograms, both for ``l_top`` paths per sequence (``beta = n_items + 1``).

    ``eps_hist`` is ``epsilon (beta - 1) / beta`` rounded down and ``eps_tree``
    the exact rest, ``epsilon - eps_hist`` (at least ``epsilon / beta``): a
    float subtraction is exact when the result is at least half the
    operand subtracted from (Sterbenz), here ``eps_hist >= epsilon / 2``, so
    the two add up to exactly ``epsilon`` and the report says the budget
    asked for, where two shares rounded down each spend a hair less.

    Returns
    -------
    eps_tree, eps_hist : float
    params : SplitParams
        The split test's (Corollary 1 with sensitivity ``l_top``).
    hist_scale : float
        Discrete Laplace scale of a leaf histogram count, rounded up.

    Raises
    ------
    InvalidParameter
        A noise scale past the samplers' limit, naming ``l_top`` or ``epsilon``
        (:func:`~dpgpu.privacy.laplace_scale`).
    """
    beta = n_items + 1
    eps_hist = split_budget(epsilon, [1, beta - 1])[1]
    eps_tree = epsilon - eps_hist
    return (eps_tree, eps_hist, split_params(eps_tree, beta, _sensitivity(l_top), name="l_top"),
            laplace_scale(eps_hist, _sensitivity(l_top), name="l_top"))


def node_limit(n_items: int | None, max_nodes: int | None = None) -> int:
    """The public node cap of a PST over ``n_items`` items (``beta = n_items + 1``).

    Every node releases ``beta`` counts, so ``max_nodes * beta`` bounds the
    histogram counts a run makes and writes (the tree never holds more than
    ``max_nodes`` nodes: :func:`grow_partitions`); it may be at most
    :data:`MAX_HISTOGRAM_CELLS`.  Public inputs only: ``n_items`` is the
    vocabulary's size, which :func:`calibrate` already takes as public.

    Parameters
    ----------
    n_items : int or None
        Vocabulary size ``|I|``; None where it is not known yet (a command
        before it reads its input): then only the bound of a one-item
        vocabulary is checked.
    max_nodes : int, optional
        The cap asked for.  Default: :data:`MAX_NODES`, lowered to
        ``MAX_HISTOGRAM_CELLS // beta`` for a large vocabulary (then a tree of
        more than ``MAX_HISTOGRAM_CELLS // beta`` nodes is cut; one over more
        than about 10,000 items cannot split its root).

    Returns
    -------
    int
        The cap.

    Raises
    ------
    InvalidParameter
        ``max_nodes`` not a positive integer; ``max_nodes * (n_items + 1)``
        above :data:`MAX_HISTOGRAM_CELLS`, naming ``max_nodes`` /
        ``--max-nodes`` and the vocabulary; a vocabulary whose root
        histogram alone is above it.
    """
    items = "any vocabulary" if n_items is None else f"{n_items:,} items"
    beta = 2 if n_items is None else n_items + 1
    most = MAX_HISTOGRAM_CELLS // beta
    if max_nodes is not None:
        max_nodes = check_positive_int(max_nodes, "max_nodes")
    if most < 1:
        raise InvalidParameter(
            f"vocabulary: {n_items:,} items, but a PST node's histogram has |I| + 1 counts and "
            f"a release at most {MAX_HISTOGRAM_CELLS:,} (a few GB of memory): use a smaller "
            "vocabulary (coarser items)")
    if max_nodes is None:
        return min(MAX_NODES, most)
    if max_nodes > most:
        raise InvalidParameter(
            f"max_nodes: at most {most:,} with {items}, got {max_nodes:,}: every node "
            f"releases |I| + 1{'' if n_items is None else f' = {beta:,}'} noisy counts and a "
            "release holds at most "
            f"{MAX_HISTOGRAM_CELLS:,} (max_nodes x (|I| + 1), a few GB of memory); lower "
            "max_nodes / --max-nodes, or use a smaller vocabulary (coarser items)")
    return max_nodes


def noisy_histograms(levels: list[PSTLevel], exact: list[np.ndarray], key: Any,
                     scale: float, progress: Callable[[str], None] = lambda msg: None) -> None:
    """Set ``hist`` of every level: noisy leaf histograms, inner sums, negatives to 0.

    The noise of a count is keyed by ``(depth, position * beta + symbol)``
    (module doc), so drawing it :data:`HIST_BLOCK` counts at a time (whole
    leaves) gives the same values as one draw.

    Parameters
    ----------
    levels : list of PSTLevel
    exact : list of (F, beta) int64
        The exact histograms of :func:`grow_partitions`.
    key : NoiseKey
    scale : float
        Discrete Laplace scale of a count.
    progress : callable
        Receives ``"noisy histograms: DONE of TOTAL counts"`` after each block
        of noisy counts when there are more than one block's (a plain
        message, not a :class:`~dpgpu.progress.Step`: the tree's levels are
        the run's counted stage).
    """
    beta = exact[0].shape[1]
    sampler = DiscreteLaplace(scale)
    syms = np.arange(beta, dtype=np.int64)
    rows = max(1, HIST_BLOCK // beta)  # leaves a block
    total = beta * int(sum(int(lvl.leaf.sum()) for lvl in levels))
    done = 0
    raw = []
    for depth, (lvl, hist) in enumerate(zip(levels, exact)):
        leaves = np.flatnonzero(lvl.leaf)
        noisy = np.zeros(hist.shape, dtype=np.int64)
        for part in _blocks(leaves.size, rows):
            at = leaves[part]
            ids = (at[:, None] * beta + syms[None, :]).ravel()
            noise = sampler.sample(key, ids, tag=depth, backend="numpy").reshape(-1, beta)
            noisy[at] = hist[at] + noise
            done += ids.size
            if total > HIST_BLOCK:
                progress(f"noisy histograms: {done:,} of {total:,} counts")
        raw.append(noisy)
    for depth in range(len(levels) - 2, -1, -1):  # inner = sum of children (of leaves below)
        lvl = levels[depth]
        inner = np.flatnonzero(~lvl.leaf)
        if inner.size:
            kids = raw[depth + 1].reshape(-1, beta, beta)
            raw[depth][inner] = kids[lvl.child_start[inner] // beta].sum(axis=1)
    for lvl, noisy in zip(levels, raw):
        lvl.hist = np.maximum(noisy, 0, out=noisy)


class PSTRelease(Displayed):
    """The output of :func:`pst`: the noisy PST, its uses, synthetic data and report.

    Attributes
    ----------
    levels : list of PSTLevel
    synthetic : SequenceDB or None
    report : dict
    vocab : Vocabulary
    """

    def __init__(self, levels: list[PSTLevel], synthetic: SequenceDB | None, report: dict,
                 vocab: Any, l_top: int):
        self.levels, self.synthetic, self.report, self.vocab = levels, synthetic, report, vocab
        self.l_top = l_top
        self.model = sampling.Model(levels, vocab.size)

    def _sizes(self) -> dict[str, int | None]:
        return {"nodes": sum(int(lvl.leaf.size) for lvl in self.levels),
                "synthetic": None if self.synthetic is None else len(self.synthetic)}

    @property
    def start_marker(self) -> str:
        """The start marker's name in ``pst.json``: ``$``, or ``$$``, ... if an item is ``$``."""
        name = "$"
        while name in self.vocab:
            name += "$"
        return name

    def estimate(self, labels: Sequence[Any]) -> float:
        """Estimated occurrences of an item string (``&`` may end it), by Eq. 12.

        Parameters
        ----------
        labels : sequence of labels
            Item labels, optionally followed by ``"&"`` (occurrences that end
            a sequence within ``l_top`` symbols).  Entries are turned into
            strings (``[1, 2]`` is ``["1", "2"]``); a single string is refused,
            not split into characters.  An item labelled ``&`` wins over the
            end marker (:meth:`dpgpu.Vocabulary.encode_string`).

        Returns
        -------
        float
            The estimated count.

        Raises
        ------
        InvalidParameter
            When ``labels`` is a string, a set or a mapping, holds no item,
            holds a label that is not in the vocabulary, or has ``&`` before
            its end (:meth:`dpgpu.Vocabulary.encode_string`).
        """
        ids = self.vocab.encode_string(labels)
        return float(self.model.estimate(ids[None, :])[0])

    def top_k(self, k: int, *, min_length: int = 1) -> list[tuple[tuple[str, ...], float]]:
        """The ``k`` item strings of length >= ``min_length`` with the largest estimates.

        Parameters
        ----------
        k : int
            How many strings (at least 1).
        min_length : int
            Shortest string length.  Default 1: single items count (N-gram's
            :meth:`~dpgpu.mechanisms.ngram.NGramRelease.top_k` starts at 2,
            as the N-gram paper's evaluation does).

        Returns
        -------
        list of (tuple of str, float)
            ``(labels, Eq. 12 estimate)`` of strings of items (no ``&``) of at
            most ``l_top`` items, largest first; fewer than ``k`` when fewer
            have a positive estimate.

        Raises
        ------
        InvalidParameter
            When ``k`` or ``min_length`` is not a positive integer.
        """
        k = check_positive_int(k, "k")
        min_length = check_positive_int(min_length, "min_length")
        grams, est = self.model.top_k(k, min_length=min_length, max_length=self.l_top)
        return [(self.vocab.decode(g), float(c)) for g, c in zip(grams, est)]

    def nodes(self) -> list[dict[str, Any]]:
        """Every node: context labels, depth, leaf flag, noisy histogram.

        Returns
        -------
        list of dict
            The dicts :meth:`iter_nodes` yields, all at once (as Python
            lists: gigabytes for a large vocabulary, where
            :meth:`iter_nodes` holds one node's at a time).
        """
        return list(self.iter_nodes())

    def iter_nodes(self) -> Iterator[dict[str, Any]]:
        """The nodes of :meth:`nodes` one at a time (a histogram made a list only when its
        node comes: a large alphabet's histograms would take gigabytes as Python lists).

        Yields
        ------
        dict
            One node, depth by depth (the root first), with the keys
            ``"context"``: list of str, its predictor string, oldest symbol
            first (item labels, after :attr:`start_marker` where the context
            begins at a sequence's start; empty for the root);
            ``"depth"``: int, the context's length; ``"leaf"``: bool;
            ``"hist"``: list of int, the noisy counts of the next symbol,
            the items in id order and then ``&`` (``|I| + 1`` counts: a
            leaf's noisy counts, an inner node's the sums of its leaves',
            then negatives set to 0).
        """
        labels = list(self.vocab.labels) + ["&", self.start_marker]
        for depth, lvl in enumerate(self.levels):
            for ctx, leaf, h in zip(lvl.contexts.tolist(), lvl.leaf.tolist(), lvl.hist):
                yield {"context": [labels[s] for s in ctx], "depth": depth, "leaf": leaf,
                       "hist": h.tolist()}

    def save(self, out_dir: Any, *, force: bool = False) -> Any:
        """Write the release directory: report.json, pst.json, synthetic.<ext>.

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
                           progress=lambda msg: log.info("pst: %s", msg)) as rel:
            rel.write_json("pst.json", {"symbols": list(self.vocab.labels) + ["&"],
                                        "start_marker": self.start_marker, "l_top": self.l_top},
                           items=("nodes", self.iter_nodes()))
            report = dict(self.report)
            if self.synthetic is not None:
                report.update(rel.synthetic_entries(self.synthetic))
            return rel.finish(report)


def synthetic_limit(max_length: int) -> int:
    """The most synthetic sequences of at most ``max_length`` items sampled in one release.

    :data:`MAX_SYNTHETIC`, and no more than :data:`MAX_SYNTHETIC_ITEMS` items
    should every sequence reach ``max_length``: public parameters only.
    """
    return min(MAX_SYNTHETIC, MAX_SYNTHETIC_ITEMS // max_length)


def check_synthetic(l_top: int, max_length: int | None,
                    n_synthetic: int | None) -> tuple[int, int, int | None]:
    """Check the truncation and the synthetic data's size without data: :func:`pst` does,
    and a command may before it reads its input.

    Parameters
    ----------
    l_top, max_length, n_synthetic
        As for :func:`pst`.

    Returns
    -------
    l_top : int
    max_length : int
        Its default filled in: ``l_top``, at most :data:`MAX_SYNTHETIC_LENGTH`.
    n_synthetic : int or None

    Raises
    ------
    InvalidParameter
        A value out of range, named; ``n_synthetic`` above
        :func:`synthetic_limit`, naming it and ``max_length``.
    """
    l_top = check_positive_int(l_top, "l_top")
    max_length = min(l_top, MAX_SYNTHETIC_LENGTH) if max_length is None else \
        check_positive_int(max_length, "max_length", maximum=MAX_SYNTHETIC_LENGTH)
    most = synthetic_limit(max_length)
    if n_synthetic is not None and check_positive_int(n_synthetic, "n_synthetic") > most:
        raise InvalidParameter(
            f"n_synthetic: at most {most} with max_length {max_length}, got {n_synthetic}: "
            f"synthetic data is made in memory, at most {MAX_SYNTHETIC} sequences and "
            f"{MAX_SYNTHETIC_ITEMS} items (n_synthetic * max_length), a few GB; lower "
            "n_synthetic or max_length")
    return l_top, max_length, n_synthetic


def _default_synthetic_count(model: sampling.Model, most: int) -> int:
    """The model's noisy sequence count, held to ``most`` (a tiny epsilon's can be 1e14)."""
    n = model.sequence_count()
    if n > most:
        log.warning("pst: the model's noisy sequence count, %d, is lowered to the limit of %d "
                    "synthetic sequences (pass n_synthetic / --n-synthetic to choose)", n, most)
    return min(n, most)


@engine_run()
def pst(db: SequenceDB, epsilon: float, *, l_top: int = 20, seed: int | None = None,
        backend: Any = None, synthetic: bool = True, n_synthetic: int | None = None,
        max_length: int | None = None, max_nodes: int | None = None, engine: str = "local",
        client: Any = None, progress: Callable[[str], None] | None = None) -> PSTRelease:
    """Release a private prediction suffix tree and synthetic sequences (PrivTree Section 4).

    Parameters
    ----------
    db : SequenceDB
        One sequence per individual.
    epsilon : float
        Privacy budget (epsilon-DP for adding or removing one sequence).
    l_top : int
        Symbols kept per sequence, ``&`` included (Section 4.2).  Default 20.
    seed : int, optional
        Reproducible noise (recorded as seeded).  Default: a fresh key.
    backend : str or Backend, optional
        Where histograms are counted and synthetic sequences are sampled.
    synthetic : bool
        Sample a synthetic database from the model.
    n_synthetic : int, optional
        Number of synthetic sequences, at most :func:`synthetic_limit`
        (:data:`MAX_SYNTHETIC` sequences and :data:`MAX_SYNTHETIC_ITEMS`
        items at ``max_length`` each, to keep them to a few GB of memory);
        default the noisy count of the ``$`` node (the root's ``&`` count
        when the root is a leaf), lowered to that limit (with a warning).
    max_length : int, optional
        Cap on synthetic sequence length in items (default ``l_top``: the
        model saw sequences of at most ``l_top`` symbols; at most
        :data:`MAX_SYNTHETIC_LENGTH`); a sequence that reaches it is cut there.
    max_nodes : int, optional
        Public cap on the tree size (module doc).  Every node releases a
        histogram of ``|I| + 1`` counts, and ``max_nodes * (|I| + 1)`` may
        be at most :data:`MAX_HISTOGRAM_CELLS`; default :data:`MAX_NODES`,
        lowered to ``MAX_HISTOGRAM_CELLS // (|I| + 1)`` for a large
        vocabulary (:func:`node_limit`).
    engine : {"local", "dask"}
        Count the level histograms on this machine, or over Dask partitions
        of the sequences (same release for the same key; see
        :func:`grow_partitions`).
    client : dask.distributed.Client or str, optional
        With ``engine="dask"``: a client, or a scheduler's address; default: a
        local cluster of two workers.  One the run opens is closed when it ends.
    progress : callable, optional
        Receives one line per finished stage.

    Returns
    -------
    PSTRelease

    Raises
    ------
    InvalidParameter
        A parameter out of range, named (before any budget is spent or data
        counted), notably ``max_nodes * (|I| + 1)`` above
        :data:`MAX_HISTOGRAM_CELLS` (:func:`node_limit`: lower ``max_nodes``
        or use a smaller vocabulary); ``n_synthetic`` or ``max_length``
        with ``synthetic=False``; ``n_synthetic`` above
        :func:`synthetic_limit`; a noise scale or sampling delta the
        samplers cannot give, naming ``epsilon``, ``l_top`` or ``max_nodes``.
    """
    check_db(db, "db", items=True)
    epsilon = check_positive_real(epsilon, "epsilon")
    synthetic = check_bool(synthetic, "synthetic")
    unused = [name for name, value in (("n_synthetic", n_synthetic), ("max_length", max_length))
              if value is not None and not synthetic]
    if unused:
        raise InvalidParameter(f"{', '.join(unused)}: shape the synthetic data, which "
                               "synthetic=False skips: drop them or synthetic=False")
    l_top, max_length, n_synthetic = check_synthetic(l_top, max_length, n_synthetic)
    if not synthetic:
        max_length = None  # the report records no synthetic data's length
    # public: the vocabulary's size, as in calibrate; before the budget is charged
    default = max_nodes is None
    max_nodes = node_limit(db.vocab.size, max_nodes)
    if default and max_nodes < MAX_NODES:
        lowered = (f"pst: {db.vocab.size:,} items: max_nodes defaults to {max_nodes:,}, so that "
                   f"the release holds at most {MAX_HISTOGRAM_CELLS:,} histogram counts "
                   "(max_nodes x (|I| + 1))")
        if max_nodes < db.vocab.size + 2:  # a split of the root adds |I| + 1 nodes
            log.warning("%s; the root cannot split, the tree is its root only: use a smaller "
                        "vocabulary", lowered)
        else:
            log.info("%s", lowered)
    engine = check_engine(engine, db, client)
    progress = stage_reporter(progress, "pst")
    be = get_backend(backend)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    eps_tree, eps_hist, params, hist_scale = calibrate(epsilon, l_top, db.vocab.size)
    ledger = PrivacyLedger(epsilon, max_sampling_delta=1e-6, seed=seed)
    tree_step = ledger.charge("privtree: PST structure", eps_tree,
                              sampling_delta=sampling_delta(LAPLACE_TV_BOUND, max_nodes, eps_tree),
                              hint="max_nodes")
    # the leaf counts one sequence touches (module doc), not every count drawn
    hist_step = ledger.charge("privtree: leaf histograms", eps_hist,
                              sampling_delta=sampling_delta(LAPLACE_TV_BOUND,
                                                            _sensitivity(l_top), eps_hist),
                              hint="l_top")
    # popped into the call below, so that no name here holds the roots' events while the
    # tree grows (each level's events then free the level before)
    parts = [partition(db, engine, client).map(_partition_events, l_top, be.name)]
    timings["prepare_s"] = time.perf_counter() - t0
    t = time.perf_counter()
    test = SplitTest(params, tree_step.key)
    levels, exact = grow_partitions(parts.pop(), db.vocab.size, test, max_nodes=max_nodes,
                                    max_depth=l_top + 1, progress=progress)
    timings["tree_s"] = time.perf_counter() - t
    t = time.perf_counter()
    noisy_histograms(levels, exact, hist_step.key, hist_scale, progress)
    del exact
    timings["histograms_s"] = time.perf_counter() - t
    timings["build_s"] = time.perf_counter() - t0
    progress(f"tree: {[int(lvl.leaf.size) for lvl in levels]} nodes per depth")
    synth = None
    if synthetic:
        t = time.perf_counter()
        model = sampling.Model(levels, db.vocab.size, be)
        n = n_synthetic if n_synthetic is not None else \
            _default_synthetic_count(model, synthetic_limit(max_length))
        progress(f"sampling {n} synthetic sequences")
        items, lengths = model.sample(n, max_length, hist_step.key.derive("synthesis"))
        synth = synthetic_like(db, items, lengths)
        timings["synthetic_s"] = time.perf_counter() - t
        progress(f"synthetic database: {len(synth)} sequences")
    timings["total_s"] = time.perf_counter() - t0
    report = {
        "mechanism": "privtree-pst",
        "paper": "Zhang, Xiao, Xie: PrivTree: A Differentially Private Algorithm for "
                 "Hierarchical Decompositions (SIGMOD 2016), Section 4",
        "private": True,
        "parameters": {"epsilon": epsilon, "l_top": l_top, "max_nodes": max_nodes,
                       "max_length": max_length, "n_synthetic": n_synthetic},
        "split_test": params.to_dict(),
        "histogram_noise": {"epsilon": eps_hist, "scale": hist_scale},
        "epsilon": ledger.spent_epsilon,
        "delta": ledger.spent_delta,
        "ledger": ledger.to_dict(),
        "seeded": ledger.seeded,
        "backend": be.name, "device": be.device_name(), "engine": engine,
        "input": {"format": db.source.get("format")},
        "tree": {"nodes_per_depth": [int(lvl.leaf.size) for lvl in levels],
                 "leaves": int(sum(int(lvl.leaf.sum()) for lvl in levels)),
                 "split_tests": test.draws},
        "timings": {k: round(v, 4) for k, v in timings.items()},
    }
    add_vocabulary(report, db.vocab)
    note_users(report, db)
    return PSTRelease(levels, synth, report, db.vocab, l_top)

