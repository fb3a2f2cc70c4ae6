"""Event logs: CSV, Parquet and XES readers, writers and detection.

Expected sequences are written by hand from the fixtures, never computed by
the code under test.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from dpgpu import InputError, InvalidParameter, SequenceDB
from dpgpu.data.eventlog import (looks_like_csv_log, looks_like_xes, read_csv_log,
                                 read_parquet_log, read_xes, write_csv_log, write_parquet_log,
                                 write_xes)
from dpgpu.data.io import atomic_output, read_bytes
from dpgpu.data import reading
from shared_data import dataset, needs


# Cases in order of first appearance: c2, c1, c3.  c1's rows are out of time
# order; two c2 events share a time (file order: B before A).
LOG_CSV = """\
case_id,activity,timestamp,resource
c2,A,2021-03-01T10:00:00+00:00,r1
c1,X,2021-03-01T12:00:00+00:00,r2
c2,B,2021-03-01T11:00:00+00:00,r1
c1,Y,2021-03-01T09:00:00+00:00,r1
c2,A,2021-03-01T11:00:00+00:00,r3
c3,Z,2021-03-01T08:00:00Z,r1
c1,Z,2021-03-01T10:30:00+00:00,r2
"""
LOG_SEQUENCES = [("A", "B", "A"), ("Y", "Z", "X"), ("Z",)]
# The same log with a user per case (c2 and c3 belong to ann).
USER_CSV = """\
case_id,activity,timestamp,user
c2,A,2021-03-01T10:00:00+00:00,ann
c1,X,2021-03-01T12:00:00+00:00,bo
c2,B,2021-03-01T11:00:00+00:00,ann
c1,Y,2021-03-01T09:00:00+00:00,bo
c2,A,2021-03-01T11:00:00+00:00,ann
c3,Z,2021-03-01T08:00:00Z,ann
c1,Z,2021-03-01T10:30:00+00:00,bo
"""

XES = """\
<?xml version="1.0" encoding="UTF-8"?>
<log xes.version="1849-2016" xmlns="http://www.xes-standard.org/">
  <extension name="Concept" prefix="concept" uri="http://www.xes-standard.org/concept.xesext"/>
  <string key="concept:name" value="the log"/>
  <global scope="event"><string key="concept:name" value="__INVALID__"/></global>
  <trace>
    <string key="concept:name" value="first"/>
    <event>
      <string key="concept:name" value="b"/>
      <date key="time:timestamp" value="2020-05-01T12:00:00.000+02:00"/>
      <string key="org:resource" value="r"/>
    </event>
    <event>
      <string key="concept:name" value="a"/>
      <date key="time:timestamp" value="2020-05-01T09:30:00.000+00:00"/>
    </event>
    <event>
      <string key="concept:name" value="c"/>
      <date key="time:timestamp" value="2020-05-01T09:30:00.000Z"/>
    </event>
  </trace>
  <trace>
    <string key="concept:name" value="second"/>
    <event>
      <string key="concept:name" value="c"/>
      <string key="task" value="t2"/>
      <date key="time:timestamp" value="2020-05-02T00:00:00+00:00"/>
    </event>
    <event>
      <string key="concept:name" value="a"/>
      <string key="task" value="t1"/>
    </event>
  </trace>
  <trace>
    <string key="concept:name" value="third &amp; last"/>
  </trace>
</log>
"""
# first: b is at 10:00 UTC, a and c tie at 09:30 UTC (file order a, c).
# second: one event lacks a time, so the trace keeps file order.
XES_SEQUENCES = [("a", "c", "b"), ("c", "a"), ()]


def put(tmp_path: Path, name: str, text: str | bytes, gz: bool = False) -> tuple[Path, bytes]:
    """Write a fixture (gzip-compressed when ``gz``); return its path and decoded bytes."""
    raw = text.encode() if isinstance(text, str) else text
    path = tmp_path / (name + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path, read_bytes(path)


def csv_log(tmp_path: Path, text: str, gz: bool = False, **options) -> SequenceDB:
    path, data = put(tmp_path, "log.csv", text, gz)
    return read_csv_log(path, data, **options)


def xes_log(tmp_path: Path, text: str, gz: bool = False, **options) -> SequenceDB:
    path, data = put(tmp_path, "log.xes", text, gz)
    return read_xes(path, data, **options)


def raises_input_error(match_all: list[str], fn, *args, **kwargs) -> str:
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    message = str(info.value)
    for part in match_all:
        assert part in message, message
    assert "\n" not in message
    return message


# ------------------------------------------------------------------------ CSV
@pytest.mark.parametrize("gz", [False, True])
def test_csv_groups_by_case_in_time_order_with_file_order_ties(tmp_path, gz):
    db = csv_log(tmp_path, LOG_CSV, gz)
    assert list(db) == LOG_SEQUENCES
    assert db.vocab.labels == ["A", "B", "X", "Y", "Z"]
    assert db.users is None
    assert db.source["format"] == "csv"
    assert db.source["path"] == str(tmp_path / ("log.csv" + (".gz" if gz else "")))
    assert db.source["columns"] == {"case": "case_id", "activity": "activity",
                                    "timestamp": "timestamp", "user": None}
    assert db.source["cases"] == ["c2", "c1", "c3"]
    assert db.source["timestamp_kind"] == "iso"
    assert db.source["delimiter"] == ","


@pytest.mark.parametrize("latest", ["2020-01-01 05:00:00-05:00",
                                    "2020-01-01T05:00:00.000000001-0500"])  # not NumPy-readable
def test_csv_utc_offsets_order_by_instant(tmp_path, latest):
    text = ("case,event,time\n"
            "k,late,2020-01-01T09:00:00Z\n"
            "k,early,2020-01-01T10:00:00+02:00\n"  # 08:00 UTC
            f"k,latest,{latest}\n"                  # 10:00 UTC
            "k,first,2020-01-01+01:00\n")         # 23:00 UTC the day before
    assert list(csv_log(tmp_path, text)) == [("first", "early", "late", "latest")]


def test_iso_parsing_numpy_path_agrees_with_datetime():
    from dpgpu.data.eventlog import _iso_micros, _iso_vectorized

    values = np.array(["2011-10-11 13:45:40.276000+02:00", "2011-10-11T13:45:40Z",
                       "2011-10-11", " 2011-10-11T13:45 ", "2011-10-11T13:45:40-05:30",
                       "1969-12-31T23:59:59.5+00:00", "2024-02-29T23:59:59.999999+14:00"])
    keys, zoned = _iso_vectorized(values)
    assert list(zip(keys.tolist(), zoned.tolist())) == [_iso_micros(v) for v in values.tolist()]
    assert zoned.tolist() == [True, True, False, False, True, True, True]
    assert _iso_micros("1970-01-01T01:00:00+01:00") == (0, True)
    assert _iso_micros("1970-01-01") == (0, False)
    keys, zoned = _iso_vectorized(np.array(["1970-01-02T00:00:00.000001Z", "1970-01-02Z"]))
    assert keys.tolist() == [86400000001, 86400000000] and zoned.tolist() == [True, True]
    # a date with an offset but no time is midnight there (datetime reads "+" as a separator)
    assert _iso_micros("1970-01-02Z") == (86400000000, True)
    assert _iso_micros("1970-01-02+02:00") == (86400000000 - 7200000000, True)
    for odd in ["2011-10-11T10:00:00+0200", "2011-10-11T10:00+ab:cd", "", "2011-10-11T24:30"]:
        assert _iso_vectorized(np.array(["2011-10-11", odd])) is None


def _micros(y, mo, d, h=0, mi=0, s=0, us=0, offset=None):
    """``_iso_micros``'s answer, by arithmetic: microseconds since the epoch, and zoned."""
    tz = timezone.utc if offset is None else timezone(timedelta(minutes=offset))
    since = datetime(y, mo, d, h, mi, s, us, tzinfo=tz) - datetime(1970, 1, 1, tzinfo=timezone.utc)
    return since // timedelta(microseconds=1), offset is not None


