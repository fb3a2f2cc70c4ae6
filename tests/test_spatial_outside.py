"""Points outside the public bounds of a spatial release: an error by default, dropped or
clipped only when asked (``outside=`` / ``--outside``), checked before any budget is spent.

Regression: ``--bounds -90,90,-180,180`` for ``--columns longitude,latitude`` (swapped)
clipped 1990 of 3376 airports onto the domain's edge with exit 0 and no warning, and
``--bounds 0,1,0,1`` moved every point onto a corner.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from dpgpu import InputError, InvalidParameter
from dpgpu.cli import main
from dpgpu.mechanisms.privtree import privtree_spatial, uniform_grid
from dpgpu.mechanisms.privtree import spatial

BOUNDS = [[0.0, 1.0], [0.0, 1.0]]
#: 400 points inside [0, 1]^2 and, from index 3 on, every 50th moved outside (8 points).
RNG = np.random.default_rng(11)
INSIDE = np.concatenate([RNG.normal(0.3, 0.05, (300, 2)).clip(0, 1), RNG.random((100, 2))])
MIXED = INSIDE.copy()
MIXED[3::50, 0] += 2.0  # x in [2, 3]: outside in column x only
OUT = np.zeros(len(MIXED), dtype=bool)
OUT[3::50] = True


def leaves(release):
    return release.leaves.lo, release.leaves.hi, release.leaves.counts


def assert_same_release(a, b):
    for x, y in zip(leaves(a), leaves(b)):
        np.testing.assert_array_equal(x, y)
    assert a.nodes == b.nodes and a.report["tree"] == b.report["tree"]


def write_csv(path, points, names=("lon", "lat")):
    path.write_text(",".join(("id", *names)) + "\n" + "".join(
        f"p{i},{','.join(repr(float(v)) for v in p)}\n" for i, p in enumerate(points)))
    return path


def cli(capsys, *argv):
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


# ------------------------------------------------------------------------ Python API
def test_points_outside_are_an_error_naming_bounds():
    with pytest.raises(InputError, match=r"^bounds: 8 of 400 points lie outside them; the "
                       r"first, points\[3\], is outside \[0, 1\] in column 'lon'") as info:
        privtree_spatial(MIXED, 1.0, bounds=BOUNDS, columns=["lon", "lat"], seed=1)
    message = str(info.value)
    assert "outside='drop'" in message and "outside='clip'" in message
    assert "\n" not in message and "2.3" not in message  # no coordinate of the point
    assert isinstance(info.value, spatial.PointsOutside)
    assert (info.value.first, info.value.column, info.value.count) == (3, 0, 8)
    with pytest.raises(InputError, match=r"^bounds: 8 of 400 points .* column 'x0'"):
        uniform_grid(MIXED, 1.0, n=400, bounds=BOUNDS, seed=1)
    # below lo too, and in the second column
    with pytest.raises(InputError, match=r"points\[1\], is outside \[0, 1\] in column 'x1'"):
        privtree_spatial([[0.5, 0.5], [0.5, -1e-9]], 1.0, bounds=BOUNDS)


def test_the_error_comes_before_any_budget_is_charged(monkeypatch):
    charged = []
    real = spatial.PrivacyLedger.charge
    monkeypatch.setattr(spatial.PrivacyLedger, "charge",
                        lambda self, *a, **k: charged.append(a) or real(self, *a, **k))
    for run in (lambda: privtree_spatial(MIXED, 1.0, bounds=BOUNDS, seed=1),
                lambda: uniform_grid(MIXED, 1.0, n=400, bounds=BOUNDS, seed=1)):
        with pytest.raises(InputError, match="^bounds: "):
            run()
    assert charged == []
    privtree_spatial(INSIDE, 1.0, bounds=BOUNDS, seed=1)
    assert len(charged) == 2  # the stand-in does see the charges of a run that goes on


def test_points_on_the_boundary_are_inside():
    corners = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [0.5, 0], [1, 0.5], [0.0, 0.25]])
    pts = np.concatenate([INSIDE, np.repeat(corners, 20, axis=0)])
    default = privtree_spatial(pts, 1.0, bounds=BOUNDS, seed=3)
    assert_same_release(default, privtree_spatial(pts, 1.0, bounds=BOUNDS, seed=3,
                                                  outside="clip"))
    assert_same_release(default, privtree_spatial(pts, 1.0, bounds=BOUNDS, seed=3,
                                                  outside="drop"))
    assert abs(default.leaves.counts.sum() - len(pts)) < 150
    uniform_grid(pts, 1.0, n=len(pts), bounds=BOUNDS, seed=3)  # no error either
    # -0.0 is on the edge 0.0
    privtree_spatial([[-0.0, 1.0]], 1.0, bounds=BOUNDS, seed=3)


def test_clip_reproduces_the_old_release_exactly():
    clipped = np.clip(MIXED, 0.0, 1.0)
    old = privtree_spatial(clipped, 1.0, bounds=BOUNDS, seed=5)  # nothing outside: no option
    new = privtree_spatial(MIXED, 1.0, bounds=BOUNDS, seed=5, outside="clip")
    assert_same_release(new, old)
    ug_old = uniform_grid(clipped, 1.0, n=400, bounds=BOUNDS, seed=5)
    ug_new = uniform_grid(MIXED, 1.0, n=400, bounds=BOUNDS, seed=5, outside="clip")
    np.testing.assert_array_equal(ug_new.counts, ug_old.counts)
    np.testing.assert_array_equal(ug_new.lo, ug_old.lo)


def test_drop_is_a_release_of_the_points_inside():
    kept = MIXED[~OUT]
    assert len(kept) == 392
    old = privtree_spatial(kept, 1.0, bounds=BOUNDS, seed=6)
    new = privtree_spatial(MIXED, 1.0, bounds=BOUNDS, seed=6, outside="drop")
    assert_same_release(new, old)
    ug_old = uniform_grid(kept, 1.0, n=400, bounds=BOUNDS, seed=6)
    ug_new = uniform_grid(MIXED, 1.0, n=400, bounds=BOUNDS, seed=6, outside="drop")
    np.testing.assert_array_equal(ug_new.counts, ug_old.counts)
    # every point outside: an empty input, still a release of the domain
    empty = privtree_spatial(MIXED + 5, 1.0, bounds=BOUNDS, seed=6, outside="drop")
    assert_same_release(empty, privtree_spatial(np.zeros((0, 2)), 1.0, bounds=BOUNDS, seed=6))


@pytest.mark.parametrize("outside, same_as", [("clip", np.clip(MIXED, 0, 1)),
                                               ("drop", MIXED[~OUT])])
def test_the_report_holds_no_count_of_points_outside(tmp_path, caplog, outside, same_as):
    """Its report.json is that of a release of the clipped (kept) points: only the public
    choice ``outside`` is recorded; the warning gives no count either."""
    with caplog.at_level("WARNING", logger="dpgpu"):
        rel = privtree_spatial(MIXED, 1.0, bounds=BOUNDS, seed=7, outside=outside)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and f"outside='{outside}'" in warnings[0]
    assert not re.search(r"\d", warnings[0])
    caplog.clear()
    with caplog.at_level("WARNING", logger="dpgpu"):
        ref = privtree_spatial(same_as, 1.0, bounds=BOUNDS, seed=7, outside=outside)
    assert not caplog.records  # nothing outside: no warning
    assert rel.report["parameters"]["outside"] == outside
    a = json.loads((rel.save(tmp_path / "a") / "report.json").read_text())
    b = json.loads((ref.save(tmp_path / "b") / "report.json").read_text())
    assert "timings" not in a and a == b
    for name in ("leaves.csv", "tree.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_non_finite_points_are_still_refused():
    for outside in spatial.OUTSIDE:
        for bad in (np.nan, np.inf, -np.inf):
            with pytest.raises(InvalidParameter, match="^points: expected a finite"):
                privtree_spatial([[0.5, 0.5], [bad, 0.5]], 1.0, bounds=BOUNDS,
                                 outside=outside)


def test_bounds_from_the_data_have_no_points_outside():
    pts = MIXED * [[1e3, -2.0]]
    rel = privtree_spatial(pts, 1.0, seed=2)  # outside="error": nothing is outside the box
    assert rel.report["private"] is False and rel.report["parameters"]["outside"] == "error"
    assert abs(rel.leaves.counts.sum() - len(pts)) < 150
    flat = privtree_spatial(np.full((50, 1), 3.0), 1.0, seed=2)  # a flat dimension
    assert flat.report["private"] is False


def test_a_bad_outside_choice_is_named():
    for bad in ("ignore", None, "", "Clip"):
        with pytest.raises(InvalidParameter, match="^outside: must be one of error, drop, "
                           "clip"):
            privtree_spatial(INSIDE, 1.0, bounds=BOUNDS, outside=bad)
        with pytest.raises(InvalidParameter, match="^outside: "):
            uniform_grid(INSIDE, 1.0, n=400, bounds=BOUNDS, outside=bad)


# ------------------------------------------------------------------------ command line
def test_cli_swapped_bounds_are_an_error_before_anything_is_written(tmp_path, capsys):
    # longitude in [-180, 180], latitude in [-60, 70]: bounds given latitude-first
    rng = np.random.default_rng(3)
    airports = np.column_stack([rng.uniform(-180, 180, 300), rng.uniform(-60, 70, 300)])
    airports[:2] = [[10.0, 50.0], [45.5, -12.0]]  # inside the swapped bounds too
    airports[2] = [-120.0, 35.0]  # the first outside: line 4 (the header is line 1)
    data = write_csv(tmp_path / "airports.csv", airports, names=("longitude", "latitude"))
    outside = int(np.count_nonzero(np.abs(airports[:, 0]) > 90))
    out = tmp_path / "swp"
    status, stdout, err = cli(capsys, "privtree-spatial", data, "--epsilon", 1, "--columns",
                              "longitude,latitude", "--bounds", "-90,90,-180,180", "--out", out)
    assert status == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"{data}, line 4, column 'longitude': the point lies outside --bounds (-90 to 90 " \
           f"for 'longitude'; {outside} of the 300 points lie outside)" in err
    assert "fix --bounds (lo,hi for each of --columns, in order: longitude,latitude)" in err
    assert "--outside drop" in err and "--outside clip" in err
    assert "-120.0" not in err and "35.0" not in err  # the line, not the point
    assert not out.exists()  # no budget spent, nothing written
    # every point onto a corner, before: refused as well
    status, _, err = cli(capsys, "privtree-spatial", data, "--epsilon", 1, "--columns",
                         "longitude,latitude", "--bounds", "0,1,0,1", "--out", out)
    assert status == 2 and "line 2, column 'longitude'" in err and not out.exists()


def test_cli_lines_count_blank_and_quoted_lines(tmp_path, capsys):
    data = tmp_path / "p.csv"
    data.write_text('x;y;note\n\n0.5;0.5;"two\nlines"\n\n0.25;1;a\n0.5;1.5;b\n')
    status, _, err = cli(capsys, "privtree-spatial", data, "--epsilon", 1, "--columns", "x,y",
                         "--bounds", "0,1,0,1", "--out", tmp_path / "r")
    assert status == 2 and f"{data}, line 7, column 'y':" in err
    assert "(0 to 1 for 'y'; 1 of the 3 points lie outside)" in err
    assert not (tmp_path / "r").exists()


def test_cli_parquet_errors_name_the_row(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"x": [0.1, 0.2, 0.3, 7.0], "y": [0.5, 1.0, 0.0, 0.5]}), path)
    status, _, err = cli(capsys, "privtree-spatial", path, "--epsilon", 1, "--columns", "x,y",
                         "--bounds", "0,1,0,1", "--out", tmp_path / "r")
    assert status == 2 and f"{path}, row 4, column 'x': the point lies outside" in err


@pytest.mark.parametrize("outside", ["clip", "drop"])
def test_cli_clip_and_drop_match_a_release_of_the_prepared_points(tmp_path, capsys, outside):
    data = write_csv(tmp_path / "mixed.csv", MIXED)
    prepared = write_csv(tmp_path / "prepared.csv",
                         np.clip(MIXED, 0, 1) if outside == "clip" else MIXED[~OUT])
    common = ["--epsilon", 1, "--columns", "lon,lat", "--bounds", "0,1,0,1", "--seed", 9,
              "--outside", outside, "-q"]
    assert cli(capsys, "privtree-spatial", data, *common, "--out", tmp_path / "a")[0] == 0
    assert cli(capsys, "privtree-spatial", prepared, *common, "--out", tmp_path / "b")[0] == 0
    for name in ("report.json", "leaves.csv", "tree.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["parameters"]["outside"] == outside and report["private"] is True
    # the API on the same points with the same seed gives the same leaves
    api = privtree_spatial(MIXED, 1.0, bounds=BOUNDS, columns=["lon", "lat"], seed=9,
                           outside=outside)
    api.save(tmp_path / "c")
    assert (tmp_path / "c" / "leaves.csv").read_bytes() == \
        (tmp_path / "a" / "leaves.csv").read_bytes()


def test_cli_outside_from_a_config_file_and_bad_choices(tmp_path, capsys):
    data = write_csv(tmp_path / "mixed.csv", MIXED)
    config = tmp_path / "run.toml"
    config.write_text('outside = "drop"\nbounds = [0, 1, 0, 1]\n')
    assert cli(capsys, "privtree-spatial", data, "--epsilon", 1, "--columns", "lon,lat",
               "--config", config, "-q", "--out", tmp_path / "a")[0] == 0
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    assert report["parameters"]["outside"] == "drop"
    status, _, err = cli(capsys, "privtree-spatial", data, "--epsilon", 1, "--columns",
                         "lon,lat", "--bounds", "0,1,0,1", "--outside", "ignore", "--out",
                         tmp_path / "b")
    assert status == 2 and "--outside" in err and not (tmp_path / "b").exists()


def test_cli_without_bounds_and_with_non_finite_points(tmp_path, capsys):
    data = write_csv(tmp_path / "mixed.csv", MIXED * 100)
    status, out, err = cli(capsys, "privtree-spatial", data, "--epsilon", 1, "--columns",
                           "lon,lat", "--out", tmp_path / "a")
    assert status == 0 and "NOT private" in out and "outside" not in err
    bad = tmp_path / "bad.csv"
    bad.write_text("x,y\n0.5,0.5\n9,nan\n")
    for outside in spatial.OUTSIDE:
        status, _, err = cli(capsys, "privtree-spatial", bad, "--epsilon", 1, "--columns",
                             "x,y", "--bounds", "0,1,0,1", "--outside", outside, "--out",
                             tmp_path / "b")
        assert status == 2 and "line 3, column 'y': 'nan' is not a finite number" in err
        assert not (tmp_path / "b").exists()
