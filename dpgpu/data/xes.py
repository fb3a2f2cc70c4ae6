"""XES event logs (IEEE 1849 XML): reading, writing, detection.

Each ``<trace>`` of the ``<log>`` becomes one sequence: the activities
(``concept:name``, or another attribute key) of its ``<event>`` elements,
ordered by ``time:timestamp`` (ties keep file order) when every event of the
trace has one, else in file order.  Trace names (the trace's
``concept:name``) go to ``source["cases"]`` for the writer.

The parser is expat, driven directly (ElementTree would drop the line numbers
that error messages need).  Documents with a DOCTYPE are rejected before any
entity is declared, so entity-expansion bombs ("billion laughs") and external
entities cannot be used.  Timestamps, ordering and ``source`` follow
:mod:`dpgpu.data.eventlog`.
"""

from __future__ import annotations

import re
from typing import Any, TextIO
from xml.parsers import expat

import numpy as np

from ..errors import InputError
from .eventlog import (BadValue, case_names, check_nonempty, check_option, encode_labels,
                       parse_times, synthetic_times)
from .sequencedb import SequenceDB

_XML_LEAD = re.compile(rb"(?:\s|<\?.*?\?>|<!--.*?-->)*", re.S)
_LOG_START = re.compile(rb"<(?:[\w.-]+:)?log[\s>/]|<!DOCTYPE")


def read_xes(path: Any, data: bytes, *, activity: str | None = None,
             timestamp: str | None = None) -> SequenceDB:
    """Read an XES event log.

    Parameters
    ----------
    path : path-like
        The file (for messages and ``source``).
    data : bytes
        Its contents (already decompressed, see :func:`dpgpu.data.io.read_bytes`).
    activity : str, optional
        Event attribute key of the activity (default ``concept:name``).
    timestamp : str, optional
        Event attribute key of the time (default ``time:timestamp``).

    Returns
    -------
    SequenceDB
        One sequence per trace, in file order; ``source`` has ``path``,
        ``format="xes"``, ``columns`` (the two keys), ``timestamp_kind`` and
        ``cases`` (trace names, None for a trace without one).

    Raises
    ------
    InputError
        Malformed XML, a DOCTYPE, a root other than ``<log>``, an event
        without (or with an empty) activity, a bad timestamp (messages name
        the line); an activity key, or a ``timestamp`` key given, that no
        event has (the message names the option and lists the keys the
        events have).
    InvalidParameter
        An option that is not a non-empty string.
    """
    chosen = {"activity": check_option(activity, "activity"),
              "timestamp": check_option(timestamp, "timestamp")}
    activity = chosen["activity"] or "concept:name"
    timestamp = chosen["timestamp"] or "time:timestamp"
    parser = expat.ParserCreate()
    events = _Collector(path, parser, activity, timestamp)
    try:
        parser.Parse(data, True)
    except expat.ExpatError as exc:
        raise InputError(f"{path}: line {exc.lineno}, column {exc.offset + 1}: malformed "
                         f"XML ({expat.ErrorString(exc.code)})") from None
    _check_keys(path, events, {"activity": activity, "timestamp": chosen["timestamp"]})
    lines = np.array(events.lines, dtype=np.int64)

    def where(i: int) -> str:
        return f"line {lines[i]}"

    activities = np.array(events.activities, dtype=str)
    check_nonempty(path, where, f"activity (attribute {activity!r})", activities)
    offsets = np.array(events.trace_starts + [activities.size], dtype=np.int64)
    trace = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    keys, kind = _sort_keys(path, where, timestamp, events.stamps, trace, offsets.size - 1)
    ids, vocab = encode_labels(activities)
    db = SequenceDB(ids[np.lexsort((keys, trace))], offsets, vocab)
    db.source = {"path": str(path), "format": "xes",
                 "columns": {"activity": activity, "timestamp": timestamp},
                 "timestamp_kind": kind, "cases": events.names}
    return db


def _check_keys(path: Any, events: _Collector, keys: dict[str, str | None]) -> None:
    """InputError for a key (by option: ``activity``, ``timestamp``) that no event has,
    then for the first event without an activity.  A key of None is not checked."""
    if not events.lines:
        return
    seen = ", ".join(sorted(k for k in events.keys if k is not None)) or "none"
    for option, key in keys.items():
        if key is not None and key not in events.keys:
            raise InputError(f"{path}: no event attribute {key!r} for --{option} (event "
                             f"attribute keys: {seen})")
    if None in events.activities:
        line = events.lines[events.activities.index(None)]
        raise InputError(f"{path}: line {line}: event has no {keys['activity']!r} "
                         "attribute (choose the activity attribute with --activity)")


def _sort_keys(path: Any, where: Any, key: str, stamps: list[str | None], trace: np.ndarray,
               n_traces: int) -> tuple[np.ndarray, str | None]:
    """Per-event sort keys: the time where the whole trace has times, else 0 (file order)."""
    present = np.array([s is not None for s in stamps], dtype=bool)
    if not present.any():
        return np.zeros(present.size, dtype=np.int64), None
    at = np.flatnonzero(present)
    try:
        times, kind = parse_times(np.array([stamps[i] for i in at.tolist()], dtype=str))
    except BadValue as bad:
        raise InputError(f"{path}: {where(int(at[bad.index]))}: attribute {key!r}: "
                         f"{bad}") from None
    keys = np.zeros(present.size, dtype=times.dtype)
    keys[at] = times
    complete = np.bincount(trace[~present], minlength=n_traces) == 0
    keys[~complete[trace]] = 0
    return keys, kind