#: What datetime.fromisoformat reads on Python 3.10 (3.11 reads more).
_PY310_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.(\d{3}|\d{6}))?)?"
                        r"([+-]\d{2}:\d{2})?)?")


def test_iso_offsets_and_fractions_read_alike_on_every_python(monkeypatch):
    """Regression: on Python 3.10, datetime does not read ``+02`` (an offset without its
    minutes), so such an event log read on 3.11 failed on 3.10.  Every value is rewritten
    to what 3.10 reads before datetime sees it."""
    from dpgpu.data import eventlog

    class OldDatetime(datetime):
        @classmethod
        def fromisoformat(cls, text):
            assert _PY310_ISO.fullmatch(text), f"Python 3.10 cannot read {text!r}"
            return datetime.fromisoformat(text)

    monkeypatch.setattr(eventlog, "datetime", OldDatetime)
    cases = {"2011-10-11T10:00:00+02": _micros(2011, 10, 11, 10, offset=120),
             "2011-10-11T10:00:00+0200": _micros(2011, 10, 11, 10, offset=120),
             "2011-10-11T10:00:00-05:30": _micros(2011, 10, 11, 10, offset=-330),
             "2011-10-11T10:00:00.1234567-0530": _micros(2011, 10, 11, 10, 0, 0, 123456, -330),
             "2011-10-11 10:00:00,5+01": _micros(2011, 10, 11, 10, 0, 0, 500000, 60),
             "2011-10-11T10:00z": _micros(2011, 10, 11, 10, offset=0),
             "2011-10-11T10:00:00.25": _micros(2011, 10, 11, 10, 0, 0, 250000),
             "2011-10-11-03": _micros(2011, 10, 11, offset=-180),
             "2011-10-11": _micros(2011, 10, 11)}
    assert {text: eventlog._iso_micros(text) for text in cases} == cases


def test_csv_numeric_timestamps_and_integer_labels(tmp_path):
    text = ("session;item;ts\n"
            "s1;10;3\n"
            "s1;2;1.5\n"
            "s2;10;-4\n"
            "s1;10;2\n"
            "s2;9;-7\n")
    db = csv_log(tmp_path, text)
    assert list(db) == [("2", "10", "10"), ("9", "10")]
    assert db.vocab.labels == ["2", "9", "10"]
    assert db.source["delimiter"] == ";"
    assert db.source["timestamp_kind"] == "numeric"


def test_csv_large_integer_timestamps_keep_their_precision(tmp_path):
    # nanoseconds since the epoch differ in the last digit only: float64 would tie them
    text = ("case,activity,timestamp\n"
            "c,second,1600000000000000002\n"
            "c,first,1600000000000000001\n")
    assert list(csv_log(tmp_path, text)) == [("first", "second")]


def test_csv_explicit_columns_delimiter_and_quoting(tmp_path):
    text = ('who\tpage\twhen\textra\n'
            'u1\t"home, main"\t2\tx\n'
            'u1\t"say ""hi"""\t1\ty\n'
            'u2\thome\t5\tz\n')
    db = csv_log(tmp_path, text, case="who", activity="page", timestamp="when",
                 delimiter="\t")
    assert list(db) == [('say "hi"', "home, main"), ("home",)]


def test_csv_without_timestamp_column_keeps_file_order(tmp_path):
    db = csv_log(tmp_path, "CaseID,Activity\nb,2\na,1\nb,1\n\nb,3\n")
    assert list(db) == [("2", "1", "3"), ("1",)]
    assert db.source["columns"]["timestamp"] is None
    assert db.source["timestamp_kind"] is None


