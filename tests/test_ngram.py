"""N-gram mechanism (CCS'12): the paper's toy example step by step, privacy audit, release."""

from __future__ import annotations

import inspect
import json
import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpgpu
from dpgpu import InvalidParameter, SequenceDB
from dpgpu.audit import audit
from dpgpu.backend import to_numpy
from dpgpu.cli import main
from dpgpu.mechanisms import ngram as ngram_module
from dpgpu.mechanisms.ngram import _laplace_noise, ngram
from dpgpu.release import encode_gram
from dpgpu.mechanisms.ngram.consistency import enforce_consistency
from dpgpu.mechanisms.ngram.synthesis import decompose, join_level, model_level
from dpgpu.mechanisms.ngram import tree as tree_module
from dpgpu.mechanisms.ngram.tree import Level, build_tree, children_pmax, subtree_height, threshold
from dpgpu.ops.grams import GramEngine
from dpgpu.ops.lookup import GramIndex
from dpgpu.privacy import NoiseKey

# Table 1 of the paper: 8 sequences over I1..I3
TABLE1 = [["I2", "I3", "I1"], ["I2", "I3"], ["I3", "I2"], ["I2", "I3", "I1"], ["I3", "I2", "I1"],
          ["I2", "I3", "I1", "I2", "I3"], ["I3", "I2"], ["I3", "I1", "I2", "I3"]]
VOCAB = ["I1", "I2", "I3"]


def toy() -> SequenceDB:
    return SequenceDB.from_sequences(TABLE1, vocab=VOCAB)


def no_noise(grams, scales):
    return np.zeros(grams.shape[0], dtype=np.int64)


def test_table_2_and_3_counts():
    tree = build_tree(GramEngine(toy(), 5, end="all"), epsilon=1.0, l_max=5, n_max=2,
                      allocation="uniform", noise=no_noise, thresholds=False)
    assert tree[0].noisy.tolist() == [5, 9, 10]  # Table 2
    got = {tuple(VOCAB[i] if i < 3 else "&" for i in g): int(c)
           for g, c in zip(tree[1].grams.tolist(), tree[1].noisy.tolist())}
    assert got == {  # Table 3
        ("I1", "I1"): 0, ("I1", "I2"): 2, ("I1", "I3"): 0, ("I1", "&"): 3,
        ("I2", "I1"): 1, ("I2", "I2"): 0, ("I2", "I3"): 6, ("I2", "&"): 2,
        ("I3", "I1"): 4, ("I3", "I2"): 3, ("I3", "I3"): 0, ("I3", "&"): 3}


def test_threshold_formula():
    # theta = l_max / eps' * ln(|I| / 2)  (the ../shared/papers/README.md reading of 4.3.3)
    assert threshold(20, np.array([0.2]), 17)[0] == pytest.approx(100 * math.log(8.5))
    assert threshold(5, np.array([1.0]), 3)[0] == pytest.approx(5 * math.log(1.5))


def test_example_4_2_pmax_and_heights():
    p_max = children_pmax(np.array([[4, 10, 9]]))[0]
    assert p_max == pytest.approx(10 / 23)  # "0.43"
    h = subtree_height(np.array([4, 10]), np.array([3.0, 3.0]), np.array([p_max, p_max]), 4)
    assert h.tolist() == [1, 2]  # log_0.43(3/4) = 0.34 -> 1; log_0.43(3/10) = 1.43 -> 2
    eps = 1.0
    assert ((eps - eps / 5) / h).tolist() == pytest.approx([4 * eps / 5, 2 * eps / 5])
    # undefined logarithms fall back to the levels left; never below 1
    assert subtree_height(np.array([5, 2]), np.array([-1.0, 3.0]), np.array([0.5, 0.5]),
                          3).tolist() == [3, 1]
    # P_max = 0 is the limit of P_max -> 0+, a height of 1 (regression: it took the levels
    # left, the opposite extreme, spreading the budget thinnest); P_max = 1 the levels left
    heights = subtree_height(np.array([10, 10, 10]), np.array([3.0, 3.0, 3.0]),
                             np.array([0.0, 1e-9, 1.0]), 4)
    assert heights.tolist() == [1, 1, 4]


def _level(grams, noisy, theta, parent, child_start=None):
    grams = np.asarray(grams, dtype=np.int32)
    n = grams.shape[0]
    lvl = Level(grams=grams, noisy=np.asarray(noisy, dtype=np.int64), eps=np.ones(n),
                spent=np.ones(n), theta=np.full(n, float(theta)),
                parent=np.asarray(parent, dtype=np.int64),
                child_start=None if child_start is None else np.asarray(child_start))
    lvl.index = GramIndex(grams, 5)
    return lvl


