"""``dpgpu evaluate``: settings that would make the work absurd are refused up front or bounded
by the data, empty comparisons are no perfect scores, and a malformed report.json is named."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import dpgpu
from dpgpu.cli import main
from dpgpu.errors import InvalidParameter
from dpgpu.eval import evaluate as E
from dpgpu.eval import metrics as M
from dpgpu.eval import truth as T
from dpgpu.release import vocabulary_fingerprint

# s1 = a b c a b, s2 = a c b, s3 = b a, s4 = c   (|D| = 4, longest 5)
ORIGINAL = "a b c a b\na c b\nb a\nc\n"


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(status, err, *words):
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("dpgpu"), err
    assert all(w in lines[0] for w in words), (words, lines[0])


def make_release(tmp_path, data, files, *, name="rel", **report):
    """A release directory written by hand: report.json (``report`` overrides) and ``files``."""
    d = tmp_path / name
    d.mkdir()
    db = dpgpu.load(data)
    doc = {"mechanism": "handmade", "parameters": {}, "epsilon": 1.0, "delta": 0.0,
           "input": {"format": "lines"},
           "vocabulary": {"size": db.vocab.size, "sha256": vocabulary_fingerprint(db.vocab)},
           **report}
    (d / "report.json").write_text(json.dumps(doc))
    for fname, text in files.items():
        (d / fname).write_text(text)
    return d


@pytest.fixture
def original(tmp_path):
    p = tmp_path / "orig.txt"
    p.write_text(ORIGINAL)
    return p


def evaluate(capsys, original, rel, *extra):
    status, out, err = run(capsys, "evaluate", "--original", original, "--release", rel,
                           "--json", *extra)
    assert status == 0, err
    return json.loads(out)


def pst_json(labels, l_top, root, children=None):
    """A pst.json: the root's histogram, and optionally one child per label."""
    nodes = [{"context": [], "depth": 0, "leaf": not children, "hist": list(root)}]
    nodes += [{"context": [c], "depth": 1, "leaf": True, "hist": list(h)}
              for c, h in (children or {}).items()]
    return json.dumps({"symbols": [*labels, "&"], "start_marker": "$", "l_top": l_top,
                       "nodes": nodes})


# --------------------------------------------------------------- count queries
@pytest.mark.parametrize("queries", [2 ** 63, M.MAX_QUERIES + 1])
def test_too_many_queries_are_refused_by_option_before_the_data_is_read(tmp_path, original,
                                                                         capsys, queries):
    """Regression: --queries 2**63 ended in a NumPy ValueError traceback, and 1e8 grew to
    13 GB; --queries is at most MAX_QUERIES, checked before the original is read."""
    rel = make_release(tmp_path, original, {"synthetic.txt": ORIGINAL})
    missing = tmp_path / "missing.txt"  # never read: the refusal comes first
    status, _, err = run(capsys, "evaluate", "--original", missing, "--release", rel,
                         "--queries", queries)
    one_line_error(status, err, "--queries: must be an integer in", str(M.MAX_QUERIES))