def test_csv_user_column(tmp_path):
    text = ("case,activity,user\n"
            "c1,A,bob\n"
            "c2,B,alice\n"
            "c1,B,bob\n"
            "c3,A,bob\n")
    db = csv_log(tmp_path, text, user="user")
    assert list(db) == [("A", "B"), ("B",), ("A",)]
    assert db.users.dtype == np.int32
    assert db.users.tolist() == [0, 1, 0]
    assert db.source["user_labels"] == ["bob", "alice"]
    assert db.source["columns"]["user"] == "user"


def test_csv_case_with_two_users(tmp_path):
    text = "case,activity,user\nc1,A,bob\nc2,B,al\nc1,B,eve\n"
    path, data = put(tmp_path, "log.csv", text)
    raises_input_error([str(path), "line 4", "'c1'", "'bob'", "'eve'"],
                       read_csv_log, path, data, user="user")


def test_csv_missing_columns_name_the_option_and_list_the_columns(tmp_path):
    path, data = put(tmp_path, "log.csv", "who,what,when\na,b,1\n")
    raises_input_error([str(path), "--case", "who, what, when"], read_csv_log, path, data)
    raises_input_error([str(path), "'session'", "--case", "who, what, when"],
                       read_csv_log, path, data, case="session", activity="what")
    raises_input_error([str(path), "'kind'", "--activity"], read_csv_log, path, data,
                       case="who", activity="kind")
    raises_input_error([str(path), "'clock'", "--timestamp"], read_csv_log, path, data,
                       case="who", activity="what", timestamp="clock")
    raises_input_error([str(path), "'uid'", "--user"], read_csv_log, path, data,
                       case="who", activity="what", user="uid")


@pytest.mark.parametrize("stamp", ["2020-13-45T00:00:00", "yesterday", "", "nan"])
def test_csv_bad_timestamp_names_file_line_and_column(tmp_path, stamp):
    first = "2020-01-01T00:00:00" if stamp.startswith("2020") else "7"
    text = f"case,activity,timestamp\nc,A,{first}\nc,B,{first}\nc,C,{stamp}\n"
    path, data = put(tmp_path, "log.csv", text)
    raises_input_error([str(path), "line 4", "'timestamp'", "timestamp"],
                       read_csv_log, path, data)


def test_csv_error_lines_count_blank_lines_and_quoted_newlines(tmp_path):
    text = 'case,activity,timestamp\n\nc,"two\nlines",1\n\nc,B,oops\n'
    path, data = put(tmp_path, "log.csv", text)
    raises_input_error([str(path), "line 6:"], read_csv_log, path, data)


def test_csv_empty_activity_and_case(tmp_path):
    path, data = put(tmp_path, "log.csv", "case,activity\nc,A\nc, \n")
    raises_input_error([str(path), "line 3", "empty activity"], read_csv_log, path, data)
    path, data = put(tmp_path, "log2.csv", "case,activity\nc,A\n,B\n")
    raises_input_error([str(path), "line 3", "empty case"], read_csv_log, path, data)


def test_csv_ragged_row_and_one_column_header(tmp_path):
    path, data = put(tmp_path, "log.csv", "case,activity\nc,A\nc,B,extra\n")
    raises_input_error([str(path), "line 3", "3 fields", "header has 2"],
                       read_csv_log, path, data)
    path, data = put(tmp_path, "one.csv", "case activity\nc A\n")
    raises_input_error([str(path), "line 1", "one column"], read_csv_log, path, data)


def test_csv_header_only_gives_an_empty_database(tmp_path):
    db = csv_log(tmp_path, "case,activity\n")
    assert len(db) == 0 and db.vocab.size == 0


@pytest.mark.parametrize("option, value", [("case", 3), ("activity", ""), ("timestamp", ["t"]),
                                           ("user", b"u"), ("delimiter", ",,"),
                                           ("delimiter", 9)])
def test_csv_bad_options_name_the_parameter(tmp_path, option, value):
    path, data = put(tmp_path, "log.csv", LOG_CSV)
    with pytest.raises(InvalidParameter, match=f"^{option}:"):
        read_csv_log(path, data, **{option: value})


def test_csv_binary_garbage(tmp_path):
    path, data = put(tmp_path, "log.csv", b"case,activity\nc,\xff\xfe\n")
    raises_input_error([str(path), "line 2"], read_csv_log, path, data)


# ------------------------------------------------------------------------ XES
@pytest.mark.parametrize("gz", [False, True])
def test_xes_traces_in_time_order(tmp_path, gz):
    db = xes_log(tmp_path, XES, gz)
    assert list(db) == XES_SEQUENCES
    assert db.vocab.labels == ["a", "b", "c"]
    assert db.source["format"] == "xes"
    assert db.source["cases"] == ["first", "second", "third & last"]
    assert db.source["columns"] == {"activity": "concept:name", "timestamp": "time:timestamp"}


def test_xes_other_activity_key_and_no_timestamps(tmp_path):
    text = """<log><trace><event><string key="task" value="t2"/></event>
      <event><string key="task" value="t1"/></event></trace>
      <trace><event><string key="task" value="t1"/></event></trace></log>"""
    db = xes_log(tmp_path, text, activity="task")
    assert list(db) == [("t2", "t1"), ("t1",)]
    assert db.source["cases"] == [None, None]
    assert db.source["timestamp_kind"] is None


def test_xes_prefixed_element_names(tmp_path):
    text = """<?xml version="1.0"?>
<xes:log xmlns:xes="http://www.xes-standard.org/">
 <xes:trace><xes:string key="concept:name" value="t"/>
  <xes:event><xes:string key="concept:name" value="q"/><xes:int key="time:timestamp" value="2"/></xes:event>
  <xes:event><xes:string key="concept:name" value="p"/><xes:int key="time:timestamp" value="1"/></xes:event>
 </xes:trace>
</xes:log>"""
    db = xes_log(tmp_path, text)
    assert list(db) == [("p", "q")]
    assert db.source["timestamp_kind"] == "numeric"


