"""XES event logs (IEEE 1849 XML): reading, writing, detection.

Each ``<trace>`` of the ``<log>`` becomes one sequence: the activities
(``concept:name``, or another attribute key) of its ``<event>`` elements,
ordered by ``time:timestamp`` (ties keep file order) when every event of the
trace has one, else in file order (with a warning).
Trace names (the trace's ``concept:name``) go to ``source["cases"]`` for the
writer.

The parser is expat, driven directly (ElementTree would drop the line numbers
that error messages need) and given the file a chunk at a time; each chunk's
events are then turned into activity codes and timestamp sort keys, as the CSV
reader of :mod:`dpgpu.data.eventlog` does with its blocks of rows.  Documents
with a DOCTYPE are rejected before any entity is declared, so entity-expansion
bombs ("billion laughs") and external entities cannot be used.  Timestamps,
ordering and ``source`` follow :mod:`dpgpu.data.eventlog`.
"""

from __future__ import annotations

import re
from typing import Any, Callable, TextIO
from xml.parsers import expat

import numpy as np

from ..errors import InputError
from .eventlog import (BadValue, EventNames, _ChunkedTimes, check_nonempty, check_option,
                       encode_labels, log, synthetic_times, timestamp_error)
from .reading import ReadProgress, encode_values, gc_paused, numbering
from .sequencedb import SequenceDB

