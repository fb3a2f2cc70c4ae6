"""``dpgpu evaluate`` on PrivTree PST releases (pst.json): the model's own metrics."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter

import numpy as np
import pytest

import dpgpu
from dpgpu.cli import main
from dpgpu.eval import metrics as M
from dpgpu.release import vocabulary_fingerprint

# s1 = a b c a b, s2 = a c b, s3 = b a, s4 = c  (|D| = 4, sanity bound 0.004)
# occurrences: a 4, b 4, c 3; ab 2, ac 1, ba 1, bc 1, ca 1, cb 1; abc, bca, cab, acb 1
ORIGINAL = "a b c a b\na c b\nb a\nc\n"
# A hand-made PST over a, b, c, & (ids 0..3; $ is 4): the root and its four children.
ROOT = [4, 5, 3, 4]
CHILDREN = {"a": [0, 3, 1, 0], "b": [2, 0, 1, 2], "c": [1, 2, 0, 0], "$": [2, 1, 1, 1]}


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def pst_json(root=ROOT, children=CHILDREN, symbols=("a", "b", "c", "&"), l_top=5):
    nodes = [{"context": [], "depth": 0, "leaf": False, "hist": list(root)}]
    nodes += [{"context": [c], "depth": 1, "leaf": True, "hist": list(h)}
              for c, h in children.items()]
    return {"symbols": list(symbols), "start_marker": "$", "l_top": l_top, "nodes": nodes}


@pytest.fixture
def original(tmp_path):
    p = tmp_path / "orig.txt"
    p.write_text(ORIGINAL)
    return p


def make_release(tmp_path, original, pst, *, synthetic=None):
    d = tmp_path / "rel"
    d.mkdir()
    db = dpgpu.load(original)
    report = {"mechanism": "privtree-pst", "parameters": {"l_top": 5}, "epsilon": 1.0,
              "delta": 0.0, "input": {"format": "lines"},
              "vocabulary": {"size": db.vocab.size, "sha256": vocabulary_fingerprint(db.vocab)}}
    (d / "report.json").write_text(json.dumps(report))
    (d / "pst.json").write_text(pst if isinstance(pst, str) else json.dumps(pst))
    if synthetic is not None:
        (d / "synthetic.txt").write_text(synthetic)
    return d


def evaluate(capsys, original, rel, *extra):
    status, out, err = run(capsys, "evaluate", "--original", str(original), "--release",
                           str(rel), "--json", *extra)
    assert status == 0, err
    return json.loads(out)


def eq12(string):
    """Eq. 12 on the hand-made PST: root count times next-symbol probabilities.

    The only contexts are single symbols, so the predicting node of every
    prefix is its last symbol's (all of them have a non-zero histogram).
    """
    ids = {"a": 0, "b": 1, "c": 2}
    est = float(ROOT[ids[string[0]]])
    for prev, x in zip(string, string[1:]):
        h = CHILDREN[prev]
        est *= h[ids[x]] / sum(h)
    return est


def occurrences(sequences, string):
    n = len(string)
    return sum(1 for s in sequences for i in range(len(s) - n + 1) if tuple(s[i:i + n]) == string)


def test_pst_metrics_by_hand(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, pst_json())
    r = evaluate(capsys, original, rel, "--k", "2,4,6", "--queries", "300", "--seed", "9")
    assert r["settings"]["tasks"] == ["pst"]
    t = r["tasks"]["pst"]
    assert (t["l_top"], t["nodes"], t["depth"]) == (5, 5, 1)
    # noisy sequence count: the $ node's total 5 for 4 sequences
    assert t["sequences"] == {"estimated": 5, "original": 4, "relative_error": 0.25}
    # model estimates: b 5, a 4, ab 4*3/4 = 3, c 3, ba 5*2/5 = 2, cb 3*2/3 = 2 (ties by ids);
    # true top: a 4, b 4, c 3, ab 2, then the count-1 strings ac, ba, ... (by ids)
    top = t["top_k"]
    assert top["min_length"] == 1
    assert [g for g, _ in top["top"][:6]] == ["b", "a", "a b", "c", "b a", "c b"]
    assert top["by_k"]["2"] == {"precision": 1.0, "utility_loss": pytest.approx(0.125),
                                "available": 2}                      # (0 + 1/4) / 2
    assert top["by_k"]["4"]["precision"] == 1.0
    assert top["by_k"]["4"]["utility_loss"] == pytest.approx((0 + 1 / 4 + 0 + 1 / 2) / 4)
    assert top["by_k"]["6"]["precision"] == pytest.approx(5 / 6)     # ac missed, cb extra
    assert top["by_k"]["6"]["utility_loss"] == pytest.approx((0 + 1 / 4 + 0 + 1 / 2 + 1 + 1) / 6)
    # count queries: the workload of the count-queries task, answered by Eq. 12
    seqs = [s.split() for s in ORIGINAL.splitlines()]
    rng = np.random.default_rng(9)
    for m, row in t["count_queries"]["by_max_size"].items():
        qs = [tuple("abc"[i] for i in q) for q in M.random_count_queries(3, int(m), 300, seed=rng)]
        true = np.array([occurrences(seqs, q) for q in qs], dtype=float)
        err = np.abs(np.array([eq12(q) for q in qs]) - true) / np.maximum(true, 0.004)
        assert row["mean"] == pytest.approx(err.mean())
        assert row["median"] == pytest.approx(np.median(err))
        assert row["nonzero_true"] == int(np.count_nonzero(true))
    assert t["count_queries"]["sanity_bound"] == pytest.approx(0.004)


def test_min_length_option_applies_to_the_model(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, pst_json())
    r = evaluate(capsys, original, rel, "--k", "2", "--min-length", "2", "--queries", "10")
    top = r["tasks"]["pst"]["top_k"]
    # model: ab 3, ba 2, cb 2; truth: ab 2, then ac 1 (by ids)
    assert top["min_length"] == 2 and [g for g, _ in top["top"][:2]] == ["a b", "b a"]
    assert top["by_k"]["2"]["precision"] == 0.5
    assert top["by_k"]["2"]["utility_loss"] == pytest.approx((1 / 2 + 1) / 2)


def test_table_and_synthetic_tasks_together(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, pst_json(), synthetic=ORIGINAL)
    status, out, err = run(capsys, "evaluate", "--original", str(original), "--release",
                           str(rel), "--queries", "50", "--k", "2")
    assert status == 0, err
    assert "PST model (5 nodes, depth 1, l_top 5; noisy sequence count 5 for 4" in out
    assert "count queries answered by Eq. 12" in out and "total variation distance 0.0000" in out
    r = json.loads((rel / "evaluation.json").read_text())
    assert r["settings"]["tasks"] == ["count-queries", "top-k", "lengths", "pst"]
    assert r["tasks"]["top-k"]["min_length"] == 2          # the N-gram paper's default
    # both count-query tasks are judged on the same queries
    a = r["tasks"]["count-queries"]["by_max_size"]
    b = r["tasks"]["pst"]["count_queries"]["by_max_size"]
    assert [v["nonzero_true"] for v in a.values()] == [v["nonzero_true"] for v in b.values()]


@pytest.mark.parametrize("pst, message", [
    ("{not json", "cannot read"),
    (pst_json(symbols=("a", "b", "&")), "symbols"),
    (pst_json(l_top=0), "l_top"),
    (pst_json(root=[1, 2, 3]), "node 0"),
    (pst_json(root=[1, -2, 3, 4]), "node 0"),
    (pst_json(children={"z": [1, 1, 1, 1]}), "node 1"),
    (pst_json(children={"$": [1, 1, 1, 1], "a": [1, 1, 1, 1], "x": [0] * 4}), "node 3"),
    ({**pst_json(), "nodes": pst_json()["nodes"][1:]}, "one root"),
    ({**pst_json(), "nodes": pst_json()["nodes"] + pst_json()["nodes"][1:2]}, "twice"),
])
def test_bad_pst_file(tmp_path, original, capsys, pst, message):
    rel = make_release(tmp_path, original, pst)
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(rel))
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (rel / "evaluation.json").exists()


def test_pst_task_needs_pst_json(tmp_path, original, capsys):
    d = tmp_path / "syn"
    d.mkdir()
    db = dpgpu.load(original)
    (d / "report.json").write_text(json.dumps(
        {"mechanism": "handmade", "epsilon": 1.0, "parameters": {},
         "vocabulary": {"size": 3, "sha256": vocabulary_fingerprint(db.vocab)}}))
    (d / "synthetic.txt").write_text(ORIGINAL)
    status, _, err = run(capsys, "evaluate", "--original", str(original), "--release", str(d),
                         "--task", "pst")
    assert status == 2 and "pst.json" in err


# ------------------------------------------------------------------ end to end
def markov_sequences(n, seed=0):
    """Seeded sequences over w, x, y, z with a strong first-order structure."""
    rng = np.random.default_rng(seed)
    nxt = {"w": "xxy", "x": "yyz", "y": "wzz", "z": "wwx"}
    out = []
    for _ in range(n):
        s = [str(rng.choice(list("wxyz")))]
        while rng.random() > 0.25 and len(s) < 12:
            s.append(nxt[s[-1]][rng.integers(3)])
        out.append(s)
    return out


def test_end_to_end_cli(tmp_path, capsys):
    seqs = markov_sequences(3000)
    data = tmp_path / "data.txt"
    data.write_text("".join(" ".join(s) + "\n" for s in seqs))
    rel = tmp_path / "rel"
    status, _, err = run(capsys, "pst", str(data), "--epsilon", "2", "--l-top", "8", "--seed", "3",
                         "--out", str(rel), "--quiet")
    assert status == 0, err
    fig = tmp_path / "eval.png"
    plot = ["--plot", str(fig)] if _has_matplotlib() else []
    r = evaluate(capsys, data, rel, "--queries", "200", "--k", "5,10", *plot)
    assert r == json.loads((rel / "evaluation.json").read_text())
    assert r["settings"]["tasks"] == ["count-queries", "top-k", "lengths", "pst"]
    if plot:
        assert fig.read_bytes()[:4] == b"\x89PNG"
    # the same release in process (same data, same seed)
    db = dpgpu.load(data)
    release = dpgpu.pst(db, 2.0, l_top=8, seed=3)
    assert json.loads((rel / "pst.json").read_text())["nodes"] == release.nodes()
    t = r["tasks"]["pst"]
    # top-K precision against brute-force occurrence counts of all strings
    counts = Counter(tuple(s[i:i + n]) for s in seqs for n in range(1, 13)
                     for i in range(len(s) - n + 1))
    ranked = sorted(counts, key=lambda g: (-counts[g], len(g), [db.vocab.id_of(x) for x in g]))
    model = [tuple(g) for g, _ in release.top_k(10)]
    for k in (5, 10):
        assert t["top_k"]["by_k"][str(k)]["precision"] == \
            pytest.approx(len(set(ranked[:k]) & set(model[:k])) / k)
    assert t["top_k"]["by_k"]["10"]["precision"] >= 0.7   # a real model finds most of them
    # count queries against brute force and the release's own Eq. 12
    rng = np.random.default_rng(0)
    labels = db.vocab.labels
    for m, row in t["count_queries"]["by_max_size"].items():
        qs = [[labels[i] for i in q] for q in M.random_count_queries(4, int(m), 200, seed=rng)]
        true = np.array([counts.get(tuple(q), 0) for q in qs], dtype=float)
        est = np.array([release.estimate(q) for q in qs])
        err = np.abs(est - true) / np.maximum(true, 0.001 * len(seqs))
        assert row["mean"] == pytest.approx(err.mean())
    # length TVD of the synthetic sequences against brute force
    syn = [line.split() for line in (rel / "synthetic.txt").read_text().splitlines()]
    p, q = Counter(len(s) for s in seqs), Counter(len(s) for s in syn)
    tvd = 0.5 * sum(abs(p[n] / len(seqs) - q[n] / len(syn)) for n in set(p) | set(q))
    assert r["tasks"]["lengths"]["total_variation_distance"] == pytest.approx(tvd)
    assert t["sequences"]["estimated"] == len(syn)   # the synthetic size is the noisy count


def test_end_to_end_without_synthetic(tmp_path, capsys):
    data = tmp_path / "data.txt"
    data.write_text("".join(" ".join(s) + "\n" for s in markov_sequences(500, seed=1)))
    rel = tmp_path / "rel"
    status, _, err = run(capsys, "pst", str(data), "--epsilon", "1", "--seed", "1",
                         "--no-synthetic", "--out", str(rel), "--quiet")
    assert status == 0, err
    r = evaluate(capsys, data, rel, "--queries", "20", "--k", "3")
    assert r["settings"]["tasks"] == ["pst"] and r["release"]["files"] == ["pst.json"]


def _has_matplotlib():
    return importlib.util.find_spec("matplotlib") is not None