def test_xes_malformed_xml_names_the_line(tmp_path):
    broken = XES.replace("<string key=\"concept:name\" value=\"c\"/>\n      <string key=\"task\"",
                         "<string key=\"concept:name\" value=\"c\">\n      <string key=\"task\"")
    assert broken != XES
    path, data = put(tmp_path, "log.xes", broken)
    raises_input_error([str(path), "line ", "malformed XML"], read_xes, path, data)
    path, data = put(tmp_path, "cut.xes", XES[:500])
    raises_input_error([str(path), "line ", "malformed XML"], read_xes, path, data)


def test_xes_entity_bomb_is_rejected(tmp_path):
    bomb = ('<?xml version="1.0"?>\n<!DOCTYPE log [\n<!ENTITY a "aaaaaaaaaa">\n'
            + "".join(f'<!ENTITY {n} "{("&" + p + ";") * 10}">\n'
                      for p, n in zip("abcdefgh", "bcdefghi"))
            + ']>\n<log><trace><event><string key="concept:name" value="&i;"/></event>'
            '</trace></log>\n')
    path, data = put(tmp_path, "bomb.xes", bomb)
    raises_input_error([str(path), "line 2", "DOCTYPE"], read_xes, path, data)
    assert looks_like_xes(data[:200])


def test_xes_undefined_entity_and_wrong_root(tmp_path):
    path, data = put(tmp_path, "ent.xes", '<log>\n<trace a="&x;"/></log>')
    raises_input_error([str(path), "line 2", "malformed XML"], read_xes, path, data)
    path, data = put(tmp_path, "root.xes", '<?xml version="1.0"?>\n<html><log/></html>')
    raises_input_error([str(path), "line 2", "<html>"], read_xes, path, data)


def test_xes_event_problems_name_the_line(tmp_path):
    no_activity = XES.replace('<string key="concept:name" value="a"/>\n      <string key="task"',
                              '<string key="task"')
    path, data = put(tmp_path, "noact.xes", no_activity)
    raises_input_error([str(path), "line 29", "'concept:name'", "--activity"],
                       read_xes, path, data)
    bad_time = XES.replace("2020-05-02T00:00:00", "2020-05-02T25:00:00")
    path, data = put(tmp_path, "badtime.xes", bad_time)
    raises_input_error([str(path), "line 24", "'time:timestamp'"], read_xes, path, data)
    empty = XES.replace('value="b"', 'value=""')
    path, data = put(tmp_path, "empty.xes", empty)
    raises_input_error([str(path), "line 8", "empty activity"], read_xes, path, data)
    stray = '<log>\n<event><string key="concept:name" value="a"/></event></log>'
    path, data = put(tmp_path, "stray.xes", stray)
    raises_input_error([str(path), "line 2", "outside a <trace>"], read_xes, path, data)


def test_xes_bad_option(tmp_path):
    path, data = put(tmp_path, "log.xes", XES)
    with pytest.raises(InvalidParameter, match="^activity:"):
        read_xes(path, data, activity=1)


# ------------------------------------------------------------------ detection
@pytest.mark.parametrize("head, expected", [
    (XES.encode(), True),
    (b"\xef\xbb\xbf<?xml version='1.0'?>\n<!-- made by hand -->\n<log>", True),
    (b"<log xes.version='1.0'>", True),
    (b"<?xml version='1.0' encoding='UTF-8'?>\n", True),
    (b"<?xml version='1.0'?><html></html>", False),
    (b"<logbook/>", False),
    (LOG_CSV.encode(), False),
    (b"1 2 3\n4 5\n", False),
])
def test_looks_like_xes(head, expected):
    assert looks_like_xes(head) is expected


@pytest.mark.parametrize("head, expected", [
    (LOG_CSV.encode(), True),
    (b"\xef\xbb\xbfsession;page;time\ns;p;1\n", True),
    (b"Case ID\tActivity\n1\tA\n", True),
    (b"id,weight,male\n1,0.5,1\n", False),      # a table, but not an event log
    (b"1,2,3\n4,5,6\n", False),
    (b"case,\n", False),
    (b"a b c\nd e\n", False),
    (XES.encode(), False),
    (b"\xff\xfe\x00c\x00a", False),
])
def test_looks_like_csv_log(head, expected):
    assert looks_like_csv_log(head) is expected


# ------------------------------------------------------------------- writing
def write_text(writer, db) -> str:
    stream = io.StringIO()
    writer(db, stream)
    return stream.getvalue()


def test_csv_writer_output_by_hand():
    db = SequenceDB.from_sequences([["go", "stop"], [], ["go"]])
    assert write_text(write_csv_log, db) == (
        "case:concept:name,concept:name,time:timestamp\n"
        "case-1,go,2000-01-01T00:00:00+00:00\n"
        "case-1,stop,2000-01-01T00:00:01+00:00\n"
        "case-3,go,2000-01-01T00:00:00+00:00\n")


def test_csv_writer_keeps_input_columns_delimiter_and_numeric_times(tmp_path):
    db = csv_log(tmp_path, "session;item;ts;u\ns1;10;3;x\ns1;2;1.5;x\ns2;10;-4;y\n", user="u")
    assert write_text(write_csv_log, db) == (
        "session;item;ts;u\n"
        "s1;2;0;x\n"
        "s1;10;1;x\n"
        "s2;10;0;y\n")