def test_example_4_3_consistency():
    """Items a, b, c (ids 0-2), '&' is 3; counts are Example 4.3's times ten."""
    a, b, c, e = 0, 1, 2, 3
    l1 = _level([[a], [b], [c]], [50, 100, 50], 3, [-1] * 3, [0, 4, 8])
    l2 = _level([[p, x] for p in (a, b, c) for x in (a, b, c, e)],
                [0, 0, 0, 50,  0, 0, 40, 60,  30, 0, 0, 20], 3, np.repeat([0, 1, 2], 4),
                [-1, -1, -1, -1, -1, -1, 0, -1, -1, -1, -1, -1])
    # children of (b, c): A = 21, 40, missing, 19; the Markov parent (c, c) of the missing
    # child has probability 0 and level 2, so its estimate is 0 (step 2)
    l3 = _level([[b, c, x] for x in (a, b, c, e)], [21, 40, 0, 19], 3, [6] * 4)
    tree = [l1, l2, l3]
    enforce_consistency(tree)
    assert l2.count[6] == pytest.approx(40)
    assert l3.count.tolist() == pytest.approx([10.5, 20.0, 0.0, 9.5])
    # children of b: (b,a), (b,b) missing with unigram Markov parents -> even share of
    # what (b,c) and (b,&) leave of c(b) = 100: nothing (step 3a)
    assert l2.count[4:8].tolist() == pytest.approx([0, 0, 40, 60])


def test_consistency_uneven_and_no_approx():
    a, b, e = 0, 1, 2
    l1 = _level([[a], [b]], [10, 30], 3, [-1, -1], [0, -1])
    l2 = _level([[a, a], [a, b], [a, e]], [4, 0, 0], 3, [0, 0, 0])
    enforce_consistency([l1, l2])
    # unigram Markov parents: (10 - 4) split over the 2 missing children, then rescaled
    assert l2.count.tolist() == pytest.approx([4, 3, 3])
    l2.noisy = np.array([14, 0, 0])  # passing children exceed the parent: step 3b
    enforce_consistency([l1, l2])
    assert l2.count.tolist() == pytest.approx([10, 0, 0])
    l2.noisy = np.array([4, 0, 0])
    enforce_consistency([l1, l2], approximate=False)  # No-Approx
    assert l2.count.tolist() == pytest.approx([10, 0, 0])


def test_example_4_4_join_and_4_5_decomposition():
    i1, i2, i3, e = 0, 1, 2, 3
    lv2 = model_level(np.array([[i3, i1]], dtype=np.int32), np.array([4.0]), 5)
    lv3 = model_level(np.array([[i2, i3, i1], [i3, i1, i2], [i3, i1, i1]], dtype=np.int32),
                      np.array([4.0, 2.0, 1.0]), 5)
    lv4 = join_level(lv3, lv2, e, 5)
    got = {tuple(g): c for g, c in zip(lv4.grams.tolist(), lv4.count.tolist())}
    assert got == {(i2, i3, i1, i2): 2.0, (i2, i3, i1, i1): 1.0}  # 4 * 2/4 and 4 * 1/4
    # decomposition (Example 4.5, with the end marker every sequence carries): 2 copies
    # of I2 I3 I1 I2 use up the sub-grams they support; one I1 & is left
    def lv(rows, counts):
        return model_level(np.array(rows, dtype=np.int32), np.array(counts, dtype=float), 5)

    levels = [lv([[i1], [i2], [i3]], [3, 4, 2]),
              lv([[i2, i3], [i3, i1], [i1, i2], [i2, e], [i1, e]], [2, 2, 2, 2, 1]),
              lv([[i2, i3, i1], [i3, i1, i2], [i1, i2, e]], [2, 2, 2]),
              lv([[i2, i3, i1, i2], [i3, i1, i2, e]], [2, 2]),
              lv([[i2, i3, i1, i2, e]], [2])]
    items, lengths = decompose(levels, e)
    seqs = Counter(tuple(s) for s in np.split(items, np.cumsum(lengths)[:-1]))
    assert seqs == Counter({(i2, i3, i1, i2): 2, (i1,): 1})


def test_theorem_4_1_baseline_reconstructs_the_toy_database():
    release = ngram(toy(), 1.0, l_max=5, n_max=6, variant="baseline")
    assert sorted(release.synthetic) == sorted(tuple(s) for s in TABLE1)
    assert release.report["private"] is False and "NOT private" in release.report["warning"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=4), min_size=1,
                max_size=12))
def test_theorem_4_1_on_random_databases(seqs):
    db = SequenceDB.from_sequences(seqs, vocab=list("abc"))
    release = ngram(db, 1.0, l_max=4, n_max=5, variant="baseline")
    assert sorted(release.synthetic) == sorted(tuple(s) for s in seqs)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=7), min_size=1,
                max_size=12))
def test_theorem_4_1_on_truncated_databases(seqs):
    # Theorem 4.1 is about the *truncated* database: a cut sequence ends with '&' after its
    # l_max-th item, so every count is the sum of its children's and consistency leaves exact
    # counts alone.  Leaving '&' off cut sequences would make consistency rescale the children
    # of every gram that ends a cut sequence, and this reconstruction fails.
    db = SequenceDB.from_sequences(seqs, vocab=list("abc"))
    release = ngram(db, 1.0, l_max=4, n_max=5, variant="baseline")
    assert sorted(release.synthetic) == sorted(tuple(s[:4]) for s in seqs)


