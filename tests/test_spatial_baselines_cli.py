"""``dpgpu privtree-spatial --method ug|ag --n N``: the PrivTree paper's spatial baselines UG and
AG from the command line, written as PrivTree's releases are, read back and evaluated alike."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

import dpgpu
from dpgpu import InputError, InvalidParameter
from dpgpu.cli import main
from dpgpu.commands import privtree_spatial as command
from dpgpu.data.points import read_points
from dpgpu.eval.evaluate import range_workload
from dpgpu.mechanisms.privtree import SpatialHistogram, adaptive_grid, privtree_spatial, \
    uniform_grid

N = 600
BOUNDS = [[0.0, 1.0], [0.0, 1.0]]
API = {"ug": uniform_grid, "ag": adaptive_grid}
MECHANISM = {"ug": "uniform-grid", "ag": "adaptive-grid"}


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    """A CSV of N skewed points in the unit square (columns name, lon, lat, z)."""
    rng = np.random.default_rng(11)
    pts = np.clip(np.concatenate([rng.normal(0.3, 0.05, (N // 2, 3)), rng.random((N // 2, 3))]),
                  0.0, 0.999)
    path = tmp_path_factory.mktemp("baselines") / "points.csv"
    path.write_text("name,lon,lat,z\n" + "".join(
        f"p{i},{a!r},{b!r},{c!r}\n" for i, (a, b, c) in enumerate(pts.tolist())))
    return path


def run(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def release_cli(capsys, points, out, method, *extra):
    """Run the baseline on the command line (seed 7, epsilon 1); return its stdout."""
    status, stdout, err = run(capsys, "privtree-spatial", points, "--epsilon", "1", "--columns",
                              "lon,lat", "--bounds", "0,1,0,1", "--seed", "7", "--method",
                              method, "--n", N, "--out", out, *extra)
    assert status == 0, err
    assert "Traceback" not in err
    return stdout


def release_api(points, method, **options):
    """The same release through the Python API, from the same points."""
    pts = read_points(points, "lon,lat")
    return API[method](pts, 1.0, n=N, bounds=BOUNDS, seed=7, columns=["lon", "lat"], **options)


def leaf_rows(path):
    with open(path / "leaves.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


@pytest.mark.parametrize("method", ["ug", "ag"])
def test_cli_release_is_the_api_release(tmp_path, capsys, points, method):
    out = release_cli(capsys, points, tmp_path / "rel", method)
    grid = release_api(points, method)
    name = {"ug": "UG uniform grid", "ag": "AG adaptive grid"}[method]
    assert out.startswith(f"{name}: {len(grid)} cells; spent epsilon=1")
    rel = tmp_path / "rel"
    assert sorted(p.name for p in rel.iterdir()) == ["diagnostics.json", "leaves.csv",
                                                     "report.json"]
    header, rows = leaf_rows(rel)
    assert header == ["lo_lon", "hi_lon", "lo_lat", "hi_lat", "count"]
    assert len(rows) == len(grid) > 1
    for row, lo, hi, count in zip(rows, grid.lo.tolist(), grid.hi.tolist(),
                                  grid.counts.tolist()):
        assert [float(v) for v in row[:4]] == [lo[0], hi[0], lo[1], hi[1]]  # exactly
        assert row[:4] == [repr(lo[0]), repr(hi[0]), repr(lo[1]), repr(hi[1])]
        assert (int(row[4]) if method == "ug" else float(row[4])) == count
    if method == "ag":  # constrained inference makes float counts, written exactly
        assert any(not float(r[4]).is_integer() for r in rows)
    else:
        assert all(r[4].lstrip("-").isdigit() for r in rows)
    report = json.loads((rel / "report.json").read_text())
    assert report["mechanism"] == MECHANISM[method] == grid.report["mechanism"]
    assert report["parameters"] == {**grid.report["parameters"], "columns": ["lon", "lat"]}
    assert report["parameters"]["n"] == N
    assert (report["epsilon"], report["delta"]) == (grid.report["epsilon"], grid.report["delta"])
    assert report["private"] is True and report["seeded"] is True
    assert report["domain"] == {"bounds": BOUNDS, "from_data": False}
    assert report["files"] == ["leaves.csv"]
    # the Python API's save writes the very same file
    saved = grid.save(tmp_path / "py")
    assert (saved / "leaves.csv").read_bytes() == (rel / "leaves.csv").read_bytes()


def test_outside_and_clip_follow_the_api(tmp_path, capsys, points):
    status, _, err = run(capsys, "privtree-spatial", points, "--epsilon", "1", "--columns",
                         "lon,lat", "--bounds", "0,0.5,0,1", "--method", "ag", "--n", N,
                         "--out", tmp_path / "bad")
    assert status == 2 and "Traceback" not in err
    assert "line " in err and "column 'lon'" in err and "--outside drop" in err
    assert not (tmp_path / "bad").exists()
    status, _, err = run(capsys, "privtree-spatial", points, "--epsilon", "1", "--columns",
                         "lon,lat", "--bounds", "0,0.5,0,1", "--outside", "clip", "--seed", "7",
                         "--method", "ug", "--n", N, "--out", tmp_path / "clip")
    assert status == 0, err
    grid = uniform_grid(read_points(points, "lon,lat"), 1.0, n=N, bounds=[[0, 0.5], [0, 1]],
                        seed=7, outside="clip")
    _, rows = leaf_rows(tmp_path / "clip")
    assert [int(r[4]) for r in rows] == grid.counts.tolist()


@pytest.mark.parametrize("method", ["ug", "ag"])
def test_load_release_answers_range_counts_as_the_object(tmp_path, capsys, points, method):
    release_cli(capsys, points, tmp_path / "rel", method)
    grid = release_api(points, method)
    loaded = dpgpu.load_release(tmp_path / "rel")
    assert loaded.report["mechanism"] == MECHANISM[method]
    rng = np.random.default_rng(5)
    a, b = rng.random((500, 2)), rng.random((500, 2))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    lo, hi = np.vstack([lo, [0, 0], [0.25, 0.1]]), np.vstack([hi, [1, 1], [0.25, 0.9]])
    got = loaded.range_count(lo, hi)
    assert np.array_equal(got, grid.range_count(lo, hi))
    assert got[-2] == pytest.approx(grid.counts.sum())  # the whole domain
    assert np.array_equal(loaded.range_count([0.1, 0.2], [0.6, 0.7]),
                          grid.range_count([0.1, 0.2], [0.6, 0.7]))
    back = SpatialHistogram.load(tmp_path / "rel")
    assert back.columns == ["lon", "lat"]
    assert np.array_equal(back.lo, grid.lo) and np.array_equal(back.hi, grid.hi)
    assert np.array_equal(back.counts, grid.counts.astype(np.float64))
    assert back.report["parameters"]["columns"] == ["lon", "lat"]


def test_load_release_range_count_on_a_privtree_release_too(tmp_path, points):
    pts = read_points(points, "lon,lat")
    release = privtree_spatial(pts, 1.0, bounds=BOUNDS, columns=["lon", "lat"], seed=3)
    release.save(tmp_path / "tree")
    q = range_workload(BOUNDS, 100, 1)["medium"]
    assert np.array_equal(dpgpu.load_release(tmp_path / "tree").range_count(q[:, :2], q[:, 2:]),
                          release.range_count(q[:, :2], q[:, 2:]))


@pytest.mark.parametrize("method", ["ug", "ag"])
def test_evaluate_judges_the_baseline_as_a_privtree_release(tmp_path, capsys, points, method):
    release_cli(capsys, points, tmp_path / "rel", method)
    grid = release_api(points, method)
    rel = tmp_path / "rel"
    status, out, err = run(capsys, "evaluate", "--original", points, "--release", rel,
                           "--queries", "300", "--seed", "3", "--json")
    assert status == 0, err
    r = json.loads(out)
    assert r == json.loads((rel / "evaluation.json").read_text())
    assert r["release"]["mechanism"] == MECHANISM[method]
    assert r["original"]["points"] == N and r["original"]["columns"] == ["lon", "lat"]
    t = r["tasks"]["range-queries"]
    assert t["leaves"] == len(grid) and t["dimensions"] == 2 and t["outside_domain"] == 0
    assert t["released_total"] == pytest.approx(float(grid.counts.sum()))
    assert list(t["by_set"]) == ["small", "medium", "large"]
    pts = read_points(points, "lon,lat")
    for name, boxes in range_workload(BOUNDS, 300, 3).items():
        inside = ((pts[None, :, 0] >= boxes[:, None, 0]) & (pts[None, :, 0] < boxes[:, None, 2])
                  & (pts[None, :, 1] >= boxes[:, None, 1]) & (pts[None, :, 1] < boxes[:, None, 3]))
        true = inside.sum(axis=1)
        est = grid.range_count(boxes[:, :2], boxes[:, 2:])
        rel_err = np.abs(est - true) / np.maximum(true, 0.001 * N)
        assert t["by_set"][name]["n"] == 300
        assert t["by_set"][name]["mean"] == pytest.approx(rel_err.mean())
        assert t["by_set"][name]["median"] == pytest.approx(np.median(rel_err))
    # the table, as for a PrivTree release
    status, out, err = run(capsys, "evaluate", "--original", points, "--release", rel,
                           "--queries", "50")
    assert status == 0, err
    assert f"mechanism {MECHANISM[method]}" in out
    assert f"range-count queries on the {len(grid)} leaves (2-D" in out


def test_report_states_the_unit_of_a_baseline(tmp_path, capsys, points):
    release_cli(capsys, points, tmp_path / "rel", "ug")
    status, out, err = run(capsys, "report", tmp_path / "rel")
    assert status == 0, err
    assert "for one point" in out and "number of points n" in out and "None" not in out


@pytest.mark.parametrize("extra, named", [
    (["--method", "ug"], "--n: required with --method ug"),
    (["--method", "ag"], "--n: required with --method ag"),
    (["--n", "100"], "--n: only with --method ug or ag"),
    (["--method", "privtree", "--n", "100"], "--n: only with --method ug or ag"),
    (["--method", "ug", "--n", "0"], "--n: the number of points must be at least 1, got 0"),
    (["--method", "ug", "--n", "nan"], "argument --n: expected a whole number"),
    (["--method", "ag", "--n", "-3"], "argument --n: expected a whole number"),
    (["--method", "ug", "--n", "1.5"], "argument --n: expected a whole number"),
    (["--method", "ug", "--n", "100", "--fanout", "4"], "--fanout: only with --method privtree"),
    (["--method", "ag", "--n", "100", "--engine", "dask"],
     "--engine dask: only with --method privtree"),
    (["--method", "ag", "--n", "100", "--columns", "lon,lat,z"],
     "--columns: --method ag (the adaptive grid) is defined for two-dimensional points"),
])
def test_bad_options_are_refused_before_reading_or_writing(tmp_path, capsys, monkeypatch, points,
                                                           extra, named):
    def unread(*args, **kwargs):
        raise AssertionError("the points were read")

    monkeypatch.setattr(command, "read_points", unread)
    folder = tmp_path / "out"
    folder.mkdir()
    argv = ["privtree-spatial", points, "--epsilon", "1", "--bounds", "0,1,0,1", "--out",
            folder / "rel", *extra]
    if "--columns" not in extra:
        argv += ["--columns", "lon,lat"]
    status, out, err = run(capsys, *argv)
    assert status == 2, err
    assert out == "" and "Traceback" not in err
    assert named in err, err
    assert list(folder.iterdir()) == []  # no release, no staging directory left


def test_a_histogram_without_report_is_not_saved_and_load_needs_leaves(tmp_path, points):
    hand = SpatialHistogram([[0, 0]], [[1, 1]], [3])
    assert hand.columns == ["x0", "x1"]
    with pytest.raises(InvalidParameter, match="^report: this SpatialHistogram has no release"):
        hand.save(tmp_path / "hand")
    assert not (tmp_path / "hand").exists()
    with pytest.raises(InvalidParameter, match="^columns: expected 2 names"):
        SpatialHistogram([[0, 0]], [[1, 1]], [3], columns=["x"])
    # a sequence release has no leaves: range_count says so
    (tmp_path / "seq.txt").write_text("a b\nb a\n")
    status = main(["ngram", str(tmp_path / "seq.txt"), "--epsilon", "1", "--vocab",
                   str(write(tmp_path / "vocab.txt", "a\nb\n")), "--seed", "1", "-q",
                   "--out", str(tmp_path / "ng")])
    assert status == 0
    with pytest.raises(InputError, match=r"not a spatial release \(no leaves.csv\)"):
        dpgpu.load_release(tmp_path / "ng").range_count([0], [1])
    # the default column names of the API are written and read back
    grid = uniform_grid(read_points(points, "lon,lat"), 1.0, n=N, bounds=BOUNDS, seed=2)
    grid.save(tmp_path / "plain")
    assert leaf_rows(tmp_path / "plain")[0] == ["lo_x0", "hi_x0", "lo_x1", "hi_x1", "count"]
    assert SpatialHistogram.load(tmp_path / "plain").columns == ["x0", "x1"]
    with pytest.raises(InputError, match="exists"):
        grid.save(tmp_path / "plain")
    assert grid.save(tmp_path / "plain", force=True).name == "plain"


def write(path, text):
    path.write_text(text)
    return path