def test_xes_writer_output_by_hand():
    db = SequenceDB.from_sequences([['a"<&>', "b"]])
    text = write_text(write_xes, db)
    assert '<trace>\n\t\t<string key="concept:name" value="case-1"/>' in text
    assert ('<event>\n\t\t\t<string key="concept:name" value="a&quot;&lt;&amp;&gt;"/>\n'
            '\t\t\t<date key="time:timestamp" value="2000-01-01T00:00:00.000+00:00"/>\n'
            '\t\t</event>') in text
    assert '<date key="time:timestamp" value="2000-01-01T00:00:01.000+00:00"/>' in text
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<log ')
    assert text.endswith("</log>\n")


def same(a: SequenceDB, b: SequenceDB) -> None:
    assert list(a) == list(b)
    assert a.vocab == b.vocab
    assert (a.users is None) == (b.users is None)
    if a.users is not None:
        assert a.users.tolist() == b.users.tolist()


def write_file(db: SequenceDB, path: Path, writer, binary: bool = False) -> Path:
    with atomic_output(path, binary=binary) as stream:
        writer(db, stream)
    return path


@pytest.mark.parametrize("name", ["out.csv", "out.csv.gz"])
def test_csv_round_trip(tmp_path, name):
    db = csv_log(tmp_path, USER_CSV, user="user")
    out = write_file(db, tmp_path / name, write_csv_log)
    again = read_csv_log(out, read_bytes(out), user="user")
    same(db, again)
    assert db.users.tolist() == [0, 1, 0]
    assert again.source["cases"] == ["c2", "c1", "c3"]
    assert again.source["user_labels"] == ["ann", "bo"]


@pytest.mark.parametrize("name", ["out.xes", "out.xes.gz"])
def test_xes_round_trip(tmp_path, name):
    db = xes_log(tmp_path, XES)
    out = write_file(db, tmp_path / name, write_xes)
    again = read_xes(out, read_bytes(out))
    same(db, again)
    assert again.source["cases"] == ["first", "second", "third & last"]


def test_xes_round_trip_keeps_a_custom_activity_key(tmp_path):
    text = ('<log><trace><event><string key="task" value="a\tb"/></event>'
            '<event><string key="task" value="c"/></event></trace></log>')
    db = xes_log(tmp_path, text, activity="task")
    out = write_file(db, tmp_path / "out.xes", write_xes)
    same(db, read_xes(out, read_bytes(out), activity="task"))


def test_cross_format_round_trips(tmp_path):
    db = xes_log(tmp_path, XES)
    out = write_file(db, tmp_path / "x.csv", write_csv_log)
    again = read_csv_log(out, read_bytes(out))
    assert list(again) == [("a", "c", "b"), ("c", "a")]  # the empty trace has no rows
    assert again.source["cases"] == ["first", "second"]
    out = write_file(again, tmp_path / "x.xes", write_xes)
    assert list(read_xes(out, read_bytes(out))) == [("a", "c", "b"), ("c", "a")]


def test_case_names_follow_selected_sequences_and_are_dropped_when_they_no_longer_fit(tmp_path):
    db = csv_log(tmp_path, LOG_CSV)
    sub = db.select([2, 0])
    out = write_file(sub, tmp_path / "sub.csv", write_csv_log)
    again = read_csv_log(out, read_bytes(out))
    assert list(again) == [("Z",), ("A", "B", "A")]
    assert again.source["cases"] == [db.source["cases"][2], db.source["cases"][0]]
    sub.source["cases"] = sub.source["cases"][:1]  # no longer one name per sequence
    out = write_file(sub, tmp_path / "sub2.csv", write_csv_log)
    assert read_csv_log(out, read_bytes(out)).source["cases"] == ["case-1", "case-2"]


# ------------------------------------------------------------------- Parquet
@pytest.fixture
def arrow():
    """``(pyarrow, pyarrow.parquet)``; skips where pyarrow (an optional dependency) is missing."""
    return pytest.importorskip("pyarrow"), pytest.importorskip("pyarrow.parquet")


def test_parquet_typed_timestamps_and_user(tmp_path, arrow):
    pa, pq = arrow
    stamps = [f"2021-03-01T{h:02d}:00:00" for h in (10, 12, 11, 9, 11, 8, 10)]
    table = pa.table({
        "case_id": ["c2", "c1", "c2", "c1", "c2", "c3", "c1"],
        "activity": pa.array(["A", "X", "B", "Y", "A", "Z", "Z"]).dictionary_encode(),
        "timestamp": pa.array(np.array(stamps, dtype="datetime64[us]"), pa.timestamp("us")),
        "who": [1, 2, 1, 2, 1, 1, 2],
    })
    pq.write_table(table, tmp_path / "log.parquet")
    db = read_parquet_log(tmp_path / "log.parquet", user="who")
    assert list(db) == LOG_SEQUENCES
    assert db.users.tolist() == [0, 1, 0]
    assert db.source["format"] == "parquet"
    assert db.source["timestamp_kind"] == "datetime"


def test_parquet_string_and_numeric_timestamps(tmp_path, arrow):
    pa, pq = arrow
    pq.write_table(pa.table({"case": ["k", "k"], "event": ["b", "a"],
                             "time": ["2020-01-01T09:00:00Z", "2020-01-01T10:00:00+02:00"]}),
                   tmp_path / "s.parquet")
    assert list(read_parquet_log(tmp_path / "s.parquet")) == [("a", "b")]
    pq.write_table(pa.table({"case": [7, 7, 8], "item": [3, 1, 2], "ts": [2.5, 1.0, 0.0]}),
                   tmp_path / "n.parquet")
    db = read_parquet_log(tmp_path / "n.parquet")
    assert list(db) == [("1", "3"), ("2",)]
    assert db.source["cases"] == ["7", "8"]


