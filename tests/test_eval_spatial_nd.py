"""Range-count evaluation in d >= 1 dimensions: exact counts, query sets, estimates, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpgpu.cli import main
from dpgpu.errors import InvalidParameter
from dpgpu.eval import metrics as M
from dpgpu.eval import truth as T
from dpgpu.eval.evaluate import evaluate_spatial_release, range_workload
from dpgpu.mechanisms.privtree import privtree_spatial
from dpgpu.mechanisms.privtree.spatial import SpatialHistogram
from test_eval_spatial import make_release, write_points

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def brute_counts(points, boxes, d):
    """Points in each half-open box, one point and one box at a time."""
    out = []
    for box in boxes:
        lo, hi = box[:d], box[d:]
        out.append(sum(all(lo[j] <= p[j] < hi[j] for j in range(d)) for p in points))
    return out


# ------------------------------------------------------------------ exact counts
@st.composite
def points_and_boxes(draw):
    d = draw(st.integers(1, 3))
    coord = st.integers(0, 5)
    points = draw(st.lists(st.tuples(*[coord] * d), max_size=25))
    boxes = draw(st.lists(st.tuples(*[st.integers(0, 6)] * (2 * d)), min_size=1, max_size=8))
    return d, points, boxes


@SETTINGS
@given(points_and_boxes())
def test_range_counts_brute_force(data):
    d, points, boxes = data  # integer coordinates: many points on box sides
    pts = np.array(points, dtype=float).reshape(-1, d)
    assert T.range_counts(pts, boxes).tolist() == brute_counts(points, boxes, d)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_range_counts_random_against_brute_force(d):
    rng = np.random.default_rng(d)
    pts = np.round(rng.random((300, d)), 1)                  # ties on a 0.1 grid
    boxes = M.random_range_queries([[0, 1]] * d, 60, (0.01, 0.6), seed=d)
    boxes = np.vstack([boxes, np.round(boxes, 1)])           # sides on the grid too
    assert T.range_counts(pts, boxes).tolist() == brute_counts(pts.tolist(), boxes.tolist(), d)


def test_range_counts_by_hand_1d_and_3d():
    # 1-D: points 0.5, 1, 1, 2.5; [1, 2) holds the two 1s, [0, 1) only 0.5, [2.5, 2.5) is empty
    assert T.range_counts([0.5, 1.0, 1.0, 2.5], [(1, 2), (0, 1), (2.5, 2.5), (0, 3)]
                          ).tolist() == [2, 1, 0, 4]
    # 3-D unit cube corners (0/1 coordinates) and the centre
    pts = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1), (0.5, 0.5, 0.5)]
    boxes = [(0, 0, 0, 1, 1, 1),         # [0,1)^3: (0,0,0) and the centre
             (0, 0, 0, 2, 2, 2),         # everything
             (0, 0, 0, 2, 0.5, 0.5),     # y, z < 0.5: (0,0,0), (1,0,0)
             (0.5, 0.5, 0.5, 1.5, 1.5, 1.5),  # (1,1,1) and the centre
             (1, 1, 1, 0, 0, 0)]         # inverted: empty
    assert T.range_counts(pts, boxes).tolist() == [2, 6, 2, 2, 0]


def test_range_counts_bad_shapes():
    with pytest.raises(InvalidParameter, match="2 d = 6"):
        T.range_counts(np.zeros((4, 3)), [(0, 0, 1, 1)])
    assert T.range_counts(np.zeros((0, 3)), [(0,) * 6]).tolist() == [0]
    assert T.range_counts(np.zeros((4, 3)), np.zeros((0, 6))).tolist() == []


# -------------------------------------------------------------------- query sets
@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("size", ["small", "medium", "large", (0.3, 0.9)])
def test_random_range_queries_cover_the_volume_fraction(d, size):
    bounds = np.array([[-10.0, 30.0], [20.0, 25.0], [0.0, 1e-3]])[:d]
    boxes = M.random_range_queries(bounds, 3000, size, seed=1)
    lo, hi = M.RANGE_SETS[size] if isinstance(size, str) else size
    rel = (boxes[:, d:] - boxes[:, :d]) / (bounds[:, 1] - bounds[:, 0])
    vol = rel.prod(axis=1)
    assert boxes.shape == (3000, 2 * d)
    assert np.all(vol >= lo * (1 - 1e-9)) and np.all(vol < hi * (1 + 1e-9))
    assert np.all(boxes[:, :d] >= bounds[:, 0]) and np.all(boxes[:, d:] <= bounds[:, 1] + 1e-9)
    assert np.all(rel.max(axis=1) / rel.min(axis=1) <= 4.0 * (1 + 1e-9))  # max_aspect
    # log-uniform volumes: about half the boxes below the geometric middle of [lo, hi)
    assert abs(np.mean(vol < np.sqrt(lo * hi)) - 0.5) < 0.05


def test_random_range_queries_shapes():
    # 2-D: the aspect ratio w / h (domain-relative) is log-uniform on [1/4, 4]
    q = M.random_range_queries([[0, 1], [0, 1]], 20000, "small", seed=3)
    log_r = np.log((q[:, 2] - q[:, 0]) / (q[:, 3] - q[:, 1]))
    assert np.all(np.abs(log_r) <= np.log(4) * (1 + 1e-9))
    hist, _ = np.histogram(log_r, bins=4, range=(-np.log(4), np.log(4)))
    assert np.all(np.abs(hist / 20000 - 0.25) < 0.02)
    # 3-D: no dimension is favoured; every pairwise ratio within [1/4, 4]
    q = M.random_range_queries([[0, 1]] * 3, 20000, "small", seed=3)
    log_side = np.log(q[:, 3:] - q[:, :3])
    assert np.allclose(log_side.mean(axis=0), log_side.mean(), atol=0.02)
    assert np.all(np.ptp(log_side, axis=1) <= np.log(4) * (1 + 1e-9))


def test_random_range_queries_layouts_and_cubes():
    flat = M.random_range_queries((0, 0, 0, 2, 3, 4), 50, "medium", seed=5)
    rows = M.random_range_queries([[0, 2], [0, 3], [0, 4]], 50, "medium", seed=5)
    assert np.array_equal(flat, rows)
    cubes = M.random_range_queries([[0, 1]] * 3, 50, "large", seed=5, max_aspect=1)
    side = cubes[:, 3:] - cubes[:, :3]
    assert np.allclose(side, side[:, :1]) and np.allclose(side[:, 0] ** 3, side.prod(axis=1))
    for bad in ([[0, 1], [1, 1]], [[0, np.inf]], [], [0, 1, 2]):
        with pytest.raises(InvalidParameter, match="domain"):
            M.random_range_queries(bad, 5)


# --------------------------------------------------------------------- estimates
def test_histogram_range_estimates_by_hand_1d_and_3d():
    # 1-D leaves [0, 2) count 8 and [2, 4) count 4; query [1, 3) takes half of each
    est = M.histogram_range_estimates([(0, 2), (2, 4)], [8, 4], [(1, 3), (0, 4), (5, 6)])
    assert est == pytest.approx([6.0, 12.0, 0.0])
    # 3-D: leaf [0,2)^3 count 16, leaf [2,4)x[0,2)x[0,2) count 8
    leaves = [(0, 0, 0, 2, 2, 2), (2, 0, 0, 4, 2, 2)]
    queries = [(1, 0, 0, 3, 1, 1),   # 1/8 of each leaf's volume: 16/8 + 8/8 = 3
               (0, 0, 0, 4, 2, 2),   # both leaves whole: 24
               (1, 1, 1, 2, 2, 2)]   # 1/8 of the first: 2
    assert M.histogram_range_estimates(leaves, [16, 8], queries) == pytest.approx([3, 24, 2])


def test_histogram_range_estimates_match_the_release_estimator():
    rng = np.random.default_rng(3)
    lo = rng.random((40, 3))
    hi = lo + rng.random((40, 3)) * 0.5 + 1e-3
    counts = rng.integers(0, 50, 40)
    q = M.random_range_queries([[0, 1.5]] * 3, 200, "large", seed=2)
    got = M.histogram_range_estimates(np.hstack([lo, hi]), counts, q)
    assert got == pytest.approx(SpatialHistogram(lo, hi, counts).range_count(q[:, :3], q[:, 3:]))


# ------------------------------------------------------------------- evaluation
def test_3d_relative_errors_by_hand(tmp_path):
    # domain [0, 2]^3 split at x = 1: left leaf count 5, right leaf count 2
    leaves = ("lo_x,hi_x,lo_y,hi_y,lo_z,hi_z,count\n"
              "0,1,0,2,0,2,5\n1,2,0,2,0,2,2\n")
    rel = make_release(tmp_path, leaves=leaves, columns="xyz", bounds=[(0, 2)] * 3)
    pts = [(0.5, 0.5, 0.5), (0.5, 1.5, 0.5), (0.2, 0.2, 1.5), (1.5, 1.5, 1.5),
           (3.0, 0.5, 0.5)]  # the last is clipped onto x = 2: outside every half-open box
    data = write_points(tmp_path / "p.csv", pts, names="xyz")
    # sanity bound 0.1 % of 5 = 0.005
    #  [0,1)x[0,1)x[0,1): est 5 * 1/4 = 1.25, true 1 -> RE 0.25
    #  [0,2)^3:           est 7,              true 4 -> RE 0.75
    #  [1,2)x[1,2)x[1,2): est 2 * 1/4 = 0.5,  true 1 -> RE 0.5
    workload = {"q": [(0, 0, 0, 1, 1, 1), (0, 0, 0, 2, 2, 2), (1, 1, 1, 2, 2, 2)]}
    r = evaluate_spatial_release(data, rel, workload=workload)
    t = r["tasks"]["range-queries"]
    assert (t["dimensions"], t["outside_domain"], t["points"]) == (3, 1, 5)
    assert t["by_set"]["q"]["mean"] == pytest.approx((0.25 + 0.75 + 0.5) / 3)
    assert t["by_set"]["q"]["median"] == pytest.approx(0.5)
    with pytest.raises(InvalidParameter, match="2 d = 6"):
        evaluate_spatial_release(data, rel, workload={"q": [(0, 0, 1, 1)]})


@pytest.mark.parametrize("d", [1, 3])
def test_end_to_end_privtree_release_cli(tmp_path, capsys, d):
    rng = np.random.default_rng(d)
    pts = np.clip(np.concatenate([rng.normal(0.3, 0.05, (3000, d)), rng.random((1000, d))]),
                  0.0, 0.999)
    names = [f"c{j}" for j in range(d)]
    release = privtree_spatial(pts, 1.0, bounds=[[0, 1]] * d, columns=names, seed=5)
    rel = release.save(tmp_path / "rel")
    data = write_points(tmp_path / "pts.csv", pts.tolist(), names=names)
    status = main(["evaluate", "--original", str(data), "--release", str(rel),
                   "--queries", "200", "--seed", "4"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert f"({d}-D;" in out and "volume fraction" in out
    by_set = json.loads((rel / "evaluation.json").read_text())["tasks"]["range-queries"]["by_set"]
    assert list(by_set) == ["small", "medium", "large"]
    for name, boxes in range_workload([[0, 1]] * d, 200, 4).items():
        assert boxes.shape == (200, 2 * d)
        true = np.array(brute_counts(pts.tolist(), boxes.tolist(), d))
        est = release.range_count(boxes[:, :d], boxes[:, d:])
        err = np.abs(est - true) / np.maximum(true, 0.001 * len(pts))
        assert by_set[name]["mean"] == pytest.approx(err.mean())
        assert by_set[name]["nonzero_true"] == int(np.count_nonzero(true))
    assert by_set["large"]["mean"] < 0.5


def test_histogram_range_estimates_keep_narrow_leaves_and_refuse_empty_ones():
    # Regression: widths were floored at 1e-300, so a leaf narrower than that (a valid
    # domain [0, 1e-300] halved 64 times) lost its count.
    leaves = [(0.0, 5e-320), (5e-320, 1e-300)]
    assert M.histogram_range_estimates(leaves, [70, 30], [(0.0, 1e-300)]) == \
        pytest.approx([100.0])
    assert SpatialHistogram([[0.0], [5e-320]], [[5e-320], [1e-300]], [70, 30]) \
        .range_count([0.0], [1e-300]) == pytest.approx([100.0])
    for bad in ([(0.0, 1.0), (1.0, 1.0)], [(0.0, 1.0), (-1.7e308, 1.7e308)]):
        with pytest.raises(InvalidParameter, match="leaf_boxes: box 1"):
            M.histogram_range_estimates(bad, [1, 2], [(0.0, 1.0)])
        with pytest.raises(InvalidParameter, match="lo, hi"):
            SpatialHistogram(np.array(bad)[:, :1], np.array(bad)[:, 1:], [1, 2])
