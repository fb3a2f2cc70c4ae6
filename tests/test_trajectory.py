"""The trajectory format: CSV points read as sequences of the cells of a public grid."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys

import numpy as np
import pytest

import dpgpu
from dpgpu import SequenceDB
from dpgpu.data import writers
from dpgpu.data.sequencedb import synthetic_like
from dpgpu.data.trajectory import Grid
from dpgpu.errors import InputError, InvalidParameter

BOUNDS = (-2.0, 3.0, 10.0, 12.0)


def reference(text, grid, bounds, *, case, x, y, time=None, outside="error", repeats="collapse"):
    """Sequences of cell labels, by a plain csv loop and Python float arithmetic."""
    nx, ny = grid
    xmin, xmax, ymin, ymax = bounds
    rows = list(csv.DictReader(io.StringIO(text)))
    points, order = {}, []
    for k, row in enumerate(rows):
        px, py = float(row[x]), float(row[y])
        if not (xmin <= px <= xmax and ymin <= py <= ymax):
            assert outside == "drop", k
            continue
        i = min(math.floor((px - xmin) / (xmax - xmin) * nx), nx - 1)
        j = min(math.floor((py - ymin) / (ymax - ymin) * ny), ny - 1)
        if row[case] not in points:
            points[row[case]] = []
            order.append(row[case])
        points[row[case]].append((float(row[time]) if time else 0.0, k, f"{i}_{j}"))
    out = []
    for name in order:
        cells = [c for _, _, c in sorted(points[name])]
        if repeats == "collapse":
            cells = [c for k, c in enumerate(cells) if k == 0 or c != cells[k - 1]]
        out.append(cells)
    return order, out


def labelled(db):
    """The sequences of ``db`` as lists of labels."""
    labels = db.vocab.labels
    return [[labels[i] for i in db.items[lo:hi]]
            for lo, hi in zip(db.offsets[:-1].tolist(), db.offsets[1:].tolist())]


def random_points(seed, n, n_trips, *, spread=0.0):
    """A CSV of ``n`` points in shuffled order: trip, time (with ties), lon, lat."""
    rng = np.random.default_rng(seed)
    xmin, xmax, ymin, ymax = BOUNDS
    trip = rng.integers(0, n_trips, n)
    # a random walk per trip, so that runs of points in one cell are common
    lon = np.clip(xmin + (xmax - xmin) * rng.random(n_trips)[trip] + rng.normal(0, 0.3, n)
                  .cumsum() * 0.01, xmin - spread, xmax + spread)
    lat = ymin + (ymax - ymin) * rng.random(n) * (1 + spread) - spread / 2
    lat = np.where(rng.random(n) < 0.3, np.round(lat, 1), lat)  # on the grid lines
    time = rng.integers(0, n // 4 + 1, n)
    lines = ["trip,time,lon,lat"] + [f"t{a},{b},{c!r},{d!r}" for a, b, c, d in
                                     zip(trip.tolist(), time.tolist(), lon.tolist(),
                                         lat.tolist())]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("grid", [(1, 1), (5, 4), (16, 16)])
@pytest.mark.parametrize("repeats", ["collapse", "keep"])
def test_generated_points_give_the_cells_a_plain_loop_gives(tmp_path, grid, repeats):
    text = random_points(sum(grid), 3000, 40)
    path = tmp_path / "points.csv"
    path.write_text(text)
    db = dpgpu.load(path, "trajectory", grid=f"{grid[0]}x{grid[1]}", bounds=",".join(map(
        str, BOUNDS)), timestamp="time", repeats=repeats)
    names, want = reference(text, grid, BOUNDS, case="trip", x="lon", y="lat", time="time",
                            repeats=repeats)
    assert db.source["cases"] == names
    assert labelled(db) == want
    assert db.vocab.public and db.vocab.labels == Grid(*grid, BOUNDS).labels()


def test_a_large_file_read_by_arrow_gives_the_same_cells(tmp_path):
    text = random_points(7, 120_000, 500, spread=0.5)
    assert len(text) > 4 << 20  # the size from which Arrow parses CSV tables
    path = tmp_path / "points.csv"
    path.write_text(text)
    db = dpgpu.load(path, "trajectory", grid=(24, 9), bounds=list(BOUNDS), outside="drop")
    names, want = reference(text, (24, 9), BOUNDS, case="trip", x="lon", y="lat",
                            time="time", outside="drop")
    assert db.source["cases"] == names and labelled(db) == want


def test_points_outside_the_bounds_are_an_error_or_left_out(tmp_path, caplog):
    """The error names the line, not the point; the warning of a run that goes on to a
    release gives no count (privacy review F5: "2 of 4 points" and the point's coordinates
    were printed)."""
    path = tmp_path / "p.csv"
    path.write_text("id,x,y\na,0,10\nb,9.25,11.5\nb,2,11\nc,-5,10\n")
    with pytest.raises(InputError, match=r"p.csv: line 3: the point lies outside the bounds "
                                         r"\(x -2 to 3, y 10 to 12\).*--outside drop") as info:
        dpgpu.load(path, "trajectory", grid=2, bounds=BOUNDS)
    assert "9.25" not in str(info.value) and "11.5" not in str(info.value)
    db = dpgpu.load(path, "trajectory", grid=2, bounds=BOUNDS, outside="drop")
    assert db.source["cases"] == ["a", "b"]  # c had no point left
    assert labelled(db) == [["0_0"], ["1_1"]]
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning == f"{path}: points outside the bounds are left out (--outside drop)"


def test_cell_edges_belong_to_the_upper_cell_and_the_far_edge_to_the_last():
    g = Grid(4, 2, (0.0, 4.0, 0.0, 1.0))
    ids, inside = g.cells(np.array([0.0, 1.0, 3.999, 4.0, 4.0001, -1e-9]),
                          np.array([0.0, 0.5, 0.49, 1.0, 0.2, 0.2]))
    assert ids.tolist() == [0, 1 * 4 + 1, 3, 1 * 4 + 3, 3, 0]
    assert inside.tolist() == [True, True, True, True, False, False]
    x, y = g.centers(np.arange(g.size))
    assert (g.cells(x, y)[0] == np.arange(g.size)).all()


def test_written_points_read_back_as_the_same_cells(tmp_path):
    text = random_points(3, 2000, 30)
    path = tmp_path / "points.csv"
    path.write_text(text)
    options = {"grid": "7x5", "bounds": ",".join(map(str, BOUNDS)), "repeats": "keep"}
    db = dpgpu.load(path, "trajectory", **options)
    out = tmp_path / "out.csv"
    db.save(out, format="trajectory")
    assert out.read_text().splitlines()[0] == "trip,lon,lat"
    back = dpgpu.load(out, "trajectory", **options)
    assert back.source["cases"] == db.source["cases"]
    assert labelled(back) == labelled(db)


def test_synthetic_data_of_a_trajectory_input_is_a_trajectory_file(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text(random_points(5, 4000, 300))
    options = ["--format", "trajectory", "--grid", "4x4", "--bounds", *map(str, BOUNDS)]
    done = subprocess.run([sys.executable, "-m", "dpgpu", "ngram", str(path), *options,
                           "--epsilon", "2", "--seed", "1", "--out", str(tmp_path / "rel"),
                           "--quiet"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "rel" / "report.json").read_text())
    assert report["private"] is True  # the grid is public: so is the vocabulary
    synthetic = tmp_path / "rel" / "synthetic.csv"
    assert synthetic.read_text().startswith("trip,lon,lat\n")
    back = dpgpu.load(synthetic, "trajectory", grid="4x4", bounds=list(BOUNDS), repeats="keep")
    assert back.n_events > 0 and report["synthetic_format"] == "trajectory"
    done = subprocess.run([sys.executable, "-m", "dpgpu", "evaluate", "--original", str(path),
                           "--release", str(tmp_path / "rel"), *options, "--json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tasks"]["lengths"]["total_variation_distance"] < 1


def test_only_a_database_with_a_grid_is_written_as_trajectories(tmp_path):
    db = SequenceDB.from_sequences([["a", "b"]])
    with pytest.raises(InvalidParameter, match="has no grid"):
        db.save(tmp_path / "x.csv", format="trajectory")
    assert not (tmp_path / "x.csv").exists()


def test_user_columns_give_user_level_data(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("trip,person,lon,lat\nt1,ann,0,10\nt2,bob,1,11\nt3,ann,2,11\n")
    db = dpgpu.load(path, "trajectory", grid=2, bounds=BOUNDS, user="person")
    assert db.users.tolist() == [0, 1, 0] and db.source["user_labels"] == ["ann", "bob"]
    path.write_text("trip,person,lon,lat\nt1,ann,0,10\nt1,bob,1,11\n")
    with pytest.raises(InputError, match="line 3: case 't1' has events of two users"):
        dpgpu.load(path, "trajectory", grid=2, bounds=BOUNDS, user="person")


@pytest.mark.parametrize("options, message", [
    ({"bounds": BOUNDS}, "grid: the trajectory format needs a grid"),
    ({"grid": 3}, "bounds: the trajectory format needs the grid's extent"),
    ({"grid": "3y3", "bounds": BOUNDS}, "grid: expected NX or NXxNY"),
    ({"grid": "0x3", "bounds": BOUNDS}, "grid: must be an integer at least 1"),
    ({"grid": 1025 * 1024, "bounds": BOUNDS}, "grid: .* at most"),
    ({"grid": 3, "bounds": "0,1,2"}, "bounds: expected four finite numbers"),
    ({"grid": 3, "bounds": [0, 1, 2, math.inf]}, "bounds: expected four finite numbers"),
    ({"grid": 3, "bounds": [0, 1, float("nan"), 1]}, "bounds: expected four finite numbers"),
    ({"grid": 3, "bounds": [1, 1, 0, 1]}, "bounds: each minimum must be below its maximum"),
    ({"grid": 3, "bounds": BOUNDS, "outside": "clip"}, "outside: must be one of"),
    ({"grid": 3, "bounds": BOUNDS, "repeats": "no"}, "repeats: must be one of"),
])
def test_bad_parameters_name_the_parameter(tmp_path, options, message):
    path = tmp_path / "p.csv"
    path.write_text("id,x,y\na,0,10\n")
    with pytest.raises(InvalidParameter, match=message):
        dpgpu.load(path, "trajectory", **options)


@pytest.mark.parametrize("text, message", [
    ("id,x,y\na,0,10\na,east,11\n", r"line 3: column 'x': 'east' is not a finite number"),
    ("id,x,y\na,0,10\na,1,nan\n", r"line 3: column 'y': 'nan' is not a finite number"),
    ("id,x,y\na,0,10\na,1,\n", r"line 3: column 'y': '' is not a finite number"),
    ("id,lon\na,0\n", r"no y column found; choose one with --y \(columns: id, lon\)"),
    ("when,x,y\n1,0,10\n", r"no case column found; choose one with --case"),
    ("id,x,y\na,0,10\n,1,11\n", r"line 3: empty case"),
    ("id,x,y,time\na,0,10,1\na,1,11,later\n", r"line 3: column 'time'"),
    ("id,x,y\na,0,10\na,1\n", r"line 3: 2 fields, but the header has 3"),
])
def test_bad_points_name_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "p.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        dpgpu.load(path, "trajectory", grid=2, bounds=BOUNDS)


def test_the_cli_reads_negative_bounds_and_refuses_bad_ones_cleanly(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,lon,lat\na,-1.5,-10\na,1,-9\n")
    cli = [sys.executable, "-m", "dpgpu", "stats", str(path), "--format", "trajectory",
           "--grid", "2x2", "--json"]
    done = subprocess.run(cli + ["--bounds", "-2", "2", "-10", "-8"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["events"] == 2
    done = subprocess.run(cli + ["--bounds", "-2", "2", "-10", "inf"], capture_output=True,
                          text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "bounds: expected four finite numbers" in done.stderr


def test_written_in_parts_as_written_whole(tmp_path):
    path = tmp_path / "points.csv"
    path.write_text(random_points(11, 3000, 80))
    db = dpgpu.load(path, "trajectory", grid="6x6", bounds=list(BOUNDS))
    lengths = np.diff(db.offsets)
    cut, at = len(db) // 3, int(db.offsets[len(db) // 3])
    parts = [synthetic_like(db, db.items[:at], lengths[:cut]),
             synthetic_like(db, db.items[at:], lengths[cut:])]
    assert writers.write_parts(iter(parts), tmp_path / "parts.csv", "trajectory") == \
        (len(db), db.n_events)
    whole = synthetic_like(db, db.items, lengths)
    writers.write(whole, tmp_path / "whole.csv", "trajectory")
    assert (tmp_path / "parts.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()


def test_a_trajectory_name_with_a_carriage_return_is_quoted_and_read_back(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text('trip;lon;lat\n"a\rb";0;10\n"a\rb";2;11\nc;1;10\n', newline="")
    db = dpgpu.load(path, "trajectory", grid=2, bounds=BOUNDS)
    assert db.source["cases"] == ["a\rb", "c"]
    db.save(tmp_path / "out.csv", format="trajectory")
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        text = f.read()
    assert text.startswith('"trip","lon","lat"\n"a\rb",')  # a .csv file: commas; all quoted
    back = dpgpu.load(tmp_path / "out.csv", "trajectory", grid=2, bounds=BOUNDS)
    assert back.source["cases"] == ["a\rb", "c"] and labelled(back) == labelled(db)


def test_a_bad_coordinate_in_a_large_file_names_its_line(tmp_path):
    lines = random_points(8, 120_000, 500).splitlines(keepends=True)
    lines[90_001] = lines[90_001].rsplit(",", 1)[0] + ",north\n"
    path = tmp_path / "points.csv"
    path.write_text("".join(lines))
    assert path.stat().st_size > 4 << 20  # read by Arrow where pyarrow is installed
    with pytest.raises(InputError, match=r"line 90002: column 'lat': 'north' is not a finite"):
        dpgpu.load(path, "trajectory", grid=4, bounds=BOUNDS, outside="drop")


def test_a_parquet_table_gives_what_its_csv_gives(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    text = random_points(12, 5000, 60, spread=0.2)
    (tmp_path / "p.csv").write_text(text)
    rows = list(csv.DictReader(io.StringIO(text)))
    table = pa.table({"trip": [r["trip"] for r in rows],
                      "time": pa.array([int(r["time"]) for r in rows]).cast(pa.timestamp("s")),
                      "lon": [float(r["lon"]) for r in rows], "lat": [r["lat"] for r in rows]})
    pq.write_table(table, tmp_path / "p.parquet")
    options = {"grid": "9x7", "bounds": list(BOUNDS), "outside": "drop"}
    got = dpgpu.load(tmp_path / "p.parquet", "trajectory", **options)
    want = dpgpu.load(tmp_path / "p.csv", "trajectory", **options)
    assert got.source["cases"] == want.source["cases"] and labelled(got) == labelled(want)
    assert got.source["timestamp_kind"] == "datetime" and "delimiter" not in got.source
    got.save(tmp_path / "out.csv", format="trajectory")  # written as CSV
    assert (tmp_path / "out.csv").read_text().startswith("trip,lon,lat\n")
    table = table.set_column(3, "lat", pa.array([r["lat"] for r in rows[:40]] + ["north"]
                                                + [r["lat"] for r in rows[41:]]))
    pq.write_table(table, tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"row 41: column 'lat': 'north' is not a finite"):
        dpgpu.load(tmp_path / "bad.parquet", "trajectory", **options)
    pq.write_table(table.set_column(2, "lon", pa.array([None] + [0.0] * (len(rows) - 1))),
                   tmp_path / "null.parquet")
    with pytest.raises(InputError, match=r"row 1: empty x \(column 'lon'\)"):
        dpgpu.load(tmp_path / "null.parquet", "trajectory", **options)