def test_no_tree_level_holds_more_than_l_max_items(caplog):
    # a truncated sequence holds at most l_max = 2 items and '&': level 3 may hold only
    # grams ending in '&', and n_max = 5 is lowered to 3 with a warning
    db = SequenceDB.from_sequences(TABLE1 * 200, vocab=VOCAB)
    rel = ngram(db, 10.0, l_max=2, n_max=5, seed=1)
    assert rel.report["parameters"]["n_max"] == 3 and "lowered" in caplog.text
    assert len(rel.levels) == 3
    end = db.vocab.end_id
    assert rel.levels[2].grams.shape[0] > 0 and (rel.levels[2].grams[:, -1] == end).all()
    assert all((m.grams[:, :-1] != end).all() and m.grams.shape[1] <= 3 for m in rel.model)
    assert int(rel.synthetic.lengths.max()) <= 2


def test_the_default_n_max_is_lowered_without_a_warning(caplog):
    """Regression: `dpgpu ngram --l-max 3` warned that 'n_max 5 is lowered', an option the
    user never gave."""
    db = SequenceDB.from_sequences(TABLE1 * 200, vocab=VOCAB)
    rel = ngram(db, 10.0, l_max=2, seed=1)
    assert rel.report["parameters"]["n_max"] == 3 and "lowered" not in caplog.text
    assert ngram(db, 10.0, l_max=20, seed=1).report["parameters"]["n_max"] == 5