def test_a_workload_of_too_many_query_items_names_both_options(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, {"synthetic.txt": ORIGINAL})
    size = M.MAX_QUERY_ITEMS // 10_000 + 1  # with the default 10,000 queries
    status, _, err = run(capsys, "evaluate", "--original", tmp_path / "missing.txt",
                         "--release", rel, "--query-sizes", size)
    one_line_error(status, err, "--queries, --query-sizes", f"{M.MAX_QUERY_ITEMS:,}")
    with pytest.raises(InvalidParameter, match="n_queries, query_sizes: 3 queries"):
        E.check_count_workload(3, [M.MAX_QUERY_ITEMS // 3, 1])
    with pytest.raises(InvalidParameter, match="n_queries"):
        M.random_count_workload(4, M.MAX_QUERY_ITEMS, 2)


def test_the_workload_arrays_are_the_queries_of_the_same_seed():
    """The evaluation draws the queries as arrays; the workload for a seed is unchanged."""
    items, sizes = M.random_count_workload(17, 8, 1000, seed=5)
    queries = M.random_count_queries(17, 8, 1000, seed=5)
    assert sizes.tolist() == [q.size for q in queries]
    assert np.array_equal(items, np.concatenate(queries)) and items.dtype == np.int32


def test_pattern_counts_of_concatenated_patterns():
    db = dpgpu.SequenceDB.from_sequences([s.split() for s in ORIGINAL.splitlines()])
    pats = [(0, 1), (0,), (1, 2, 0), (2, 2), (0, 1, 2, 0, 1), (0, 1, 2, 0, 1, 0)]
    flat = np.array([x for p in pats for x in p], dtype=np.int32)
    lengths = [len(p) for p in pats]
    assert T.pattern_counts(db, flat, lengths=lengths).tolist() == \
        T.pattern_counts(db, pats).tolist() == [2, 4, 1, 0, 1, 0]
    with pytest.raises(InvalidParameter, match="lengths: expected integers >= 0 that sum"):
        T.pattern_counts(db, flat, lengths=[2, 2])
    with pytest.raises(InvalidParameter, match=r"out of range 0\.\.4 in \(0, 9\)"):
        T.pattern_counts(db, np.array([0, 9]), lengths=[2])
    with pytest.raises(InvalidParameter, match="patterns: empty pattern"):
        T.pattern_counts(db, np.array([0]), lengths=[0, 1])


def test_long_count_queries_are_answered_in_time_bounded_by_their_items(tmp_path, capsys):
    """Regression: --query-sizes 10000 took minutes: every query item went through Python
    (labels decoded and encoded again, tuples), and Eq. 12 ran a batch per query length,
    each walking all the positions before it.  2,000 queries of up to 5,000 items (5M drawn
    items) are now a matter of seconds, for the synthetic data and the PST model alike."""
    data = tmp_path / "data.txt"
    data.write_text(ORIGINAL * 20)
    rel = make_release(tmp_path, data, {"synthetic.txt": ORIGINAL * 5,
                                        "pst.json": pst_json("abc", 8, [4, 5, 3, 4],
                                                             {"a": [1, 3, 1, 1],
                                                              "b": [2, 1, 1, 2],
                                                              "c": [1, 2, 1, 1]})})
    t0 = time.perf_counter()
    r = evaluate(capsys, data, rel, "--task", "count-queries", "--task", "pst", "--queries",
                 "2000", "--query-sizes", "5000", "--k", "5")
    assert time.perf_counter() - t0 < 30
    assert r["tasks"]["count-queries"]["by_max_size"]["5000"]["n"] == 2000
    assert r["tasks"]["pst"]["count_queries"]["by_max_size"]["5000"]["n"] == 2000


def test_eq12_of_the_workload_is_the_models_own(tmp_path, capsys):
    """The position-wise Eq. 12 of the evaluation equals Model.estimate, query by query."""
    from dpgpu.mechanisms.privtree.sampling import Model

    rng = np.random.default_rng(1)
    data = tmp_path / "data.txt"
    data.write_text("".join(" ".join("wxyz"[i] for i in rng.integers(0, 4, rng.integers(1, 15)))
                            + "\n" for _ in range(3000)))
    rel = tmp_path / "rel"
    status, _, err = run(capsys, "pst", data, "--epsilon", "5", "--l-top", "8", "--seed", "3",
                         "--no-synthetic", "--out", rel, "--quiet")
    assert status == 0, err
    db = dpgpu.load(data)
    levels, _ = E.read_pst(rel / "pst.json", db.vocab)
    model = Model(levels, db.vocab.size)
    assert model.height > 2
    qs = [M.random_count_workload(4, m, 300, seed=m) for m in (1, 6, 30)]
    est = E._model_estimates(model, qs)
    want = [model.estimate(np.asarray(q, dtype=np.int32)[None, :])[0]
            for items, sizes in qs for q in np.split(items, np.cumsum(sizes)[:-1])]
    assert est.tolist() == want and np.count_nonzero(est) > 100


# ----------------------------------------------------------------------- top-K
def test_a_k_above_the_maximum_is_refused_by_option(tmp_path, original, capsys):
    rel = make_release(tmp_path, original, {"synthetic.txt": ORIGINAL})
    status, _, err = run(capsys, "evaluate", "--original", original, "--release", rel,
                         "--k", f"20,{E.MAX_K + 1}")
    lines = err.strip().splitlines()
    assert status == 2 and "--k" in lines[-1] and f"at most {E.MAX_K:,}" in lines[-1]
    with pytest.raises(InvalidParameter, match="k_values"):
        E.evaluate_release(original, rel, k_values=[E.MAX_K + 1])


@pytest.mark.parametrize("min_length", ["6", "50", str(2 ** 63)])
def test_no_pattern_of_min_length_is_no_perfect_score(tmp_path, original, capsys, min_length):
    """Regression: with no pattern of --min-length in the original (its longest sequence has 5
    items), every K scored TP ratio 1 and utility loss 0; 2**63 also took 23 s / 575 MB on 49
    sequences, mining every subsequence first."""
    rel = make_release(tmp_path, original, {"synthetic.txt": ORIGINAL})
    r = evaluate(capsys, original, rel, "--task", "top-k", "--min-length", min_length)
    for kind in ("strings", "subsequences"):
        for row in r["tasks"]["top-k"][kind]["by_k"].values():
            assert row == {"true_positive_ratio": None, "utility_loss": None, "available": 0}
    table = E.format_table(r)
    assert f"  (n/a: no pattern of length >= {min_length} in the original)" in table
    assert "     20       n/a           n/a" in table and "1.000" not in table
    assert M.true_positive_ratio([], []) is None and M.utility_loss({}, {}) is None


def test_no_subsequence_above_the_longest_sequence_is_mined():
    db = dpgpu.SequenceDB.from_sequences([list("abcdefghijklmnopqrstuvwxy")])  # 2**25 subsequences
    t0 = time.perf_counter()
    for mine in (lambda: T.top_k_subsequences(db, 10, min_length=26),
                 lambda: T.frequent_subsequences(db, 1, min_length=26)):
        patterns, supports = mine()
        assert patterns == [] and supports.size == 0
    assert time.perf_counter() - t0 < 5


def test_no_string_of_min_length_is_no_perfect_score_for_the_model(tmp_path, original, capsys):
    """The same for the PST model's top-K (its strings are at most l_top = 3 long: none is
    searched for)."""
    rel = make_release(tmp_path, original, {"pst.json": pst_json("abc", 3, [4, 5, 3, 4])})
    r = evaluate(capsys, original, rel, "--queries", "10", "--min-length", "6", "--k", "2")
    top = r["tasks"]["pst"]["top_k"]
    assert top["top"] == [] and top["by_k"]["2"] == {"precision": None, "utility_loss": None,
                                                    "available": 0}
    assert "      2        n/a           n/a" in E.format_table(r)


@pytest.mark.parametrize("option, value, n_items, words", [
    ("--min-length", "14", 3, ["--min-length", "3 ** 14"]),     # every string below 14 first
    ("--k", "10000", 201, ["--k", "10000 strings by each of 201 items"])])
def test_a_pst_search_that_cannot_be_bounded_is_refused_by_option(tmp_path, capsys, option,
                                                                  value, n_items, words):
    """Regression: --task pst --min-length 8 over 8 items ran out of memory (2.3 GB): the
    model's search extends every string shorter than --min-length before ranking any."""
    data = tmp_path / "data.txt"
    data.write_text(" ".join(f"i{j}" for j in range(n_items)) + "\n")
    labels = dpgpu.load(data).vocab.labels
    rel = make_release(tmp_path, data, {"pst.json": pst_json(labels, 20, [1] * (n_items + 1))})
    status, _, err = run(capsys, "evaluate", "--original", data, "--release", rel,
                         "--queries", "10", option, value)
    one_line_error(status, err, *words, f"{E.MAX_CANDIDATES:,}")


# ------------------------------------------------------------ exact mining cap
def test_mining_past_the_candidate_limit_stops():
    db = dpgpu.SequenceDB.from_sequences([list("abcdefghij"), list("jihgfedcba")])
    with pytest.raises(T.CandidateLimit, match="max_candidates: exact mining met") as info:
        T.frequent_subsequences(db, 1, max_candidates=100)
    assert info.value.limit == 100 and info.value.candidates > 100 and info.value.length >= 3
    assert len(T.frequent_subsequences(db, 2, max_candidates=100)[0]) == 10  # the items


@pytest.mark.parametrize("extra, words", [
    (["--threshold", "1e-320", "--queries", "10"], ["--threshold: finding the subsequences of the original held "
                                 "by >= 1 sequences", "change --threshold"]),
    (["--task", "top-k", "--min-length", "9"], ["--k or --min-length: finding the exact "
                                                "top-100 subsequences of length >= 9"])])
def test_exact_mining_past_the_limit_is_refused_by_option(tmp_path, capsys, monkeypatch,
                                                          extra, words):
    """Regression: --threshold 1e-320 on 49 short sequences enumerated 9 million frequent
    subsequences (57 s, 3 GB); the search stops at MAX_CANDIDATES (made small here)."""
    monkeypatch.setattr(E, "MAX_CANDIDATES", 500)
    rng = np.random.default_rng(2)
    data = tmp_path / "data.txt"
    data.write_text("".join(" ".join("abcdef"[i] for i in rng.integers(0, 6, 12)) + "\n"
                            for _ in range(6)))
    rel = make_release(tmp_path, data, {"frequent.tsv": "pattern\tsupport\na\t3\n",
                                        "synthetic.txt": "a b\n"})
    status, _, err = run(capsys, "evaluate", "--original", data, "--release", rel, *extra)
    one_line_error(status, err, *words, "more than the 500 candidate patterns allowed")


# ----------------------------------------------------------------- report.json
@pytest.mark.parametrize("change, message", [
    ({"epsilon": "one", "ledger": None}, 'epsilon: expected a finite number >= 0 (null for an '
                                         'output that is not private), got "one"'),
    ({"epsilon": float("nan")}, "epsilon: expected a finite number >= 0"),
    ({"epsilon": -1}, "epsilon: expected a finite number >= 0"),
    ({"mechanism": None}, "mechanism: expected the mechanism's name (a non-empty string), got "
                          "nothing"),
    ({"mechanism": 3}, "mechanism: expected the mechanism's name"),
    ({"delta": 2}, "delta: expected a number in [0, 1] or null, got 2"),
    ({"parameters": [1]}, "parameters: expected a JSON object, got [1]"),
    ({"input": "lines"}, 'input: expected a JSON object, got "lines"')])
def test_a_malformed_report_is_named_field_by_field(tmp_path, original, capsys, change,
                                                    message):
    """Regression: epsilon "one" crashed the table with a traceback; epsilon NaN and a missing
    mechanism printed 'mechanism None, epsilon nan'."""
    rel = make_release(tmp_path, original, {"synthetic.txt": ORIGINAL})
    report = json.loads((rel / "report.json").read_text())
    report.update(change)
    if change.get("mechanism") is None and "mechanism" in change:
        del report["mechanism"]
    (rel / "report.json").write_text(json.dumps(report))
    status, out, err = run(capsys, "evaluate", "--original", original, "--release", rel,
                           "--task", "lengths")
    one_line_error(status, err, f"{rel / 'report.json'}: {message}")
    assert out == "" and not (rel / "evaluation.json").exists()


# --------------------------------------------------------------------- spatial
@pytest.mark.parametrize("option, value", [("--k", "5"), ("--min-length", "3"),
                                           ("--query-sizes", "7"), ("--threshold", "0.1"),
                                           ("--coverage-k", "3"), ("--backend", "numpy")])
def test_sequence_options_are_refused_for_a_spatial_release(tmp_path, capsys, option, value):
    """Regression: they were silently ignored, while --columns on a sequence release is
    refused."""
    rng = np.random.default_rng(4)
    points = tmp_path / "pts.csv"
    points.write_text("x,y\n" + "".join(f"{x:.4f},{y:.4f}\n" for x, y in rng.random((50, 2))))
    rel = tmp_path / "rel"
    assert main(["privtree-spatial", str(points), "--epsilon", "1", "--columns", "x,y",
                 "--bounds", "0,1,0,1", "--seed", "1", "--out", str(rel)]) == 0
    capsys.readouterr()
    status, _, err = run(capsys, "evaluate", "--original", points, "--release", rel,
                         "--queries", "50", option, value)
    one_line_error(status, err, f"{option}: applies to sequence releases only")
    assert not (rel / "evaluation.json").exists()
    r = evaluate(capsys, points, rel, "--queries", "50")  # the options that apply are taken
    assert r["settings"]["n_queries"] == 50
