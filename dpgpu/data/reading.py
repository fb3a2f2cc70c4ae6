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
import time
from collections import defaultdict
from contextlib import contextmanager
from itertools import count
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
    reader : csv.reader
        Yields each row's fields as a list of str.
    stream : io.TextIOWrapper
        The text stream it reads (``stream.buffer.tell()``: bytes read so
        far, for progress).
    """
    raw = io.BytesIO(data)
    raw.seek(start)
    stream = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    return csv.reader(stream, delimiter=delimiter), stream


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