def test_synthetic_is_in_the_input_format_without_identifiers(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("case,activity,time\n" + "".join(
        f"u{i},{a},{j}\n" for i in range(40) for j, a in enumerate(["A", "B", "C"][: 1 + i % 3])))
    db = dpgpu.load(log)
    release = ngram(db, 2.0, l_max=3, n_max=3, seed=1)
    out = release.save(tmp_path / "rel")
    report = json.loads((out / "report.json").read_text())
    assert report["synthetic_file"] == "synthetic.csv"
    text = (out / "synthetic.csv").read_text()
    assert text.startswith("case,activity,time") and "u1," not in text
    again = dpgpu.load(out / "synthetic.csv")
    assert set(again.vocab.labels) <= set(db.vocab.labels)
    assert "cases" not in release.synthetic.source and "path" not in release.synthetic.source


def test_release_report_has_no_exact_statistics(tmp_path):
    release = ngram(toy(), 1.0, l_max=5, n_max=3, seed=7)
    out = release.save(tmp_path / "rel")
    report = json.loads((out / "report.json").read_text())
    assert report["seeded"] is True and report["epsilon"] == 1.0
    assert report["ledger"]["steps"][0]["epsilon"] == 1.0
    assert 0 < report["delta"] < 1e-9  # the samplers' accounted distance only
    flat = json.dumps(report)
    for exact in ('"sequences"', '"events"', "n_sequences"):
        assert exact not in flat
    lines = (out / "ngrams.tsv").read_text().splitlines()
    assert lines[0] == "gram\tnoisy_count\tcount" and len(lines) == 1 + len(release.ngrams())
    assert not (tmp_path / "rel").with_name("rel.part").exists()


def test_same_seed_same_release_and_fresh_keys_differ():
    a = ngram(toy(), 1.0, l_max=5, n_max=3, seed=11)
    b = ngram(toy(), 1.0, l_max=5, n_max=3, seed=11)
    c = ngram(toy(), 1.0, l_max=5, n_max=3)
    d = ngram(toy(), 1.0, l_max=5, n_max=3)
    assert a.ngrams() == b.ngrams() and sorted(a.synthetic) == sorted(b.synthetic)
    assert c.report["seeded"] is False
    assert [x[1] for x in c.ngrams()[:3]] != [x[1] for x in d.ngrams()[:3]] or \
        c.ngrams() != d.ngrams()


def test_gram_encoding_round_trips_labels_with_spaces():
    assert encode_gram(["Send Fine", "R&D"]) == "Send%20Fine R&D"
    assert encode_gram(["1", "2"]) == "1 2"


def test_items_named_like_the_markers_stay_items_in_ngrams_tsv(tmp_path):
    # text data easily holds the tokens "&" and "$": in ngrams.tsv a bare & is the end marker
    from dpgpu.eval.evaluate import read_gram_file

    db = SequenceDB.from_sequences([["R", "&", "D"], ["&"], ["$", "&"], ["R"]] * 40,
                                   vocab=["R", "&", "D", "$"])
    rel = ngram(db, 1.0, l_max=3, n_max=3, variant="baseline")
    grams, _ = read_gram_file(rel.save(tmp_path / "rel") / "ngrams.tsv", db.vocab, ["gram"])
    released = [tuple(g) for lvl in rel.levels for g in lvl.grams.tolist()]
    assert grams == released and len(set(grams)) == len(grams)
    end, item = db.vocab.end_id, db.vocab.id_of("&")
    assert (item, end) in grams and (item,) in grams and (end,) not in grams


@pytest.mark.parametrize("kwargs", [
    {"epsilon": float("nan")}, {"epsilon": float("inf")}, {"epsilon": 0}, {"epsilon": -1},
    {"l_max": 0}, {"l_max": -2}, {"l_max": 2.5}, {"n_max": 0}, {"n_max": float("nan")},
    {"variant": "fast"}, {"max_draws": 0}, {"epsilon": 1e-300},
])
def test_invalid_parameters(kwargs):
    args = {"epsilon": 1.0, **kwargs}
    eps = args.pop("epsilon")
    name = next(iter(kwargs))
    with pytest.raises(InvalidParameter, match=name):
        ngram(toy(), eps, **args)


def test_tiny_epsilon_releases_the_ngrams_without_a_synthetic_database_of_noise(
        monkeypatch, caplog):
    # at epsilon 1e-9 the model's 1-gram total is about 1e11 noisy items: the tree and the
    # model are released (the budget is spent on them), the synthetic data is skipped
    db = SequenceDB.from_sequences(TABLE1, vocab=VOCAB)
    rel = ngram(db, 1e-9, seed=1)
    assert rel.synthetic is None and "no synthetic data" in rel.report["synthetic_skipped"]
    assert rel.levels and "no synthetic data" in caplog.text
    monkeypatch.setattr(ngram_module, "MAX_SYNTHETIC_ITEMS", 10)  # the limit binds below it too
    small = ngram(db, 1.0, l_max=5, n_max=2, variant="baseline")
    assert small.synthetic is None and "limit of 1e+01" in small.report["synthetic_skipped"]
    monkeypatch.setattr(ngram_module, "MAX_SYNTHETIC_ITEMS", 10 ** 9)
    assert "synthetic_skipped" not in ngram(db, 1.0, l_max=5, n_max=2, variant="baseline").report


@pytest.mark.parametrize("mechanism", [ngram, dpgpu.pst])
def test_an_empty_vocabulary_is_refused_by_name(mechanism):
    empty = SequenceDB.from_sequences([], vocab=[])
    with pytest.raises(InvalidParameter, match="db: the item vocabulary is empty"):
        mechanism(empty, 1.0, seed=1)


def test_estimate_and_top_k():
    release = ngram(toy(), 1.0, l_max=5, n_max=6, variant="baseline")
    assert release.estimate(["I2", "I3"]) == pytest.approx(6)
    assert release.estimate(["I2", "I3", "I1", "&"]) == pytest.approx(2)
    assert release.top_k(2) == [(("I2", "I3"), 6.0), (("I3", "I1"), 4.0)]


def test_model_queries_do_not_depend_on_the_synthetic_flag():
    # the model's joins beyond n_max serve top_k and estimate with or without synthetic data
    db = SequenceDB.from_sequences(TABLE1 * 50, vocab=VOCAB)
    with_data, without = (ngram(db, 1.0, l_max=5, n_max=2, seed=4, synthetic=flag)
                          for flag in (True, False))
    assert without.synthetic is None and len(without.model) > 2
    assert [m.grams.tolist() for m in without.model] == [m.grams.tolist() for m in with_data.model]
    assert without.top_k(20) == with_data.top_k(20)
    assert without.estimate(["I2", "I3", "I1"]) == with_data.estimate(["I2", "I3", "I1"])
    assert without.report["model"] == with_data.report["model"]


# ----------------------------------------------------------------- privacy audit
# Every audit below runs the mechanism's private core, build_tree, with the arguments
# ngram() passes it: the mechanism's own sensitivity and allocation functions (looked up
# when the audit runs, so a test can swap in a broken twin) and its own noise function,
# _laplace_noise.  Two things happen once per batch of runs instead of once per tree, and
# neither touches calibration: exact histograms are memoised (they are data, not noise),
# and _laplace_noise draws its values in large blocks at each scale build_tree asks for,
# handed out in order (every value has its own identity under a fresh key, so the values
# are independent draws at exactly that scale).
#
# Events: a count moved by k whose discrete-Laplace noise has scale s reaches its value
# in d1 with probability 1 / (1 + e^(-1/s)) under d1, and e^(-k/s) times that under d0.
# The joint upper tail over all counts the added sequence moves therefore has likelihood
# ratio exactly e^(sum k/s), the pair's whole privacy loss, with probability about
# 2^-(counts moved); the joint lower tail at d0's counts does the same in the other
# direction.  On a pair where the correct mechanism's loss is exactly epsilon, a twin
# that loses more shows it on these two events.
ALPHA = 1e-4
NOT_IN_TREE = np.iinfo(np.int64).min  # a node whose parent was not expanded


#: The allocation ngram() asks build_tree for, per private variant.
ALLOCATION = {"adaptive": "adaptive", "no-approx": "adaptive", "uniform": "uniform"}


def _ngram_tree(engine, *, epsilon, l_max, n_max, noise, allocation="adaptive"):
    """build_tree as ngram() calls it for a private variant (test_the_audit_builds_the_tree_
    as_ngram_does checks that the two calls agree); build_tree is looked up in the
    mechanism's module when the audit runs, as ngram() looks it up."""
    return ngram_module.build_tree(engine, epsilon=epsilon, l_max=l_max, n_max=n_max,
                      allocation=allocation,
                      noise=noise, sensitivity=ngram_module._sensitivity(l_max),
                      max_draws=ngram_module._possible_nodes(engine.vocab.size, n_max),
                      min_eps=2 * l_max / ngram_module.MAX_LAPLACE_SCALE)


class _Histograms:
    """The truncated database's GramEngine, each exact histogram computed once."""

    def __init__(self, db, l_max):
        self._engine = GramEngine(db, l_max, end="all", backend="numpy")
        self.vocab, self.n_symbols = self._engine.vocab, self._engine.n_symbols
        self._memo = {}

    def next_symbol_histogram(self, contexts):
        contexts = np.ascontiguousarray(contexts, dtype=np.int32)
        key = (contexts.shape, contexts.tobytes())
        if key not in self._memo:
            hist = np.array(self._engine.next_symbol_histogram(contexts))
            hist.setflags(write=False)  # shared by every run: must not be changed in place
            self._memo[key] = hist
        return self._memo[key]

    def count(self, gram):
        """Exact count of a gram of ids (the last one may be the end marker)."""
        context = np.asarray(gram[:-1], dtype=np.int32).reshape(1, len(gram) - 1)
        return int(self.next_symbol_histogram(context)[0, gram[-1]])


class _NoisePool:
    """build_tree's noise(grams, scales), served from block draws of _laplace_noise."""

    def __init__(self, seed, block):
        self._key, self._block, self._left, self._blocks = NoiseKey.from_seed(seed), block, {}, 0

    def _take(self, scale, n):
        left = self._left.get(scale, np.empty(0, dtype=np.int64))
        if left.size < n:
            size = max(self._block, n)
            self._blocks += 1
            draw = ngram_module._laplace_noise(self._key.derive(f"block {self._blocks}"), size)
            left = np.concatenate([left, draw(np.zeros((size, 1), np.int32),
                                              np.full(size, scale))])
        self._left[scale] = left[n:]
        return left[:n]

    def __call__(self, grams, scales):
        out = np.empty(grams.shape[0], dtype=np.int64)
        for scale in np.unique(scales):
            rows = np.flatnonzero(scales == scale)
            out[rows] = self._take(float(scale), rows.size)
        return out


class _Pair:
    """Neighbours d0 and d1 = d0 + one sequence, and the audit of the tree on them.

    One run's output is the noisy counts of ``grams`` (label tuples: the nodes the added
    sequence moves), NOT_IN_TREE for a node the run did not draw.
    """

    def __init__(self, sequences, added, vocab, *, l_max, n_max, grams, epsilon=1.0,
                 allocation="adaptive"):
        self.allocation = allocation
        self.d0 = SequenceDB.from_sequences(sequences, vocab=vocab)
        self.d1 = SequenceDB.from_sequences(sequences + [added], vocab=vocab)
        self.engines = {id(d): _Histograms(d, l_max) for d in (self.d0, self.d1)}
        self.l_max, self.n_max, self.epsilon = l_max, n_max, epsilon
        self.grams = [tuple(self.d0.vocab.id_of(x) for x in g) for g in grams]
        self.low = np.array([self.engines[id(self.d0)].count(g) for g in self.grams])
        self.high = np.array([self.engines[id(self.d1)].count(g) for g in self.grams])

    def tree(self, db, noise):
        return _ngram_tree(self.engines[id(db)], epsilon=self.epsilon, l_max=self.l_max,
                           n_max=self.n_max, noise=noise, allocation=self.allocation)

    def node(self, levels, labels):
        """Level and row of a node in a tree (row -1 when absent)."""
        gram = np.asarray([[self.d0.vocab.id_of(x) for x in labels]], dtype=np.int32)
        lvl = levels[len(labels) - 1]
        return lvl, int(lvl.index.find(gram)[0])

    def counts(self, levels):
        out = np.full(len(self.grams), NOT_IN_TREE, dtype=np.int64)
        for n in {len(g) for g in self.grams} & set(range(1, len(levels) + 1)):
            lvl = levels[n - 1]
            noisy = dict(zip(map(tuple, lvl.grams.tolist()), lvl.noisy.tolist()))
            for j, g in enumerate(self.grams):
                out[j] = noisy.get(g, out[j])
        return out

    def mechanism(self, db, seed, trials):
        noise = _NoisePool(seed, block=16 * trials)
        return np.stack([self.counts(self.tree(db, noise)) for _ in range(trials)])

    def events(self, out):
        return np.stack([(out >= self.high).all(axis=1), (out <= self.low).all(axis=1)],
                        axis=1)

    def audit(self, trials, seed):
        return audit(self.mechanism, self.d0, self.d1, self.events, epsilon=self.epsilon,
                     trials=trials, alpha=ALPHA, seed=seed, batch=True)


# Two levels.  d1 adds "a a"; truncated and ended (a a &) it starts l_max = 2 root-to-leaf
# paths, (a, a a) and (a, a &), so it moves a by 2 and (a a), (a &) by 1.  With n_max = 2
# every count has budget epsilon / 2, so the loss is (2 + 1 + 1) / l_max * epsilon / 2:
# epsilon exactly.  With two items every threshold is 0; a's count of 100 keeps it expanded.
TWO_LEVELS = _Pair([["a", "b"]] * 100 + [["b"]] * 100, ["a", "a"], ["a", "b"], l_max=2,
                   n_max=2, grams=[("a",), ("a", "a"), ("a", "&")])
TWO_LEVEL_TRIALS = 8000


def test_audit_passes_the_mechanism():
    result = TWO_LEVELS.audit(TWO_LEVEL_TRIALS, seed=5)
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 0.6, result.summary()  # the events see the loss


@pytest.mark.parametrize("sensitivity", [lambda l_max: l_max - 1, lambda l_max: 2 * l_max / 3],
                         ids=["l_max-1", "two-thirds"])
def test_audit_rejects_an_undercalibrated_twin(monkeypatch, sensitivity):
    # l_max - 1 (one path short, at l_max = 2): this pair loses 2 epsilon; 2 l_max / 3
    # (every noise scale times 2/3): 1.5 epsilon
    monkeypatch.setattr(ngram_module, "_sensitivity", sensitivity)
    result = TWO_LEVELS.audit(TWO_LEVEL_TRIALS, seed=5)
    assert not result.passed, result.summary()


# The audits build the tree through _ngram_tree, not through ngram(): check that ngram()
# hands build_tree exactly what _ngram_tree does, for every private variant (a spy on
# the real call), so that a change to ngram()'s call (a halved sensitivity, another
# allocation, budget or cap) cannot pass the audits unseen.
def _bound_call(args, kwargs):
    call = inspect.signature(tree_module.build_tree).bind(*args, **kwargs)
    call.apply_defaults()
    return call.arguments


@pytest.mark.parametrize("variant", sorted(ALLOCATION))
def test_the_audit_builds_the_tree_as_ngram_does(monkeypatch, variant):
    real, calls = ngram_module.build_tree, []

    def spy(*args, **kwargs):
        calls.append(_bound_call(args, kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(ngram_module, "build_tree", spy)
    db, l_max, n_max, eps = TWO_LEVELS.d1, TWO_LEVELS.l_max, TWO_LEVELS.n_max, 0.7
    ngram(db, eps, l_max=l_max, n_max=n_max, variant=variant, seed=3, synthetic=False)
    engine = _Histograms(db, l_max)
    _ngram_tree(engine, epsilon=eps, l_max=l_max, n_max=n_max,
                noise=_NoisePool(0, 100), allocation=ALLOCATION[variant])
    (released, audited) = calls
    assert released["allocation"] == ALLOCATION[variant]
    assert released["sensitivity"] == ngram_module._sensitivity(l_max) == l_max
    for name in ("epsilon", "l_max", "n_max", "allocation", "sensitivity", "max_draws",
                 "min_eps", "thresholds"):
        assert released[name] == audited[name], name
    # the counts and the noise: the same truncated database, and _laplace_noise's draws
    assert isinstance(released["engine"], GramEngine)
    assert released["engine"].l_max == l_max  # the root histogram below holds the ends
    root = np.zeros((1, 0), dtype=np.int32)
    assert np.array_equal(to_numpy(released["engine"].next_symbol_histogram(root)),
                          engine.next_symbol_histogram(root))
    laplace_code = ngram_module._laplace_noise(NoiseKey.from_seed(0), 1).__code__
    assert released["noise"].__code__ is laplace_code


# Uniform allocation (epsilon / n_max for every level) on the two-level pair: with
# n_max = 2 each count again has budget epsilon / 2 and the loss is epsilon exactly.
# Twins: a per-level budget of epsilon (not divided by n_max: loss 2 epsilon) and the
# pair's l_max - 1 sensitivity (2 epsilon).
TWO_LEVELS_UNIFORM = _Pair([["a", "b"]] * 100 + [["b"]] * 100, ["a", "a"], ["a", "b"],
                           l_max=2, n_max=2, grams=[("a",), ("a", "a"), ("a", "&")],
                           allocation="uniform")


@pytest.mark.parametrize("seed", [5, 6])
def test_uniform_audit_passes_the_mechanism(seed):
    levels = TWO_LEVELS_UNIFORM.tree(TWO_LEVELS_UNIFORM.d1, _NoisePool(0, 1000))  # premise
    (top, a), (below, aa) = (TWO_LEVELS_UNIFORM.node(levels, g) for g in (["a"], ["a", "a"]))
    assert a >= 0 and aa >= 0 and top.eps[a] == below.eps[aa] == pytest.approx(0.5)
    result = TWO_LEVELS_UNIFORM.audit(TWO_LEVEL_TRIALS, seed=seed)
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 0.6, result.summary()


def _uniform_level_budget_not_divided(real):
    def build(engine, *, epsilon, n_max, allocation, **kwargs):
        # every level gets epsilon instead of epsilon / n_max (n_max levels of it)
        scale = n_max if allocation == "uniform" else 1
        return real(engine, epsilon=epsilon * scale, n_max=n_max, allocation=allocation,
                    **kwargs)
    return build


@pytest.mark.parametrize("twin", ["level-budget-not-divided", "l_max-1"])
def test_uniform_audit_rejects_an_overspending_twin(monkeypatch, twin):
    if twin == "l_max-1":
        monkeypatch.setattr(ngram_module, "_sensitivity", lambda l_max: l_max - 1)
    else:
        monkeypatch.setattr(ngram_module, "build_tree",
                            _uniform_level_budget_not_divided(ngram_module.build_tree))
        levels = TWO_LEVELS_UNIFORM.tree(TWO_LEVELS_UNIFORM.d1, _NoisePool(0, 1000))
        assert levels[0].eps.max() == pytest.approx(1.0)  # the twin does overspend
    result = TWO_LEVELS_UNIFORM.audit(TWO_LEVEL_TRIALS, seed=5)
    assert not result.passed, result.summary()


# Adaptive allocation with levels to spare (n_max = 3).  Twelve items of 30 one-item
# sequences each, l_max = 1: every item clears its threshold (l_max / (eps/3)) ln(12/2),
# about 5.4, and with the unigram P_max near 1/12 subtree_height predicts a subtree of
# height 1 although two levels remain, so each item's children get all the remaining
# 2 eps / 3 (the uniform allocation would give them eps / 3).  d1 adds "i0", which moves
# i0 and (i0 &) by 1: loss eps / 3 + 2 eps / 3 = eps, tight again.
ITEMS = [f"i{k}" for k in range(12)]
ADAPTIVE = _Pair([[x] for x in ITEMS for _ in range(30)], ["i0"], ITEMS, l_max=1, n_max=3,
                 grams=[("i0",), ("i0", "&")])
ADAPTIVE_TRIALS = 6000


def _overspending_subtree_height(*args):
    """A broken allocation: children get 1.5 * remaining / h instead of remaining / h."""
    return subtree_height(*args) / 1.5


def test_adaptive_audit_passes_the_mechanism():
    levels = ADAPTIVE.tree(ADAPTIVE.d1, _NoisePool(0, 1000))  # the pair's premise, one run
    (top, i0), (below, end) = ADAPTIVE.node(levels, ["i0"]), ADAPTIVE.node(levels, ["i0", "&"])
    assert below.eps[end] == pytest.approx(1.0 - top.eps[i0]) and below.eps[end] > 1.0 / 3
    result = ADAPTIVE.audit(ADAPTIVE_TRIALS, seed=7)
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 0.6, result.summary()


def test_adaptive_audit_rejects_an_overspending_allocation(monkeypatch):
    monkeypatch.setattr("dpgpu.mechanisms.ngram.tree.subtree_height",
                        _overspending_subtree_height)
    result = ADAPTIVE.audit(ADAPTIVE_TRIALS, seed=7)
    assert not result.passed, result.summary()


# Below level 2 such an overspend is largely absorbed: the next level gets what is left
# of the path's budget, so on a pair whose counts reach level 3 the loss only grows to
# about 1.2 epsilon, spread over five or more counts, and no joint event of useful
# probability shows that within a minute of runs.  There the property the privacy
# argument rests on is checked on the trees themselves: along every root-to-node path
# the budgets add up to at most epsilon.
def _largest_path_budget(levels):
    total = levels[0].eps
    largest = total.max()
    for lvl in levels[1:]:
        total = lvl.eps + total[lvl.parent]
        largest = max(largest, total.max())
    return largest


def _deep_trees(seeds):
    """Adaptive trees of 4 levels over the toy data (their level-3 budgets vary by node)."""
    engine = GramEngine(SequenceDB.from_sequences(TABLE1 * 30, vocab=VOCAB), 5, end="all",
                        backend="numpy")
    return [_ngram_tree(engine, epsilon=1.0, l_max=5, n_max=4,
                        noise=ngram_module._laplace_noise(NoiseKey.from_seed(seed), 10 ** 6))
            for seed in seeds]


def test_adaptive_budgets_along_every_path_add_up_to_at_most_epsilon():
    trees = _deep_trees(range(100))
    assert max(_largest_path_budget(levels) for levels in trees) <= 1.0 + 1e-9
    assert all(len(levels) == 4 for levels in trees)
    # not vacuous: the rule gave level-3 nodes different budgets (h = 1 and h = 2)
    assert len(np.unique(np.concatenate([levels[2].eps for levels in trees]).round(9))) >= 2


def test_path_budgets_reject_an_overspending_allocation(monkeypatch):
    monkeypatch.setattr("dpgpu.mechanisms.ngram.tree.subtree_height",
                        _overspending_subtree_height)
    assert max(_largest_path_budget(levels) for levels in _deep_trees(range(10))) > 1.1


# ----------------------------------------------------------------------- CLI
def test_cli_ngram(tmp_path, capsys):
    data = tmp_path / "toy.txt"
    data.write_text("\n".join(" ".join(s) for s in TABLE1) + "\n")
    status = main(["ngram", str(data), "--epsilon", "1", "--l-max", "5", "--out",
                   str(tmp_path / "rel"), "--seed", "1"])
    assert status == 0 and (tmp_path / "rel" / "synthetic.txt").exists()
    assert main(["ngram", str(data), "--epsilon", "1", "--out", str(tmp_path / "rel")]) == 2
    for bad in ("nan", "0", "-1", "inf"):
        assert main(["ngram", str(data), "--epsilon", bad, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "epsilon" in err and "Traceback" not in err and not (tmp_path / "x").exists()


@pytest.mark.gpu
def test_numpy_and_cupy_give_the_same_release():
    db = dpgpu.load(dpgpu.demo_path())
    a = ngram(db, 1.0, seed=3, backend="numpy")
    b = ngram(db, 1.0, seed=3, backend="cupy")
    assert a.ngrams() == b.ngrams()
    assert np.array_equal(a.synthetic.items, b.synthetic.items)


def test_chunked_engine_gives_the_same_release(monkeypatch):
    from dpgpu.ops import grams

    engines = []

    class Recorded(grams.GramEngine):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            engines.append(self)

    monkeypatch.setattr(ngram_module, "GramEngine", Recorded)
    db = SequenceDB.from_sequences(TABLE1 * 20, vocab=VOCAB)
    whole = ngram(db, 1.0, l_max=5, n_max=4, seed=9)
    # the block bound on either backend (a GPU's is its free memory, not MAX_BLOCK_CELLS)
    monkeypatch.setattr(grams, "_device_cells", lambda backend: 16)  # a few sequences
    chunked = ngram(db, 1.0, l_max=5, n_max=4, seed=9)
    n_whole, n_chunked = (len(engine.blocks) for engine in engines)
    assert n_chunked > n_whole  # the premise: the second run counts in smaller blocks
    assert whole.ngrams() == chunked.ngrams()
    assert sorted(whole.synthetic) == sorted(chunked.synthetic)


def test_dask_engine_gives_the_same_release():
    distributed = pytest.importorskip("dask.distributed")
    db = SequenceDB.from_sequences(TABLE1 * 25, vocab=VOCAB)
    local = ngram(db, 1.0, l_max=5, n_max=4, seed=21)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        remote = ngram(db, 1.0, l_max=5, n_max=4, seed=21, engine="dask", client=client)
    assert local.ngrams() == remote.ngrams()
    assert sorted(local.synthetic) == sorted(remote.synthetic)
    assert remote.report["engine"] == "dask"


def test_noise_identities_of_a_level_are_its_rows_and_a_level_is_drawn_once(monkeypatch):
    """Long grams over a big alphabet get distinct identities (no content hash)."""
    seen = []

    class Spy:
        def sample(self, key, ids, tag, backend):
            seen.append((tag, np.asarray(ids).tolist()))
            return np.zeros(len(ids), dtype=np.int64)

    monkeypatch.setattr(ngram_module, "_laplace", lambda scale: Spy())
    noise = _laplace_noise(NoiseKey.from_seed(0), 100)
    grams = np.array([[7000, 1, 2, 3, 4], [9000, 5, 6, 7, 8], [7000, 1, 2, 3, 5]], np.int32)
    noise(grams, np.array([1.0, 2.0, 1.0]))
    with pytest.raises(RuntimeError, match="one level twice"):
        noise(grams[:1], np.array([1.0]))
    assert sorted(i for _, ids in seen for i in ids) == [0, 1, 2] and {t for t, _ in seen} == {5}


def test_samplers_refusal_names_ngrams_own_options():
    with pytest.raises(InvalidParameter, match="set by l_max and n_max"):
        ngram(toy(), 30.0, seed=1)


def test_max_draws_below_the_vocabulary_is_refused_before_any_counting(monkeypatch):
    """Regression: it was refused inside the tree builder, after the ledger charge and the
    counting engine's set-up."""
    def no_engine(*args, **kwargs):
        raise AssertionError("the counting engine was built")

    monkeypatch.setattr(ngram_module, "GramEngine", no_engine)
    db = SequenceDB.from_sequences(TABLE1, vocab=VOCAB)
    with pytest.raises(InvalidParameter, match=f"^max_draws: must be at least .I. = "
                                               f"{len(VOCAB)}, got 2$"):
        ngram(db, 1.0, max_draws=2)
