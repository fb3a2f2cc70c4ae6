"""XES reading a chunk at a time: the same result as a whole-document parse.

:func:`dpgpu.data.xes.read_xes` feeds expat a chunk at a time and encodes the
events of each chunk at once.  These tests shrink the chunks to a few bytes
and compare the result with a reference written here: ElementTree parses the
whole document, plain Python orders the events, a one-shot expat parse gives
the expected message for malformed XML.
"""

from __future__ import annotations

import gc
import logging
import random
import re
import tracemalloc
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from xml.parsers import expat
from xml.sax.saxutils import quoteattr

import pytest

from dpgpu import InputError
from dpgpu.data import reading, xes
from dpgpu.data.sequencedb import sort_labels

CHUNKS = [1, 13, 97, 1 << 23]
LABELS = ["a", "b", "c", "é", "日本", "x & y", "<q>", 'say "hi"', "tab\there"]


def attr(tag: str, key: str | None, value: str | None) -> str:
    """An XES attribute element (``key`` or ``value`` None leaves it out)."""
    key_part = "" if key is None else f" key={quoteattr(key)}"
    value_part = "" if value is None else f" value={quoteattr(value)}"
    return f"<{tag}{key_part}{value_part}/>"


def iso(rng: random.Random, zoned: bool = True) -> str:
    """A random ISO-8601 time, with or without a fraction, with a UTC offset if ``zoned``
    (a log's dates all have one or none has)."""
    return (f"2021-03-{rng.randrange(1, 4):02d}T{rng.randrange(24):02d}:"
            f"{rng.randrange(60):02d}:00{rng.choice(['', '.250', '.5'])}"
            f"{rng.choice(['Z', '+02:00', '-05:30'] if zoned else [''])}")


def random_log(rng: random.Random, activity: str = "concept:name",
               timestamp: str = "time:timestamp") -> str:
    """A random XES document: traces with names (or none), events whose times
    may be missing, nested attributes, globals, prefixed element names."""
    prefix = rng.choice(["", "xes:"])
    numeric = rng.random() < 0.3
    zoned = rng.random() < 0.7
    p_missing = rng.choice([0, 0, 0.1])
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n',
           f'<{prefix}log xmlns{":xes" if prefix else ""}="http://www.xes-standard.org/">\n',
           f'<global scope="event">{attr("string", activity, "GLOBAL")}</global>\n',
           attr("string", "concept:name", "the log") + "\n"]
    for t in range(rng.randrange(12)):
        out.append(f"<{prefix}trace>")
        if rng.random() < 0.8:
            out.append(attr("string", "concept:name", rng.choice([f"case {t}", "dup", f"ü{t}"])))
        for _ in range(rng.randrange(7)):
            parts = [attr("string", activity, rng.choice(LABELS))]
            if rng.random() >= p_missing:
                stamp = str(rng.randrange(-3, 9)) if numeric else iso(rng, zoned)
                parts.append(attr("date", timestamp, stamp))
            if rng.random() < 0.3:
                parts.append(attr("string", "org:resource", "r1"))
            if rng.random() < 0.2:
                parts.append(f'<list key="l">{attr("string", activity, "NESTED")}</list>')
            rng.shuffle(parts)
            out.append(f"<{prefix}event>{rng.choice(['', chr(10), chr(13) + chr(10)]).join(parts)}"
                       f"</{prefix}event>\n")
        out.append(f"</{prefix}trace>\n")
    out.append(f"</{prefix}log>\n")
    return "".join(out)


def local(tag: str) -> str:
    return tag.rpartition("}")[2]


def sort_key(stamp: str) -> float:
    if re.match(r"\d{4}-", stamp):
        when = datetime.fromisoformat(stamp)
        return (when if when.tzinfo else when.replace(tzinfo=timezone.utc)).timestamp()
    return float(stamp)


def reference(text: str, activity: str = "concept:name",
              timestamp: str = "time:timestamp") -> tuple[list[tuple[str, ...]], list]:
    """Sequences and trace names of ``text``, from a whole-document ElementTree parse."""
    sequences, names = [], []
    for trace in ET.fromstring(text):
        if local(trace.tag) != "trace":
            continue
        name, events = None, []
        for child in trace:
            if local(child.tag) != "event":
                if child.get("key") == "concept:name":
                    name = child.get("value")
                continue
            label = stamp = None
            for item in child:
                if item.get("key") == activity:
                    label = item.get("value", "")
                elif item.get("key") == timestamp:
                    stamp = item.get("value", "")
            events.append((label, stamp))
        if all(stamp is not None for _, stamp in events):
            events.sort(key=lambda event: sort_key(event[1]))  # stable: ties keep file order
        sequences.append(tuple(label for label, _ in events))
        names.append(name)
    return sequences, names


def read(text: str | bytes, **options):
    data = text.encode() if isinstance(text, str) else text
    return xes.read_xes("log.xes", data, **options)


def message(text: str, **options) -> str:
    with pytest.raises(InputError) as info:
        read(text, **options)
    return str(info.value)


@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("seed", range(12))
def test_same_as_a_whole_document_parse(monkeypatch, seed, chunk):
    monkeypatch.setattr(xes, "_CHUNK_BYTES", chunk)
    rng = random.Random(seed)
    keys = rng.choice([{}, {"activity": "task", "timestamp": "at"}])
    text = random_log(rng, keys.get("activity", "concept:name"),
                      keys.get("timestamp", "time:timestamp"))
    sequences, names = reference(text, **keys)
    db = read(text, **keys)
    assert list(db) == sequences
    assert db.source["cases"] == names
    assert db.vocab.labels == sort_labels({x for s in sequences for x in s})
    assert len(db) == len(sequences) and db.n_events == sum(map(len, sequences))


