"""CSV event logs parsed by Arrow against the csv module: the same database or the same error.

:func:`read_csv_log` hands a log of ``_ARROW_MIN_BYTES`` or more to Arrow
where pyarrow is installed, and lets the csv module read it wherever Arrow
might read it otherwise or an error is due.  Each test reads a text both
ways -- Arrow by lowering that threshold (and often the block size, for
many blocks), the csv module by making pyarrow look missing -- and compares
everything: items, offsets, labels, users and ``source``, or the message.
A spy records whether Arrow's reading was the one kept, so that the
comparisons are not all of the csv module with itself.
"""

from __future__ import annotations

import csv
import io
import logging
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from dpgpu.data import eventlog, reading
from dpgpu.data.eventlog import read_csv_log, write_csv_log
from dpgpu.data.io import read_bytes
from shared_data import dataset, param

pytest.importorskip("pyarrow.csv")

PATH = "log.csv"


def outcome(data: bytes, **options) -> tuple:
    """Everything :func:`read_csv_log` gives for ``data``: the database, or the error."""
    try:
        db = read_csv_log(PATH, data, **options)
    except Exception as exc:  # noqa: BLE001 - any error must be the same both ways
        return ("error", f"{type(exc).__name__}: {exc}")
    users = None if db.users is None else (db.users.dtype.str, db.users.tolist())
    return ("db", db.items.dtype.str, db.items.tolist(), db.offsets.dtype.str,
            db.offsets.tolist(), db.vocab.labels, users, db.source)


@contextmanager
def patched(**values):
    """Set these attributes of :mod:`dpgpu.data.eventlog` for the block."""
    with pytest.MonkeyPatch.context() as mp:
        for name, value in values.items():
            mp.setattr(eventlog, name, value)
        yield


@contextmanager
def arrow_spy():
    """Record whether each read kept Arrow's reading (``_arrow_columns`` gave columns)."""
    kept = []
    arrow_columns = eventlog._arrow_columns

    def spy(*args):
        found = arrow_columns(*args)
        kept.append(found is not None)
        return found

    with patched(_arrow_columns=spy):
        yield kept


def by_arrow(data: bytes, block_bytes: int | None = None, **options) -> tuple[tuple, bool]:
    """:func:`outcome` with Arrow given the log whatever its size, and whether Arrow's
    reading was kept."""
    blocks = {} if block_bytes is None else {"_ARROW_BLOCK_BYTES": block_bytes}
    with arrow_spy() as kept, patched(_ARROW_MIN_BYTES=0, **blocks):
        result = outcome(data, **options)
    return result, kept == [True]


def by_csv_module(data: bytes, block_rows: int | None = None, **options) -> tuple:
    """:func:`outcome` with the csv module reading (as where pyarrow is not installed)."""
    blocks = {} if block_rows is None else {"_BLOCK_ROWS": block_rows}
    with patched(_arrow_csv=lambda: None, **blocks):
        return outcome(data, **options)


def same_both_ways(data: bytes, block_bytes: int | None = None, block_rows: int | None = None,
                   **options) -> tuple[tuple, bool]:
    """Assert that Arrow and the csv module give the same; return that and whether Arrow's
    reading was kept."""
    fast, used = by_arrow(data, block_bytes, **options)
    slow = by_csv_module(data, block_rows, **options)
    assert fast == slow
    return slow, used


# ------------------------------------------------------------- generated texts
#: Pieces of field text: delimiters, quotes, line breaks (also those only
#: str.splitlines breaks at), a BOM, non-ASCII letters.
PIECES = ["a", "b", "Z", "0", "9", " ", ",", ";", "\t", "|", '"', '""', "\n", "\r", "\r\n",
          "é", "€", "𝄞", "\u2028", "\x0b", "\x1c", "\ufeff", "-", ":", "."]
free_text = st.lists(st.sampled_from(PIECES), max_size=6).map("".join)
#: Case and activity names: a few often (repeated), any other text that is not blank.
labels = st.one_of(
    st.sampled_from(["a", "b", "c,d", 'say "hi"', "x\ny", "r\rs", " pad ", "é"]),
    st.tuples(free_text, st.sampled_from(["a", "é", "9", "𝄞"]), free_text).map("".join))
ISO = ["2021-03-01T10:00:00+00:00", "2021-03-01T09:00:00Z", "2021-03-01 08:30:00.5+02:00",
       "2021-03-01", "2021-03-01T10:00:00.123456789", " 2021-03-01T07:00 ",
       "2021-02-28T23:59:59-05:30", "2021-03-01T10:00:00z",
       "2021-03-01T12:00:00+0200"]  # NumPy cannot read the last: all are read by datetime
