"""Tables as other tools write them: empty column names, repeated names, NaN ids.

* pandas' ``to_csv`` writes an index column with an empty name, Excel's
  CSV export trailing empty columns: such an event log is still a CSV log,
  whatever the file's name (or a pipe), and the empty-named columns are unused.
* A column a run uses (case, activity, timestamp, user, a state column, the
  ends of a ``--states`` range) whose name the header repeats is an error
  naming both places, never the first of them silently; repeats of unused
  columns are fine.
* A NaN in a float case, activity or user column of a Parquet log is
  refused like a null, naming the row (not one case ``'nan'``).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import dpgpu
from dpgpu.cli import main
from dpgpu.data import eventlog
from dpgpu.data.eventlog import looks_like_csv_log, read_csv_log, read_parquet_log
from dpgpu.errors import InputError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

#: The same three cases, as pandas (an index column) and Excel (trailing ``;;``) write them.
PANDAS = (",case:concept:name,concept:name,time:timestamp\n"
          "0,c1,a,2020-01-01\n1,c1,b,2020-01-02\n2,c2,b,2020-01-01\n3,c3,a,2020-01-03\n")
EXCEL = ("Case ID;Activity;Timestamp;;\n"
         "c1;b;2020-01-02;;\nc1;a;2020-01-01;;\nc2;b;2020-01-01;;\nc3;a;2020-01-03;;\n")
#: Each case's activities, in time order.
CASES = {"PANDAS": {"c1": ["a", "b"], "c2": ["b"], "c3": ["a"]},
         "EXCEL": {"c1": ["a", "b"], "c2": ["b"], "c3": ["a"]}}


def sequences(db) -> dict[str, list[str]]:
    """Each case's activities (``db.source["cases"]`` names them)."""
    bounds = db.offsets.tolist()
    return {case: list(db.vocab.decode(db.items[lo:hi].tolist()))
            for case, lo, hi in zip(db.source["cases"], bounds[:-1], bounds[1:])}


def cli(capsys, *argv) -> tuple[int, str]:
    """Exit status and stderr of ``dpgpu ARGV``."""
    status = main(list(argv))
    return status, capsys.readouterr().err


# ------------------------------------------------- empty column names (pandas, Excel)
@pytest.mark.parametrize("header", [
    ",case:concept:name,concept:name,time:timestamp",
    "Case ID;Activity;Timestamp;;",
    " ;case;activity",
    ",,session,event,",
])
def test_a_header_with_empty_names_beside_log_columns_is_a_csv_log(header):
    assert looks_like_csv_log(header.encode() + b"\n1,2,3,4\n")


@pytest.mark.parametrize("header", [",case,", ",,", "case;;", ",1,case,activity", ",colour,size"])
def test_empty_names_do_not_make_a_header_of_other_lines_a_csv_log(header):
    # one named column, no names at all, a number, or no case/activity name among them
    assert not looks_like_csv_log(header.encode() + b"\n")


@pytest.mark.parametrize("name", ["PANDAS", "EXCEL"])
@pytest.mark.parametrize("suffix", [".csv", ".txt", ""])
def test_empty_named_columns_are_unused_whatever_the_file_name(tmp_path, name, suffix):
    path = tmp_path / f"log{suffix}"
    path.write_text(globals()[name])
    db = dpgpu.load(path)
    assert db.source["format"] == "csv"
    assert sequences(db) == CASES[name]


@pytest.mark.parametrize("name", ["PANDAS", "EXCEL"])
def test_empty_named_columns_read_by_arrow_as_by_the_csv_module(monkeypatch, name):
    # Arrow reads logs of _ARROW_MIN_BYTES or more; lowered, it reads this one
    by_csv_module = sequences(read_csv_log("log.csv", globals()[name].encode()))
    kept = []
    arrow_columns = eventlog._arrow_columns
    monkeypatch.setattr(eventlog, "_ARROW_MIN_BYTES", 0)
    monkeypatch.setattr(eventlog, "_arrow_columns",
                        lambda *args: kept.append(arrow_columns(*args)) or kept[-1])
    assert sequences(read_csv_log("log.csv", globals()[name].encode())) == by_csv_module
    assert kept and kept[0] is not None  # Arrow's reading was the one kept


