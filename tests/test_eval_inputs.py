"""Bad inputs of the evaluation API (dpgpu.eval): refused by name, never read another way."""

from __future__ import annotations

import numpy as np
import pytest

import dpgpu
from dpgpu.cli import main
from dpgpu.errors import InvalidParameter
from dpgpu.eval import evaluate as E
from dpgpu.eval import metrics as M
from dpgpu.eval import truth as T

# Labels that look like ids: "1" is item 0, "2" is item 1, "3" is item 2.
LABELLED = [["1", "2"], ["1", "2"], ["2", "3"], ["1", "1"]]


@pytest.fixture(scope="module")
def labelled():
    return dpgpu.SequenceDB.from_sequences(LABELLED, vocab=["1", "2", "3"])


# ------------------------------------------------------------ truth: patterns
@pytest.mark.parametrize("count", [T.pattern_counts, T.subsequence_supports])
@pytest.mark.parametrize("bad", [("1",), ("1", "2"), (1.9,), (0, 1.0), (True,), (np.bool_(True),),
                                 (np.float64(0),), np.array(["1"]), "1 2"])
def test_patterns_of_labels_floats_or_bools_are_refused(labelled, count, bad):
    with pytest.raises(InvalidParameter, match=r"patterns: pattern 1 holds .*Vocabulary\.encode"):
        count(labelled, [(0,), bad])
    # integer ids, NumPy's included, are read as they are
    ids = [(np.int64(0), np.int8(1)), np.array([1], dtype=np.uint16), [0]]
    assert count(labelled, ids).tolist() == count(labelled, [(0, 1), (1,), (0,)]).tolist()


@pytest.mark.parametrize("count", [T.pattern_counts, T.subsequence_supports])
@pytest.mark.parametrize("patterns", ["12", None, 5])
def test_patterns_that_are_not_a_collection_are_refused(labelled, count, patterns):
    with pytest.raises(InvalidParameter, match="patterns: expected a sequence of patterns"):
        count(labelled, patterns)


@pytest.mark.parametrize("count", [T.pattern_counts, T.subsequence_supports])
@pytest.mark.parametrize("big", [2 ** 70, -(2 ** 70), np.uint64(2 ** 64 - 1)])
def test_ids_beyond_int64_are_out_of_range(labelled, count, big):
    with pytest.raises(InvalidParameter, match=r"patterns: symbol id out of range"):
        count(labelled, [(0, big)])


def test_group_by_prefix_refuses_labels():
    with pytest.raises(InvalidParameter, match="pats: pattern 0 holds 'a'"):
        T.group_by_prefix([(1, "a")])


@pytest.mark.parametrize("weights, message", [([1.5, 1, 1, 1], "integers"),
                                              (["1", "1", "1", "1"], "integers"),
                                              ([True, True, True, True], "integers"),
                                              ([1, -1, 1, 1], "integers >= 0, got -1")])
def test_subsequence_support_weights_must_be_counts(labelled, weights, message):
    with pytest.raises(InvalidParameter, match=f"weights: expected {message}"):
        T.subsequence_supports(labelled, [(0,)], weights=weights)


# ------------------------------------------------------------------- metrics
@pytest.mark.parametrize("p, q, name", [([np.nan, 1], [1, 1], "p"), ([np.inf, 1], [1, 1], "p"),
                                        ([1, 1], [1, -np.inf], "q"), (["1", "1"], [1, 1], "p"),
                                        ([1, 1], [True, False], "q"), ([1, 1], [-1, 2], "q")])
def test_total_variation_distance_refuses_what_is_not_a_histogram(p, q, name):
    with pytest.raises(InvalidParameter, match=f"^{name}: "):
        M.total_variation_distance(p, q)


@pytest.mark.parametrize("n", [1.5, "300", True, 0, None])
def test_sanity_bound_needs_a_number_of_records(n):
    with pytest.raises(InvalidParameter, match="n_records"):
        M.sanity_bound(n)


@pytest.mark.parametrize("call, name", [
    (lambda: M.relative_errors([np.nan], [1], 1), "estimates"),
    (lambda: M.relative_errors([1], [np.inf], 1), "truth"),
    (lambda: M.relative_errors(["3"], [1], 1), "estimates"),
    (lambda: M.range_relative_errors([1], [1], 10.5), "n_records"),
    (lambda: M.summarize([0.5, np.nan]), "errors"),
    (lambda: M.summarize(["0.5"]), "errors"),
    (lambda: M.utility_loss({"x": "10"}, {}), "true_top"),
    (lambda: M.utility_loss({"x": np.nan}, {}), "true_top"),
    (lambda: M.utility_loss({"x": 10}, {"x": np.inf}), "released_top"),
    (lambda: M.support_relative_errors({"x": np.nan}, {"x": 1}), "released"),
    (lambda: M.support_relative_errors({"x": 1}, {"x": "1"}), "true_support"),
    (lambda: M.support_relative_errors({"x": 1}, {"y": 1}), "true_support"),
    (lambda: M.kanonymity_coverage({"g"}, {"g": np.nan}, 1), "holders"),
    (lambda: M.kanonymity_coverage({"g"}, {"g": "5"}, 1), "holders"),
    (lambda: M.covered_share(3, 2), "covered"),
    (lambda: M.covered_share(1, np.nan), "eligible"),
    (lambda: M.spurious_share("1", 2), "absent"),
    (lambda: M.domain_bounds(["0", "0", "1", "1"]), "domain"),
    (lambda: M.random_range_queries([0, 0, 1, 1], 5, (0.01, 0.1, 0.2)), "size"),
    (lambda: M.random_range_queries([0, 0, 1, 1], 5, seed=1.5), "seed"),
    (lambda: M.random_count_queries(5, 3, 10, seed=True), "seed"),
    (lambda: M.random_count_queries(5, 3, 10, seed=None), "seed"),
    (lambda: M.histogram_range_estimates([(0, 0, 1, 1)], [np.nan], [(0, 0, 1, 1)]),
     "leaf_counts"),
    (lambda: M.histogram_range_estimates([(0, 0, 1, 1)], ["4"], [(0, 0, 1, 1)]), "leaf_counts"),
    (lambda: M.histogram_range_estimates([(0, 0, 1, 1)], [4], [(0, np.nan, 1, 1)]),
     "query_boxes")])
