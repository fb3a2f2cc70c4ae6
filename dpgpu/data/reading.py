"""What the file readers share: checks, numbering, CSV rows, progress, the GC pause.

Readers that go through a large file a block at a time (CSV and XES event
logs, user-level text, lines of words) turn each block's strings into
integer codes at once, so that no string is kept per event, and log how far
a long read is.
"""

from __future__ import annotations

import codecs
import csv
import gc
import io
import logging
import re
import time
from collections import defaultdict
from contextlib import contextmanager
from itertools import chain, count
from typing import Any, Iterable, Iterator

import numpy as np

from .io import decode_text

log = logging.getLogger("dpgpu")

#: Seconds between progress messages of a long read.
PROGRESS_SECONDS = 5.0
#: Bytes decoded at a time when checking that a file is UTF-8.
_CHECK_BYTES = 1 << 24


# ------------------------------------------------------------------ checks
def is_utf8(data: bytes) -> bool:
    """Whether ``data`` is UTF-8, checked without holding all of it decoded.

    Parameters
    ----------
    data : bytes
        The bytes to check, decoded a chunk at a time.

    Returns
    -------
    bool
        True for ASCII and for valid UTF-8 (a character cut off at the end
        is invalid).
    """
    if data.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for pos in range(0, len(view), _CHECK_BYTES):
            decoder.decode(view[pos:pos + _CHECK_BYTES])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def check_text(path: Any, data: bytes) -> None:
    """The InputError :func:`~dpgpu.data.io.decode_text` raises for ``data`` that is not
    UTF-8 text (naming the line), without decoding all of a file that is.

    Parameters
    ----------
    path : str or path-like
        The file ``data`` came from, named in the error.
    data : bytes
        The contents to check.

    Raises
    ------
    InputError
        ``data`` holds a NUL byte or is not UTF-8.
    """
    if b"\x00" in data or not is_utf8(data):
        decode_text(path, data)


# ------------------------------------------------------------------ numbering
def numbering(first: Iterable = ()) -> defaultdict:
    """A dict that numbers each key it lacks, when it is looked up, ``0, 1, ...`` in turn.

    Parameters
    ----------
    first : iterable
        Keys numbered already, in this order (from 0).

    Returns
    -------
    collections.defaultdict
        Key -> number; ``list(table)`` lists the keys in order of number.
        Look keys up with :func:`encode_values` (``in`` does not number a key).
    """
    table = defaultdict(int, {key: i for i, key in enumerate(first)})
    table.default_factory = count(len(table)).__next__
    return table


def encode_values(values: list, table: defaultdict) -> np.ndarray:
    """The number of each value in ``table`` (a :func:`numbering`); new values are numbered
    as they come.

    Parameters
    ----------
    values : list
        The values (hashable) to number.
    table : collections.defaultdict
        From :func:`numbering`; values it lacks are added to it.

    Returns
    -------
    numpy.ndarray of int64
        The number of each value, in order.
    """
    return np.fromiter(map(table.__getitem__, values), dtype=np.int64, count=len(values))


def distinct_values(values: list) -> tuple[list, np.ndarray]:
    """The distinct values in order of first appearance, and each value's index among them.

    Parameters
    ----------
    values : list of hashable

    Returns
    -------
    distinct : list
    inverse : numpy.ndarray of int64
        ``distinct[inverse[i]] == values[i]``.
    """
    table = numbering()
    inverse = encode_values(values, table)
    return list(table), inverse


# ------------------------------------------------------------------ reading
@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, then leave it as it was.

    Its passes over the many short-lived objects of a read (rows, records,
    tokens) took a good part of the reading time.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def csv_reader(data: bytes, start: int, delimiter: str) -> tuple[Any, io.TextIOWrapper]:
    """A csv reader of UTF-8 ``data[start:]``, and the text stream it reads.

    Lines split as in ``io.StringIO(text, newline="")``, decoded a little at a time.

    Parameters
    ----------
    data : bytes
        The file's contents, UTF-8.
    start : int
        The byte offset to read from (after a header already read, say).
    delimiter : str
        The field delimiter.

    Returns
    -------
    reader : iterator of list of str
        Yields each row's fields, as ``csv.reader`` does (``for``, ``next``,
        ``islice``), and counts the lines read in ``reader.line_num``.  A
        malformed row raises ``csv.Error``, and so does a quote that is never
        closed (which would make the rest of the text one field, or a field
        longer than ``csv.field_size_limit()``): then ``reader.line_num`` is
        the line where that quote opened.
    stream : io.TextIOWrapper
        The text stream it reads (``stream.buffer.tell()``: bytes read so
        far, for progress).
    """
    if data.find(b'"', start) < 0:  # no quote to leave open: the csv module's own reader
        stream = _text_stream(data, start)
        return csv.reader(stream, delimiter=delimiter), stream
    reader = _CsvRows(data, start, delimiter)
    return reader, reader.stream


