"""N-gram mechanism (CCS'12): the paper's toy example step by step, privacy audit, release."""

from __future__ import annotations

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
from dpgpu.cli import main
from dpgpu.mechanisms import ngram as ngram_module
from dpgpu.mechanisms.ngram import _laplace_noise, ngram
from dpgpu.release import encode_gram
from dpgpu.mechanisms.ngram.consistency import enforce_consistency
from dpgpu.mechanisms.ngram.synthesis import decompose, join_level, model_level
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
    # theta = l_max / eps' * ln(|I| / 2)  (papers/README.md reading of 4.3.3)
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
    assert encode_gram(["Send Fine", "&"]) == "Send%20Fine &"
    assert encode_gram(["1", "2"]) == "1 2"


@pytest.mark.parametrize("kwargs", [
    {"epsilon": float("nan")}, {"epsilon": float("inf")}, {"epsilon": 0}, {"epsilon": -1},
    {"l_max": 0}, {"l_max": -2}, {"l_max": 2.5}, {"n_max": 0}, {"n_max": float("nan")},
    {"variant": "fast"}, {"max_draws": 0},
])
def test_invalid_parameters(kwargs):
    args = {"epsilon": 1.0, **kwargs}
    eps = args.pop("epsilon")
    name = next(iter(kwargs))
    with pytest.raises(InvalidParameter, match=name):
        ngram(toy(), eps, **args)


def test_estimate_and_top_k():
    release = ngram(toy(), 1.0, l_max=5, n_max=6, variant="baseline")
    assert release.estimate(["I2", "I3"]) == pytest.approx(6)
    assert release.estimate(["I2", "I3", "I1", "&"]) == pytest.approx(2)
    assert release.top_k(2) == [(("I2", "I3"), 6.0), (("I3", "I1"), 4.0)]


# ----------------------------------------------------------------- privacy audit
# d1 adds the sequence "a a": it touches l_max = 2 root-to-leaf paths (a, a a) and
# (a, a &); with n_max = 2 every budget is epsilon / 2 and the joint upper-tail event
# on the three counts it moves has probability ratio exactly e^epsilon.
D0 = SequenceDB.from_sequences([["a", "b"]] * 30 + [["b"]] * 30, vocab=["a", "b"])
D1 = SequenceDB.from_sequences([["a", "b"]] * 30 + [["b"]] * 30 + [["a", "a"]], vocab=["a", "b"])
ENGINES = {id(D0): GramEngine(D0, 2, end="all", backend="numpy"),
           id(D1): GramEngine(D1, 2, end="all", backend="numpy")}


def tree_counts(db, seed):
    """The mechanism's DP core: the tree's noisy counts of a, (a a), (a &)."""
    levels = build_tree(ENGINES[id(db)], epsilon=1.0, l_max=2, n_max=2, allocation="adaptive",
                        noise=_laplace_noise(NoiseKey.from_seed(seed), 100),
                        sensitivity=ngram_module._sensitivity(2))
    return np.array([levels[0].noisy[0], levels[1].noisy[0], levels[1].noisy[2]])


def joint_events(out):
    a, aa, ae = out  # true counts in d0: 30, 0, 0; in d1: 32, 1, 1
    return [a >= 32 and aa >= 1 and ae >= 1, a >= 32, aa >= 1, a <= 30 and aa <= 0 and ae <= 0]


def test_audit_passes_the_mechanism():
    result = audit(tree_counts, D0, D1, joint_events, epsilon=1.0, trials=1500, alpha=1e-4,
                   seed=5)
    assert result.passed, result.summary()


def test_audit_rejects_half_the_sensitivity(monkeypatch):
    monkeypatch.setattr(ngram_module, "_sensitivity", lambda l_max: l_max / 2)
    result = audit(tree_counts, D0, D1, joint_events, epsilon=1.0, trials=1500, alpha=1e-4,
                   seed=5)
    assert not result.passed, result.summary()


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

    db = SequenceDB.from_sequences(TABLE1 * 20, vocab=VOCAB)
    whole = ngram(db, 1.0, l_max=5, n_max=4, seed=9)
    monkeypatch.setattr(grams, "MAX_BLOCK_CELLS", 16)  # blocks of a few sequences
    chunked = ngram(db, 1.0, l_max=5, n_max=4, seed=9)
    assert whole.ngrams() == chunked.ngrams()
    assert sorted(whole.synthetic) == sorted(chunked.synthetic)


def test_dask_engine_gives_the_same_release():
    distributed = pytest.importorskip("dask.distributed")
    db = SequenceDB.from_sequences(TABLE1 * 25, vocab=VOCAB)
    local = ngram(db, 1.0, l_max=5, n_max=4, seed=21)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
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