NUMBERS = ["3", "-4", "1.5", "1e3", "+7", " 12 ", "9007199254740993", "0", "2.25", "-0.0"]
BAD_TIMES = ["2021-13-01", "2020-01", "yesterday", "", "nan", "inf", "x1", "12:00"]
DELIMITERS = [",", ";", "\t", "|"]
CASE_NAMES = ["case", "Case ID", "case:concept:name", " session "]
ACTIVITY_NAMES = ["activity", "concept:name", "Event "]
TIME_NAMES = ["timestamp", "time:timestamp", "Time"]


#: True about once in 100 draws (not at a bound: Hypothesis draws those often).
rarely = st.integers(0, 99).map(lambda k: k == 50)


@st.composite
def event_logs(draw) -> tuple[bytes, dict]:
    """A CSV event log written by the csv module, and the options to read it with.

    The rows may hold any of :data:`PIECES`; blank lines, a BOM, each line
    ending, quoting everything or only where needed; empty values, bad
    timestamps and cases of two users now and then.
    """
    delimiter = draw(st.sampled_from(DELIMITERS))
    columns = {"case": draw(st.sampled_from(CASE_NAMES)),
               "activity": draw(st.sampled_from(ACTIVITY_NAMES))}
    if draw(st.booleans()):
        columns["timestamp"] = draw(st.sampled_from(TIME_NAMES))
    if draw(st.booleans()):
        columns["user"] = "user"
    columns.update({f"other{k}": f"other{k}" for k in range(draw(st.integers(0, 2)))})
    order = draw(st.permutations(list(columns)))
    good_times = st.sampled_from(ISO if draw(st.booleans()) else NUMBERS)
    bad_times = st.sampled_from(BAD_TIMES)
    cases = draw(st.lists(labels, min_size=1, max_size=5)) + [""] * draw(rarely)
    owner = {c: draw(st.sampled_from(["ann", "bo", "c,d"])) for c in cases}
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter=delimiter, lineterminator=ending,
                        quoting=draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL])))
    writer.writerow([columns[role] for role in order])
    for _ in range(draw(st.integers(0, 30))):
        case = draw(st.sampled_from(cases))
        values = {"case": case, "activity": " " if draw(rarely) else draw(labels),
                  "user": "eve" if draw(rarely) else owner[case]}
        stamp = draw(bad_times if draw(rarely) else good_times)
        writer.writerow([stamp if role == "timestamp" else values.get(role, draw(free_text))
                         for role in order])
        if draw(st.integers(0, 9)) == 5:
            out.write(draw(st.sampled_from(["\n", "\r\n", "\r", "\n\n"])))  # blank lines
    text = out.getvalue()
    if draw(st.booleans()):
        text = text.rstrip("\r\n")
    if draw(st.booleans()):
        text = "\ufeff" + text
    options = {}
    if "user" in columns:
        options["user"] = "user"
    if draw(st.booleans()):
        options["delimiter"] = delimiter
    if draw(st.booleans()):
        options.update(case=columns["case"].strip(), activity=columns["activity"].strip())
    return text.encode(), options


@st.composite
def damaged_logs(draw) -> tuple[bytes, dict]:
    """An :func:`event_logs` log with a few characters inserted or deleted anywhere."""
    data, options = draw(event_logs())
    text = data.decode()
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()) and at < len(text):
            text = text[:at] + text[at + 1:]
        else:
            text = text[:at] + draw(st.sampled_from(['"', ",", ";", "\t", "\n", "\r", "x",
                                                     "\ufeff", " "])) + text[at:]
    return text.encode(), options


