"""Utility metrics (dpgpu.eval.metrics) against values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from dpgpu.errors import InvalidParameter
from dpgpu.eval import metrics as M


def test_sanity_bound_is_a_tenth_of_a_percent():
    assert M.sanity_bound(989_818) == pytest.approx(989.818)
    assert M.sanity_bound(4) == pytest.approx(0.004)


def test_relative_errors_with_sanity_bound():
    # |10-8|/max(8,5) = 0.25; |0-1|/max(1,5) = 0.2; |500-1000|/1000 = 0.5
    err = M.relative_errors([10, 0, 500], [8, 1, 1000], 5)
    assert err == pytest.approx([0.25, 0.2, 0.5])
    with pytest.raises(InvalidParameter):
        M.relative_errors([1], [1], float("nan"))
    with pytest.raises(InvalidParameter):
        M.relative_errors([1, 2], [1], 1)


def test_summarize():
    s = M.summarize([0.0, 1.0, 2.0, 5.0])
    assert s["mean"] == 2.0 and s["median"] == 1.5 and s["max"] == 5.0 and s["n"] == 4
    assert M.summarize([])["n"] == 0


def test_random_count_queries_protocol():
    qs = M.random_count_queries(17, 8, 10_000, seed=3)
    sizes = np.array([q.size for q in qs])
    items = np.concatenate(qs)
    assert len(qs) == 10_000 and sizes.min() == 1 and sizes.max() == 8
    assert items.min() == 0 and items.max() == 16 and items.dtype == np.int32
    # sizes uniform on 1..8: 1250 each; items uniform on 17 ids
    assert np.all(np.abs(np.bincount(sizes)[1:] - 1250) < 200)
    freq = np.bincount(items, minlength=17) / items.size
    assert np.all(np.abs(freq - 1 / 17) < 0.01)
    again = M.random_count_queries(17, 8, 10_000, seed=3)
    assert all(np.array_equal(a, b) for a, b in zip(qs, again))


def test_true_positive_ratio():
    true = ["a b", "a c", "b a"]
    released = ["a b", "b a", "c c"]
    assert M.true_positive_ratio(true, released, 3) == pytest.approx(2 / 3)
    assert M.topk_precision(true, true) == 1.0
    assert M.true_positive_ratio(true, [], 3) == 0.0


def test_utility_loss():
    # (|10-8|/10 + |4-0|/4) / 2 = (0.2 + 1) / 2
    assert M.utility_loss({"x": 10, "y": 4}, {"x": 8, "z": 3}) == pytest.approx(0.6)
    assert M.utility_loss({"x": 10}, {"x": 10}) == 0.0
    assert M.utility_loss({"x": 10, "y": 4}, {"z": 1}) == 1.0


def test_precision_recall_fscore():
    # T = {1,2,3,4}, R = {3,4,5}: p = 2/3, r = 1/2, F = 2 pr / (p + r) = 4/7
    p, r, f = M.precision_recall_fscore({1, 2, 3, 4}, {3, 4, 5})
    assert (p, r, f) == pytest.approx((2 / 3, 1 / 2, 4 / 7))
    assert M.precision_recall_fscore({1}, set()) == (1.0, 0.0, 0.0)
    assert M.precision_recall_fscore(set(), {1}) == (0.0, 1.0, 0.0)
    assert M.precision_recall_fscore([(1, 2)], [(1, 2)]) == (1.0, 1.0, 1.0)
    # nothing to compare: undefined (n/a), as an empty top-K, not a perfect score
    assert M.precision_recall_fscore(set(), set()) == (None, None, None)
    assert M.precision_recall_fscore([], iter(())) == (None, None, None)
    assert M.true_positive_ratio([], []) is None  # the convention it follows


def test_support_relative_errors():
    # x: 10/100, y: 5/50, z: occurs nowhere -> |3-0|/1
    err = M.support_relative_errors({"x": 110, "y": 45, "z": 3}, {"x": 100, "y": 50, "z": 0})
    assert err == pytest.approx([0.1, 0.1, 3.0])
    assert M.summarize(err)["median"] == pytest.approx(0.1)


def test_total_variation_distance():
    # P = [0, .5, .5, 0], Q = [0, .25, .5, .25] -> 0.5 * (.25 + 0 + .25)
    assert M.total_variation_distance([0, 2, 2], [0, 1, 2, 1]) == pytest.approx(0.25)
    assert M.total_variation_distance([1, 0], [0, 3]) == pytest.approx(1.0)
    assert M.total_variation_distance([5], [1]) == 0.0
    with pytest.raises(InvalidParameter):
        M.total_variation_distance([0, 0], [1])


def test_kanonymity_coverage_and_spurious_fraction():
    holders = {"g1": 150, "g2": 100, "g3": 99, "g4": 5}
    released = {"g1", "g3", "g4", "gX"}
    assert M.kanonymity_coverage(released, holders, 100) == pytest.approx(0.5)   # g1 of g1, g2
    assert M.kanonymity_coverage(released, holders, 5) == pytest.approx(0.75)    # 3 of 4
    assert M.kanonymity_coverage(released, holders, 1000) is None                # nothing to cover
    assert M.spurious_fraction(released, holders) == pytest.approx(0.25)         # gX
    assert M.spurious_fraction(set(), holders) == 0.0


def test_histogram_range_estimates_uniformity():
    leaves = [(0, 0, 2, 2), (2, 0, 4, 2)]
    # query (1,0)-(3,1) covers a quarter of each leaf: 8/4 + 4/4
    est = M.histogram_range_estimates(leaves, [8, 4], [(1, 0, 3, 1), (0, 0, 4, 2), (5, 5, 6, 6)])
    assert est == pytest.approx([3.0, 12.0, 0.0])


def test_range_relative_errors():
    # Delta = 0.1 % of 1000 points = 1: |3-2|/2, |1-0|/1
    assert M.range_relative_errors([3, 1], [2, 0], 1000) == pytest.approx([0.5, 1.0])


@pytest.mark.parametrize("size", ["small", "medium", "large"])
def test_random_range_queries_cover_the_asked_fraction(size):
    domain = (-10.0, 20.0, 30.0, 25.0)
    boxes = M.random_range_queries(domain, 2000, size, seed=1)
    lo, hi = M.RANGE_SETS[size]
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1]) / (40.0 * 5.0)
    assert boxes.shape == (2000, 4)
    assert np.all(area >= lo * (1 - 1e-9)) and np.all(area < hi * (1 + 1e-9))
    assert np.all(boxes[:, 0] >= -10) and np.all(boxes[:, 2] <= 30 + 1e-9)
    assert np.all(boxes[:, 1] >= 20) and np.all(boxes[:, 3] <= 25 + 1e-9)
    with pytest.raises(InvalidParameter):
        M.random_range_queries(domain, 10, "huge")