def test_parquet_errors(tmp_path, arrow):
    pa, pq = arrow
    pq.write_table(pa.table({"case": ["k", None], "activity": ["a", "b"]}),
                   tmp_path / "null.parquet")
    raises_input_error([str(tmp_path / "null.parquet"), "row 2", "empty case"],
                       read_parquet_log, tmp_path / "null.parquet")
    raises_input_error([str(tmp_path / "null.parquet"), "'act'", "--activity",
                        "case, activity"],
                       read_parquet_log, tmp_path / "null.parquet", activity="act")
    pq.write_table(pa.table({"case": ["k", "k"], "activity": ["a", "b"],
                             "timestamp": ["1", "soon"]}), tmp_path / "bad.parquet")
    raises_input_error([str(tmp_path / "bad.parquet"), "row 2", "'timestamp'"],
                       read_parquet_log, tmp_path / "bad.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 not really")
    raises_input_error([str(tmp_path / "junk.parquet"), "Parquet"],
                       read_parquet_log, tmp_path / "junk.parquet")
    raises_input_error([str(tmp_path / "none.parquet"), "no such file"],
                       read_parquet_log, tmp_path / "none.parquet")


def test_parquet_round_trip(tmp_path, arrow):
    _, pq = arrow
    db = csv_log(tmp_path, USER_CSV, user="user")
    out = write_file(db, tmp_path / "out.parquet", write_parquet_log, binary=True)
    again = read_parquet_log(out, user="user")
    same(db, again)
    assert pq.read_table(out).column_names == ["case_id", "activity", "timestamp", "user"]
    assert again.source["timestamp_kind"] == "datetime"
    write_parquet_log(again, tmp_path / "direct.parquet")
    same(db, read_parquet_log(tmp_path / "direct.parquet", user="user"))