_XML_LEAD = re.compile(rb"(?:\s|<\?.*?\?>|<!--.*?-->)*", re.S)
_LOG_START = re.compile(rb"<(?:[\w.-]+:)?log[\s>/]|<!DOCTYPE")
#: Bytes of XML given to expat at a time; the events of each chunk are then encoded.
_CHUNK_BYTES = 1 << 23


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

    Notes
    -----
    The XML is parsed a chunk at a time, and the events of each chunk are
    encoded at once: activities as integer codes, timestamps as sort keys,
    so that no string is kept per event.  Of several errors, the one
    reported is the first of: malformed XML or a structure error (whichever
    comes first in the file), a missing key, an event without an activity,
    an empty activity, a bad timestamp.  A message about an event parses
    the file again, up to that event, to name its line.  Long reads log
    their progress (INFO, shown with ``-v``).
    """
    chosen = {"activity": check_option(activity, "activity"),
              "timestamp": check_option(timestamp, "timestamp")}
    keys = {"activity": chosen["activity"] or "concept:name",
            "timestamp": chosen["timestamp"] or "time:timestamp"}
    with gc_paused():  # expat makes a dict and strings per element
        events = _parse(path, data, keys, _ChunkedTimes())
        if events.times.redo:
            log.info("%s: NumPy cannot read every timestamp; reading them all again", path)
            events = _parse(path, data, keys, _ChunkedTimes(numpy_iso=False))
    codes = _joined(events.codes, np.int64)

    def where(i: int) -> str:
        return f"line {_event_line(path, data, keys, i)}"

    def first(code: int) -> str:
        return where(int(np.argmax(codes == code)))

    _check_keys(path, first, events, {"activity": keys["activity"],
                                      "timestamp": chosen["timestamp"]})
    labels = np.array(list(events.table), dtype=str)
    check_nonempty(path, first, f"activity (attribute {keys['activity']!r})", labels)
    offsets = np.array(events.trace_starts + [codes.size], dtype=np.int64)
    order, kind = _event_order(path, where, keys["timestamp"], events, offsets)
    ids, vocab = encode_labels(labels)
    db = SequenceDB(ids[codes[order]], offsets, vocab)
    db.source = {"path": str(path), "format": "xes", "columns": keys,
                 "timestamp_kind": kind, "cases": events.names}
    return db


def _parse(path: Any, data: bytes, keys: dict[str, str], times: _ChunkedTimes,
           stop: int | None = None) -> _Collector:
    """The traces and events of ``data``, parsed a chunk at a time.

    Parameters
    ----------
    path : path-like
        For messages.
    data : bytes
        The XML.
    keys : dict
        The ``activity`` and ``timestamp`` attribute keys.
    times : _ChunkedTimes
        Receives the timestamps.
    stop : int, optional
        Stop at the start of event ``stop`` (from 0), raising :class:`_Found`.

    Returns
    -------
    _Collector

    Raises
    ------
    InputError
        Malformed XML or a structure error (see :class:`_Collector`).
    """
    parser = expat.ParserCreate()
    events = _Collector(path, parser, keys, times, stop)
    view = memoryview(data)
    progress = ReadProgress(path)
    try:
        for pos in range(0, len(view), _CHUNK_BYTES):
            parser.Parse(view[pos:pos + _CHUNK_BYTES], False)
            events.flush()
            progress(min(pos + _CHUNK_BYTES, len(view)), len(view), parser.CurrentLineNumber)
        parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise InputError(f"{path}: line {exc.lineno}, column {exc.offset + 1}: malformed "
                         f"XML ({expat.ErrorString(exc.code)})") from None
    events.flush()
    return events


def _event_line(path: Any, data: bytes, keys: dict[str, str], index: int) -> int:
    """Line on which event ``index`` (from 0, in file order) of ``data`` starts."""
    try:
        _parse(path, data, keys, _ChunkedTimes(), stop=index)
    except _Found as found:
        return found.line
    raise ValueError(f"{path} has no event {index}")


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    """The arrays of ``parts`` end to end (an empty ``dtype`` array for none).

    ``parts`` is left holding that one array, so that the pieces can be freed.
    """
    parts[:] = [np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)]
    return parts[0]


def _check_keys(path: Any, first: Callable[[int], str], events: _Collector,
                keys: dict[str, str | None]) -> None:
    """InputError for a key (by option: ``activity``, ``timestamp``) that no event has,
    then for the first event without an activity (``first(code)`` locates the
    first event of an activity code).  A key of None is not checked."""
    if not events.count:
        return
    seen = ", ".join(sorted(k for k in events.keys if k is not None)) or "none"
    for option, key in keys.items():
        if key is not None and key not in events.keys:
            raise InputError(f"{path}: no event attribute {key!r} for --{option} (event "
                             f"attribute keys: {seen})")
    if None in events.table:
        raise InputError(f"{path}: {first(events.table[None])}: event has no "
                         f"{keys['activity']!r} attribute (choose the activity attribute "
                         "with --activity)")


def _event_order(path: Any, where: Callable[[int], str], key: str, events: _Collector,
                 offsets: np.ndarray) -> tuple[np.ndarray, str | None]:
    """Where each event goes (an index array) and the timestamp kind.

    Events go in time order (ties keep file order) within each trace whose
    events all have a time, else keep file order; a warning says when a
    trace of two or more events keeps file order (not how many: a private
    release may follow).

    Raises
    ------
    InputError
        A bad timestamp, naming its line.
    """
    present = _joined(events.present, bool)
    if not present.any():
        return np.arange(present.size), None
    try:
        times, kind = events.times.result()
    except BadValue as bad:  # its index counts the events that have a time
        stamped = np.flatnonzero(present)
        raise timestamp_error(path, lambda i: where(int(stamped[i])), f"attribute {key!r}",
                              bad) from None
    trace = np.repeat(np.arange(offsets.size - 1), np.diff(offsets))
    sort_keys = np.zeros(present.size, dtype=times.dtype)
    sort_keys[present] = times
    complete = np.bincount(trace[~present], minlength=offsets.size - 1) == 0
    sort_keys[~complete[trace]] = 0
    if np.any(~complete & (np.diff(offsets) > 1)):  # no count: a release run may follow
        log.warning("%s: traces in which some events have no %r attribute keep file order "
                    "(events are ordered by time only in traces whose events all have one)",
                    path, key)
    return np.lexsort((sort_keys, trace)), kind


class _Found(Exception):
    """Internal: the event a :class:`_Collector` was to stop at starts on ``line``."""

    def __init__(self, line: int):
        super().__init__(line)
        self.line = line


class _Collector:
    """Expat handlers gathering traces and events, flat, a chunk at a time.

    Depth 1 is ``<log>``, 2 its children (traces), 3 a trace's children
    (events and trace attributes), 4 an event's attributes.  The events of
    a chunk are held as strings until :meth:`flush` encodes them.

    Parameters
    ----------
    path : path-like
        For messages.
    parser : xml.parsers.expat.XMLParserType
        Whose handlers to set.
    keys : dict
        The ``activity`` and ``timestamp`` attribute keys.
    times : _ChunkedTimes
        Receives the timestamps of the events that have one.
    stop : int, optional
        Raise :class:`_Found` at the start of event ``stop`` (from 0).

    Attributes
    ----------
    trace_starts : list of int
        Index of each trace's first event.
    names : list of str or None
        Each trace's ``concept:name``.
    table : dict
        Activity -> code, numbered in order of first appearance (None
        stands for an event without an activity).
    codes, present : list of arrays
        Per chunk: the activity code of each event, and whether it has a
        timestamp.
    times : _ChunkedTimes
        As given.
    keys : set
        The attribute keys of the events (None for an attribute without one).
    count : int
        Events seen.

    Raises
    ------
    InputError
        From the handlers: a DOCTYPE, a root other than ``<log>``, an
        ``<event>`` outside a ``<trace>``, naming the line.
    """

    def __init__(self, path: Any, parser: Any, keys: dict[str, str], times: _ChunkedTimes,
                 stop: int | None = None):
        self.path, self.parser, self.times, self.stop = path, parser, times, stop
        self.activity, self.timestamp = keys["activity"], keys["timestamp"]
        self.trace_starts: list[int] = []
        self.names: list[str | None] = []
        self.table = numbering()
        self.codes: list[np.ndarray] = []
        self.present: list[np.ndarray] = []
        self.keys: set[str | None] = set()
        self.count = 0
        self.activities: list[str | None] = []  # of the chunk's events
        self.stamps: list[str | None] = []
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
        depth = self.depth = self.depth + 1
        if depth == 4:
            if self.event is not None:
                key = attrs.get("key")
                self.keys.add(key)
                if key == self.activity:
                    self.event[0] = attrs.get("value", "")
                elif key == self.timestamp:
                    self.event[1] = attrs.get("value", "")
            return
        local = name.rpartition(":")[2]
        if depth == 1 and local != "log":
            raise self.fail(f"root element is <{name}>, not <log>: not an XES event log")
        if depth == 2 and local == "trace":
            self.in_trace = True
            self.trace_starts.append(self.count)
            self.names.append(None)
        elif depth == 3 and self.in_trace:
            if local == "event":
                if self.count == self.stop:
                    raise _Found(self.parser.CurrentLineNumber)
                self.count += 1
                self.event = [None, None]
            elif attrs.get("key") == "concept:name":
                self.names[-1] = attrs.get("value")
        elif local == "event" and depth == 2:
            raise self.fail("<event> outside a <trace>")

    def end(self, _name: str) -> None:
        depth = self.depth
        self.depth = depth - 1
        if depth == 3 and self.event is not None:
            self.activities.append(self.event[0])
            self.stamps.append(self.event[1])
            self.event = None
        elif depth == 2:
            self.in_trace = False

    def flush(self) -> None:
        """Encode the events ended since the last flush, and let go of their strings."""
        if not self.activities:
            return
        self.codes.append(encode_values(self.activities, self.table))
        stamps = self.stamps
        present = np.ones(len(stamps), dtype=bool)
        if None in stamps:
            present[[i for i, stamp in enumerate(stamps) if stamp is None]] = False
            stamps = [stamp for stamp in stamps if stamp is not None]
        self.present.append(present)
        self.times.add(stamps)
        self.activities, self.stamps = [], []


def looks_like_xes(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file) starts like an XES log.

    True when, after an optional byte-order mark, XML declaration, comments
    and processing instructions, the first element is ``<log`` (or a
    DOCTYPE, which :func:`read_xes` then rejects), or when ``head`` holds
    only an XML declaration and such prolog.

    Parameters
    ----------
    head : bytes
        The start of the file.

    Returns
    -------
    bool
    """
    head = head.removeprefix(b"\xef\xbb\xbf")
    rest = head[_XML_LEAD.match(head).end():]
    if _LOG_START.match(rest):
        return True
    return head.lstrip().startswith(b"<?xml") and not rest.strip()


