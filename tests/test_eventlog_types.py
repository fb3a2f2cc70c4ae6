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


# ------------------------------------------- dates with and without a UTC offset in one column
# Regression: a date without an offset among dates with one was read as UTC, silently.
ZONES = ("its timestamps must be of one kind, all dates with a UTC offset or all dates without "
         "a UTC offset")


def zones_error(where: str, first: str, other: str) -> str:
    """The message for ``other`` at ``where`` in a column whose first date is at ``first``
    (``"line 2"``), the first with a UTC offset and the other without it."""
    return (f"{where}: column 'timestamp' mixes dates with a UTC offset ({first}) and dates "
            f"without a UTC offset ({where}: {other!r}); {ZONES}")


@pytest.mark.parametrize("zoned, naive", [
    ("2024-01-01T10:00:00+02:00", "2024-01-01T09:00:00"),
    ("2024-01-01T10:00:00Z", "2024-01-01"),                  # a date without a time: naive
    ("2024-01-01T10:00:00z", "2024-01-01 09:00:00.5"),
    ("2024-01-01Z", "2024-01-01T09:00"),                     # a date with Z: zoned
    ("2024-01-01T10:00:00+0200", "2024-01-01T09:00:00"),     # not NumPy-readable
    ("2024-01-01T10:00:00.000000001-05:00", "2024-01-01"),   # not NumPy-readable
])
def test_csv_dates_with_and_without_a_utc_offset_are_refused_naming_both_lines(
        tmp_path, zoned, naive):
    got = csv_error(tmp_path, [zoned, zoned, naive, zoned])
    assert got == zones_error("line 4", "line 2", naive)
    got = csv_error(tmp_path, [naive, naive, zoned, naive])
    assert got == (f"line 4: column 'timestamp' mixes dates without a UTC offset (line 2) and "
                   f"dates with a UTC offset (line 4: {zoned!r}); {ZONES}")


def test_csv_an_earlier_bad_date_is_still_reported_first(tmp_path):
    assert csv_error(tmp_path, ["2024-01-01Z", "2024-13-01Z", "2024-01-01"]) == (
        "line 3: column 'timestamp': cannot parse timestamp '2024-13-01Z' as an ISO-8601 date")
    assert csv_error(tmp_path, ["2024-01-01Z", "2024-01-01", "2024-13-01Z"]) == zones_error(
        "line 3", "line 2", "2024-01-01")


def test_csv_dates_all_with_or_all_without_an_offset_read_as_before(tmp_path):
    path = tmp_path / "naive.csv"
    path.write_text("case,activity,timestamp\n"
                    "k,b,2024-01-01T10:00:00\n"
                    "k,a,2024-01-01\n"              # midnight
                    "k,c,2024-01-01 10:00:00.5\n")
    assert list(read_csv_log(path, path.read_bytes())) == [("a", "b", "c")]
    path = tmp_path / "zoned.csv"
    path.write_text("case,activity,timestamp\n"
                    "k,b,2024-01-01T23:30:00+02:00\n"  # 21:30 UTC
                    "k,a,2024-01-01T22:00:00+0200\n"   # 20:00 UTC
                    "k,c,2024-01-01T21:45:00Z\n")
    assert list(read_csv_log(path, path.read_bytes())) == [("a", "b", "c")]


def test_csv_a_date_with_an_offset_and_no_time_is_midnight_there(tmp_path):
    """Regression: datetime read the offset's sign as the separator of a time
    (``2024-01-02+01:00`` as 01:00 on 2 January, without an offset)."""
    path = tmp_path / "zoned.csv"
    path.write_text("case,activity,timestamp\n"
                    "k,b,2024-01-01T23:30:00Z\n"
                    "k,a,2024-01-02+01:00\n"        # midnight at +01:00: 23:00 UTC
                    "k,c,2024-01-02Z\n"
                    "k,d,2024-01-02T00:30:00+0000\n")
    assert list(read_csv_log(path, path.read_bytes())) == [("a", "b", "c", "d")]


def big_log(naive_at: int, n: int = 40) -> bytes:
    """A log of ``n`` events with dates with an offset but the one at event ``naive_at``."""
    stamps = [f"2024-01-01T{i // 60:02d}:{i % 60:02d}:00+01:00" for i in range(n)]
    stamps[naive_at] = "2024-01-01T05:00:00"
    return ("case,activity,timestamp\n"
            + "".join(f"c{i % 3},a{i % 4},{s}\n" for i, s in enumerate(stamps))).encode()