block_bytes = st.sampled_from([64, 256, 4096, 1 << 20])
block_rows = st.sampled_from([1, 3, 1 << 16])
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(log=event_logs(), arrow_block=block_bytes, csv_block=block_rows)
@example(log=(b'case,activity,other0\ra,a,"\r"\r', {}), arrow_block=64, csv_block=1)
def test_written_logs_read_the_same_and_by_arrow(log, arrow_block, csv_block):
    data, options = log
    result, used = same_both_ways(data, arrow_block, csv_block, **options)
    event(f"Arrow's reading kept: {used}; {result[0]}")  # --hypothesis-show-statistics
    # Arrow's reading is kept for every log the csv module reads, and for the errors
    # found after the columns are read, where a block holds any row (it holds them all);
    # Arrow refuses a header alone that no line break ends
    lone_header = result[0] == "db" and result[4] == [0] and not data.endswith((b"\n", b"\r"))
    # a last value that is just the line end, quoted ('"\r"\r'), ends the text as a quote
    # never closed would: the reader cannot tell them apart there and keeps to the csv
    # module (eventlog._quote_never_closed), which reads both right
    like_open_quote = any(data.endswith(b'"' + end + b'"' + end)
                          for end in (b"\n", b"\r", b"\r\n"))
    if arrow_block >= len(data) and not lone_header and not like_open_quote and (
            result[0] == "db" or "empty" in result[1] or "two users" in result[1]):
        assert used, result


@SETTINGS
@given(log=damaged_logs(), arrow_block=block_bytes, csv_block=block_rows)
def test_damaged_logs_read_the_same(log, arrow_block, csv_block):
    data, options = log
    result, used = same_both_ways(data, arrow_block, csv_block, **options)
    event(f"Arrow's reading kept: {used}; {result[0]}")


@SETTINGS
@given(body=st.text(alphabet='ab,;"\r\n é\ufeff', max_size=80), arrow_block=block_bytes,
       time=st.booleans())
def test_any_text_after_a_header_reads_the_same(body, arrow_block, time):
    header = "case,activity,time\n" if time else "case,activity\n"
    result, used = same_both_ways((header + body).encode(), arrow_block)
    event(f"Arrow's reading kept: {used}; {result[0]}")


@SETTINGS
@given(log=event_logs(), delimiter=st.sampled_from([" ", ":", "§", '"', "\n", "\\t"]))
def test_other_delimiters_read_the_same(log, delimiter):
    data, options = log
    result, used = same_both_ways(data, 256, **dict(options, delimiter=delimiter))
    event(f"Arrow's reading kept: {used}; {result[0]}")


# ------------------------------------------------------------- particular cases
def test_a_large_generated_log_is_read_by_arrow_without_being_told():
    from dpgpu.data.generate import markov_sequences

    db = markov_sequences(120_000, seed=3)
    out = io.StringIO()
    write_csv_log(db, out)
    data = out.getvalue().encode()
    assert len(data) > eventlog._ARROW_MIN_BYTES
    with arrow_spy() as kept:
        fast = outcome(data)
    assert kept == [True]
    assert fast == by_csv_module(data)
    assert fast[5] == db.vocab.labels and fast[2] == db.items.tolist()


@pytest.mark.parametrize("text", [
    "case,activity,time\nc,a,1\nc,b,2\n",
    "case,activity,time\r\nc,\"a\r\nb\",1\r\n\r\nc,b,2",
    "\ufeffcase;activity\nc;a\n\n\nd;b\n",
])
def test_small_logs_are_left_to_the_csv_module(text):
    with arrow_spy() as kept:
        small = outcome(text.encode())
    assert kept == [False] and by_arrow(text.encode()) == (small, True)


@pytest.mark.parametrize("text, options, arrow", [
    ("\ufeff\ufeffcase,activity\nc,a\n", {}, False),        # a second BOM: a column name
    ('case,activity\nc,a\n"c",b,\n', {}, False),            # ragged
    ('case,activity\nc,a\n""\n', {}, False),                # a row of one empty field
    ("case,activity\nc,a\n  \nc,b\n", {}, False),           # a row of spaces is no blank line
    ('case,activity\nc,""\nd,""', {}, True),                 # closed quotes at the end
    ('case,activity\nc,"a\n', {}, False),                   # a quote open at the end
    ('case,activity\nc,"a', {}, False),
    ('case,activity\nc,"a"x"y"\n', {}, True),               # text after the closing quote
    ('case,activity\nc,x"y\r\rc,""""\n', {}, True),
    ("case,activity\rc,a\r\r\nc,b\n\r", {}, True),           # blank lines of each ending
    ('"wh\no",activity\nc,a\n', {"case": "wh\no"}, True),    # a quoted newline in the header
    ('"wh\no",activity\nc,a\n', {}, False),                  # no case column
    ("who,what\nc,a\n", {}, False),                          # no column found
    ("case activity\nc a\n", {}, False),                     # one column
    ("case,activity,time\nc,a,1\nc,b,2020-01-01\n", {}, False),  # a bad timestamp
    ("case,activity,time\nc,a,1\n,b,2\n", {}, True),         # an empty case
    ("case,activity\nc,a\n", {"delimiter": "§"}, False),     # not an ASCII delimiter
])
def test_edge_cases(text, options, arrow):
    _, used = same_both_ways(text.encode(), **options)
    assert used is arrow