def test_without_pyarrow(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    assert list(csv_log(tmp_path, LOG_CSV)) == LOG_SEQUENCES
    raises_input_error(["pip install dpgpu[parquet]"], read_parquet_log, tmp_path / "x.parquet")
    with pytest.raises(InvalidParameter, match=r"pip install dpgpu\[parquet\]"):
        write_parquet_log(SequenceDB.from_sequences([["a"]]), tmp_path / "x.parquet")


def test_csv_reading_does_not_import_pyarrow(tmp_path):
    path, _ = put(tmp_path, "log.csv", LOG_CSV)
    code = ("import sys; from dpgpu.data.io import read_bytes; "
            "from dpgpu.data.eventlog import read_csv_log; "
            f"db = read_csv_log({str(path)!r}, read_bytes({str(path)!r})); "
            "assert len(db) == 3; assert 'pyarrow' not in sys.modules, 'pyarrow imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


# -------------------------------------------------------------- real datasets
def stats_of(db: SequenceDB) -> tuple:
    return (len(db), db.vocab.size, db.n_events, round(float(db.lengths.mean()), 3),
            db.max_length, int(db.lengths.min()), len(set(db)))


@needs("helpdesk/helpdesk.xes.gz")
def test_helpdesk_xes_gz():
    path = dataset("helpdesk/helpdesk.xes.gz")
    db = read_xes(path, read_bytes(path))
    # README: traces 4,580; events 21,348; 14 activities; avg 4.661; max 15; min 2; 226 variants
    assert stats_of(db) == (4580, 14, 21348, 4.661, 15, 2, 226)
    counts = dict(zip(db.vocab.labels, np.bincount(db.items).tolist()))
    assert counts["Take in charge ticket"] == 5060 and counts["DUPLICATE"] == 1
    assert db.source["cases"][0] == "Case 1"


@needs("roadtraffic100/roadtraffic100traces.xes")
def test_roadtraffic_xes():
    path = dataset("roadtraffic100/roadtraffic100traces.xes")
    db = read_xes(path, read_bytes(path))
    # README: traces 100; events 390; 10 activities; avg 3.9; max 9; min 2; 10 variants
    assert stats_of(db) == (100, 10, 390, 3.9, 9, 2, 10)
    assert db[0] == ("Create Fine", "Send Fine")
    assert db.source["cases"][:2] == ["N77802", "A17641"]


@needs("receipt/receipt.csv.gz")
def test_receipt_csv_gz():
    path = dataset("receipt/receipt.csv.gz")
    db = read_csv_log(path, read_bytes(path))
    # README: cases 1,434; events 8,577; 27 activities; avg 5.981; max 25; min 1
    assert stats_of(db)[:6] == (1434, 27, 8577, 5.981, 25, 1)
    counts = dict(zip(db.vocab.labels, np.bincount(db.items).tolist()))
    assert counts["Confirmation of receipt"] == 1434
    assert counts["T06 Determine necessity of stop advice"] == 1416
    assert counts["T09-2 Process or receive external advice from party 2"] == 1  # rarest
    assert db.source["columns"] == {"case": "case:concept:name", "activity": "concept:name",
                                    "timestamp": "time:timestamp", "user": None}
    assert db.source["cases"][0] == "case-10011"
    assert db[0][:2] == ("Confirmation of receipt", "T02 Check confirmation of receipt")


@needs("roadtraffic100/roadtraffic100traces.xes", "receipt/receipt.csv.gz")
def test_real_logs_round_trip(tmp_path):
    for path, reader, writer, name in [
            (dataset("roadtraffic100/roadtraffic100traces.xes"), read_xes, write_xes, "r.xes"),
            (dataset("receipt/receipt.csv.gz"), read_csv_log, write_csv_log, "r.csv.gz")]:
        db = reader(path, read_bytes(path))
        out = write_file(db, tmp_path / name, writer)
        same(db, reader(out, read_bytes(out)))


@pytest.mark.parametrize("option, key", [("timestamp", "nope"), ("activity", "nope"),
                                         ("timestamp", "lifecycle:transition")])
def test_xes_a_key_no_event_has_is_refused_naming_the_option(tmp_path, capsys, option, key):
    """From a review: ``--timestamp nope`` was ignored on XES (events kept file order),
    where the CSV reader refuses a column that is not there."""
    from dpgpu.cli import main

    path, data = put(tmp_path, "log.xes", XES)
    raises_input_error([str(path), f"no event attribute {key!r} for --{option}",
                        "(event attribute keys: concept:name, org:resource, task, "
                        "time:timestamp)"], read_xes, path, data, **{option: key})
    assert main(["stats", str(path), f"--{option}", key]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpgpu: error: ") and len(err.strip().splitlines()) == 1
    assert f"--{option}" in err and "Traceback" not in err


def test_xes_timestamp_key_given_must_exist_but_the_default_may_be_absent(tmp_path):
    text = """<log><trace><event><string key="task" value="t2"/><int key="at" value="2"/>
      </event><event><string key="task" value="t1"/><int key="at" value="1"/></event>
      </trace></log>"""
    path, data = put(tmp_path, "log.xes", text)
    assert list(read_xes(path, data, activity="task")) == [("t2", "t1")]
    assert list(read_xes(path, data, activity="task", timestamp="at")) == [("t1", "t2")]
    raises_input_error(["'time:timestamp' for --timestamp", "keys: at, task"],
                       read_xes, path, data, activity="task", timestamp="time:timestamp")


@pytest.mark.parametrize("given", ["\\t", "tab", "TAB"])
def test_csv_delimiter_tab_may_be_given_as_typed_in_a_shell(tmp_path, capsys, given):
    """``--delimiter '\\t'`` passes backslash-t, which was refused as not one character."""
    from dpgpu.cli import main

    text = "case\tstep;kind;name\n1\ta;b;c\n1\td;e;f\n2\ta;b;c\n"  # sniffing would pick ";"
    db = csv_log(tmp_path, text, activity="step;kind;name", delimiter=given)
    assert list(db) == [("a;b;c", "d;e;f"), ("a;b;c",)] and db.source["delimiter"] == "\t"
    path = tmp_path / "log.csv"
    assert main(["stats", str(path), "--activity", "step;kind;name", "--delimiter", given,
                 "--json"]) == 0
    assert '"sequences": 2' in capsys.readouterr().out
    with pytest.raises(InvalidParameter, match=r"^delimiter: expected one character \(or "):
        csv_log(tmp_path, text, delimiter="\\s")


# ------------------------------------------------- CSV read a block at a time
def brute_force_groups(events: list[tuple]) -> tuple[list[str], list[tuple]]:
    """Case names in order of first appearance and each case's activities by (time, file order)."""
    cases: dict[str, list] = {}
    for position, (name, activity, when) in enumerate(events):
        cases.setdefault(name, []).append((when, position, activity))
    return list(cases), [tuple(a for _, _, a in sorted(group)) for group in cases.values()]


def random_log(rng, n_events: int, kind: str) -> tuple[str, list[tuple]]:
    """A CSV log of interleaved cases with awkward fields, and its events (case, activity, key)."""
    names = ["c,1", 'c"2', "c 3", "c\n4", "c5", "é6", "c;7", "c8"]
    labels = ["a", "b,c", 'say "hi"', "two\nlines", "x\r\ny", " pad ", "z|z", "ü"]
    zones = [0, 120, -330, 60 * 14]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator=rng.choice(["\n", "\r\n"]))
    writer.writerow(["case_id", "activity", "timestamp", "other"])
    events = []
    for i in range(n_events):
        name, label = rng.choice(names), rng.choice(labels)
        seconds = rng.randrange(40)  # few distinct times: many ties
        if kind == "iso":
            zone = rng.choice(zones)
            local = datetime(2021, 3, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds,
                                                                          minutes=zone)
            stamp = local.replace(tzinfo=timezone(timedelta(minutes=zone))).isoformat()
            stamp = stamp.replace("+00:00", "Z") if rng.random() < 0.3 else stamp
        else:  # integers at first, fractions later: the keys become float64
            stamp = str(seconds) if i < n_events // 2 else f"{seconds}.0"
        writer.writerow([name, label, stamp, "x" * rng.randrange(3)])
        if rng.random() < 0.05:
            out.write("\n")  # a blank line
        events.append((name, label, seconds))
    return out.getvalue(), events


@pytest.mark.parametrize("kind", ["iso", "numeric"])
@pytest.mark.parametrize("seed", [1, 2])
def test_csv_read_in_blocks_groups_like_brute_force(tmp_path, monkeypatch, kind, seed):
    import random

    from dpgpu.data import eventlog

    monkeypatch.setattr(eventlog, "_BLOCK_ROWS", 7)  # many blocks
    text, events = random_log(random.Random(seed), 300, kind)
    names, sequences = brute_force_groups(events)
    for bom in ("", "\ufeff"):
        db = csv_log(tmp_path, bom + text)
        assert list(db) == sequences
        assert db.source["cases"] == names
        assert db.vocab.labels == sorted({e[1] for e in events})
        assert db.source["timestamp_kind"] == kind
        assert db.source["columns"]["case"] == "case_id"


def test_csv_user_column_read_in_blocks(tmp_path, monkeypatch):
    from dpgpu.data import eventlog

    monkeypatch.setattr(eventlog, "_BLOCK_ROWS", 2)
    db = csv_log(tmp_path, USER_CSV, user="user")
    assert list(db) == LOG_SEQUENCES
    assert db.users.tolist() == [0, 1, 0] and db.source["user_labels"] == ["ann", "bo"]
    text = USER_CSV + "c2,B,2021-03-01T13:00:00+00:00,bo\n"
    path, data = put(tmp_path, "two.csv", text)
    raises_input_error([str(path), "line 9", "'c2'", "('ann' and 'bo')"], read_csv_log, path,
                       data, user="user")


def test_csv_timestamps_numpy_cannot_read_in_a_later_block(tmp_path, monkeypatch):
    """Every timestamp is parsed by datetime once one is not NumPy-readable, as when the
    whole column was parsed at once: "2020-01" (NumPy reads it, datetime does not) is
    refused even when the unreadable "+0200" comes blocks later."""
    from dpgpu.data import eventlog

    monkeypatch.setattr(eventlog, "_BLOCK_ROWS", 2)
    rows = ["k,b,2020-01-01T10:00:00Z", "k,a,2020-01-01T09:00:00Z", "j,c,2020-01-01Z",
            "k,c,2020-01-01T08:00:00Z", "j,a,2020-01-01T12:00:00+0200"]
    text = "case,activity,timestamp\n" + "\n".join(rows) + "\n"
    assert list(csv_log(tmp_path, text)) == [("c", "a", "b"), ("c", "a")]
    path, data = put(tmp_path, "bad.csv", text.replace("j,c,2020-01-01Z", "j,c,2020-01"))
    raises_input_error([str(path), "line 4:", "'2020-01'"], read_csv_log, path, data)
    path, data = put(tmp_path, "good.csv", text.replace("+0200", "+02:00"))
    assert list(read_csv_log(path, data)) == [("c", "a", "b"), ("c", "a")]


def test_csv_errors_keep_their_precedence_across_blocks(tmp_path, monkeypatch):
    """The whole file is read before the columns are checked, as before: a malformed
    line comes first, then a ragged row, then a bad timestamp, then an empty case."""
    from dpgpu.data import eventlog

    monkeypatch.setattr(eventlog, "_BLOCK_ROWS", 2)
    good = ["c,A,1"] * 6
    cases = {  # (rows after the header, expected line number and words)
        "ragged": (["c,A,1", "c,A,oops", ",A,1"] + good + ["c,A"], ["line 11", "2 fields"]),
        "time": ([",A,1", "c,A,1"] + good + ["c,A,oops"], ["line 10", "'oops'"]),
        "empty": (good + [" ,A,1"], ["line 8", "empty case"]),
        "malformed": (["c,A"] + good + ["c,A," + "x" * (csv.field_size_limit() + 1)],
                      ["line 9", "malformed CSV"]),
    }
    for name, (rows, words) in cases.items():
        path, data = put(tmp_path, f"{name}.csv", "case,activity,time\n" + "\n".join(rows))
        raises_input_error([str(path)] + words, read_csv_log, path, data)
    path, data = put(tmp_path, "late.csv",
                     "who,activity\n" + "c,A\n" * 6 + "c," + "x" * (csv.field_size_limit() + 1))
    raises_input_error([str(path), "line 8", "malformed CSV"], read_csv_log, path, data)


def test_csv_header_line_ends_where_splitlines_ends_it():
    from dpgpu.data.eventlog import _first_line

    for sep in ["\n", "\r\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028",
                "\u2029", ""]:
        text = "café,ü€𝄞" + sep + "rest\n"
        data = ("\ufeff" + text).encode()
        assert _first_line(data, 3) == text.splitlines()[0]


def test_csv_long_reads_log_progress(tmp_path, monkeypatch, caplog):
    from dpgpu.data import eventlog

    monkeypatch.setattr(eventlog, "_BLOCK_ROWS", 2)
    monkeypatch.setattr(reading, "PROGRESS_SECONDS", -1.0)
    with caplog.at_level("INFO", logger="dpgpu"):
        assert list(csv_log(tmp_path, LOG_CSV)) == LOG_SEQUENCES
    assert any("% read (line " in r.getMessage() for r in caplog.records), caplog.records


# ------------------------------------------------------------ writing in parts
def _user_log(n_cases: int, seed: int) -> str:
    """A CSV log of ``n_cases`` cases (some with a carriage return in the name) and users."""
    rng = np.random.default_rng(seed)
    rows = ["case,act,ts,who"]
    for c in range(n_cases):
        name = f'"c{c}\r"' if c % 7 == 3 else f"c{c}"
        for j in range(int(rng.integers(1, 6))):
            rows.append(f"{name},{'ABCDE'[int(rng.integers(5))]},{j * 1.5},u{c % 4}")
    return "\n".join(rows) + "\n"


@pytest.mark.parametrize("fmt", ["csv", "parquet", "xes"])
def test_written_a_few_sequences_at_a_time_as_at_once(tmp_path, monkeypatch, fmt):
    if fmt == "parquet":
        pq = pytest.importorskip("pyarrow.parquet")
    from dpgpu.data import writers

    db = csv_log(tmp_path, _user_log(40, seed=1), case="case", activity="act", timestamp="ts",
                 user="who")
    picked = db.select([5, 2, 9, 2] + list(range(10, 40)))  # a repeated case: names dropped
    empty = SequenceDB(np.zeros(0, dtype=np.int32), np.zeros(4, dtype=np.int64), db.vocab,
                       users=np.arange(3), source=dict(db.source, cases=["e1", "e2", "e3"]))
    for i, data in enumerate((db, picked, empty)):
        whole, parted = tmp_path / f"whole{i}.{fmt}", tmp_path / f"parted{i}.{fmt}"
        monkeypatch.setattr(writers, "_CHUNK_ITEMS", 1 << 20)
        data.save(whole, format=fmt)
        monkeypatch.setattr(writers, "_CHUNK_ITEMS", 4)  # a few sequences a part
        monkeypatch.setattr(writers, "_CHUNK_SEQUENCES", 3)
        data.save(parted, format=fmt)
        if fmt == "parquet":
            assert pq.read_table(whole).equals(pq.read_table(parted))
        else:
            assert whole.read_bytes() == parted.read_bytes()
    text = (tmp_path / "whole0.csv").read_text() if fmt == "csv" else ""
    assert fmt != "csv" or text.startswith('"case","act","ts","who"\n')  # a \r: all quoted
