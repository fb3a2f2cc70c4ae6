"""``dpgpu evaluate`` on spatial (PrivTree) releases: range-count queries of Section 6.1."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import dpgpu
from dpgpu import InputError
from dpgpu.cli import main
from dpgpu.eval.evaluate import evaluate_release, evaluate_spatial_release, range_workload
from dpgpu.mechanisms.privtree import privtree_spatial

# Domain [0, 10] x [0, 10], two leaves: the left half (noisy count 6), the right half (2).
LEAVES = "lo_x,hi_x,lo_y,hi_y,count\n0.0,5.0,0.0,10.0,6\n5.0,10.0,0.0,10.0,2\n"
# 9 points: 5 in the left half once (-1, 3) is clipped onto (0, 3), 4 in the right half.
POINTS = [(1, 1), (2, 2), (3, 8), (4, 4), (-1, 3), (6, 1), (7, 2), (8, 3), (9, 9)]
# Query boxes (x0, y0, x1, y1) with, by hand (sanity bound 0.1 % of 9 = 0.009):
#   (0, 0, 5, 10):    est 6,                      true 5 -> RE 1/5
#   (0, 0, 2.5, 5):   est 6 * 12.5/50 = 1.5,      true 3 -> RE 1.5/3 = 1/2
#   (5, 5, 10, 10):   est 2 * 25/50 = 1,          true 1 -> RE 0
#   (2.5, 0, 7.5, 5): est 1.5 + 2 * 12.5/50 = 2,  true 3 -> RE 1/3
#   (5.5, 4, 6.5, 8): est 2 * 4/50 = 0.16,        true 0 -> RE 0.16/0.009
WORKLOAD = {"a": [(0, 0, 5, 10), (0, 0, 2.5, 5)],
            "b": [(5, 5, 10, 10), (2.5, 0, 7.5, 5), (5.5, 4, 6.5, 8)]}


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def write_points(path, points, names=("x", "y")):
    rows = (f"p{i},{','.join(str(v) for v in p)}\n" for i, p in enumerate(points))
    path.write_text(f"name,{','.join(names)}\n" + "".join(rows))
    return path


@pytest.fixture
def points(tmp_path):
    return write_points(tmp_path / "points.csv", POINTS)


def make_release(tmp_path, *, leaves=LEAVES, columns=("x", "y"), bounds=((0, 10), (0, 10)),
                 name="rel"):
    """A spatial release directory written by hand (no vocabulary: spatial data has none)."""
    d = tmp_path / name
    d.mkdir()
    report = {"mechanism": "privtree-spatial", "epsilon": 1.0, "delta": 0.0,
              "parameters": {"epsilon": 1.0, "columns": list(columns)},
              "domain": {"bounds": [list(b) for b in bounds], "from_data": False}}
    (d / "report.json").write_text(json.dumps(report))
    (d / "leaves.csv").write_text(leaves)
    return d


def test_relative_errors_by_hand(tmp_path, points):
    rel = make_release(tmp_path)
    r = evaluate_spatial_release(points, rel, workload=WORKLOAD)
    assert r["private"] is False and r["settings"]["workload"] == "given"
    assert r["original"]["points"] == 9 and r["original"]["columns"] == ["x", "y"]
    t = r["tasks"]["range-queries"]
    assert t["sanity_bound"] == pytest.approx(0.009)
    assert (t["leaves"], t["released_total"], t["outside_domain"]) == (2, 8.0, 1)
    a, b = t["by_set"]["a"], t["by_set"]["b"]
    assert a["mean"] == pytest.approx((1 / 5 + 1 / 2) / 2)
    assert a["median"] == pytest.approx((1 / 5 + 1 / 2) / 2)
    assert (a["n"], a["nonzero_true"], a["volume_fraction"]) == (2, 2, None)
    assert b["mean"] == pytest.approx((0 + 1 / 3 + 0.16 / 0.009) / 3)
    assert b["median"] == pytest.approx(1 / 3)
    assert b["max"] == pytest.approx(0.16 / 0.009)
    assert (b["n"], b["nonzero_true"]) == (3, 2)


def test_cli_random_workload_and_table(tmp_path, points, capsys):
    rel = make_release(tmp_path)
    status, out, err = run(capsys, "evaluate", "--original", str(points), "--release", str(rel),
                           "--queries", "50", "--seed", "3")
    assert status == 0, err
    assert "range-count queries" in out and "(9 points)" in out
    assert all(name in out for name in ("small", "medium", "large"))
    r = json.loads((rel / "evaluation.json").read_text())
    assert r["private"] is False and r["settings"]["tasks"] == ["range-queries"]
    by_set = r["tasks"]["range-queries"]["by_set"]
    assert list(by_set) == ["small", "medium", "large"]
    assert by_set["large"]["volume_fraction"] == [0.01, 0.1]
    assert all(v["n"] == 50 for v in by_set.values())
    # the same seed draws the same workload: the hand-made API call agrees with the CLI
    again = evaluate_spatial_release(points, rel, seed=3, n_queries=50)
    assert again["tasks"]["range-queries"]["by_set"] == by_set


def test_plot(tmp_path, points, capsys):
    pytest.importorskip("matplotlib")
    rel = make_release(tmp_path)
    fig = tmp_path / "fig.png"
    status, _, err = run(capsys, "evaluate", "--original", str(points), "--release", str(rel),
                         "--queries", "50", "--plot", str(fig))
    assert status == 0, err
    assert fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and os.path.getsize(fig) > 1000


def test_end_to_end_privtree_release(tmp_path, capsys):
    rng = np.random.default_rng(7)
    pts = np.concatenate([rng.normal(0.3, 0.05, (3000, 2)), rng.random((1000, 2))])
    pts = np.clip(pts, 0.0, 0.999)
    release = privtree_spatial(pts, 1.0, bounds=[[0, 1], [0, 1]], columns=["lon", "lat"],
                               seed=5)
    rel = release.save(tmp_path / "rel")
    data = write_points(tmp_path / "pts.csv", pts.tolist(), names=("lon", "lat"))
    status, out, err = run(capsys, "evaluate", "--original", str(data), "--release", str(rel),
                           "--queries", "300", "--json")
    assert status == 0, err
    r = json.loads(out)
    assert r == json.loads((rel / "evaluation.json").read_text())
    by_set = r["tasks"]["range-queries"]["by_set"]
    assert set(by_set) == {"small", "medium", "large"}
    # cross-check with a brute-force count and the release's own d-D estimator
    for name, boxes in range_workload([[0, 1], [0, 1]], 300, 0).items():
        inside = ((pts[None, :, 0] >= boxes[:, None, 0]) & (pts[None, :, 0] < boxes[:, None, 2])
                  & (pts[None, :, 1] >= boxes[:, None, 1]) & (pts[None, :, 1] < boxes[:, None, 3]))
        true = inside.sum(axis=1)
        est = release.range_count(boxes[:, :2], boxes[:, 2:])
        err = np.abs(est - true) / np.maximum(true, 0.001 * len(pts))
        assert by_set[name]["mean"] == pytest.approx(err.mean())
        assert by_set[name]["median"] == pytest.approx(np.median(err))
    assert by_set["large"]["mean"] < 0.5  # a real release answers large queries reasonably


def test_parquet_original_and_column_override(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rel = make_release(tmp_path)
    table = pa.table({"u": [p[0] for p in POINTS], "v": [p[1] for p in POINTS]})
    pq.write_table(table, tmp_path / "pts.parquet")
    status, _, err = run(capsys, "evaluate", "--original", str(tmp_path / "pts.parquet"),
                         "--release", str(rel), "--format", "parquet", "--columns", "u,v",
                         "--queries", "20")
    assert status == 0, err
    r = json.loads((rel / "evaluation.json").read_text())
    assert r["original"]["columns"] == ["u", "v"] and r["original"]["points"] == 9


def test_spatial_release_needs_no_vocabulary_but_sequence_api_refuses_it(tmp_path):
    rel = make_release(tmp_path)
    seqs = tmp_path / "seqs.txt"
    seqs.write_text("a b\nb a\n")
    with pytest.raises(InputError, match="spatial release"):
        evaluate_release(dpgpu.load(seqs), rel)


@pytest.mark.parametrize("original, extra, message", [
    ("a b c\nb a\n", [], "not a points file"),                       # a sequence dataset
    ("name,u,v\np,1,1\n", [], "no column 'x'"),                      # other column names
    ("name,x,y\np,1,oops\n", [], "line 2, column 'y': 'oops' is not a number"),
    ("name,x,y\n", [], "no points"),
    ("name,x,y\np,1,1\n", ["--columns", "x"], "2 coordinates"),
    ("name,x,y\np,1,1\n", ["--format", "lines"], "points file"),
    ("name,x,y\np,1,1\n", ["--format", "parquet"], "not a parquet file"),
    ("name,x,y\np,1,1\n", ["--case", "name"], "--case"),
    ("name,x,y\np,1,1\n", ["--task", "top-k"], "does not apply"),
])
def test_bad_original_or_options(tmp_path, capsys, original, extra, message):
    rel = make_release(tmp_path)
    path = tmp_path / "orig.csv"
    path.write_text(original)
    status, _, err = run(capsys, "evaluate", "--original", str(path), "--release", str(rel),
                         *extra)
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (rel / "evaluation.json").exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"leaves": "lo_x,hi_x,count\n0,5,6\n"}, "header"),
    ({"leaves": LEAVES + "0,5,0,nan,1\n"}, "leaves.csv:4"),
    ({"leaves": LEAVES + "5,5,0,10,1\n"}, "empty box"),
    ({"columns": ()}, "parameters.columns"),
    ({"bounds": ((0, 10),)}, "bounds"),
    ({"columns": ("x", "y", "z"), "bounds": ((0, 1),) * 3}, "no column 'z'"),
])
def test_bad_spatial_release(tmp_path, points, capsys, kwargs, message):
    rel = make_release(tmp_path, **kwargs)
    status, _, err = run(capsys, "evaluate", "--original", str(points), "--release", str(rel))
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1


def test_columns_option_is_for_spatial_releases_only(tmp_path, capsys):
    seqs = tmp_path / "seqs.txt"
    seqs.write_text("a b\nb a\n")
    rel = tmp_path / "seqrel"
    rel.mkdir()
    (rel / "report.json").write_text(json.dumps({"mechanism": "handmade", "epsilon": 1.0,
                                                 "parameters": {}}))
    (rel / "ngrams.tsv").write_text("gram\tcount\na b\t1\n")
    status, _, err = run(capsys, "evaluate", "--original", str(seqs), "--release", str(rel),
                         "--columns", "x,y")
    assert status == 2 and "--columns" in err and len(err.strip().splitlines()) == 1


def test_evaluate_a_release_of_clipped_points(tmp_path, capsys):
    # Regression: points clipped onto the domain's edge ended in a zero-width leaf
    # (1.0, 1.0) that `dpgpu evaluate` rejected as an empty box and range queries ignored.
    pts = np.random.default_rng(0).uniform(0, 2, (5000, 1))
    data = write_points(tmp_path / "clip1d.csv", pts.tolist(), names=("x",))
    status, _, err = run(capsys, "privtree-spatial", str(data), "--columns", "x", "--bounds",
                         "0,1", "--outside", "clip", "--epsilon", "1", "--seed", "1", "--out",
                         str(tmp_path / "rel"))
    assert status == 0, err
    rows = np.loadtxt(tmp_path / "rel" / "leaves.csv", delimiter=",", skiprows=1, ndmin=2)
    assert np.all(rows[:, 1] > rows[:, 0]) and rows[-1, 1] == 1.0
    status, out, err = run(capsys, "evaluate", "--original", str(data), "--release",
                           str(tmp_path / "rel"), "--queries", "100", "--json")
    assert status == 0, err
    t = json.loads(out)["tasks"]["range-queries"]
    assert t["outside_domain"] > 2000 and t["released_total"] == rows[:, 2].sum()
    # (query boxes are half-open: reach past the top edge to count the points clipped onto it)
    whole = evaluate_spatial_release(data, tmp_path / "rel", workload={"all": [(0, 2)]})
    assert whole["tasks"]["range-queries"]["by_set"]["all"]["mean"] < 0.05


def test_an_original_mostly_outside_the_domain_is_warned_about(tmp_path, points, capsys,
                                                               caplog):
    """Regression: swapped or wrong --columns put every point outside the release's domain and
    the clipped figures came out without a word but the table's count."""
    far = write_points(tmp_path / "far.csv", [(x + 20, y) for x, y in POINTS])
    rel = make_release(tmp_path)
    with caplog.at_level("WARNING", logger="dpgpu"):
        evaluate_spatial_release(points, rel, workload=WORKLOAD)
    assert "outside the release's domain" not in caplog.text  # 1 of 9 is outside
    with caplog.at_level("WARNING", logger="dpgpu"):
        r = evaluate_spatial_release(far, rel, workload=WORKLOAD)
    assert r["tasks"]["range-queries"]["outside_domain"] == 9
    assert "9 of 9 original points lie outside the release's domain" in caplog.text