def test_a_pandas_log_through_a_pipe_is_a_csv_log():
    done = subprocess.run([sys.executable, "-m", "dpgpu", "stats", "/dev/stdin", "--json"],
                          input=PANDAS, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert '"format": "csv"' in done.stdout and '"sequences": 3' in done.stdout


# ------------------------------------------------------------- repeated column names
@pytest.mark.parametrize("header, options, role, column, numbers", [
    ("case,activity,timestamp,activity", {}, "activity", "activity", "columns 2 and 4"),
    ("case,event,ts,event", {"activity": "event"}, "activity", "event", "columns 2 and 4"),
    ("case,activity,time,time", {}, "timestamp", "time", "columns 3 and 4"),
    ("case,activity,who,who", {"user": "who"}, "user", "who", "columns 3 and 4"),
])
def test_a_used_column_named_twice_is_an_error_naming_both(header, options, role, column,
                                                           numbers):
    text = header + "\nc1,a,1,x\nc1,b,2,y\n"
    with pytest.raises(InputError) as info:
        read_csv_log("log.csv", text.encode(), **options)
    assert str(info.value) == (f"log.csv: column {column!r} for --{role} appears twice in "
                               f"the header ({numbers}); rename one")


def test_a_case_column_named_three_times_lists_them_all(monkeypatch):
    text = b"case,case,activity,case\nc1,c2,a,c3\n"
    message = "log.csv: column 'case' for --case appears 3 times in the header " \
              "(columns 1, 2 and 4); rename one"
    for arrow_from in (eventlog._ARROW_MIN_BYTES, 0):  # the csv module's way, then Arrow's
        monkeypatch.setattr(eventlog, "_ARROW_MIN_BYTES", arrow_from)
        with pytest.raises(InputError) as info:
            read_csv_log("log.csv", text)
        assert str(info.value) == message


@pytest.mark.parametrize("arrow", [False, True])
def test_unused_columns_may_share_a_name(monkeypatch, arrow):
    if arrow:
        monkeypatch.setattr(eventlog, "_ARROW_MIN_BYTES", 0)
    text = b"case,note,activity,note\nc1,x,a,y\nc1,x,b,y\nc2,z,b,z\n"
    db = read_csv_log("log.csv", text)
    assert sequences(db) == {"c1": ["a", "b"], "c2": ["b"]}


def test_the_cli_refuses_a_repeated_activity_column_in_one_line(tmp_path, capsys):
    path = tmp_path / "log.csv"
    path.write_text("case,activity,timestamp,activity\nc1,a,1,x\n")
    status, err = cli(capsys, "stats", str(path))
    assert status == 2
    assert err.strip().splitlines() == [
        f"dpgpu: error: {path}: column 'activity' for --activity appears twice in the header "
        "(columns 2 and 4); rename one"]


MONTHS = "id,Jan,Feb,Mar,Jan,Feb,Mar\nr1,a,b,c,d,e,f\nr2,g,h,i,j,k,l\n"


@pytest.mark.parametrize("header, options, message", [
    ("id,Jan,Feb,Mar,Jan,Feb,Mar", {"states": "Jan:Mar"}, "'Jan' for --states appears twice "
     "in the header (columns 2 and 5)"),
    ("id,Jan,Feb,Mar,Mar", {"states": "Jan:Mar"}, "'Mar' for --states appears twice "
     "in the header (columns 4 and 5)"),
    ("id,a,b,a,c", {"states": "a,b,c"}, "'a' for --states appears twice in the header "
     "(columns 2 and 4)"),
    ("id,a,b,a,c", {"states": ["c", "a"]}, "'a' for --states appears twice in the header "
     "(columns 2 and 4)"),
    ("id,a,b, a ,c", {"states": "b:c", "case": " id"}, None),  # ' id' is 'id' stripped, once
    ("id,a,b,id", {"states": "a:b", "case": "id"}, "'id' for --case appears twice in the "
     "header (columns 1 and 4)"),
])
def test_a_wide_column_the_run_uses_named_twice_is_an_error(tmp_path, header, options,
                                                             message):
    path = tmp_path / "wide.csv"
    width = header.count(",") + 1
    path.write_text(header + "\n" + ",".join(f"r{i}" if i == 0 else "s" for i in range(width))
                    + "\n")
    if message is None:
        assert len(dpgpu.load(path, "wide", **options)) == 1
        return
    with pytest.raises(InputError) as info:
        dpgpu.load(path, "wide", **options)
    assert str(info.value) == f"{path}: column {message}; rename one"


def test_wide_states_may_skip_a_repeated_name(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("id,a,b,a,c\nr1,1,2,3,4\n")
    db = dpgpu.load(path, "wide", states="b,c", case="id")
    assert sequences(db) == {"r1": ["2", "4"]}


def test_the_cli_refuses_a_second_year_of_months_in_one_line(tmp_path, capsys):
    path = tmp_path / "wide_months.csv"
    path.write_text(MONTHS)
    status, err = cli(capsys, "stats", str(path), "--format", "wide", "--states", "Jan:Mar",
                      "--case", "id")
    assert status == 2
    assert err.strip().splitlines() == [
        f"dpgpu: error: {path}: column 'Jan' for --states appears twice in the header "
        "(columns 2 and 5); rename one"]


def parquet(path, names: list[str], columns: list) -> None:
    """Write a Parquet file of ``columns`` under ``names`` (repeats allowed)."""
    pq.write_table(pa.Table.from_arrays([pa.array(c) for c in columns], names=names), path)


def test_a_parquet_log_with_a_used_column_named_twice_is_an_error(tmp_path):
    path = tmp_path / "log.parquet"
    parquet(path, ["case", "activity", "activity"], [["c1", "c1"], ["a", "b"], ["x", "y"]])
    with pytest.raises(InputError) as info:
        read_parquet_log(path)
    assert str(info.value) == (f"{path}: column 'activity' for --activity appears twice in "
                               "the header (columns 2 and 3); rename one")


def test_a_parquet_log_may_repeat_an_unused_column_name(tmp_path):
    path = tmp_path / "log.parquet"
    parquet(path, ["case", "note", "activity", "note"],
            [["c1", "c1", "c2"], ["x", "y", "z"], ["a", "b", "b"], [1, 2, 3]])
    assert sequences(read_parquet_log(path)) == {"c1": ["a", "b"], "c2": ["b"]}


# ---------------------------------------------------------------- NaN in Parquet ids
NAN = float("nan")


@pytest.mark.parametrize("role, row", [("case", 2), ("activity", 3), ("user", 4)])
def test_a_nan_id_in_a_parquet_log_is_refused_naming_its_row(tmp_path, role, row):
    columns = {"case": [1.0, 2.0, 2.0, 3.0], "activity": [5.0, 6.0, 7.0, 8.0],
               "timestamp": [1, 2, 3, 4], "user": [9.0, 9.0, 9.0, 9.0]}
    columns[role][row - 1] = NAN
    columns[role][-1] = NAN  # the first NaN is named
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table(columns), path)
    with pytest.raises(InputError) as info:
        read_parquet_log(path, user="user")
    assert str(info.value) == (f"{path}: row {row}: {role} is NaN (column {role!r}), which "
                               f"names no {role}")


def test_float_case_ids_without_nan_are_cases(tmp_path):
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table({"case": [1.0, 2.0, 2.0, 1.5], "activity": ["a", "b", "c", "d"],
                             "timestamp": [1, 2, 3, 4]}), path)
    assert sorted(sequences(read_parquet_log(path)).values()) == [["a"], ["b", "c"], ["d"]]


def test_the_cli_refuses_nan_cases_in_one_line(tmp_path, capsys):
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table({"case": pa.array([1.0, NAN, NAN, 2.0]),
                             "activity": ["a", "b", "c", "d"], "timestamp": [1, 2, 3, 4]}), path)
    status, err = cli(capsys, "stats", str(path))
    assert status == 2
    assert err.strip().splitlines() == [
        f"dpgpu: error: {path}: row 2: case is NaN (column 'case'), which names no case"]