def test_a_log_without_times_keeps_file_order(monkeypatch):
    monkeypatch.setattr(xes, "_CHUNK_BYTES", 7)
    text = random_log(random.Random(3), timestamp="nowhere")
    db = read(text)
    assert list(db) == reference(text)[0]
    assert db.source["timestamp_kind"] is None


def one_event_a_line(stamps: list[str | None],
                     labels: list[str | None]) -> tuple[str, list[int]]:
    """A log of one trace, one event a line (None: without that attribute); also
    the line of each event."""
    lines = ["<log>", "<trace>"]
    where = []
    for label, stamp in zip(labels, stamps):
        where.append(len(lines) + 1)
        inner = "" if label is None else attr("string", "concept:name", label)
        inner += "" if stamp is None else attr("date", "time:timestamp", stamp)
        lines.append(f"<event>{inner}</event>")
    return "\n".join(lines + ["</trace>", "</log>"]), where


@pytest.mark.parametrize("chunk", [5, 64, 1 << 23])
def test_event_errors_name_the_line_of_the_first(monkeypatch, chunk):
    monkeypatch.setattr(xes, "_CHUNK_BYTES", chunk)
    n = 200
    stamps = [f"2021-01-01T00:00:{i % 60:02d}Z" for i in range(n)]
    labels = ["a"] * n
    stamps[150] = stamps[170] = "soon"
    stamps[10] = None
    text, where = one_event_a_line(stamps, labels)
    assert f"line {where[150]}: attribute 'time:timestamp': cannot parse timestamp 'soon'" \
        in message(text)
    labels[120] = labels[180] = " "  # an empty activity is reported before a bad time
    text, where = one_event_a_line(stamps, labels)
    assert message(text) == f"log.xes: line {where[120]}: empty activity (attribute " \
        "'concept:name')"
    labels[190] = None  # a missing activity before an empty one
    text, where = one_event_a_line(stamps, labels)
    assert message(text).startswith(f"log.xes: line {where[190]}: event has no 'concept:name' "
                                    "attribute")


@pytest.mark.parametrize("seed", range(20))
def test_malformed_xml_is_reported_as_a_one_shot_parse_does(monkeypatch, seed):
    rng = random.Random(seed)
    monkeypatch.setattr(xes, "_CHUNK_BYTES", rng.choice([1, 10, 100]))
    text = random_log(rng)
    at = rng.randrange(len(text) - 10)
    broken = (text[:at] if seed % 2 else text[:at] + rng.choice("<&") + text[at:]).encode()
    parser = expat.ParserCreate()
    with pytest.raises(expat.ExpatError) as error:
        parser.Parse(broken, True)
    exc = error.value
    assert message(broken) == (f"log.xes: line {exc.lineno}, column {exc.offset + 1}: "
                               f"malformed XML ({expat.ErrorString(exc.code)})")


def test_structure_errors_name_their_line(monkeypatch):
    monkeypatch.setattr(xes, "_CHUNK_BYTES", 3)
    good = '<trace><event><string key="concept:name" value="a"/></event></trace>\n'
    stray = '<event><string key="concept:name" value="a"/></event>\n'
    assert message("<log>\n" + good * 30 + stray + good + "<") \
        == "log.xes: line 32: <event> outside a <trace>"
    assert message('<?xml version="1.0"?>\n\n<html/>') \
        == "log.xes: line 3: root element is <html>, not <log>: not an XES event log"


def test_times_numpy_cannot_read_are_all_read_again(monkeypatch, caplog):
    monkeypatch.setattr(xes, "_CHUNK_BYTES", 50)
    n = 40
    stamps = [f"2021-01-01T{10 + i // 60:02d}:{i % 60:02d}:00Z" for i in range(n)]
    stamps[-1] = "2021-01-01T10:00:30+0100"  # 09:00:30 UTC: the earliest
    text, _ = one_event_a_line(stamps, [str(i) for i in range(n)])
    with caplog.at_level(logging.INFO, logger="dpgpu"):
        db = read(text)
    assert list(db) == [(str(n - 1),) + tuple(map(str, range(n - 1)))]
    assert "reading them all again" in caplog.text


def test_a_long_read_logs_its_progress(monkeypatch, caplog):
    monkeypatch.setattr(xes, "_CHUNK_BYTES", 256)
    monkeypatch.setattr(reading, "PROGRESS_SECONDS", -1.0)
    text, where = one_event_a_line(["1"] * 50, ["a"] * 50)
    with caplog.at_level(logging.INFO, logger="dpgpu"):
        read(text)
    found = [re.fullmatch(r"log\.xes: (\d+)% read \(line (\d+)\)", r.getMessage())
             for r in caplog.records]
    progress = [(int(m[1]), int(m[2])) for m in found if m]
    assert len(progress) == -(-len(text.encode()) // 256)
    assert progress == sorted(progress) and progress[-1] == (100, where[-1] + 2)


@pytest.mark.parametrize("enabled", [True, False])
def test_garbage_collector_is_left_as_it_was(enabled):
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        read(random_log(random.Random(1)))
        assert gc.isenabled() is enabled
        with pytest.raises(InputError):
            read("<log><trace><event></trace></log>")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_holds_no_string_per_event(monkeypatch):
    monkeypatch.setattr(xes, "_CHUNK_BYTES", 1 << 16)
    n = 30_000
    rng = random.Random(0)
    text, _ = one_event_a_line([iso(rng) for _ in range(n)],
                               [f"activity {rng.randrange(50)}" for _ in range(n)])
    data = text.encode()
    tracemalloc.start()
    try:
        db = xes.read_xes("log.xes", data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert db.n_events == n
    assert peak < 100 * n  # a str of each event's activity and time would take more