@pytest.mark.parametrize("ending", ["\r\n", "\n", "\r"])
def test_a_quoted_crlf_where_a_read_of_arrow_ends(ending):
    """Arrow drops an LF that starts a read after a CR that ended the one before, even in
    quotes: the reads are cut before such a CR."""
    head = 'case,activity\nc,"'
    label = "x" * (64 - len(head) - 1) + "\r\nx"
    text = f'{head}{label}"{ending}c,y{ending}'
    assert text.encode()[63:65] == b"\r\n"  # the first read of 64 bytes would end at the CR
    result, used = same_both_ways(text.encode(), block_bytes=64)
    assert used and result[5] == [label, "y"]


@pytest.mark.parametrize("field, arrow", [("x" * 10, True), ("x" * 11, False),
                                          ("€" * 4, False)])  # 4 characters, but 12 bytes
def test_fields_near_the_field_size_limit(field, arrow):
    before = csv.field_size_limit(10)
    try:
        text = f"case,activity,time\nc,a,1\nc,{field},2\n"
        result, used = same_both_ways(text.encode())
    finally:
        csv.field_size_limit(before)
    assert used is arrow
    assert (result[0] == "error") is (len(field) > 10)
    assert result[0] == "db" or "line 3: malformed CSV (field larger than field limit" in result[1]


def test_timestamps_numpy_cannot_read_in_a_later_block(caplog):
    rows = ["k,b,2020-01-01T10:00:00Z", "k,a,2020-01-01T09:00:00Z", "j,c,2020-01-01Z",
            "k,c,2020-01-01T08:00:00Z"] * 20 + ["j,a,2020-01-01T12:00:00+0200"]
    data = ("case,activity,timestamp\n" + "\n".join(rows) + "\n").encode()
    with caplog.at_level(logging.INFO, logger="dpgpu"):
        result, used = same_both_ways(data, block_bytes=128, block_rows=5)
    assert used and result[0] == "db"
    assert any("reading them all again" in r.getMessage() for r in caplog.records)
    bad = data.replace(b"j,c,2020-01-01Z\n", b"j,c,2020-01\n", 1)
    result, used = same_both_ways(bad, block_bytes=128, block_rows=5)
    assert not used and "line 4:" in result[1] and "'2020-01'" in result[1]


def test_arrow_reads_log_progress(monkeypatch, caplog):
    monkeypatch.setattr(reading, "PROGRESS_SECONDS", -1.0)
    data = ("case,activity\n" + "c,a\n" * 200).encode()
    with caplog.at_level(logging.INFO, logger="dpgpu"):
        _, used = by_arrow(data, block_bytes=256)
    assert used
    assert any("% read (row " in r.getMessage() for r in caplog.records), caplog.records


# ------------------------------------------------------------- the real datasets
@pytest.mark.parametrize("relative, options, arrow", [
    param("receipt/receipt.csv.gz", {}, True),
    param("airports/airports.csv", {"case": "state", "activity": "city",
                                     "timestamp": "latitude"}, True),
    param("airports/airports.csv", {"case": "state", "activity": "city", "user": "country"},
          True),  # a case of two users
    param("actcal/actcal.csv", {"case": "region00", "activity": "jan00", "timestamp": "birthy"},
          True),
    param("actcal/actcal.csv", {"case": "region00", "activity": "jan00", "user": "com2.00"},
          True),  # a case of two users
    param("biofam/biofam.csv", {"case": "sex", "activity": "nat_1_02", "timestamp": "birthyr"},
          True),  # an empty activity
    param("biofam/biofam.csv", {"case": "p02r01", "activity": "sex"}, True),  # an empty case
    param("mvad/mvad.csv", {"case": "id", "activity": "Jul.93", "timestamp": "weight"}, True),
    param("mvad/mvad.csv", {"case": "Grammar", "activity": "Jul.93", "user": "male"},
          True),  # a case of two users
    param("amp_peptides/AMPvsUniProt.csv", {"case": "5200", "activity": "UniProt"},
          False),  # ragged: the csv module reads
])
def test_shared_csv_datasets(relative, options, arrow):
    data = read_bytes(dataset(relative))
    for block_bytes in (1 << 14, 1 << 20):
        _, used = same_both_ways(data, block_bytes, **options)
        assert used is arrow