class XesSink:
    """Writes a minimal XES log, a part of the database at a time.

    One ``<trace>`` per sequence, named by its ``concept:name`` (the input's
    case names when ``source`` has them, else ``case-1``, ...), and one
    ``<event>`` per item with the activity (under the input's activity key
    when it was XES, else ``concept:name``) and a synthetic ``<date>``
    timestamp (see :mod:`dpgpu.data.eventlog`).  User ids are not written.

    Parameters
    ----------
    db : SequenceDB
        The whole database (see :func:`dpgpu.data.writers.open_sink`).
    stream : text stream
        For instance from :func:`dpgpu.data.io.atomic_output`.
    """

    def __init__(self, db: SequenceDB, stream: TextIO) -> None:
        keys = db.source.get("columns", {}) if db.source.get("format") == "xes" else {}
        self.act_key = _attr(keys.get("activity") or "concept:name")
        self.time_key = _attr(keys.get("timestamp") or "time:timestamp")
        self.labels = [_attr(label) for label in db.vocab.labels]
        self.names = EventNames(db)
        self.stream = stream
        stream.write(
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<log xes.version="1849-2016" xes.features="" xmlns="http://www.xes-standard.org/">\n'
            '\t<extension name="Concept" prefix="concept" '
            'uri="http://www.xes-standard.org/concept.xesext"/>\n'
            '\t<extension name="Time" prefix="time" '
            'uri="http://www.xes-standard.org/time.xesext"/>\n'
            f'\t<classifier name="Activity" keys="{self.act_key}"/>\n')

    def write(self, part: SequenceDB, first: int) -> None:
        """Write the traces of ``part``'s sequences (``first``: sequences written before it).

        Parameters
        ----------
        part : SequenceDB
            The next sequences of the database, in its vocabulary.
        first : int
            How many sequences were written before ``part``: generated trace
            names (``case-1``, ``case-2``, ...) number on from there.
        """
        times = synthetic_times(part.max_length, millis=True)
        for i, name in enumerate(self.names.cases(part, first)):
            pieces = [f'\t<trace>\n\t\t<string key="concept:name" value="{_attr(name)}"/>\n']
            pieces.extend(f'\t\t<event>\n\t\t\t<string key="{self.act_key}" '
                          f'value="{self.labels[item]}"/>\n'
                          f'\t\t\t<date key="{self.time_key}" value="{times[j]}"/>\n'
                          '\t\t</event>\n'
                          for j, item in enumerate(part.sequence_ids(i).tolist()))
            pieces.append("\t</trace>\n")
            self.stream.write("".join(pieces))

    def close(self) -> None:
        """End the log."""
        self.stream.write("</log>\n")


def write_xes(db: SequenceDB, stream: TextIO) -> None:
    """Write ``db`` as a minimal XES log (:class:`XesSink`).

    Parameters
    ----------
    db : SequenceDB
    stream : text stream
        For instance from :func:`dpgpu.data.io.atomic_output`.
    """
    from .writers import write_all  # noqa: PLC0415 - writers imports the event-log modules

    write_all(XesSink(db, stream), db)


_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
                          "\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _attr(text: str) -> str:
    """``text`` escaped for a double-quoted XML attribute value (whitespace kept)."""
    return text.translate(_ESCAPES)