def test_metrics_refuse_nan_infinities_and_strings(call, name):
    with pytest.raises(InvalidParameter, match=f"^{name}: "):
        call()


def test_query_boxes_may_be_unbounded():
    est = M.histogram_range_estimates([(0, 0, 2, 2)], [8], [(-np.inf, -np.inf, np.inf, 1)])
    assert est.tolist() == [4.0]
    with pytest.raises(InvalidParameter, match="^query_boxes: "):
        M.histogram_range_estimates([(0, 0, 2, 2)], [8], [(np.nan, 0, 1, 1)])


# ---------------------------------------------------------------- evaluate
ORIGINAL = "a b c a b\na c b\nb a\nc\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval_inputs")
    (d / "orig.txt").write_text(ORIGINAL * 50)
    (d / "chars.txt").write_text(ORIGINAL.replace(" ", "") * 50)
    db = dpgpu.load(d / "orig.txt")
    release = dpgpu.ngram(db, 1.0, seed=1)
    release.save(d / "rel")
    return d, db, release


def _tasks(original, rel, **options):
    return E.evaluate_release(original, rel, n_queries=20, **options)["tasks"]


def test_evaluate_release_reads_an_original_given_by_path(files):
    d, db, _ = files
    expected = _tasks(db, d / "rel")
    for path in (d / "orig.txt", str(d / "orig.txt")):
        result = E.evaluate_release(path, d / "rel", n_queries=20)
        assert result["tasks"] == expected
        assert result["original"]["path"] == str(path)
    # with the reader options, as dpgpu evaluate passes them
    assert _tasks(d / "chars.txt", d / "rel", reader_options={"tokens": "chars"}) == expected


def test_evaluate_release_refuses_other_originals(files):
    d, _, _ = files
    with pytest.raises(InvalidParameter, match=r"original: expected a SequenceDB"):
        E.evaluate_release([["a", "b"]], d / "rel")


@pytest.mark.parametrize("call", [
    lambda db, rel: E.evaluate_release(db, rel),
    lambda db, rel: E.evaluate_spatial_release("points.csv", rel),
    lambda db, rel: E.release_files(rel),
    lambda db, rel: E.is_spatial_release(rel),
    lambda db, rel: E.write_evaluation(rel, {}),
    lambda db, rel: E.read_evaluation(rel)])
def test_a_release_object_is_not_a_release_directory(files, call):
    _, db, release = files
    with pytest.raises(InvalidParameter, match=r"release_dir: .*release\.save\(path\)"):
        call(db, release)


def test_evaluate_spatial_release_refuses_points_in_memory(tmp_path):
    pts = np.random.default_rng(0).random((50, 2))
    dpgpu.privtree_spatial(pts, 1.0, bounds=[0, 1, 0, 1], seed=1).save(tmp_path / "rel")
    with pytest.raises(InvalidParameter, match="points_path: expected the path"):
        E.evaluate_spatial_release(pts, tmp_path / "rel")


@pytest.mark.parametrize("option, value", [
    ("k_values", 5), ("k_values", []), ("k_values", "20"), ("k_values", np.int64(20)),
    ("query_sizes", 5), ("query_sizes", np.array(4)), ("coverage_ks", 10), ("coverage_ks", ())])
def test_evaluate_release_refuses_single_values_where_lists_go(files, option, value):
    d, _, _ = files
    with pytest.raises(InvalidParameter, match=f"^{option}: expected a non-empty sequence"):
        E.evaluate_release(d / "orig.txt", d / "rel", **{option: value})


def test_evaluate_release_refuses_a_single_task_name(files):
    d, db, _ = files
    with pytest.raises(InvalidParameter, match=r"^tasks: expected a list of task names"):
        E.evaluate_release(db, d / "rel", tasks="top-k")
    assert list(E.evaluate_release(db, d / "rel", tasks=["lengths"])["tasks"]) == ["lengths"]


def test_a_release_missing_a_file_its_report_lists_is_refused(tmp_path, capsys):
    """Regression: with ngrams.tsv deleted, evaluate silently dropped the n-gram section."""
    data = tmp_path / "d.txt"
    data.write_text("a b\nb c\n" * 30)
    rel = tmp_path / "rel"
    assert main(["ngram", str(data), "--epsilon", "1", "-q", "--out", str(rel)]) == 0
    (rel / "ngrams.tsv").unlink()
    capsys.readouterr()
    assert main(["evaluate", "--original", str(data), "--release", str(rel)]) == 2
    err = capsys.readouterr().err
    assert f"{rel}: report.json lists ngrams.tsv, missing from the release directory" in err
    assert not (rel / "evaluation.json").exists()
