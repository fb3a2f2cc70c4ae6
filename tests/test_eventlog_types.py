"""Event-log columns of unexpected kinds: Parquet columns that hold no text, bytes that are
not UTF-8, timestamp columns that mix numbers and dates, XES traces partly without times.

Regressions of a user sweep: the Parquet cases gave an Arrow traceback ("internal error",
exit 1); a CSV column of a number then dates blamed a valid date ("cannot parse ... as a
number or an ISO-8601 date"), and one of dates then a number read the number as a year
(``5`` as 0005-01-01); XES traces with an event without a time silently kept file order.
"""

from __future__ import annotations

import logging

import pytest

from dpgpu import InputError
from dpgpu.cli import main
from dpgpu.data.eventlog import read_csv_log, read_parquet_log, read_xes
from dpgpu.data.trajectory import read_trajectory

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

TRAJECTORY = ["--format", "trajectory", "--case", "activity", "--x", "timestamp", "--y", "case",
              "--grid", "2x2", "--bounds", "0", "10", "0", "10"]


def parquet(tmp_path, name, **columns):
    """A Parquet file of ``columns`` (name -> list or Arrow array); its path."""
    path = tmp_path / name
    pq.write_table(pa.table(columns), path)
    return path


def one_line_error(capsys, argv, *parts):
    """``dpgpu ARGV`` exits with 2 and one error line holding every part."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 1 and lines[0].startswith("dpgpu: error: "), err
    assert all(part in lines[0] for part in parts), (parts, lines[0])
    assert "Traceback" not in err


# -------------------------------------------------------- Parquet columns that hold no text
@pytest.mark.parametrize("column, values, role", [
    ("activity", [["A"], ["B"]], "activity"),          # a list column
    ("case", [{"a": 1}, {"a": 2}], "case"),            # a struct column
])
def test_parquet_column_of_another_type_is_a_clean_error(tmp_path, capsys, column, values,
                                                         role):
    cols = {"case": [1, 2], "activity": ["A", "B"], "timestamp": [1, 2], column: values}
    path = parquet(tmp_path, "l.parquet", **cols)
    with pytest.raises(InputError, match=rf"^{path}: column '{column}' has type "
                                         rf"(list|struct)<.*>; the {role} column of an event "
                                         "log must hold text or numbers$"):
        read_parquet_log(path)
    one_line_error(capsys, ["stats", str(path)], f"column '{column}' has type", "must hold text")


def test_parquet_trajectory_case_of_another_type_is_a_clean_error(tmp_path, capsys):
    path = parquet(tmp_path, "t.parquet", case=[1, 2], activity=[["A"], ["B"]], timestamp=[1, 2])
    with pytest.raises(InputError, match=r"column 'activity' has type list<.*>; the case "
                                         "column of a trajectory file must hold text"):
        read_trajectory(path, path.read_bytes(), grid="2x2", bounds=(0, 10, 0, 10),
                        case="activity", x="timestamp", y="case")
    one_line_error(capsys, ["stats", str(path), *TRAJECTORY], str(path), "column 'activity'",
                   "must hold text")


def test_parquet_bytes_that_are_not_utf8_name_the_row_and_column(tmp_path, capsys):
    # three row groups: the bad value is on row 5, in the second, after a good repeat
    table = pa.table({"case": [1, 1, 2, 2, 2, 3], "activity": [b"A", b"B", b"A", b"B",
                                                              b"\xc3(", b"\xff"],
                      "timestamp": [1, 2, 3, 4, 5, 6]})
    path = tmp_path / "b.parquet"
    pq.write_table(table, path, row_group_size=2)
    message = (f"{path}: row 5: activity is not UTF-8 text (column 'activity': byte 0xc3 at "
               "position 1)")
    with pytest.raises(InputError) as info:
        read_parquet_log(path)
    assert str(info.value) == message
    one_line_error(capsys, ["stats", str(path)], message)
    one_line_error(capsys, ["stats", str(path), *TRAJECTORY], f"{path}: row 5: case is not "
                   "UTF-8 text (column 'activity'")


def test_parquet_bytes_and_dictionaries_of_utf8_text_read(tmp_path):
    stamps = pa.array([b"2020-01-02", b"2020-01-01", b"2020-01-03"]).dictionary_encode()
    path = parquet(tmp_path, "ok.parquet", case=pa.array(["c", "c", "d"]).dictionary_encode(),
                   activity=[b"A", "\u00e9".encode(), b"B"], timestamp=stamps)
    db = read_parquet_log(path)
    assert list(db) == [("\u00e9", "A"), ("B",)]
    assert db.source["timestamp_kind"] == "iso"
    bad = parquet(tmp_path, "bad.parquet", case=[1, 1], activity=["A", "B"],
                  timestamp=pa.array([b"2020-01-01", b"\xff"]).dictionary_encode())
    with pytest.raises(InputError, match=r"^\S+bad\.parquet: row 2: timestamp is not UTF-8 "
                                         r"text \(column 'timestamp': byte 0xff"):
        read_parquet_log(bad)


def test_column_file_reports_bytes_that_are_not_utf8(tmp_path, capsys):
    """The column reader shares the check (it said 'has type binary; ... must hold text')."""
    path = parquet(tmp_path, "c.parquet", sequence=[b"a b", b"c \xff"])
    one_line_error(capsys, ["stats", str(path), "--format", "column"],
                   f"{path}: row 2: sequence is not UTF-8 text (column 'sequence': byte 0xff "
                   "at position 3)")


# -------------------------------------------------- timestamp columns mixing numbers and dates
def csv_error(tmp_path, stamps: list[str]) -> str:
    text = "case,activity,timestamp\n" + "".join(f"c,A{i},{s}\n" for i, s in enumerate(stamps))
    path = tmp_path / "m.csv"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_csv_log(path, path.read_bytes())
    return str(info.value).replace(f"{path}: ", "", 1)


ONE_KIND = "its timestamps must be of one kind, all numbers or all ISO-8601 dates"


def test_csv_number_then_dates_says_the_column_mixes_them(tmp_path):
    got = csv_error(tmp_path, ["5", "2020-01-01T00:00:01", "2020-01-01T00:00:02"])
    assert got == ("line 3: column 'timestamp' mixes numbers (line 2) and ISO-8601 dates "
                   f"(line 3: '2020-01-01T00:00:01'); {ONE_KIND}")


@pytest.mark.parametrize("number", ["5", "2020", "20200101", "-1.5e3"])
def test_csv_dates_then_a_number_is_refused_not_read_as_a_year(tmp_path, number):
    """``5`` and ``2020`` were read as the years 5 and 2020 where NumPy read the column."""
    got = csv_error(tmp_path, ["2020-01-01T00:00:01", number, "2020-01-01T00:00:02"])
    assert got == ("line 3: column 'timestamp' mixes ISO-8601 dates (line 2) and numbers "
                   f"(line 3: {number!r}); {ONE_KIND}")


def test_csv_mixed_timestamps_found_in_a_later_block(tmp_path):
    """A number among dates after the first block of rows NumPy parsed."""
    rows = [f"c{i % 50},A,2020-01-01T{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}"
            for i in range(70_000)]
    rows[69_000] = "c0,A,7"
    path = tmp_path / "big.csv"
    path.write_text("case,activity,timestamp\n" + "\n".join(rows) + "\n")
    with pytest.raises(InputError, match=r"line 69002: column 'timestamp' mixes ISO-8601 dates "
                                         r"\(line 2\) and numbers \(line 69002: '7'\)"):
        read_csv_log(path, path.read_bytes())


def test_other_bad_timestamps_keep_their_message(tmp_path):
    assert csv_error(tmp_path, ["5", "soon"]) == (
        "line 3: column 'timestamp': cannot parse timestamp 'soon' as a number or an ISO-8601 "
        "date")
    assert csv_error(tmp_path, ["2020-01-01", "2020-13-01"]) == (
        "line 3: column 'timestamp': cannot parse timestamp '2020-13-01' as an ISO-8601 date")


def test_parquet_and_xes_mixed_timestamps_name_both_places(tmp_path):
    path = parquet(tmp_path, "m.parquet", case=[1, 1, 1], activity=["A", "B", "C"],
                   timestamp=["2020-01-01", "2020-01-02", "3"])
    with pytest.raises(InputError, match=r"row 3: column 'timestamp' mixes ISO-8601 dates "
                                         r"\(row 1\) and numbers \(row 3: '3'\)"):
        read_parquet_log(path)
    xes = ("<log>\n<trace>\n"
           '<event><string key="concept:name" value="A"/></event>\n'
           '<event><string key="concept:name" value="B"/>'
           '<int key="time:timestamp" value="1"/></event>\n'
           '<event><string key="concept:name" value="C"/>'
           '<date key="time:timestamp" value="2020-01-01"/></event>\n'
           "</trace>\n</log>\n")
    with pytest.raises(InputError, match=r"line 5: attribute 'time:timestamp' mixes numbers "
                                         r"\(line 4\) and ISO-8601 dates \(line 5: "):
        read_xes(tmp_path / "m.xes", xes.encode())


# ------------------------------------------------------- XES traces partly without times
def event(name: str, stamp: str | None = None) -> str:
    time = "" if stamp is None else f'<date key="time:timestamp" value="{stamp}"/>'
    return f'<event><string key="concept:name" value="{name}"/>{time}</event>'


def xes(*traces: list[str]) -> bytes:
    return ("<log>" + "".join("<trace>" + "".join(t) + "</trace>" for t in traces)
            + "</log>").encode()


def test_xes_traces_partly_without_times_keep_file_order_with_a_warning(tmp_path, caplog):
    data = xes([event("B"), event("A", "2020-01-01"), event("C", "2019-01-01")],   # file order
               [event("Z", "2020-01-02"), event("Y", "2020-01-01")],               # sorted
               [event("Q", "2020-01-01"), event("P"), event("O")],                 # file order
               [event("S")])                                       # one event: nothing to order
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        db = read_xes(tmp_path / "p.xes", data)
    assert list(db) == [("B", "A", "C"), ("Y", "Z"), ("Q", "P", "O"), ("S",)]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].name == "dpgpu"
    assert warnings[0].getMessage() == (
        f"{tmp_path / 'p.xes'}: traces in which some events have no 'time:timestamp' "
        "attribute keep file order (events are ordered by time only in traces whose events "
        "all have one)")  # no count of them: a private release may follow


def test_xes_with_every_event_timed_sorts_without_a_warning(tmp_path, caplog):
    data = xes([event("B", "2020-01-03"), event("A", "2020-01-02"), event("C", "2019-01-01")],
               [event("S")])
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        db = read_xes(tmp_path / "t.xes", data, timestamp="time:timestamp")
    assert list(db) == [("C", "A", "B"), ("S",)]  # S has no time, and no order to keep
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