class _Collector:
    """Expat handlers gathering traces and events, flat.

    Depth 1 is ``<log>``, 2 its children (traces), 3 a trace's children
    (events and trace attributes), 4 an event's attributes.
    """

    def __init__(self, path: Any, parser: Any, activity: str, timestamp: str):
        self.path, self.parser = path, parser
        self.activity, self.timestamp = activity, timestamp
        self.trace_starts: list[int] = []
        self.names: list[str | None] = []
        self.activities: list[str | None] = []
        self.stamps: list[str | None] = []
        self.lines: list[int] = []
        self.keys: set[str | None] = set()  # the attribute keys of the events
        self.depth = 0
        self.in_trace = False
        self.event: list[str | None] | None = None
        parser.StartElementHandler = self.start
        parser.EndElementHandler = self.end
        parser.StartDoctypeDeclHandler = self.doctype

    def fail(self, message: str) -> InputError:
        return InputError(f"{self.path}: line {self.parser.CurrentLineNumber}: {message}")

    def doctype(self, *_: Any) -> None:
        raise self.fail("DOCTYPE declarations are not allowed in XES files "
                        "(entity expansion risk)")

    def start(self, name: str, attrs: dict[str, str]) -> None:
        local = name.rpartition(":")[2]
        self.depth += 1
        if self.depth == 1 and local != "log":
            raise self.fail(f"root element is <{name}>, not <log>: not an XES event log")
        if self.depth == 2 and local == "trace":
            self.in_trace = True
            self.trace_starts.append(len(self.activities))
            self.names.append(None)
        elif self.depth == 3 and self.in_trace:
            if local == "event":
                self.event = [None, None]
                self.lines.append(self.parser.CurrentLineNumber)
            elif attrs.get("key") == "concept:name":
                self.names[-1] = attrs.get("value")
        elif self.depth == 4 and self.event is not None:
            key = attrs.get("key")
            self.keys.add(key)
            if key == self.activity:
                self.event[0] = attrs.get("value", "")
            elif key == self.timestamp:
                self.event[1] = attrs.get("value", "")
        elif local == "event" and self.depth == 2:
            raise self.fail("<event> outside a <trace>")

    def end(self, _name: str) -> None:
        if self.depth == 3 and self.event is not None:
            self.activities.append(self.event[0])
            self.stamps.append(self.event[1])
            self.event = None
        elif self.depth == 2:
            self.in_trace = False
        self.depth -= 1


def looks_like_xes(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file) starts like an XES log.

    True when, after an optional byte-order mark, XML declaration, comments
    and processing instructions, the first element is ``<log`` (or a
    DOCTYPE, which :func:`read_xes` then rejects), or when ``head`` holds
    only an XML declaration and such prolog.
    """
    head = head.removeprefix(b"\xef\xbb\xbf")
    rest = head[_XML_LEAD.match(head).end():]
    if _LOG_START.match(rest):
        return True
    return head.lstrip().startswith(b"<?xml") and not rest.strip()


def write_xes(db: SequenceDB, stream: TextIO) -> None:
    """Write ``db`` as a minimal XES log.

    One ``<trace>`` per sequence, named by its ``concept:name`` (the input's
    case names when ``source`` has them, else ``case-1``, ...), and one
    ``<event>`` per item with the activity (under the input's activity key
    when it was XES, else ``concept:name``) and a synthetic ``<date>``
    timestamp (see :mod:`dpgpu.data.eventlog`).  User ids are not written.

    Parameters
    ----------
    db : SequenceDB
    stream : text stream
        For instance from :func:`dpgpu.data.io.atomic_output`.
    """
    keys = db.source.get("columns", {}) if db.source.get("format") == "xes" else {}
    act_key = _attr(keys.get("activity") or "concept:name")
    time_key = _attr(keys.get("timestamp") or "time:timestamp")
    stream.write(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<log xes.version="1849-2016" xes.features="" xmlns="http://www.xes-standard.org/">\n'
        '\t<extension name="Concept" prefix="concept" '
        'uri="http://www.xes-standard.org/concept.xesext"/>\n'
        '\t<extension name="Time" prefix="time" uri="http://www.xes-standard.org/time.xesext"/>\n'
        f'\t<classifier name="Activity" keys="{act_key}"/>\n')
    labels = [_attr(label) for label in db.vocab.labels]
    times = synthetic_times(db.max_length, millis=True)
    for i, name in enumerate(case_names(db)):
        parts = [f'\t<trace>\n\t\t<string key="concept:name" value="{_attr(name)}"/>\n']
        parts.extend(f'\t\t<event>\n\t\t\t<string key="{act_key}" value="{labels[item]}"/>\n'
                     f'\t\t\t<date key="{time_key}" value="{times[j]}"/>\n\t\t</event>\n'
                     for j, item in enumerate(db.sequence_ids(i).tolist()))
        parts.append("\t</trace>\n")
        stream.write("".join(parts))
    stream.write("</log>\n")


_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
                          "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _attr(text: str) -> str:
    """``text`` escaped for a double-quoted XML attribute value (whitespace kept)."""
    return text.translate(_ESCAPES)