def _text_stream(data: bytes, start: int) -> io.TextIOWrapper:
    """``data[start:]`` as UTF-8 text with line ends kept, for the csv module."""
    raw = io.BytesIO(data)
    raw.seek(start)
    return io.TextIOWrapper(raw, encoding="utf-8", newline="")


@contextmanager
def csv_fields_up_to(size: int) -> Iterator[None]:
    """Let the csv module read fields of up to ``size`` characters, then restore its limit
    (a setting of the whole process).

    Parameters
    ----------
    size : int
        The longest field to allow: a file's length bounds any of its fields.
    """
    was = csv.field_size_limit()
    csv.field_size_limit(max(was, min(size + 1, 2 ** 31 - 1)))
    try:
        yield
    finally:
        csv.field_size_limit(was)


#: Where the lines that a csv reader counts end (text read with ``newline=""``).
_LINE_END = re.compile(r"\r\n?|\n")
#: The csv module's error for a field longer than ``csv.field_size_limit()``.
_TOO_LONG = "field larger than field limit"
#: What a reader says of a quote never closed.
_NEVER_CLOSED = "unterminated quoted field: a quote opened here is never closed"


class _CsvRows:
    """:func:`csv_reader`'s reader: a ``csv.reader`` that refuses a quote never closed.

    The csv module (not strict, as Arrow reads) ends such a field, and its
    row, at the end of the text, unless the field grows past
    ``csv.field_size_limit()`` first.  The reader's lines are chained to an
    end that notes when all are read: a row given after that is such a row.
    """

    def __init__(self, data: bytes, start: int, delimiter: str) -> None:
        self._data, self._start, self._delimiter = data, start, delimiter
        self.stream = _text_stream(data, start)
        self._read_all: list[bool] = []  # [True] once all lines are read
        self._open_quote_line: int | None = None
        self._reader = csv.reader(chain(self.stream, self._end()), delimiter=delimiter)
        self._rows = self._checked()

    @property
    def line_num(self) -> int:
        """Lines read so far, or, after the error of a quote never closed, where it opened."""
        return self._open_quote_line or self._reader.line_num

    def __iter__(self) -> Iterator[list[str]]:
        return self._rows

    def __next__(self) -> list[str]:
        return next(self._rows)

    def _end(self) -> Iterator[str]:
        """No line: notes that the reader asked for one past the text."""
        self._read_all.append(True)
        yield from ()

    def _checked(self) -> Iterator[list[str]]:
        read_all = self._read_all
        try:
            for row in self._reader:
                if read_all:
                    # its last field ran from the quote to the end: its line breaks, but
                    # one that ends the text, are the lines after the quote's
                    field = row[-1]
                    self._open_quote_line = (self._reader.line_num
                                             - len(_LINE_END.findall(field))
                                             + field.endswith(("\r", "\n")))
                    raise csv.Error(_NEVER_CLOSED)
                yield row
        except csv.Error as exc:
            if str(exc).startswith(_TOO_LONG):
                self._open_quote_line = self._line_of_quote_never_closed()
                if self._open_quote_line:
                    raise csv.Error(_NEVER_CLOSED) from None
            raise

    def _line_of_quote_never_closed(self) -> int | None:
        """The line where a quote opened that is never closed, if it opened on or before the
        line reached, read again without a limit on fields; else None."""
        again = _CsvRows(self._data, self._start, self._delimiter)
        with csv_fields_up_to(len(self._data)):
            try:
                for _ in again:
                    pass
            except csv.Error:
                pass
        line = again._open_quote_line
        return line if line is not None and line <= self._reader.line_num else None


def optional_pyarrow() -> tuple[Any, Any]:
    """``(pyarrow, pyarrow.parquet)``, or ``(None, None)`` when not installed.

    Returns
    -------
    tuple of (module or None, module or None)
        The ``pyarrow`` and ``pyarrow.parquet`` modules, imported, or ``None``
        twice when either import fails.
    """
    try:
        import pyarrow  # noqa: PLC0415 - optional dependency
        import pyarrow.parquet  # noqa: PLC0415
    except ImportError:
        return None, None
    return pyarrow, pyarrow.parquet


class ReadProgress:
    """Logs how far a long read is (INFO), at most once every :data:`PROGRESS_SECONDS`.

    Parameters
    ----------
    path : path-like
        The file, for the message.
    unit : str
        What the position counts (``"line"``, ``"row"``).
    """

    def __init__(self, path: Any, unit: str = "line"):
        self.path, self.unit = path, unit
        self.due = time.monotonic() + PROGRESS_SECONDS

    def __call__(self, done: int, total: int, position: int) -> None:
        """Log ``done`` of ``total`` (as a percentage) and the ``position`` reached, if due."""
        if time.monotonic() > self.due:
            self.due = time.monotonic() + PROGRESS_SECONDS
            log.info("%s: %d%% read (%s %d)", self.path, 100 * done // max(total, 1),
                     self.unit, position)
