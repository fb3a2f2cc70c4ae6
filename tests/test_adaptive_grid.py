"""AG, the adaptive grid (Qardaji et al., ICDE 2013): sizes, counts, inference, audit, inputs."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from dpgpu.audit import audit
from dpgpu.errors import InvalidParameter
from dpgpu.mechanisms.privtree.spatial import PointsOutside
from dpgpu.privacy.samplers import LAPLACE_TV_BOUND

# the module (the package exports its function under the same name, as for pst)
AG = importlib.import_module("dpgpu.mechanisms.privtree.adaptive_grid")
SP = importlib.import_module("dpgpu.mechanisms.privtree.spatial")
UNIT = [[0, 1], [0, 1]]


# ----------------------------------------------------------------- grid sizes
@pytest.mark.parametrize("n, epsilon, m1", [
    (3376, 0.1, 10),        # sqrt(33.76) = 5.8 -> 6, 6 / 4 -> 2, at least 10
    (1600, 1.0, 10),        # sqrt(160) = 12.6 -> 13 -> 4 -> 10
    (200_000, 1.6, 45),     # sqrt(32000) = 178.9 -> 179, 179 / 4 = 44.75 -> 45
    (1_000_000, 1.0, 80),   # sqrt(100000) = 316.2 -> 317 -> 80
    (10_000_000, 1.0, 250),  # sqrt(1e6) = 1000 exactly -> 250
    (10_000_000, 0.4, 159),  # sqrt(400000) = 632.5 -> 633 -> 158.25 -> 159
])
def test_level1_size_is_qardajis_formula(n, epsilon, m1):
    assert AG.level1_size(n, epsilon) == m1


def test_level2_sizes_are_qardajis_formula_with_the_public_cap():
    # epsilon 1: (1 - alpha) epsilon / c2 = 0.1, m2 = ceil(sqrt(0.1 N')), at least 1
    noisy = [-3, 0, 1, 10, 11, 250, 251, 10 ** 9]
    assert AG.level2_sizes(noisy, 1000, 1.0).tolist() == [1, 1, 1, 1, 2, 5, 6, 10]
    assert AG.level2_cap(1000, 1.0) == 10  # N' clipped to n = 1000: sqrt(100)
    # epsilon 2: 0.2 N'; 45 -> 3 exactly, 46 -> 4
    assert AG.level2_sizes([45, 46], 100, 2.0).tolist() == [3, 4]
    assert AG.level2_cap(100, 2.0) == 5  # sqrt(20) = 4.47 -> 5
    assert AG.level2_cap(3, 0.1) == 1


# ------------------------------------------------------- counts without noise
class FakeLaplace:
    """A stand-in sampler: ``(identity % 11) - 5``, or zero; records what it was asked."""

    zero = False
    calls: list = []

    def __init__(self, scale):
        self.scale, self.tv_per_draw = scale, LAPLACE_TV_BOUND

    def sample(self, key, identities, *, tag, backend=None):
        ids = np.asarray(identities)
        FakeLaplace.calls.append((ids.copy(), tag))
        return np.zeros_like(ids) if self.zero else ids % 11 - 5


@pytest.fixture
def fake_noise(monkeypatch):
    monkeypatch.setattr(AG, "DiscreteLaplace", FakeLaplace)
    FakeLaplace.calls = []
    return FakeLaplace


def skewed(n=6000, seed=3):
    """A tenth of the points uniform, the rest in a dense blob, so the level-2 sizes vary."""
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.random((n // 10, 2)), 0.3 + 0.05 * rng.random((n - n // 10, 2))])


def brute_counts(pts, lo, hi, domain_hi):
    """Points in each box ``[lo, hi)`` (``hi`` included on the domain's upper edge)."""
    p = pts[:, None, :]
    upper = (p < hi[None]) | ((hi[None] >= domain_hi) & (p <= hi[None]))
    return ((p >= lo[None]) & upper).all(axis=2).sum(axis=0)


def level1_of(g, m1):
    """The level-1 cell (row-major) of each leaf of a release over the unit square."""
    mid = (g.lo + g.hi) / 2
    ij = np.floor(mid * m1).astype(np.int64)
    return ij[:, 0] * m1 + ij[:, 1]


def test_without_noise_the_leaves_hold_the_exact_counts(fake_noise):
    fake_noise.zero = True
    try:
        pts = skewed()
        g = AG.adaptive_grid(pts, 1.0, n=len(pts), bounds=UNIT, seed=1)
    finally:
        fake_noise.zero = False
    m1, m2_max = g.report["parameters"]["m1"], g.report["parameters"]["m2_max"]
    assert m1 == AG.level1_size(6000, 1.0) == 10 and m2_max == AG.level2_cap(6000, 1.0) == 25
    exact = brute_counts(pts, g.lo, g.hi, 1.0)
    assert exact.sum() == len(pts)                       # the leaves tile the square
    np.testing.assert_allclose(g.counts, exact, atol=1e-9)
    # the layout: m2 of each cell from its (noiseless) level-1 count
    corner = np.stack(np.unravel_index(np.arange(m1 * m1), (m1, m1)), axis=1)
    cells = brute_counts(pts, corner / m1, (corner + 1) / m1, 1.0)
    m2 = AG.level2_sizes(cells, len(pts), 1.0)
    assert np.bincount(level1_of(g, m1), minlength=m1 * m1).tolist() == (m2 ** 2).tolist()
    assert m2.min() == 1 and m2.max() > 5                # some cells cut, some not
    # noise: one draw per level-1 cell, then one per leaf, every identity its own
    (ids1, tag1), (ids2, tag2) = fake_noise.calls
    assert ids1.tolist() == list(range(m1 * m1)) and tag1 == tag2 == 0
    assert ids2.shape == (len(g),) and np.unique(ids2).size == len(g)
    assert ids2.max() < m1 * m1 * m2_max ** 2


@pytest.mark.parametrize("grid", ["ag", "ug"])
def test_points_on_cell_edges_are_counted_in_the_box_that_holds_them(fake_noise, monkeypatch,
                                                                       grid):
    """Regression: a point on an edge went to the cell a division rounded it into, which could
    be the box beside the one whose released corners hold it."""
    monkeypatch.setattr(AG, "level2_sizes", lambda v, n, epsilon: np.full(len(v), 7))
    monkeypatch.setattr(SP, "DiscreteLaplace", FakeLaplace)
    fake_noise.zero = True
    bounds = np.array([[0.1, 0.73], [-0.3, 0.9]])  # widths no binary fraction divides evenly
    n = 5000
    m = AG.level1_size(n, 1.0) if grid == "ag" else round((n / 10) ** 0.5)
    steps = m * (7 if grid == "ag" else 1)
    edges = [lo + (np.arange(steps + 1) // (steps // m) + np.arange(steps + 1) % (steps // m)
                   / (steps // m)) * ((hi - lo) / m) for lo, hi in bounds]
    for e, (_, hi) in zip(edges, bounds):
        e[-1] = hi
    pts = np.stack(np.meshgrid(*edges, indexing="ij"), axis=-1).reshape(-1, 2)
    try:
        if grid == "ag":
            g = AG.adaptive_grid(pts, 1.0, n=n, bounds=bounds, seed=1)
        else:
            g = SP.uniform_grid(pts, 1.0, n=n, bounds=bounds, seed=1)
    finally:
        fake_noise.zero = False
    assert len(g) == steps ** 2
    exact = brute_counts(pts, g.lo, g.hi, bounds[:, 1])
    assert exact.sum() == len(pts)
    np.testing.assert_allclose(g.counts, exact, atol=1e-9)


def test_constrained_inference_on_a_toy_example():
    # cell 0: v = 10, m2 = 2, u = 1, 2, 3, 5 (S = 11): alpha^2 m2^2 = 1, (1 - alpha)^2 = 1/4,
    # v' = (10 + 11 / 4) / (5 / 4) = 10.2, each u - 0.2; cell 1: v = 7, m2 = 1, u = 4:
    # v' = (7 / 4 + 4 / 4) / (1 / 2) = 5.5.
    v_new, u_new = AG.constrained_inference([10, 7], [2, 1], [1, 2, 3, 5, 4])
    np.testing.assert_allclose(v_new, [10.2, 5.5])
    np.testing.assert_allclose(u_new, [0.8, 1.8, 2.8, 4.8, 5.5])
    assert u_new[:4].sum() == pytest.approx(10.2)


def test_the_release_is_the_inference_of_the_noisy_levels(fake_noise):
    # Known noise ((identity % 11) - 5): rebuild v, m2, u per cell by hand and compare.
    pts = skewed()
    g = AG.adaptive_grid(pts, 1.0, n=len(pts), bounds=UNIT, seed=1)
    m1, m2_max = g.report["parameters"]["m1"], g.report["parameters"]["m2_max"]
    owner = level1_of(g, m1)
    exact = brute_counts(pts, g.lo, g.hi, 1.0)
    for c in range(m1 * m1):
        i, j = divmod(c, m1)
        inside = (pts >= [i / m1, j / m1]) & ((pts < [(i + 1) / m1, (j + 1) / m1]) |
                                              (pts == 1.0))
        v = inside.all(axis=1).sum() + c % 11 - 5
        m2 = max(1, math.ceil(math.sqrt(min(max(v, 0), len(pts)) * 0.1)))
        leaves = np.flatnonzero(owner == c)
        assert leaves.size == m2 * m2
        u = exact[leaves] + (c * m2_max ** 2 + np.arange(m2 * m2)) % 11 - 5
        a2, b2 = 0.25 * m2 * m2, 0.25
        v_new = (a2 * v + b2 * u.sum()) / (a2 + b2)
        assert g.counts[leaves].sum() == pytest.approx(v_new)
        np.testing.assert_allclose(g.counts[leaves], u + (v_new - u.sum()) / (m2 * m2))


# ------------------------------------------------------------------ the audit
# One trial per level-1 cell, as UG's audit: every cell of the 317 x 317 level-1 grid holds
# ``n_points`` points at its centre (d1: one more than d0 in each), and a trial is the
# released total of one cell (the sum of its leaves, v').  Each cell's level-1 and level-2
# noise is keyed by its own identities and its m2 reads its own v only, so the cells are
# independent runs, each on a pair of point sets that differ by one point.  The public
# n = 10 * 1266**2 gives m1 = ceil(1266 / 4) = 317 at epsilon 1 (and m2_max = 1266, whose
# accounted sampling delta, about 4e-7, fits the allowance).
M1, AUDIT_N = 317, 10 * 1266 ** 2
THRESHOLDS = np.arange(-2, 9.5, 0.5)


def cell_totals(n_points, seed, trials, epsilon=1.0):
    centres = (np.stack(np.unravel_index(np.arange(M1 * M1), (M1, M1)), axis=1) + 0.5) / M1
    g = AG.adaptive_grid(np.repeat(centres, n_points, axis=0), epsilon, n=AUDIT_N,
                         bounds=UNIT, seed=seed)
    assert g.report["parameters"]["m1"] == M1 and g.report["delta"] < 1e-6
    return np.bincount(level1_of(g, M1), weights=g.counts, minlength=M1 * M1)[:trials]


def total_events(v):
    return np.stack([v >= t - 1e-9 for t in THRESHOLDS] + [v <= t + 1e-9 for t in THRESHOLDS],
                    axis=1)


def grid_audit():
    return audit(cell_totals, 2, 3, total_events, epsilon=1.0, trials=100_000, alpha=1e-4,
                 seed=9, batch=True)


def test_audit_trials_are_independent_noisy_totals():
    totals = cell_totals(2, 1, 40_000)
    noise = totals - 2
    assert abs(noise.mean()) < 0.05 and abs(np.corrcoef(noise[:-1], noise[1:])[0, 1]) < 0.03
    assert not np.array_equal(totals, cell_totals(2, 2, 40_000))


# At 100,000 trials the honest grid's bound is 0.69 to 0.71 (audit seeds 1 and 9).
def test_audit_passes_the_adaptive_grid():
    result = grid_audit()
    assert result.passed, result.summary()
    assert result.epsilon_lower_bound > 0.5, result.summary()  # the events see the loss


# No budget split: both levels noised at the whole epsilon (2 epsilon spent for a claim
# of 1).  The twin's bound is 1.51 to 1.55 at 100,000 trials (audit seeds 1 and 9).
def test_audit_rejects_an_adaptive_grid_without_the_budget_split(monkeypatch):
    scale = AG.laplace_scale
    monkeypatch.setattr(AG, "laplace_scale", lambda epsilon, sensitivity=1.0:
                        scale(2 * epsilon, sensitivity))
    result = grid_audit()
    assert not result.passed, result.summary()


# ----------------------------------------------------------- inputs and report
@pytest.fixture
def no_charge(monkeypatch):
    """Fail the test if a ledger is opened: validation must come before any charge."""
    def ledger(*args, **kwargs):
        raise AssertionError("a ledger was opened")
    monkeypatch.setattr(AG, "PrivacyLedger", ledger)


@pytest.mark.parametrize("epsilon", [float("nan"), float("inf"), -1.0, 0.0, "1"])
def test_bad_epsilon_is_refused_before_any_charge(no_charge, epsilon):
    with pytest.raises(InvalidParameter, match="epsilon"):
        AG.adaptive_grid(skewed(100), epsilon, n=100, bounds=UNIT)


@pytest.mark.parametrize("n", [0, -5, 1.5, float("nan")])
def test_bad_n_is_refused_before_any_charge(no_charge, n):
    with pytest.raises(InvalidParameter, match="n"):
        AG.adaptive_grid(skewed(100), 1.0, n=n, bounds=UNIT)


@pytest.mark.parametrize("d", [1, 3])
def test_other_dimensions_are_refused_naming_the_dimension(no_charge, d):
    with pytest.raises(InvalidParameter, match=rf"two-dimensional.*d = {d}"):
        AG.adaptive_grid(np.random.default_rng(0).random((50, d)), 1.0, n=50,
                         bounds=[[0, 1]] * d)


def test_points_outside_the_bounds_are_refused_before_any_charge(no_charge):
    pts = np.vstack([skewed(100), [[1.5, 0.5]]])
    with pytest.raises(PointsOutside, match="bounds"):
        AG.adaptive_grid(pts, 1.0, n=101, bounds=UNIT)
    with pytest.raises(InvalidParameter, match="points"):
        AG.adaptive_grid([[0.1, float("nan")]], 1.0, n=1, bounds=UNIT)


def test_unusable_sizes_are_refused_before_the_data_are_counted(monkeypatch):
    monkeypatch.setattr(AG, "to_numpy", lambda *a: pytest.fail("the data were counted"))
    with pytest.raises(InvalidParameter, match="epsilon"):     # sampling delta past 1e-6
        AG.adaptive_grid(skewed(100), 1.0, n=10 ** 9, bounds=UNIT)
    with pytest.raises(InvalidParameter, match="too large"):
        AG.adaptive_grid(skewed(100), 1.0, n=10 ** 400, bounds=UNIT)
    with pytest.raises(InvalidParameter, match=r"^bounds: too narrow for AG's finest grid at "
                       r"n=1000000, epsilon=1 \(25360 cells a side"):  # 80 x 317
        AG.adaptive_grid(np.full((10, 2), 1.0), 1.0, n=10 ** 6,
                         bounds=[[1.0, 1.0 + 1e-12], [0, 1]])


def test_report_and_outside_rules():
    pts = skewed(2000)
    g = AG.adaptive_grid(pts, 0.5, n=2000, bounds=UNIT, seed=4)
    r = g.report
    assert r["mechanism"] == "adaptive-grid" and r["private"] and r["seeded"]
    assert r["parameters"] == {"epsilon": 0.5, "n": 2000, "m1": 10, "alpha": 0.5, "c": 10.0,
                               "c2": 5.0, "m2_max": 10, "outside": "error"}  # sqrt(2000 * 0.05)
    assert r["epsilon"] == 0.5 and 0 < r["delta"] < 1e-9 and r["leaves"] == len(g)
    assert [s["epsilon"] for s in r["ledger"]["steps"]] == [0.25, 0.25]
    assert r["count_noise"]["level2"]["scale"] == 4.0
    again = AG.adaptive_grid(pts, 0.5, n=2000, bounds=UNIT, seed=4)
    assert np.array_equal(g.counts, again.counts) and np.array_equal(g.lo, again.lo)
    assert g.range_count([0, 0], [1, 1])[0] == pytest.approx(g.counts.sum())
    # without bounds: the data's box, flagged not private
    loose = AG.adaptive_grid(pts, 0.5, n=2000, seed=4)
    assert loose.report["private"] is False and loose.report["epsilon"] == math.inf
    # clip and drop act as in UG
    out = np.vstack([pts, [[2.0, 0.5]]])
    clipped = AG.adaptive_grid(out, 0.5, n=2001, bounds=UNIT, seed=4, outside="clip")
    assert clipped.report["parameters"]["outside"] == "clip"
    dropped = AG.adaptive_grid(out, 0.5, n=2000, bounds=UNIT, seed=4, outside="drop")
    assert np.array_equal(dropped.counts, g.counts)


def test_exported_beside_uniform_grid():
    from dpgpu.mechanisms import privtree
    assert privtree.adaptive_grid is AG.adaptive_grid and "adaptive_grid" in privtree.__all__