@pytest.mark.parametrize("knobs", [
    {"_BLOCK_ROWS": 4},                                        # csv module, blocks of 4 rows
    {"_BLOCK_ROWS": 4, "_ARROW_MIN_BYTES": 0, "_ARROW_BLOCK_BYTES": 128},  # Arrow, in blocks
], ids=["csv-module", "arrow"])
@pytest.mark.parametrize("unreadable", [False, True], ids=["numpy", "datetime"])
def test_csv_mixed_offsets_found_in_a_later_block(tmp_path, monkeypatch, knobs, unreadable):
    """The first rows are read (by NumPy) before the naive date comes; where a later row is
    not NumPy-readable, every row is read again by datetime: the same error either way."""
    from dpgpu.data import eventlog

    for name, value in knobs.items():
        monkeypatch.setattr(eventlog, name, value)
    data = big_log(naive_at=30)
    if unreadable:
        data = data.replace(b"T00:35:00+01:00", b"T00:35:00+0100")
    path = tmp_path / "big.csv"
    with pytest.raises(InputError) as info:
        read_csv_log(path, data)
    assert str(info.value) == f"{path}: " + zones_error("line 32", "line 2",
                                                        "2024-01-01T05:00:00")
    good = data.replace(b"T05:00:00\n", b"T05:00:00+01:00\n")
    # case c0: events 0, 3, ..., 39 a minute apart, but event 30 (a2) at 05:00
    assert list(read_csv_log(path, good))[0] == ("a0", "a3", "a2", "a1", "a0", "a3", "a2", "a1",
                                                 "a0", "a3", "a1", "a0", "a3", "a2")


def test_cli_refuses_mixed_offsets_in_one_line_with_status_2(tmp_path, capsys):
    path = tmp_path / "m.csv"
    path.write_text("case,activity,timestamp\nc,A,2024-01-01T10:00:00+02:00\n"
                    "c,B,2024-01-01T09:00:00\n")
    one_line_error(capsys, ["stats", str(path)],
                   f"dpgpu: error: {path}: " + zones_error("line 3", "line 2",
                                                           "2024-01-01T09:00:00"))


@pytest.mark.parametrize("dictionary", [False, True])
def test_parquet_string_dates_with_and_without_an_offset_name_both_rows(tmp_path, capsys,
                                                                         dictionary):
    stamps = ["2024-01-01T10:00:00Z", "2024-01-01T11:00:00+02:00", "2024-01-01T10:00:00Z",
              "2024-01-01T12:00:00Z", "2024-01-01", "2024-01-01"]
    column = pa.array(stamps).dictionary_encode() if dictionary else pa.array(stamps)
    path = tmp_path / "m.parquet"
    pq.write_table(pa.table({"case": ["c"] * 6, "activity": list("ABCDEF"),
                             "timestamp": column}), path, row_group_size=2)
    with pytest.raises(InputError) as info:
        read_parquet_log(path)
    assert str(info.value) == f"{path}: " + zones_error("row 5", "row 1", "2024-01-01")
    one_line_error(capsys, ["stats", str(path)], zones_error("row 5", "row 1", "2024-01-01"))


def test_parquet_typed_timestamps_and_one_kind_of_strings_still_read(tmp_path):
    from datetime import datetime, timezone

    typed = pa.array([datetime(2024, 1, 1, 10, tzinfo=timezone.utc),
                      datetime(2024, 1, 1, 9, tzinfo=timezone.utc)], pa.timestamp("us", "UTC"))
    path = parquet(tmp_path, "t.parquet", case=["c", "c"], activity=["A", "B"], timestamp=typed)
    assert list(read_parquet_log(path)) == [("B", "A")]
    path = parquet(tmp_path, "s.parquet", case=["c", "c", "c"], activity=["A", "B", "C"],
                   timestamp=["2024-01-01T10:00:00", "2024-01-01", "2024-01-01T09:00"])
    assert list(read_parquet_log(path)) == [("B", "C", "A")]


def test_xes_dates_with_and_without_an_offset_name_both_lines(tmp_path):
    data = "\n".join(["<log><trace>", event("A", "2020-01-01T10:00:00+01:00"),
                      event("B", "2020-01-01T09:00:00Z"), "</trace><trace>",
                      event("C", "2020-01-01T08:00:00"), "</trace></log>"]).encode()
    with pytest.raises(InputError) as info:
        read_xes(tmp_path / "z.xes", data)
    assert str(info.value) == (
        f"{tmp_path / 'z.xes'}: line 5: attribute 'time:timestamp' mixes dates with a UTC "
        "offset (line 2) and dates without a UTC offset (line 5: '2020-01-01T08:00:00'); "
        f"{ZONES}")


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
