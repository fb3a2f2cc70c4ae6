"""Event logs: CSV, Parquet and XES files with one record per event.

An event log lists events (case, activity, timestamp[, user]).  Reading one
groups the events by case into sequences of activities, each in timestamp
order (ties keep file order), the sequences in the order in which their case
first appears.  The activities become the vocabulary (sorted with
:func:`~dpgpu.data.sequencedb.sort_labels`).

Timestamps that look like dates (``YYYY-MM-DD...``) are read as ISO-8601,
all with a UTC offset (``Z`` is one) or all without one (then read as if
UTC: the column's order is that of local times), and ordered to the
microsecond (further digits of a fraction of a second are
cut off, by either parser); other timestamps must be numbers (as Python's
``float`` reads them, finite), ordered by their exact decimal values: two
events tie only where their numbers are equal (``1``, ``1.0`` and ``1e0``
are; ``0.1`` and ``0.10000000000000001`` are not, though one float64), so
that the order of two events never depends on the other values of the
file (a privacy requirement: one added record must not reorder the events
of other cases).  A column's timestamps are all dates or all numbers, and
its dates all have a UTC offset or none has, as its first timestamp: a
column that mixes them is an error naming both lines (a date without an
offset is no instant: its order among dates with one would be a guess).
A log without a timestamp column keeps file order.

Writers reproduce the input's format so that synthetic data is a drop-in
replacement.  Synthetic sequences have no real times, so the writers give the
events of each case monotonically increasing *synthetic* timestamps: event
``j`` (from 0) of every case is at ``2000-01-01T00:00:00+00:00`` plus ``j``
seconds (or the number ``j`` when the input's timestamps were numbers).  Only
the case, activity, timestamp (and user) columns are written; other columns of
the input are not reproduced.

``source`` keys set by the readers and used by the writers: ``path``,
``format`` (``"csv"``, ``"parquet"`` or ``"xes"``), ``columns`` (``case``,
``activity``, ``timestamp``, ``user`` column names; for XES the ``activity``
and ``timestamp`` attribute keys), ``timestamp_kind`` (``"iso"``,
``"numeric"``, ``"datetime"`` for typed Parquet columns, or None without
timestamps), ``cases`` (case names, one per sequence), ``user_labels`` (the
user values; ``users`` id ``k`` is ``user_labels[k]``) and, for CSV,
``delimiter``.  ``cases`` and ``user_labels`` are identifiers of the input
data: a mechanism releasing synthetic data must drop them from ``source``
(the writers then name cases ``case-1``, ``case-2``, ... and users by id).

XES support (:func:`read_xes`, :func:`write_xes`, :func:`looks_like_xes`)
lives in :mod:`dpgpu.data.xes` and is re-exported here.
"""

from __future__ import annotations

import codecs
import csv
import logging
import os
import re
import shlex
import warnings
from datetime import datetime, timedelta, timezone
from decimal import Decimal, InvalidOperation
from itertools import islice
from operator import itemgetter
from typing import Any, Callable, Iterable, Iterator, TextIO

import numpy as np

from ..errors import InputError, InvalidParameter
from .io import read_bytes
from .reading import (ReadProgress, check_text, csv_reader, distinct_values, encode_values,
                      gc_paused, numbering, optional_pyarrow)
from .sequencedb import SequenceDB, sort_labels
from .vocabulary import Vocabulary

log = logging.getLogger("dpgpu")

PARQUET_HINT = "pip install dpgpu[parquet]"
SYNTHETIC_START = datetime(2000, 1, 1, tzinfo=timezone.utc)
DEFAULT_COLUMNS = {"case": "case:concept:name", "activity": "concept:name",
                   "timestamp": "time:timestamp", "user": "user"}

# Column names tried, in order, when an option is not given; compared after
# lower-casing and removing spaces, "_" and "-" (so "Case ID" matches "caseid").
CANDIDATES = {
    "case": ("case:concept:name", "caseid", "case", "sessionid", "session",
             "sequenceid", "sequence", "traceid", "trace"),
    "activity": ("concept:name", "activity", "activityname", "activityid", "event",
                 "eventname", "action", "item", "task"),
    "timestamp": ("time:timestamp", "timestamp", "time", "datetime", "date",
                  "eventtime", "completetimestamp", "ts"),
}
_DELIMITERS = (",", "\t", ";", "|")
_LOOKS_LIKE_DATE = re.compile(r"\s*[+-]?\d{4}-\d{2}-\d{2}")
_FRACTION = re.compile(r"(\d{2}:\d{2}:\d{2})[.,](\d+)")
#: A UTC offset after a time (``HH:MM[:SS]`` or a 6-digit fraction): ``Z``, ``+HH``,
#: ``+HHMM`` or ``+HH:MM``.
_OFFSET = re.compile(r"(?:[Zz]|(?:(?<=:\d\d)|(?<=\.\d{6}))([+-]\d{2}):?(\d{2})?)$")
#: A date without a time but with a UTC offset (XML Schema's ``xs:date``: ``2020-01-01Z``).
_DATE_OFFSET = re.compile(r"(\d{4}-\d{2}-\d{2})([Zz]|[+-]\d{2}(?::?\d{2})?)")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


class BadValue(Exception):
    """Internal: the value at ``index`` cannot be read (message says why).

    ``mixed`` is set for a timestamp of the other kind than the column's
    first one (a number or a date; a date with or without a UTC offset): the
    two kinds, ``(first's, this one's)``, as a message names them (from
    :data:`_KINDS` or :data:`_ZONES`); the message is then the value itself
    (:func:`timestamp_error`).
    """

    def __init__(self, index: int, message: str, mixed: tuple[str, str] | None = None):
        super().__init__(message)
        self.index = index
        self.mixed = mixed


#: How messages name the two kinds of timestamps.
_KINDS = ("numbers", "ISO-8601 dates")
#: How messages name dates with and without a UTC offset (``Z`` is one).
_ZONES = ("dates with a UTC offset", "dates without a UTC offset")


def _other_kind(index: int, text: str, number: bool) -> BadValue:
    """BadValue for timestamp ``text`` (a number if ``number``, else a date) in a column
    whose first timestamp is of the other kind."""
    return BadValue(index, repr(text), mixed=_KINDS[::-1] if number else _KINDS)


def timestamp_error(path: Any, where: Callable[[int], str], field: str,
                    bad: BadValue) -> InputError:
    """The InputError for the bad timestamp ``bad`` (with its index).

    Where ``bad`` is of the other kind than the field's first timestamp
    (index 0, which chose the kind: number or date, date with or without a
    UTC offset), the message names both places.

    Parameters
    ----------
    path : path-like
        For messages.
    where : callable
        ``where(i)`` locates timestamp ``i`` (``"line 12"``).
    field : str
        The column or attribute, as the message names it (``"column 'time'"``).
    bad : BadValue
        From :func:`parse_times` or :class:`_ChunkedTimes`.

    Returns
    -------
    InputError
    """
    here = where(bad.index)
    if bad.mixed is None:
        return InputError(f"{path}: {here}: {field}: {bad}")
    was, now = bad.mixed
    kinds = _KINDS if was in _KINDS else _ZONES
    return InputError(f"{path}: {here}: {field} mixes {was} ({where(0)}) and {now} "
                      f"({here}: {bad}); its timestamps must be of one kind, all {kinds[0]} "
                      f"or all {kinds[1]}")


# ------------------------------------------------------------------- options
def check_option(value: Any, name: str) -> str | None:
    """``value`` if it is None or a non-empty string, else InvalidParameter naming ``name``."""
    if value is None or (isinstance(value, str) and value):
        return value
    raise InvalidParameter(f"{name}: expected a column name, got {value!r}")


#: Names a delimiter may be given by, for a tab typed in a shell.
_DELIMITER_NAMES = {"\\t": "\t", "tab": "\t"}
#: Characters that cannot separate the fields of a CSV row, and why.
_NOT_DELIMITERS = {'"': "a quote opens a quoted field", "\n": "a line end ends the row",
                   "\r": "a line end ends the row"}


def check_delimiter(value: Any) -> str | None:
    """The one-character field delimiter ``value`` stands for (None stays None).

    A tab may also be given as the two characters ``\\t`` or as ``tab``
    (what a shell passes for ``--delimiter '\\t'`` or ``--delimiter tab``).

    Parameters
    ----------
    value : str or None
        The delimiter option as given.

    Returns
    -------
    str or None

    Raises
    ------
    InvalidParameter
        Naming ``delimiter``, for anything else than one character, and for
        a quote or a line end: a quote opens a quoted field and a line end
        ends the row, so neither can separate fields.
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = _DELIMITER_NAMES.get(value.lower(), value)
        if value in _NOT_DELIMITERS:
            raise InvalidParameter(f"delimiter: {value!r} cannot be a field delimiter: "
                                   f"{_NOT_DELIMITERS[value]}; choose another character "
                                   "(or \\t or tab for a tab)")
        if len(value) == 1:
            return value
    raise InvalidParameter(f"delimiter: expected one character (or \\t or tab for a tab), "
                           f"got {value!r}")


def pick_column(path: Any, header: list[str], role: str, chosen: str | None, *,
                required: bool = True, hint: str = "",
                candidates: tuple[str, ...] | None = None) -> str | None:
    """The column playing ``role`` (``case``, ``activity``, ``timestamp``, ``user``, ...).

    Parameters
    ----------
    path : path-like
        For messages.
    header : list of str
        The file's column names.
    role : str
        Also the option's name.
    chosen : str or None
        The column the user asked for; None picks one from :data:`CANDIDATES`.
    required : bool
        Whether a log without such a column is an error (else None is returned).
    hint : str
        Added to the message when no column was chosen or found.
    candidates : tuple of str, optional
        Normalised names tried in order (default: ``CANDIDATES[role]``).

    Raises
    ------
    InputError
        The chosen column is missing, or none was chosen or found and
        ``required``, or the header repeats the column's name (:func:`single_column`).
    """
    listing = ", ".join(header)
    if chosen is not None:
        if chosen not in header:
            raise InputError(f"{path}: no column {chosen!r} for --{role} "
                             f"(columns: {listing})")
        return _only(path, header, chosen, role)
    normal = {_normal(h): h for h in reversed(header)}
    for name in CANDIDATES.get(role, ()) if candidates is None else candidates:
        if name in normal:
            return _only(path, header, normal[name], role)
    if required:
        raise InputError(f"{path}: no {role} column found; choose one with --{role} "
                         f"(columns: {listing}){hint}")
    return None


def _only(path: Any, header: list[str], name: str, role: str) -> str:
    """``name``, checked to be in ``header`` once (:func:`single_column`)."""
    single_column(path, [i for i, h in enumerate(header) if h == name], name, role)
    return name


def single_column(path: Any, found: list[int], name: str, option: str) -> int:
    """The one index in ``found``: where the header has the column ``name`` a run uses.

    Parameters
    ----------
    path : path-like
        For messages.
    found : list of int
        The indices (from 0) of the header's columns named ``name``; not empty.
    name : str
        The column's name.
    option : str
        The option (role) the column is for, named in the message.

    Returns
    -------
    int
        ``found[0]``.

    Raises
    ------
    InputError
        ``found`` has more than one index: which of the equally named
        columns is meant cannot be told (the message gives their numbers,
        from 1).
    """
    if len(found) > 1:
        times = "twice" if len(found) == 2 else f"{len(found)} times"
        numbers = [str(i + 1) for i in found]
        listing = ", ".join(numbers[:-1]) + " and " + numbers[-1]
        raise InputError(f"{path}: column {name!r} for --{option} appears {times} in the "
                         f"header (columns {listing}); rename one")
    return found[0]


def _normal(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.lower())


# ---------------------------------------------------------------- timestamps
def parse_times(values: np.ndarray) -> tuple[np.ndarray, str]:
    """Sort keys for timestamp strings.

    Parameters
    ----------
    values : array of str

    Returns
    -------
    keys : array of int64
        Microseconds since 1970-01-01 UTC for ISO-8601 dates (dates without
        a UTC offset as if UTC); for numbers,
        the numbers where all are integers in int64's range, else keys in
        the exact order of the numbers (:func:`_numeric_keys`).
    kind : {"iso", "numeric"}
        ISO when the first value looks like a date (``YYYY-MM-DD...``).

    Raises
    ------
    BadValue
        With the index of the first value that is not a timestamp, or not
        of the first value's kind (a number or a date, a date with or
        without a UTC offset).
    """
    if values.size and _LOOKS_LIKE_DATE.match(str(values[0])):
        return _iso_keys(values, parsed=_iso_vectorized(values))[0], "iso"
    return _numeric_keys(values), "numeric"


def _iso_keys(values: np.ndarray, zoned: bool | None = None,
              parsed: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, bool]:
    """Microseconds since the epoch of ISO-8601 strings, all with a UTC offset or all without.

    Every value must look like a date (``YYYY-MM-DD...``), as the first
    one does: ``2020`` or ``20200101`` is not read as a date, and a number
    is reported as such (:func:`timestamp_error`).  Every value must have a
    UTC offset (``Z`` is one) if the column's first does, else none may.

    Parameters
    ----------
    values : array of str
    zoned : bool, optional
        Whether the column's dates have a UTC offset; by default, as ``values[0]``.
    parsed : tuple of arrays, optional
        The keys and offsets NumPy read (:func:`_iso_vectorized`); without
        them, each distinct value is parsed by datetime (:func:`_iso_micros`).

    Returns
    -------
    keys : array of int64
    zoned : bool

    Raises
    ------
    BadValue
        At the first value that is not a date, or that has a UTC offset
        where the column's dates have none or the other way round.
    """
    if parsed is None:
        uniq, inverse = np.unique(values, return_inverse=True)
        keys = np.empty(uniq.size, dtype=np.int64)
        offset = np.zeros(uniq.size, dtype=bool)
        bad = np.zeros(uniq.size, dtype=bool)
        for k, text in enumerate(uniq.tolist()):
            try:
                if not _LOOKS_LIKE_DATE.match(text):
                    raise ValueError(text)
                keys[k], offset[k] = _iso_micros(text)
            except ValueError:
                bad[k] = True
        inverse = inverse.reshape(-1)
        keys, offset, bad = keys[inverse], offset[inverse], bad[inverse]
    else:
        (keys, offset), bad = parsed, np.zeros(values.size, dtype=bool)
    if zoned is None:
        zoned = bool(offset[0]) if offset.size else False
    wrong = bad | (offset != zoned)
    if wrong.any():
        i = int(np.argmax(wrong))
        text = str(values[i])
        if not bad[i]:
            raise BadValue(i, repr(text), mixed=_ZONES if zoned else _ZONES[::-1])
        if _is_finite_number(text):
            raise _other_kind(i, text, number=True)
        raise BadValue(i, f"cannot parse timestamp {text!r} as an ISO-8601 date")
    return keys, zoned


def _numeric_keys(values: np.ndarray) -> np.ndarray:
    """Sort keys of number strings: exact, whatever the other values are.

    Returns the integers (int64) when every value is an integer in int64's
    range, else int64 keys in the exact order of the decimal values (the
    values scaled to integers, or their ranks: :func:`_exact_keys`).  Equal
    numbers (``1``, ``1.0``, ``1e0``) get equal keys, unequal ones never do
    (``0.1`` and ``0.10000000000000001`` are two numbers, though one float64).

    Raises
    ------
    BadValue
        With the index of the first value that Python's ``float`` cannot
        read or reads as infinite or NaN.
    """
    parts = _number_parts(values)
    if isinstance(parts, np.ndarray):
        return parts
    return _exact_keys([(parts, np.arange(values.size))])


#: Decimal digits of a 64-bit word of an exact key (10**19 < 2**64).
_WORD_DIGITS = 19
#: Longer number strings are read one at a time (see :func:`_plain_decimals`).
_PLAIN_CHARS = 96
#: Number strings read by :func:`_plain_decimals` at a time.
_PLAIN_ROWS = 1 << 16
#: Not white space (for :func:`_plain_decimals`), by ASCII code.
_FILLED = ~np.isin(np.arange(256), [0, 9, 10, 11, 12, 13, 32])
#: Digits count 1, "." 2**7, "e" and "E" 2**14, "+" and "-" 2**21 (see :func:`_plain_decimals`).
_CHAR_CLASSES = np.zeros(256, dtype=np.int32)
_CHAR_CLASSES[48:58] = 1
_CHAR_CLASSES[46] = 1 << 7
_CHAR_CLASSES[[69, 101]] = 1 << 14
_CHAR_CLASSES[[43, 45]] = 1 << 21


class _ExactNumbers:
    """Exact values of distinct number strings, as fixed-width words (see :func:`_number_parts`).

    Value ``i`` is ``-`` if ``neg[i]`` (never for zero) of the integer
    ``hi * 10**19 + lo`` plus the fraction ``(f1 * 10**19 + f2) / 10**38``:
    ``words`` holds ``hi, lo, f1, f2`` (uint64 arrays, None where all 0).
    Values whose integer part or fraction (trailing zeros left out) has
    more than 38 digits are in ``longs`` (index to Decimal) instead; their
    words are 0.
    """

    def __init__(self, neg: np.ndarray, words: list[np.ndarray | None],
                 longs: dict[int, Decimal]):
        self.neg, self.words, self.longs = neg, words, longs

    @classmethod
    def of_integers(cls, keys: np.ndarray) -> _ExactNumbers:
        """int64 values as exact numbers."""
        neg = keys < 0
        magnitude = np.where(neg, (-(keys + 1)).astype(np.uint64) + np.uint64(1),
                             keys.astype(np.uint64))  # |int64 min| is 2**63 < 10**19
        return cls(neg, [None, magnitude, None, None], {})

    def decimal(self, i: int) -> Decimal:
        """Value ``i`` (of the words) as a Decimal, exactly."""
        hi, lo, f1, f2 = (0 if w is None else int(w[i]) for w in self.words)
        sign = "-" if self.neg[i] else ""
        return Decimal(f"{sign}{hi * 10 ** _WORD_DIGITS + lo}."
                       f"{f1 * 10 ** _WORD_DIGITS + f2:0{2 * _WORD_DIGITS}d}")


def _number_parts(values: np.ndarray) -> np.ndarray | _ExactNumbers:
    """The integers of number strings (int64) where all are integers in int64's range,
    else their exact values; raises BadValue as :func:`_numeric_keys`."""
    try:
        return values.astype(np.int64)
    except (ValueError, OverflowError):
        pass
    n = values.size
    neg = np.zeros(n, dtype=bool)
    words = [np.zeros(n, dtype=np.uint64) for _ in range(4)]
    plain = np.zeros(n, dtype=bool)
    width = values.dtype.itemsize // 4
    short = np.arange(n) if width <= _PLAIN_CHARS else \
        np.flatnonzero(np.char.str_len(values) <= _PLAIN_CHARS)
    width = min(width, _PLAIN_CHARS)
    for lo in range(0, short.size if width else 0, _PLAIN_ROWS):
        some = short[lo:lo + _PLAIN_ROWS]
        found = _plain_decimals(values[some].astype(f"U{width}"))
        plain[some], neg[some] = found[:2]
        for word, part in zip(words, found[2:]):
            word[some] = part
    longs: dict[int, Decimal] = {}
    for i in np.flatnonzero(~plain).tolist():  # in order: the first bad one is reported
        text = str(values[i])
        value = _exact_number(text)
        if value is None and _LOOKS_LIKE_DATE.match(text):
            raise _other_kind(i, text, number=False)
        if value is None:
            raise BadValue(i, f"cannot parse timestamp {text!r} as a number or an "
                              "ISO-8601 date")
        if isinstance(value, Decimal):
            longs[i] = value
        else:
            neg[i], parts = value
            for word, part in zip(words, parts):
                word[i] = part
    return _ExactNumbers(neg, [w if w.any() else None for w in words], longs)


def _plain_decimals(values: np.ndarray) -> tuple[np.ndarray, ...]:
    """Which strings are plain numbers, and their exact values, vectorized.

    A plain number is, between optional ASCII white space, an optional
    sign, ASCII digits with at most one ``.`` (at least one digit), then
    optionally ``e`` or ``E``, an optional sign and one to four digits; its
    value has at most 38 digits before the point and 38 after it (counting
    the zeros of the string).  Python's ``float`` reads all these.  Other
    strings are left to :func:`_exact_number`.

    Returns
    -------
    plain, neg : numpy.ndarray of bool
        ``neg`` is False for zero.
    hi, lo, f1, f2 : numpy.ndarray of uint64
        The words of :class:`_ExactNumbers` (0 where not ``plain``).
    """
    n, width = values.size, values.dtype.itemsize // 4
    wide = np.ascontiguousarray(values).view(np.uint32).reshape(n, width)
    codes = wide.astype(np.uint8)  # rows of other characters are not plain, whatever this is
    filled = _FILLED[codes]
    rows = np.arange(n)
    first = filled.argmax(1)
    last = width - 1 - filled[:, ::-1].argmax(1)

    def at(place: np.ndarray) -> np.ndarray:
        return codes[rows, np.clip(place, 0, width - 1)]

    lead_sign = (at(first) == 43) | (at(first) == 45)
    start = first + lead_sign
    counts = _CHAR_CLASSES[codes].sum(1, dtype=np.int32)
    digits, points, powers, signs = (counts >> shift & 127 for shift in (0, 7, 14, 21))
    has_power = powers > 0
    power = np.where(has_power, ((codes | np.uint8(32)) == 101).argmax(1), last + 1)
    point = np.where(points > 0, (codes == 46).argmax(1), power)
    exponent_sign = has_power & ((at(power + 1) == 43) | (at(power + 1) == 45))
    exponent_digits = np.where(has_power, last - power - exponent_sign, 0)
    mantissa = digits - exponent_digits  # digits before the exponent
    plain = (wide.max(1) < 128) & filled.any(1) & (points <= 1) & (powers <= 1) \
        & (digits + points + powers + signs == last - first + 1) \
        & (signs == lead_sign + exponent_sign) & (point <= power) & (mantissa > 0) \
        & (exponent_digits <= 4) & (~has_power | (exponent_digits > 0))
    exponent = np.zeros(n, dtype=np.int64)
    if (plain & has_power).any():
        for k in range(4):
            digit = at(power + exponent_sign + 1 + k).astype(np.int64) - 48
            exponent = np.where(k < exponent_digits, exponent * 10 + digit, exponent)
        exponent = np.where(at(power + 1) == 45, -exponent, exponent)
    whole = point - start  # digits of the mantissa before its point
    shifted = whole + exponent  # digits of the value before its point (if positive)
    plain &= (shifted <= 2 * _WORD_DIGITS) & (mantissa - shifted <= 2 * _WORD_DIGITS)
    shifted, mantissa = np.where(plain, shifted, 0), np.where(plain, mantissa, 0)
    before = int(np.maximum(shifted, 0).max(initial=0))
    after = int(np.maximum(mantissa - shifted, 0).max(initial=0))
    # digit k of the mantissa (from 0, point left out) for each place of the value: the
    # digits before the point right-aligned, those after it left-aligned, 0 elsewhere
    index = np.int32 if codes.size < 2 ** 31 else np.int64
    k = shifted.astype(index)[:, None] + np.arange(-before, after, dtype=index)
    flat = (rows * width + start).astype(index)[:, None] + k + (k >= whole.astype(index)[:, None])
    np.clip(flat, 0, codes.size - 1, out=flat)  # where k is in the mantissa, in its row
    value = np.where((k >= 0) & (k < mantissa.astype(index)[:, None]),
                     codes.ravel()[flat] - np.uint8(48), np.uint8(0))
    split = max(0, before - _WORD_DIGITS)
    hi, lo = _horner(value[:, :split]), _horner(value[:, split:before])
    f1, f2 = (_horner(value[:, before + k:before + k + _WORD_DIGITS], _WORD_DIGITS)
              for k in (0, _WORD_DIGITS))
    neg = plain & (at(first) == 45) & ((hi | lo | f1 | f2) != 0)
    return plain, neg, hi, lo, f1, f2


def _horner(digits: np.ndarray, places: int = 0) -> np.ndarray:
    """The numbers of rows of decimal digits (uint8, most significant first) as uint64,
    times ``10 ** (places - columns)`` when ``places`` is given (for fraction digits)."""
    out = np.zeros(digits.shape[0], dtype=np.uint64)
    for column in digits.T:
        out *= np.uint64(10)
        out += column
    if places and digits.shape[1] < places:
        out *= np.uint64(10 ** (places - digits.shape[1]))
    return out


def _exact_number(text: str) -> tuple[bool, tuple[int, int, int, int]] | Decimal | None:
    """The exact value of a number string as ``float`` reads it: ``(neg, (hi, lo, f1, f2))``
    (see :class:`_ExactNumbers`), or a Decimal where that is too long; None where ``float``
    cannot read it or reads it as infinite or NaN (as before, so ``1e400`` is refused)."""
    try:
        if not np.isfinite(float(text)):
            return None
    except ValueError:
        return None
    try:
        value = Decimal(text)
    except InvalidOperation:  # not known to happen: float's grammar is within Decimal's
        value = Decimal(float(text))  # this value alone is rounded
    sign, digits, exponent = value.as_tuple()
    kept = len(digits)
    while kept and digits[kept - 1] == 0:  # trailing zeros: the same number
        kept -= 1
    if not kept:
        return False, (0, 0, 0, 0)
    exponent += len(digits) - kept
    digits = digits[:kept]
    integer_digits = kept + exponent
    fraction_digits = max(0, -exponent)
    if integer_digits > 2 * _WORD_DIGITS or fraction_digits > 2 * _WORD_DIGITS:
        return value
    text_digits = "".join(map(str, digits))
    if exponent >= 0:
        integer, fraction = int(text_digits) * 10 ** exponent, 0
    else:
        point = max(0, integer_digits)
        integer = int(text_digits[:point] or "0")
        fraction = int(("0" * -integer_digits + text_digits[point:]).ljust(2 * _WORD_DIGITS,
                                                                             "0"))
    word = 10 ** _WORD_DIGITS
    return bool(sign), (integer // word, integer % word, fraction // word, fraction % word)


def _exact_keys(parts: list[tuple[np.ndarray | _ExactNumbers, np.ndarray]]) -> np.ndarray:
    """int64 keys of the values of chunks, in the exact order of the values.

    The keys are the values times ``10**d`` where that makes integers of
    them all within int64's range (``d`` the fraction digits needed), else
    their ranks among the distinct values.  Either way equal numbers get
    equal keys and a smaller number a smaller key.

    Parameters
    ----------
    parts : list of tuple
        Each chunk's distinct values (int64 integers or :class:`_ExactNumbers`)
        and the index of each of its values among them.

    Returns
    -------
    numpy.ndarray of int64
        A key for each value of the chunks in turn.
    """
    if not parts:
        return np.zeros(0, dtype=np.int64)
    exact = [_ExactNumbers.of_integers(found) if isinstance(found, np.ndarray) else found
             for found, _ in parts]
    sizes = [found.neg.size for found in exact]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    neg = np.concatenate([found.neg for found in exact])
    words = [None if all(found.words[k] is None for found in exact) else
             np.concatenate([np.zeros(size, dtype=np.uint64) if found.words[k] is None
                             else found.words[k] for found, size in zip(exact, sizes)])
             for k in range(4)]
    longs = {int(start) + i: value for found, start in zip(exact, starts)
             for i, value in found.longs.items()}
    keys = None if longs else _scaled(neg, words)
    if keys is None:
        def decimal(i: int) -> Decimal:
            chunk = int(np.searchsorted(starts, i, side="right")) - 1
            return exact[chunk].decimal(i - int(starts[chunk]))

        keys = _ranks(neg, words, longs, decimal)
    return np.concatenate([keys[int(start):int(start) + size][inverse]
                           for (_, inverse), size, start in zip(parts, sizes, starts)])


def _scaled(neg: np.ndarray, words: list[np.ndarray | None]) -> np.ndarray | None:
    """The values of :class:`_ExactNumbers` words times ``10**d`` as int64, ``d`` the
    fraction digits they need; None where that is beyond int64's range."""
    if words[0] is not None or words[3] is not None:
        return None
    lo, f1 = (np.zeros(neg.size, dtype=np.uint64) if w is None else w for w in words[1:3])
    cut = _WORD_DIGITS  # fraction digits 10**cut divides: the fewest digits needed
    while cut and (f1 % np.uint64(10 ** cut)).any():
        cut -= 1
    scale = 10 ** (_WORD_DIGITS - cut)
    if int(lo.max(initial=0)) * scale + scale - 1 >= 2 ** 63:
        return None
    keys = (lo * np.uint64(scale) + f1 // np.uint64(10 ** cut)).astype(np.int64)
    return np.where(neg, -keys, keys)


def _ranks(neg: np.ndarray, words: list[np.ndarray | None], longs: dict[int, Decimal],
           decimal: Callable[[int], Decimal]) -> np.ndarray:
    """Each value's rank among the distinct values (int64): of :class:`_ExactNumbers`
    ``neg`` and ``words``, but at the indices ``longs`` the Decimals there
    (``decimal(i)`` is value ``i`` of the words)."""
    total = neg.size
    fixed = np.ones(total, dtype=bool)
    fixed[np.fromiter(longs, dtype=np.int64, count=len(longs))] = False
    rows = np.flatnonzero(fixed)
    # by the sign (negatives first), then the words (complemented for negatives: the
    # larger a negative, the smaller)
    columns = [np.where(neg[rows], ~w[rows], w[rows]) for w in words if w is not None]
    columns.append(~neg[rows])
    order = np.lexsort(columns[-2::-1] + columns[-1:])
    new = np.zeros(order.size, dtype=bool)
    new[:1] = True
    for column in columns:
        ordered = column[order]
        new[1:] |= ordered[1:] != ordered[:-1]
    group = np.cumsum(new) - 1  # the distinct value of each row, in order
    ranks = np.empty(total, dtype=np.int64)
    if longs:
        firsts = rows[order[new]]  # a row of each distinct fixed-width value, in order
        distinct = sorted(set(longs.values()))
        below = np.array([_count_below(value, lambda u: decimal(int(firsts[u])), firsts.size)
                          for value in distinct], dtype=np.int64)
        group = group + np.searchsorted(below, group, side="right")
        place = {value: int(b) + k for k, (value, b) in enumerate(zip(distinct, below))}
        for i, value in longs.items():
            ranks[i] = place[value]
    ranks[rows[order]] = group
    return ranks


def _count_below(value: Decimal, at: Callable[[int], Decimal], size: int) -> int:
    """How many of ``at(0) < at(1) < ... < at(size - 1)`` are below ``value`` (never equal)."""
    lo, hi = 0, size
    while lo < hi:
        mid = (lo + hi) // 2
        if at(mid) < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


class _ChunkedTimes:
    """Sort keys of a timestamp column given a chunk at a time.

    The keys, kind and first error are those :func:`parse_times` gives for the
    whole column, without holding the column's strings: the kind follows the
    column's first value; numbers are the integers when every chunk's are
    integers in int64's range, else all are keyed by exact value once the
    last chunk is in (as ``parse_times`` would key the whole column: the
    order of two values never depends on the others).  ISO
    dates are parsed by NumPy only when NumPy reads every value, else all by
    datetime: when NumPy cannot read a chunk after it read earlier ones,
    :attr:`redo` is set and further chunks are ignored; the caller must then
    give every chunk again to a fresh ``_ChunkedTimes(numpy_iso=False)``.

    Parameters
    ----------
    numpy_iso : bool
        Whether ISO dates may be parsed by NumPy.

    Attributes
    ----------
    redo : bool
        The column must be given again (see above).
    """

    def __init__(self, *, numpy_iso: bool = True):
        self.numpy_iso = numpy_iso
        self.redo = False
        self.kind: str | None = None
        self.zoned: bool | None = None  # whether the dates have a UTC offset
        self.parts: list[Any] = []  # ISO: keys; numbers: (distinct values, inverse)
        self.count = 0
        self.error: BadValue | None = None

    def add(self, strings: list[str]) -> None:
        """Parse the next chunk of timestamp strings (ignored after an error or :attr:`redo`).

        Each distinct string of the chunk is parsed once.

        Parameters
        ----------
        strings : list of str
        """
        if strings and not self.stopped:
            self.add_distinct(*distinct_values(strings))

    @property
    def stopped(self) -> bool:
        """Whether further chunks are ignored (after an error or :attr:`redo`)."""
        return self.redo or self.error is not None

    def add_distinct(self, distinct: list[str], inverse: np.ndarray) -> None:
        """Parse the next chunk given as its distinct strings and each value's index among them.

        Ignored after an error or :attr:`redo`, as :meth:`add`.

        Parameters
        ----------
        distinct : list of str
            In order of first appearance in the chunk.
        inverse : numpy.ndarray of int
            Value ``i`` of the chunk is ``distinct[inverse[i]]``.
        """
        if not inverse.size or self.stopped:
            return
        values = np.array(distinct, dtype=str)
        if self.kind is None:
            self.kind = "iso" if _LOOKS_LIKE_DATE.match(distinct[0]) else "numeric"
        try:
            if self.kind == "numeric":
                small = np.int32 if inverse.size < 2 ** 31 else np.int64
                self.parts.append((_number_parts(values), inverse.astype(small)))
                self.count += inverse.size
                return
            parsed = _iso_vectorized(values) if self.numpy_iso else None
            if parsed is None and self.numpy_iso and self.parts:
                self.redo = True
                return
            if parsed is None:
                self.numpy_iso = False
            keys, self.zoned = _iso_keys(values, self.zoned, parsed)
        except BadValue as bad:  # bad.index is a distinct string's, which first occurs...
            first = int(np.argmax(inverse == bad.index))  # ...where the first bad one does
            self.error = BadValue(self.count + first, str(bad), bad.mixed)
            return
        self.parts.append(keys[inverse])
        self.count += inverse.size

    def result(self) -> tuple[np.ndarray, str]:
        """The keys of all chunks and their kind, as :func:`parse_times` returns them.

        Raises
        ------
        BadValue
            With the index (from the column's start) of the first value that
            is not a timestamp.
        """
        if self.error is not None:
            raise self.error
        if not self.parts:
            return parse_times(np.array([], dtype=str))
        if self.kind == "numeric" and isinstance(self.parts[0], tuple):
            if all(isinstance(found, np.ndarray) for found, _ in self.parts):  # integers
                self.parts = [found[inverse] for found, inverse in self.parts]
            else:
                self.parts = [_exact_keys(self.parts)]
        self.parts = [np.concatenate(self.parts)]
        return self.parts[0], self.kind


def _iso_vectorized(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Microseconds since the epoch, parsed by NumPy; None unless every value parses.

    Every value must start as a date (``YYYY-MM-DD``, after white space and
    an optional sign), as :func:`_iso_keys` requires: NumPy alone would read
    ``5`` as the year 5.  A trailing ``Z`` or ``+HH:MM``/``-HH:MM`` offset
    is cut off (NumPy reads no offsets) and subtracted; what remains must
    be a date-time NumPy reads (without offset: as if UTC).

    Returns
    -------
    keys : array of int64
    offset : array of bool
        Whether each value has a UTC offset.
    """
    text = np.char.strip(values)
    n, width = text.size, text.dtype.itemsize // 4
    if width == 0 or not _starts_as_dates(text).all():
        return None
    codes = np.ascontiguousarray(text).view(np.uint32).reshape(n, width).copy()
    length = np.char.str_len(text).astype(np.int64)
    rows = np.arange(n)

    def back(k: int) -> np.ndarray:  # code point k places before the end (0 if none)
        return np.where(length >= k, codes[rows, np.clip(length - k, 0, width - 1)], 0)

    digit = [(back(k) >= ord("0")) & (back(k) <= ord("9")) for k in (5, 4, 2, 1)]
    sign = back(6)
    offset = (length >= 22) & np.isin(sign, (ord("+"), ord("-"))) & (back(3) == ord(":")) \
        & np.logical_and.reduce(digit)
    zulu = np.isin(back(1), (ord("Z"), ord("z")))
    hours = (back(5) - ord("0")) * 10 + back(4) - ord("0")
    minutes = (back(2) - ord("0")) * 10 + back(1) - ord("0")
    shift = np.where(offset, np.where(sign == ord("-"), -1, 1) * (hours * 60 + minutes), 0)
    cut = np.where(zulu, length - 1, np.where(offset, length - 6, length))
    codes[np.arange(width) >= cut[:, None]] = 0
    bare = codes.view(f"U{width}").reshape(n)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            stamps = bare.astype("datetime64[us]")
    except (ValueError, Warning):
        return None
    if np.isnat(stamps).any():
        return None
    return stamps.astype(np.int64) - shift.astype(np.int64) * 60_000_000, offset | zulu


def _starts_as_dates(text: np.ndarray) -> np.ndarray:
    """Whether each string of ``text`` (stripped) starts as ``[+-]YYYY-MM-DD``, ASCII digits."""
    head = text.astype("U11").view(np.uint32).reshape(text.size, 11)  # NUL-padded

    def dated(h: np.ndarray) -> np.ndarray:  # columns 0..9 hold YYYY-MM-DD
        ok = (h[:, 4] == ord("-")) & (h[:, 7] == ord("-"))
        for k in (0, 1, 2, 3, 5, 6, 8, 9):
            ok &= (h[:, k] - np.uint32(ord("0"))) < 10  # below "0" wraps around
        return ok

    ok = dated(head)
    signed = (head[:, 0] == ord("+")) | (head[:, 0] == ord("-"))
    if signed.any():
        ok[signed] = dated(head[signed, 1:])
    return ok


def _is_finite_number(text: str) -> bool:
    try:
        return np.isfinite(float(text))
    except ValueError:
        return False


def _iso_micros(text: str) -> tuple[int, bool]:
    """Microseconds since the epoch of an ISO-8601 date-time (naive: as if UTC), and
    whether it has a UTC offset.

    A date with an offset but no time is at midnight there (``2020-01-01+02:00`` is
    ``2019-12-31T22:00Z``; datetime would take the ``+`` for the separator of a time).
    The forms of these that datetime reads from Python 3.11 on only (``Z``,
    and ``+HH`` or ``+HHMM`` after a time of ``HH:MM`` or more; fractions of
    other than 3 or 6 digits, cut to 6) are rewritten first, so that Python
    3.10 reads them too.  Other forms only 3.11 reads (an hour without
    minutes, ISO's basic and week formats) stay errors on 3.10.
    """
    text = text.strip()
    date = _DATE_OFFSET.fullmatch(text)
    if date:
        text = f"{date[1]}T00:00{date[2]}"
    text = _FRACTION.sub(lambda m: f"{m[1]}.{(m[2] + '000000')[:6]}", text)
    text = _OFFSET.sub(lambda m: f"{m[1]}:{m[2] or '00'}" if m[1] else "+00:00", text)
    stamp = datetime.fromisoformat(text)
    zoned = stamp.tzinfo is not None
    if not zoned:
        stamp = stamp.replace(tzinfo=timezone.utc)
    delta = stamp - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds, zoned


# ------------------------------------------------------------------ grouping
def group_events(path: Any, where: Callable[[int], str], columns: dict[str, str | None],
                 cases: tuple[np.ndarray, np.ndarray], activities: tuple[np.ndarray, np.ndarray],
                 keys: np.ndarray | None,
                 users: tuple[np.ndarray, np.ndarray] | None, *,
                 vocab: Vocabulary | None = None) -> tuple[SequenceDB, dict]:
    """Group events given as codes (one entry per event, in file order) into sequences.

    Columns are given encoded as ``(labels, codes)``: the distinct values
    (array of str) in order of first appearance, and each event's index into
    them (integer array).

    Parameters
    ----------
    path : path-like
        For messages.
    where : callable
        ``where(i)`` locates event ``i`` for messages (``"line 12"``).
    columns : dict
        Column names, for messages.
    cases, activities : tuple of arrays
        ``(labels, codes)`` of the case and activity columns.
    keys : array of numbers or None
        Timestamp sort keys; None keeps file order.
    users : tuple of arrays or None
        ``(labels, codes)`` of the user column.
    vocab : Vocabulary, optional
        The items' vocabulary when the activity codes are already its ids
        (the activity labels are then not used); by default the activities
        that occur, sorted (:func:`encode_labels`).

    Returns
    -------
    db : SequenceDB
        Without ``source``.
    extra : dict
        ``cases`` and (with users) ``user_labels`` for ``source``.

    Raises
    ------
    InputError
        An empty or blank case, activity or user, or a case with two users,
        naming the first event concerned.
    """
    for role, coded in (("case", cases), ("activity", activities if vocab is None else None),
                        ("user", users)):
        if coded is not None:
            labels, codes = coded
            check_nonempty(path, lambda k, codes=codes: where(int(np.argmax(codes == k))),
                           f"{role} (column {columns[role]!r})", labels)
    case_names, seq = cases
    n = case_names.size
    order = np.argsort(seq, kind="stable") if keys is None else np.lexsort((keys, seq))
    if vocab is None:
        ids, vocab = encode_labels(activities[0])
        items = ids[activities[1][order]]
    else:
        items = activities[1][order].astype(np.int32)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(seq, minlength=n), out=offsets[1:])
    extra: dict[str, Any] = {"cases": case_names.tolist()}
    user_ids = None
    if users is not None:
        user_labels, uid = users
        user_ids = uid[_first_indices(seq)]
        clash = np.flatnonzero(uid != user_ids[seq])
        if clash.size:
            i = int(clash[0])
            c = seq[i]
            raise InputError(f"{path}: {where(i)}: case {str(case_names[c])!r} has events of "
                             f"two users ({str(user_labels[user_ids[c]])!r} and "
                             f"{str(user_labels[uid[i]])!r}); a case must belong to one user")
        extra["user_labels"] = user_labels.tolist()
    db = SequenceDB(items, offsets, vocab, users=user_ids)
    return db, extra


def encode_labels(labels: np.ndarray) -> tuple[np.ndarray, Vocabulary]:
    """Item ids (int32) of ``labels`` over their vocabulary, sorted with :func:`sort_labels`."""
    uniq, inverse = np.unique(labels, return_inverse=True)
    sorted_labels = sort_labels(uniq.tolist())
    position = {label: i for i, label in enumerate(sorted_labels)}
    remap = np.array([position[x] for x in uniq.tolist()], dtype=np.int32)
    return remap[inverse.reshape(-1)], Vocabulary(sorted_labels, public=False)


def check_nonempty(path: Any, where: Callable[[int], str], what: str,
                   values: np.ndarray) -> None:
    """InputError locating the first value of ``values`` that is empty or blank."""
    empty = np.flatnonzero(np.char.str_len(np.char.strip(values)) == 0)
    if empty.size:
        raise InputError(f"{path}: {where(int(empty[0]))}: empty {what}")


def _first_indices(codes: np.ndarray) -> np.ndarray:
    """Where each code first occurs, for codes numbered in order of first appearance."""
    new = np.ones(codes.size, dtype=bool)
    new[1:] = codes[1:] > np.maximum.accumulate(codes)[:-1]
    return np.flatnonzero(new)


# ----------------------------------------------------------------------- CSV
def read_csv_log(path: Any, data: bytes, *, case: str | None = None,
                 activity: str | None = None, timestamp: str | None = None,
                 user: str | None = None, delimiter: str | None = None) -> SequenceDB:
    """Read a CSV event log (a header row, then one row per event).

    Parameters
    ----------
    path : path-like
        The file (for messages and ``source``).
    data : bytes
        Its contents (already decompressed, see :func:`dpgpu.data.io.read_bytes`).
    case, activity, timestamp : str, optional
        Column names.  When not given, picked from common names
        (:data:`CANDIDATES`, e.g. ``case:concept:name``, ``case_id``,
        ``session``; ``concept:name``, ``activity``, ``event``;
        ``time:timestamp``, ``timestamp``, ``time``).  Without a timestamp
        column, events keep file order.
    user : str, optional
        Column of user ids, for user-level data (several cases per user);
        sets :attr:`SequenceDB.users`.  Never picked automatically.
    delimiter : str, optional
        One character (a tab also as ``\\t`` or ``tab``, see
        :func:`check_delimiter`); by default the most frequent of
        ``, TAB ; |`` in the header row.

    Returns
    -------
    SequenceDB
        One sequence per case (see the module docstring for order and ``source``).

    Raises
    ------
    InputError
        Missing column (the message lists the columns and names the option),
        a used column whose name the header repeats, a row with the wrong
        number of fields, an empty case or activity, an unparsable
        timestamp, a case with two users.  Messages name the line.
    InvalidParameter
        An option that is not a column name, or a delimiter that is not one character.

    Notes
    -----
    The rows are parsed a block at a time; only the columns used are kept,
    cases, activities and users as integer codes, timestamps as sort keys.
    Where pyarrow is installed, a log of 4 MiB or more is parsed by Arrow,
    several times faster; wherever Arrow might read otherwise than the csv
    module, or an error is due, the csv module reads the log instead, so
    the database and every error are the csv module's (see
    :func:`_arrow_columns`).
    Of several errors, the one reported is the first of: a malformed line
    anywhere, a missing column, a row with the wrong number of fields, a bad
    timestamp, an empty value, a case with two users.  Long reads log their
    progress (INFO, shown with ``-v``).
    """
    options = {role: check_option(value, role) for role, value in
               (("case", case), ("activity", activity), ("timestamp", timestamp),
                ("user", user))}
    start, delimiter = csv_layout(path, data, check_delimiter(delimiter), "an event log")

    def where(i: int) -> str:
        return f"line {csv_line(data, start, delimiter, i)}"

    columns, values, (keys, kind) = csv_columns(
        path, where, data, start, delimiter, lambda header: _pick_columns(path, header, options))
    db, extra = group_events(path, where, columns, values["case"], values["activity"], keys,
                             values.get("user"))
    db.source = {"path": str(path), "format": "csv", "columns": columns,
                 "timestamp_kind": kind, "delimiter": delimiter, **extra}
    return db


def csv_columns(path: Any, where: Callable[[int], str], data: bytes, start: int,
                delimiter: str, pick: Callable[[list[str]], dict[str, str | None]],
                numbers: tuple[str, ...] = ()) -> tuple:
    """The columns of a CSV table (from ``data[start:]``) that ``pick`` chooses.

    Read by Arrow where it can (:func:`_arrow_columns`), else by the csv
    module (:func:`_csv_columns`), with the same result.

    Parameters
    ----------
    path : path-like
        For messages.
    where : callable
        ``where(i)`` locates data row ``i`` for messages (``"line 12"``).
    data : bytes
        The file's contents.
    start : int
        Where the CSV text starts (past a byte-order mark).
    delimiter : str
        One character.
    pick : callable
        ``pick(header)``, given the stripped column names, returns the
        column of each role (None for an absent optional one), or raises
        InputError.  The ``timestamp`` role is parsed as timestamps, the
        roles in ``numbers`` as numbers; every other role is read as strings.
    numbers : tuple of str
        Roles whose values are numbers (:func:`parse_numbers`).

    Returns
    -------
    columns : dict
        ``pick``'s choice.
    values : dict
        ``(labels, codes)`` (see :func:`group_events`) of each role but
        ``timestamp`` that has a column; float64 values for ``numbers``.
    times : tuple
        Timestamp sort keys and their kind; ``(None, None)`` without a
        timestamp column.

    Raises
    ------
    InputError
        A malformed line anywhere, ``pick``'s error, a row with another
        number of fields than the header, a bad timestamp (messages name
        the line).
    """
    found = _arrow_columns(path, where, data, start, delimiter, pick, numbers)
    return found if found is not None else _csv_columns(path, where, data, start, delimiter,
                                                        pick, numbers)


def _csv_columns(path: Any, where: Callable[[int], str], data: bytes, start: int,
                 delimiter: str, pick: Callable[[list[str]], dict[str, str | None]],
                 numbers: tuple[str, ...]) -> tuple:
    """What :func:`csv_columns` returns, read with the csv module (the same errors too)."""
    blocks = csv_row_blocks(path, data, start, delimiter)
    header = [h.strip() for h in next(blocks)[0]]
    try:
        columns = pick(header)
    except InputError:
        for _ in blocks:  # a malformed line anywhere is reported first
            pass
        raise
    get = {role: itemgetter(header.index(name)) for role, name in columns.items()
           if name is not None}
    values, times = _read_columns(path, where, blocks, len(header), get, numbers)
    if times is not None and times.redo:
        _log_redo(path)
        times = _ChunkedTimes(numpy_iso=False)
        for rows in islice(csv_row_blocks(path, data, start, delimiter), 1, None):
            times.add(list(map(get["timestamp"], rows)))
    return columns, values, _time_keys(path, where, columns, times)


def _log_redo(path: Any) -> None:
    """Log that the timestamps are read again, all by datetime (:class:`_ChunkedTimes`)."""
    log.info("%s: NumPy cannot read every timestamp; reading them all again", path)


#: Where a CSV file has no case column, it may hold a sequence per row.
_WIDE_HINT = ("; a file with a row per sequence and a column per time point reads with "
              "--format wide --states FIRST:LAST")


#: Words of a column name that mark it as a text column (``content``, ``message_body``).
_TEXT_WORDS = frozenset({"text", "content", "contents", "body", "message", "messages"})
#: Normalised column names (:func:`_normal`) taken for a text table's user column.
_USER_NAMES = ("author", "user", "userid", "username", "authorid")


def _text_table_hint(header: list[str]) -> str:
    """Where a CSV file without a case column looks like a table of texts (two columns, or
    a column named like ``text``, ``content``, ``body``, ``message``), the hint to read it
    with ``--format text-csv`` (:func:`dpgpu.data.users.read_text_csv`): ``--user`` and
    ``--text`` name its columns where they are not the defaults ``author`` and ``content``
    (``COLUMN`` where the header does not tell); else ``""``."""
    texts = [h for h in header if _TEXT_WORDS & set(re.findall(r"[a-z]+", h.lower()))]
    if len(header) != 2 and not texts:
        return ""
    text = texts[0] if texts else None
    others = [h for h in header if h != text]
    users = [h for h in others if _normal(h) in _USER_NAMES]
    user = users[0] if users else others[0] if text and len(header) == 2 else None
    options = "".join(f" --{option} {shlex.quote(name) if name else 'COLUMN'}"
                      for option, name, default in (("user", user, "author"),
                                                    ("text", text, "content"))
                      if name != default)
    return f"; a table of a user and a text per row reads with --format text-csv{options}"


def _pick_columns(path: Any, header: list[str], options: dict[str, str | None], *,
                  csv_file: bool = True) -> dict[str, str | None]:
    """The case, activity, timestamp and user columns (see :func:`pick_column`); a CSV
    file without a case column is pointed to the wide format."""
    if csv_file and len(header) < 2:
        raise InputError(f"{path}: line 1: the header has one column; an event log needs "
                         "case and activity columns (wrong --delimiter?)")
    hint = _WIDE_HINT + _text_table_hint(header) if csv_file else ""
    picked = {"case": pick_column(path, header, "case", options["case"], hint=hint),
              "activity": pick_column(path, header, "activity", options["activity"]),
              "timestamp": pick_column(path, header, "timestamp", options["timestamp"],
                                       required=False),
              "user": pick_column(path, header, "user", options["user"], required=False)}
    named = [h for h in header if _normal(h) in _USER_NAMES and h not in picked.values()]
    if picked["user"] is None and named:  # as dpgpu writes user-level data: said, not guessed
        log.warning("%s: column %r is not read as the users (without --user, each case is its "
                    "own user); pass --user %s for user-level data (dpne, advise)", path,
                    named[0], shlex.quote(named[0]))
    return picked


def _read_columns(path: Any, where: Callable[[int], str], blocks: Iterator[list[list[str]]],
                  width: int, get: dict[str, Callable[[list[str]], str]],
                  numbers: tuple[str, ...]) -> tuple[dict[str, Any], _ChunkedTimes | None]:
    """The columns ``get`` picks from the rows of ``blocks`` (``width`` fields each).

    Returns
    -------
    values : dict
        ``(labels, codes)`` (see :func:`group_events`) of each role but ``timestamp``,
        float64 values of the roles in ``numbers``.
    times : _ChunkedTimes or None
        The timestamps, parsed.

    Raises
    ------
    InputError
        A malformed line (anywhere), else the first row of another width.
    """
    coded: dict[str, tuple[dict, list[np.ndarray]]] = {
        role: (numbering(), []) for role in get if role != "timestamp" and role not in numbers}
    parsed: dict[str, list[np.ndarray]] = {role: [] for role in numbers if role in get}
    times = _ChunkedTimes() if "timestamp" in get else None
    n_rows, ragged = 0, None
    with gc_paused():  # the rows are many short-lived lists
        for rows in blocks:
            if ragged is None and set(map(len, rows)) - {width}:
                k = next(k for k, row in enumerate(rows) if len(row) != width)
                ragged = n_rows + k, len(rows[k])
            if ragged is None:  # else keep reading only to report a malformed line first
                for role, (table, codes) in coded.items():
                    codes.append(encode_values(list(map(get[role], rows)), table))
                for role, parts in parsed.items():
                    parts.append(parse_numbers(list(map(get[role], rows))))
                if times is not None:
                    times.add(list(map(get["timestamp"], rows)))
            n_rows += len(rows)
    if ragged is not None:
        raise InputError(f"{path}: {where(ragged[0])}: {ragged[1]} fields, but the header "
                         f"has {width}")
    return {**_labels_and_codes(coded), **_joined_numbers(parsed)}, times


def parse_numbers(strings: list[str]) -> np.ndarray:
    """``strings`` as float64, as Python's ``float`` reads them; NaN where it cannot."""
    try:
        return np.array(strings, dtype=np.float64)
    except ValueError:  # find the values that are not numbers, one at a time
        out = np.full(len(strings), np.nan)
        for k, text in enumerate(strings):
            try:
                out[k] = float(text)
            except ValueError:
                pass
        return out


def _joined_numbers(parsed: dict[str, list[np.ndarray]]) -> dict[str, np.ndarray]:
    """Each role's blocks of numbers as one array."""
    return {role: np.concatenate(parts) if parts else np.zeros(0) for role, parts in parsed.items()}


def _labels_and_codes(coded: dict[str, tuple[dict, list[np.ndarray]]],
                      ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``(labels, codes)`` of each role from its :func:`numbering` and its blocks' codes."""
    return {role: (np.array(list(table), dtype=str),
                   np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64))
            for role, (table, codes) in coded.items()}


def _time_keys(path: Any, where: Callable[[int], str], columns: dict,
               times: _ChunkedTimes | None) -> tuple[np.ndarray | None, str | None]:
    if times is None:
        log.info("%s: no timestamp column; events keep file order", path)
        return None, None
    try:
        return times.result()
    except BadValue as bad:
        raise timestamp_error(path, where, f"column {columns['timestamp']!r}", bad) from None


def csv_layout(path: Any, data: bytes, delimiter: str | None, what: str) -> tuple[int, str]:
    """Where the CSV text of ``data`` starts (past a byte-order mark), and its delimiter.

    Parameters
    ----------
    path : path-like
        For messages.
    data : bytes
        The file's contents.
    delimiter : str or None
        As checked by :func:`check_delimiter`; None sniffs it from the header row.
    what : str
        What the file is, for the message (``"an event log"``).

    Raises
    ------
    InputError
        Not UTF-8 text, or no header row.
    """
    check_text(path, data)
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    header_line = _first_line(data, start)
    if not header_line.strip():
        raise InputError(f"{path}: line 1: no header row ({what} starts with its column "
                         "names)")
    return start, delimiter or _sniff_delimiter(header_line)


def _sniff_delimiter(header_line: str) -> str:
    counts = [header_line.count(d) for d in _DELIMITERS]
    return _DELIMITERS[int(np.argmax(counts))]


#: CSV rows parsed at a time (a block's rows are held as Python lists).
_BLOCK_ROWS = 1 << 16
#: Where ``str.splitlines`` ends a line, as UTF-8 bytes.
_LINE_BREAK = re.compile(rb"[\n\r\v\f\x1c-\x1e]|\xc2\x85|\xe2\x80[\xa8\xa9]")


def _first_line(data: bytes, start: int) -> str:
    """The first line of UTF-8 ``data[start:]``, where ``str.splitlines`` would end it."""
    end = _LINE_BREAK.search(data, start)
    return data[start:len(data) if end is None else end.start()].decode("utf-8")


def csv_row_blocks(path: Any, data: bytes, start: int,
                   delimiter: str) -> Iterator[list[list[str]]]:
    """The rows of a CSV file a block at a time, blank lines left out.

    The first block is the header row alone.  Logs the progress of a long read.

    Parameters
    ----------
    path : path-like
        For messages.
    data : bytes
        The file's contents.
    start : int
        Offset of the header row in ``data`` (after a byte-order mark).
    delimiter : str

    Yields
    ------
    list of list of str

    Raises
    ------
    InputError
        A malformed line (named).
    """
    reader, stream = csv_reader(data, start, delimiter)
    progress = ReadProgress(path)
    try:
        yield [next(reader)]
        while block := list(islice(reader, _BLOCK_ROWS)):
            yield list(filter(None, block))
            progress(stream.buffer.tell(), len(data), reader.line_num)
    except csv.Error as exc:
        raise InputError(f"{path}: line {reader.line_num}: malformed CSV ({exc})") from None


def csv_line(data: bytes, start: int, delimiter: str, index: int) -> int:
    """Line on which data row ``index`` (from 0, blank lines skipped) starts."""
    return csv_row(data, start, delimiter, index)[0]


def csv_row(data: bytes, start: int, delimiter: str, index: int) -> tuple[int, list[str]]:
    """The line on which data row ``index`` (from 0, blank lines skipped) starts, and its fields."""
    reader, _ = csv_reader(data, start, delimiter)
    next(reader)
    seen = -1
    while True:
        line = reader.line_num + 1
        row = next(reader)
        if row:
            seen += 1
            if seen == index:
                return line, row


#: Smallest CSV log (bytes) read with Arrow where pyarrow is installed: importing
#: pyarrow (about 0.1 s) takes about as long as the csv module takes to read 3-4 MB.
_ARROW_MIN_BYTES = 1 << 22
#: Bytes Arrow parses at a time (also the longest row it reads).
_ARROW_BLOCK_BYTES = 1 << 20


class _NotSame(Exception):
    """Internal: the csv module might read a CSV log otherwise than Arrow did."""


def _arrow_csv() -> Any:
    """pyarrow with its ``csv`` module, or None when it is not installed."""
    try:
        import pyarrow  # noqa: PLC0415 - optional dependency
        import pyarrow.csv  # noqa: PLC0415, F401
    except ImportError:
        return None
    return pyarrow


def _arrow_columns(path: Any, where: Callable[[int], str], data: bytes, start: int,
                   delimiter: str, pick: Callable[[list[str]], dict[str, str | None]],
                   numbers: tuple[str, ...]) -> tuple | None:
    """What :func:`csv_columns` returns, read with Arrow; None where the csv module must read.

    Arrow parses the rows with the csv module's rules (``"`` quotes, doubled
    within quotes; a line break ends a row unless quoted; empty lines are
    skipped) many times faster, and each block's columns become dictionary
    codes.  None is returned for the csv module to read the log (so that the
    result or the error is exactly its own) where pyarrow is not installed,
    the log is under :data:`_ARROW_MIN_BYTES`, the delimiter is not ASCII or
    is a quote or line break, the text after the BOM starts with another
    BOM, and wherever Arrow's reading might differ or an error is due: the
    csv module reads the header row otherwise, a field is longer than
    ``csv.field_size_limit()`` bytes, Arrow cannot parse a row (one of
    another width among them), ``pick`` refuses the header, or a timestamp is bad.
    """
    if len(data) - start < _ARROW_MIN_BYTES or not delimiter.isascii() \
            or delimiter in '"\r\n' or data.startswith(codecs.BOM_UTF8, start):
        return None
    pa = _arrow_csv()
    if pa is None:
        return None
    try:
        header = next(csv_reader(data, start, delimiter)[0])
        names = [h.strip() for h in header]
        columns = pick(names)
    except (csv.Error, InputError):
        return None
    picked = {role: names.index(name) for role, name in columns.items() if name is not None}
    try:
        values, times = _arrow_values(pa, path, data, start, delimiter, header, picked, numbers)
        if times is not None and times.redo:
            _log_redo(path)
            times = _ChunkedTimes(numpy_iso=False)
            for batch in _arrow_batches(pa, path, data, start, delimiter, header):
                _add_times(times, batch.column(picked["timestamp"]))
    except (pa.ArrowException, _NotSame):
        return None
    if times is not None and times.error is not None:
        return None
    return columns, values, _time_keys(path, where, columns, times)


def _arrow_values(pa: Any, path: Any, data: bytes, start: int, delimiter: str,
                  header: list[str], picked: dict[str, int], numbers: tuple[str, ...]) -> tuple:
    """``(values, times)`` as :func:`_read_columns` returns them, of the columns at ``picked``.

    Raises
    ------
    _NotSame
        Where :func:`_arrow_batches` does, or at a bad timestamp.
    pyarrow.ArrowException
        Arrow cannot parse the log.
    """
    coded: dict[str, tuple[dict, list[np.ndarray]]] = {
        role: (numbering(), []) for role in picked if role != "timestamp" and role not in numbers}
    parsed: dict[str, list[np.ndarray]] = {role: [] for role in numbers if role in picked}
    times = _ChunkedTimes() if "timestamp" in picked else None
    for batch in _arrow_batches(pa, path, data, start, delimiter, header):
        for role, parts in parsed.items():
            parts.append(parse_numbers(batch.column(picked[role]).to_pylist()))
        for role, (table, codes) in coded.items():
            # the block's distinct values in order of first appearance, numbered on from
            # the earlier blocks' as the csv module's rows are: only they become str
            encoded = batch.column(picked[role]).dictionary_encode()
            number = encode_values(encoded.dictionary.to_pylist(), table)
            codes.append(number[_integers(encoded.indices)])
        if times is not None:
            _add_times(times, batch.column(picked["timestamp"]))
            if times.error is not None:
                raise _NotSame
    return {**_labels_and_codes(coded), **_joined_numbers(parsed)}, times


def _add_times(times: _ChunkedTimes, column: Any) -> None:
    """Give ``times`` a block's timestamps (an Arrow string array), each distinct one once."""
    if not times.stopped:
        encoded = column.dictionary_encode()
        times.add_distinct(encoded.dictionary.to_pylist(), _integers(encoded.indices))


def _integers(array: Any) -> np.ndarray:
    """An Arrow integer array without nulls as a NumPy array, without a copy.

    Not ``to_numpy``: that imports pandas where it is installed (a quarter
    of a second).
    """
    values = np.frombuffer(array.buffers()[1], dtype=f"int{array.type.bit_width}")
    return values[array.offset:array.offset + len(array)]


def _string_lengths(array: Any) -> np.ndarray:
    """Bytes of each string of an Arrow string array (its offsets told apart)."""
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)
    return np.diff(offsets[array.offset:array.offset + len(array) + 1])


def _arrow_batches(pa: Any, path: Any, data: bytes, start: int, delimiter: str,
                   header: list[str]) -> Iterator[Any]:
    """The data rows of the CSV log ``data[start:]`` parsed by Arrow, a block at a time.

    Every column is read as strings (none is null).  Logs the progress of a
    long read.

    Parameters
    ----------
    header : list of str
        The header row as the csv module reads it (not stripped).

    Yields
    ------
    pyarrow.RecordBatch
        The rows of a block, blank lines left out.

    Raises
    ------
    _NotSame
        Arrow reads the header row otherwise, or a field longer than
        ``csv.field_size_limit()`` bytes (which the csv module might refuse),
        or the text ends as a last field in a quote never closed would end it.
    pyarrow.ArrowException
        Arrow cannot parse the log (a row of another width, for one).
    """
    csv_arrow = pa.csv
    width, limit = len(header), csv.field_size_limit()
    names = [f"f{i}" for i in range(width)]
    stream = _UnsplitCrLf(data, start)
    reader = csv_arrow.open_csv(
        pa.PythonFile(stream, mode="r"),
        read_options=csv_arrow.ReadOptions(use_threads=False, block_size=_ARROW_BLOCK_BYTES,
                                           autogenerate_column_names=True),  # header as a row
        parse_options=csv_arrow.ParseOptions(delimiter=delimiter, quote_char='"',
                                             double_quote=True, escape_char=False,
                                             newlines_in_values=True, ignore_empty_lines=True),
        convert_options=csv_arrow.ConvertOptions(column_types=dict.fromkeys(names, pa.string()),
                                                 strings_can_be_null=False,
                                                 check_utf8=False))  # checked already
    progress = ReadProgress(path, "row")
    seen_header, rows, last = False, 0, None
    for batch in reader:
        if batch.num_columns != width:
            raise _NotSame
        if not batch.num_rows:
            continue
        if max(_string_lengths(column).max() for column in batch.columns) > limit:
            raise _NotSame
        last = batch.column(width - 1)[batch.num_rows - 1].as_py()
        if not seen_header:
            if [column[0].as_py() for column in batch.columns] != header:
                raise _NotSame
            seen_header, batch = True, batch.slice(1)
        yield batch
        rows += batch.num_rows
        progress(stream.position, len(data), rows)  # Arrow reads a few blocks ahead
    if not seen_header or _quote_never_closed(data, start, delimiter, last):
        raise _NotSame


def _quote_never_closed(data: bytes, start: int, delimiter: str, last: str) -> bool:
    """Whether ``data`` may end in a quote never closed whose field Arrow read as ``last``.

    Arrow ends such a quote at the end of the text, where the csv module's reader
    refuses it.  It can only open the last field of the last row (in another, the row's
    width would differ), which then runs to the end: the text ends with the quote and the
    field, and the quote starts a field (it follows a delimiter or a line end).
    """
    tail = ('"' + last.replace('"', '""')).encode()
    at = len(data) - len(tail)
    return data.endswith(tail) and (at <= start or data[at - 1:at] in (delimiter.encode(),
                                                                       b"\n", b"\r"))


class _UnsplitCrLf:
    """``data[start:]`` as a binary stream (for ``pyarrow.PythonFile``) whose reads never
    end between a CR and an LF.

    Arrow skips an LF that starts a read after one that ended in CR, taking
    the two for a line break that the reads split, though they may be
    inside a quoted value.  The reads are views of ``data``, not copies.
    """

    def __init__(self, data: bytes, start: int) -> None:
        self.view, self.position = memoryview(data), start
        self.closed = False

    def read(self, size: int = -1) -> memoryview:
        """Up to ``size`` bytes (all that are left if negative), one less where the last
        would be a CR followed by an LF."""
        end = len(self.view) if size < 0 else min(self.position + size, len(self.view))
        if end - self.position > 1 and end < len(self.view) \
                and self.view[end - 1] == 0x0D and self.view[end] == 0x0A:
            end -= 1
        piece = self.view[self.position:end]
        self.position = end
        return piece

    def close(self) -> None:
        """Mark the stream closed (the data stay)."""
        self.closed = True


def looks_like_csv_log(head: bytes) -> bool:
    """Whether ``head`` (the first bytes of a file) starts like a CSV event log.

    True when the first line is a header of at least two non-empty, non-numeric
    column names split by ``, TAB ; |``, among which a case or an activity
    column of a common name (:data:`CANDIDATES`).  Columns with an empty name
    (the index column of pandas' ``to_csv``, the trailing columns of an Excel
    export) may stand beside them: they are not read.

    Parameters
    ----------
    head : bytes
        The start of the file; only its first line is looked at.

    Returns
    -------
    bool
        False also where that line is not UTF-8 or holds a NUL.
    """
    try:
        line = (head.splitlines() or [b""])[0].decode("utf-8").lstrip("\ufeff").strip()
    except UnicodeDecodeError:
        return False
    if not line or "\x00" in line:
        return False
    fields = next(csv.reader([line], delimiter=_sniff_delimiter(line)))
    names = [h for h in map(str.strip, fields) if h]
    if len(names) < 2 or any(_is_finite_number(h) for h in names):
        return False
    normal = {_normal(h) for h in names}
    return bool(normal & (set(CANDIDATES["case"]) | set(CANDIDATES["activity"])))


# ------------------------------------------------------------------- Parquet
def read_parquet_log(path: Any, data: bytes | None = None, *, case: str | None = None,
                     activity: str | None = None, timestamp: str | None = None,
                     user: str | None = None) -> SequenceDB:
    """Read a Parquet event log (one row per event); needs pyarrow.

    Parameters
    ----------
    path : path-like
    data : bytes, optional
        The file's contents; read from ``path`` (gzip transparent) when not given.
    case, activity, timestamp, user : str, optional
        Column names, as for :func:`read_csv_log`.  Typed timestamp and date
        columns, numeric columns and ISO-8601 string columns all order events.

    Returns
    -------
    SequenceDB

    Raises
    ------
    InputError
        pyarrow is missing, the file is not Parquet, a column is missing or
        repeated or has nulls, NaNs, empties or bad timestamps (the message
        names the row).
    InvalidParameter
        An option that is not a column name.
    """
    options = {role: check_option(value, role) for role, value in
               (("case", case), ("activity", activity), ("timestamp", timestamp),
                ("user", user))}
    columns, values, (keys, kind) = parquet_columns(
        path, data, lambda header: _pick_columns(path, header, options, csv_file=False))
    db, extra = group_events(path, parquet_row, columns, values["case"], values["activity"],
                             keys, values.get("user"))
    db.source = {"path": str(path), "format": "parquet", "columns": columns,
                 "timestamp_kind": kind, **extra}
    return db


def parquet_row(i: int) -> str:
    """Where row ``i`` (from 0) of a Parquet table is, for messages."""
    return f"row {i + 1}"


def parquet_columns(path: Any, data: bytes | None,
                    pick: Callable[[list[str]], dict[str, str | None]],
                    numbers: tuple[str, ...] = (), what: str = "an event log") -> tuple:
    """The columns of a Parquet table that ``pick`` chooses, as :func:`csv_columns` gives them.

    Typed timestamp and date columns, numeric columns and ISO-8601 string
    columns are timestamps; numeric and string columns are numbers for the
    roles in ``numbers`` (strings read as Python's ``float`` reads them,
    NaN where it cannot); every other role is read as strings
    (:func:`parquet_text`).  ``what`` names the kind of file in messages.

    Raises
    ------
    InputError
        pyarrow is missing, the file is not Parquet, ``pick``'s error, a
        null value, a NaN in a column read as strings, a bad timestamp, a
        number column of another type, a column read as strings that does
        not hold text or numbers or holds bytes that are not UTF-8
        (messages name the row).
    """
    pa, pq = optional_pyarrow()
    if pa is None:
        raise InputError(f"{path}: reading Parquet needs pyarrow: {PARQUET_HINT}")
    data = read_bytes(path) if data is None else data
    try:
        # not pq.read_table: it refuses a file with two columns of one name, used or not
        table = pq.ParquetFile(pa.BufferReader(data)).read()
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    columns = pick(table.column_names)
    values: dict[str, Any] = {}
    for role, name in columns.items():
        if name is None:
            continue
        col = table.column(name)
        if col.null_count:
            i = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise InputError(f"{path}: {parquet_row(i)}: empty {role} (column {name!r})")
        if role not in numbers and role != "timestamp" and pa.types.is_floating(col.type):
            nan = np.flatnonzero(np.isnan(col.to_numpy()))  # no label: 'nan' would be one
            if nan.size:
                raise InputError(f"{path}: {parquet_row(int(nan[0]))}: {role} is NaN "
                                 f"(column {name!r}), which names no {role}")
        if role in numbers:
            values[role] = _parquet_numbers(pa, path, name, col)
        elif role != "timestamp":
            values[role] = _coded(parquet_text(pa, path, name, role, what, col))
    keys, kind = None, None
    if columns.get("timestamp") is not None:
        keys, kind = _parquet_keys(pa, path, parquet_row, columns,
                                   table.column(columns["timestamp"]), what)
    return columns, values, (keys, kind)


def _parquet_numbers(pa: Any, path: Any, name: str, col: Any) -> np.ndarray:
    """A numeric or string Parquet column as float64 (see :func:`parquet_columns`)."""
    kind = col.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        return col.cast(pa.float64()).to_numpy()
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return parse_numbers(col.to_pylist())
    raise InputError(f"{path}: column {name!r} has type {kind}; it must hold numbers")


def parquet_text(pa: Any, path: Any, name: str, role: str, what: str, col: Any) -> Any:
    """Parquet column ``col`` as Arrow text (``large_string``), for a role read as text.

    Text, numbers and whatever else Arrow writes as text are read so;
    dictionary columns as their values.

    Parameters
    ----------
    pa : module
        pyarrow.
    path : path-like
        For messages.
    name, role : str
        The column's name, and its role (also its option's name).
    what : str
        The kind of file, for messages (``"an event log"``).
    col : pyarrow.ChunkedArray

    Returns
    -------
    pyarrow.ChunkedArray

    Raises
    ------
    InputError
        A column Arrow cannot write as text (lists, structs, ...), or bytes
        that are not UTF-8 text (naming the first such row).
    """
    kind = col.type
    if pa.types.is_dictionary(kind):
        col = col.cast(kind.value_type)
    try:
        return col.cast(pa.large_string())
    except pa.ArrowException:
        found = _not_utf8(col) if _is_bytes(pa, col.type) else None
        if found is None:
            raise InputError(f"{path}: column {name!r} has type {kind}; the {role} column of "
                             f"{what} must hold text or numbers") from None
        row, problem = found
        raise InputError(f"{path}: {parquet_row(row)}: {role} is not UTF-8 text (column "
                         f"{name!r}: {problem})") from None


def _is_bytes(pa: Any, kind: Any) -> bool:
    """Whether Arrow type ``kind`` holds bytes (which may or may not be UTF-8 text)."""
    return pa.types.is_binary(kind) or pa.types.is_large_binary(kind) \
        or pa.types.is_fixed_size_binary(kind)


def _not_utf8(col: Any) -> tuple[int, str] | None:
    """The first row of a bytes column that is not UTF-8, and what is wrong there; None if none.

    Each distinct value is decoded once, in order of first appearance.
    """
    encoded = col.combine_chunks().dictionary_encode()
    for k, value in enumerate(encoded.dictionary.to_pylist()):
        try:
            value.decode("utf-8")
        except UnicodeDecodeError as exc:
            row = int(np.argmax(encoded.indices.to_numpy(zero_copy_only=False) == k))
            return row, f"byte 0x{value[exc.start]:02x} at position {exc.start + 1}"
    return None


def _coded(texts: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, codes)`` of a text column (:func:`parquet_text`) without nulls, as
    :func:`group_events` takes them.

    Arrow's dictionary encoding numbers the distinct values in order of
    first appearance, so no string is made per row.
    """
    # one array, so one dictionary (64-bit offsets: past 2 GiB of text too)
    encoded = texts.combine_chunks().dictionary_encode()
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    distinct = encoded.dictionary.to_pylist()
    labels = np.array(distinct, dtype=str)
    if len(set(labels.tolist())) < len(distinct):  # NumPy's str drops trailing NULs
        labels, merged = _first_seen(labels)
        codes = merged[codes]
    return labels, codes


def _first_seen(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct values in order of first appearance, and each entry's index among them."""
    uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(uniq.size, dtype=np.int64)
    rank[order] = np.arange(uniq.size)
    return uniq[order], rank[inverse.reshape(-1)]


def _parquet_keys(pa: Any, path: Any, where: Callable[[int], str], columns: dict,
                  col: Any, what: str) -> tuple[np.ndarray, str]:
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    kind = col.type
    if pa.types.is_timestamp(kind) or pa.types.is_date64(kind):
        return col.cast(pa.int64()).to_numpy(), "datetime"
    if pa.types.is_date32(kind):
        return col.cast(pa.int32()).to_numpy().astype(np.int64), "datetime"
    if pa.types.is_integer(kind) or pa.types.is_floating(kind):
        keys = col.to_numpy()
        bad = np.flatnonzero(~np.isfinite(keys))
        if bad.size:
            raise InputError(f"{path}: {where(int(bad[0]))}: column {columns['timestamp']!r}: "
                             f"timestamp {keys[bad[0]]} is not finite")
        return keys, "numeric"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or _is_bytes(pa, kind):
        labels, codes = _coded(parquet_text(pa, path, columns["timestamp"], "timestamp", what,
                                            col))
        try:
            keys, kind = parse_times(labels)  # each distinct string parsed once
        except BadValue as bad:
            bad.index = int(np.argmax(codes == bad.index))  # where the first bad one occurs
            raise timestamp_error(path, where, f"column {columns['timestamp']!r}",
                                  bad) from None
        return keys[codes], kind
    raise InputError(f"{path}: column {columns['timestamp']!r} has type {kind}; a "
                     "timestamp must be a date, time, number or ISO-8601 string")


# ------------------------------------------------------------------- writing
def output_columns(db: SequenceDB) -> tuple[dict[str, str | None], str | None]:
    """Column names and timestamp kind for writing ``db`` as a CSV/Parquet log.

    The input's names when it was a CSV or Parquet log, else
    ``case:concept:name``, ``concept:name``, ``time:timestamp`` (and ``user``
    for user-level data).  The timestamp column is left out when the input
    had none.
    """
    source = db.source
    columns = {k: DEFAULT_COLUMNS[k] for k in ("case", "activity", "timestamp")}
    kind = "iso"
    if source.get("format") in ("csv", "parquet"):
        columns.update(source.get("columns", {}))
        kind = source.get("timestamp_kind", kind)
    columns["user"] = None if db.users is None else columns.get("user") or DEFAULT_COLUMNS["user"]
    return columns, kind


class EventNames:
    """How the writers name each sequence's case and user, decided for a whole database.

    Cases keep the input's names (``source["cases"]``) when every sequence
    has one and they are distinct, else they are ``case-1``, ``case-2``, ...
    by position.  Users are named by ``source["user_labels"]`` when it
    covers every user id, else by the id.  The writers hand over a database
    a part at a time (:func:`dpgpu.data.writers.parts`); the choice is made
    once, here, so that every part follows it.

    Parameters
    ----------
    db : SequenceDB
        The whole database.
    """

    def __init__(self, db: SequenceDB) -> None:
        names = db.source.get("cases")
        self.input_cases = names is not None and len(names) == len(db) and None not in names \
            and len(set(names)) == len(names)
        labels = db.source.get("user_labels")
        fits = db.users is not None and labels is not None \
            and (db.users.size == 0 or int(db.users.max()) < len(labels))
        self.user_labels = labels if fits else None

    def cases(self, part: SequenceDB, first: int) -> list[str]:
        """Case name of each sequence of ``part``, whose first sequence is number ``first``."""
        if self.input_cases:
            return [str(x) for x in part.source["cases"]]
        return [f"case-{i}" for i in range(first + 1, first + len(part) + 1)]

    def users(self, part: SequenceDB) -> list[str]:
        """User label of each sequence of ``part`` (which has users)."""
        if self.user_labels is None:
            return [str(u) for u in part.users.tolist()]
        return [str(self.user_labels[u]) for u in part.users.tolist()]


def case_names(db: SequenceDB) -> list[str]:
    """One distinct name per sequence of ``db`` (:class:`EventNames`)."""
    return EventNames(db).cases(db, 0)


def user_names(db: SequenceDB) -> list[str]:
    """Label of each sequence's user (:class:`EventNames`); ``db`` has users."""
    return EventNames(db).users(db)


def synthetic_times(n: int, *, millis: bool = False) -> list[str]:
    """ISO-8601 times of events ``0 .. n-1`` of a case: one second apart from 2000-01-01 UTC."""
    spec = "milliseconds" if millis else "seconds"
    return [(SYNTHETIC_START + timedelta(seconds=j)).isoformat(timespec=spec)
            for j in range(n)]


def event_positions(db: SequenceDB) -> np.ndarray:
    """Index of every event within its sequence (0, 1, ...), flat like ``db.items``."""
    starts = np.repeat(db.offsets[:-1], db.lengths)
    return np.arange(db.n_events, dtype=np.int64) - starts


class _TableSink:
    """What the CSV and Parquet log writers share: columns, names, per-part values.

    A part's values come as codes into short lists of texts (a name per
    sequence, a label per item), so each writer turns them into its own
    column type without a Python object per event where it can.  Empty
    sequences have no rows (:func:`dpgpu.data.writers.written` counts them).
    """

    def __init__(self, db: SequenceDB) -> None:
        self.columns, self.kind = output_columns(db)
        self.names = EventNames(db)
        self.labels = np.array(db.vocab.labels, dtype=object)
        self.roles = [r for r in ("case", "activity", "timestamp", "user")
                      if self.columns[r] is not None]

    def values(self, part: SequenceDB, first: int) -> dict[str, Any]:
        """Per-event values of ``part`` (``first``: sequences before it).

        ``timestamp`` is each event's position in its sequence; every other
        role is a pair ``(codes, texts)``: event ``e``'s value is
        ``texts[codes[e]]``.
        """
        owner = np.repeat(np.arange(len(part)), part.lengths)  # each event's sequence
        values: dict[str, Any] = {"case": (owner, self.names.cases(part, first)),
                                  "activity": (part.items, self.labels)}
        if "timestamp" in self.roles:
            values["timestamp"] = event_positions(part)
        if "user" in self.roles:
            values["user"] = (owner, self.names.users(part))
        return values

    def close(self) -> None:
        """Nothing to end where the rows are complete (a Parquet writer closes its file)."""


class CsvLogSink(_TableSink):
    """Writes a CSV event log, one row per event, a part of the database at a time.

    Columns: case, activity, timestamp (synthetic, see the module docstring)
    and, for user-level data, user; named and delimited as in the input when
    it was a CSV log (``source``).  Empty sequences have no rows.  When a
    case, activity or user of ``db`` holds a carriage return, every field is
    quoted.

    Parameters
    ----------
    db : SequenceDB
        The whole database (see :func:`dpgpu.data.writers.open_sink`).
    stream : text stream
        For instance from :func:`dpgpu.data.io.atomic_output`.
    delimiter : str, optional
        The field delimiter; default the input's (a CSV log), else ``,``.
    """

    def __init__(self, db: SequenceDB, stream: TextIO, *, delimiter: str | None = None) -> None:
        super().__init__(db)
        names = (self.names.cases(db, 0) if self.names.input_cases else (), db.vocab.labels,
                 self.names.users(db) if "user" in self.roles else ())
        self.writer = table_writer(stream, db, delimiter, "csv", names)
        self.writer.writerow([self.columns[r] for r in self.roles])

    def write(self, part: SequenceDB, first: int) -> None:
        """Write the rows of ``part``'s events (``first``: sequences written before it)."""
        values = self.values(part, first)
        if "timestamp" in values:
            pos = values["timestamp"]
            values["timestamp"] = (pos, range(part.max_length)) if self.kind == "numeric" \
                else (pos, synthetic_times(part.max_length))
        columns = [np.asarray(texts, dtype=object)[codes].tolist()  # labels: no copy
                   for codes, texts in (values[role] for role in self.roles)]
        self.writer.writerows(zip(*columns))


def table_writer(stream: TextIO, db: SequenceDB, delimiter: str | None, own: str,
                 texts: Iterable[Iterable[str]]) -> Any:
    """A ``csv.writer`` of a table holding ``db``, lines ending in ``\\n``.

    Parameters
    ----------
    stream : text stream
    db : SequenceDB
        Whose input's delimiter is the default when it was a CSV log or a
        file of the format ``own``.
    delimiter : str or None
        The field delimiter; default as above, else ``,``.
    own : str
        The format being written.
    texts : iterable of iterables of str
        What the table's fields hold: when any holds a carriage return,
        every field is quoted (the csv module leaves such a field unquoted
        when lines end in ``\\n`` alone, and a reader takes that ``\\r`` for
        the end of the row).
    """
    if delimiter is None:
        delimiter = db.source.get("delimiter", ",") \
            if db.source.get("format") in ("csv", own) else ","
    quoting = csv.QUOTE_ALL if any("\r" in x for group in texts for x in group) \
        else csv.QUOTE_MINIMAL
    return csv.writer(stream, delimiter=delimiter, lineterminator="\n", quoting=quoting)


def write_csv_log(db: SequenceDB, stream: TextIO, *, delimiter: str | None = None) -> None:
    """Write ``db`` as a CSV event log, one row per event (:class:`CsvLogSink`).

    Parameters
    ----------
    db : SequenceDB
    stream : text stream
        For instance from :func:`dpgpu.data.io.atomic_output`.
    delimiter : str, optional
        The field delimiter; default the input's (a CSV log), else ``,``.
    """
    from .writers import write_all  # noqa: PLC0415 - writers imports this module

    write_all(CsvLogSink(db, stream, delimiter=delimiter), db)


class ParquetLogSink(_TableSink):
    """Writes a Parquet event log, one row per event and a row group per part; needs pyarrow.

    Columns as for :class:`CsvLogSink`; the synthetic timestamps are a
    ``timestamp[us, UTC]`` column (int64 when the input's were numbers).

    Parameters
    ----------
    db : SequenceDB
        The whole database (see :func:`dpgpu.data.writers.open_sink`).
    target : path-like or binary stream
        A path, or a binary stream such as
        ``atomic_output(path, binary=True)`` yields.

    Raises
    ------
    InvalidParameter
        pyarrow is not installed (``format``: Parquet cannot be written).
    """

    def __init__(self, db: SequenceDB, target: Any) -> None:
        pa, pq = optional_pyarrow()
        if pa is None:
            raise InvalidParameter(f"format: writing Parquet needs pyarrow: {PARQUET_HINT}")
        super().__init__(db)
        self.pa = pa
        types = {"case": pa.string(), "activity": pa.string(), "user": pa.string(),
                 "timestamp": pa.int64() if self.kind == "numeric"
                 else pa.timestamp("us", tz="UTC")}
        self.schema = pa.schema([(self.columns[r], types[r]) for r in self.roles])
        self.activities = pa.array(self.labels, type=pa.string())  # once, not per part
        self.writer = pq.ParquetWriter(os.fspath(target) if isinstance(target, os.PathLike)
                                       else target, self.schema)

    def write(self, part: SequenceDB, first: int) -> None:
        """Write the rows of ``part``'s events (``first``: sequences written before it)."""
        pa = self.pa
        values = self.values(part, first)
        arrays = []
        for field, role in zip(self.schema, self.roles):
            if role == "timestamp":
                pos = values[role]
                if self.kind != "numeric":
                    start = int((SYNTHETIC_START - _EPOCH).total_seconds()) * 1_000_000
                    pos = start + pos * 1_000_000
                arrays.append(pa.array(pos, type=field.type))
            else:  # the strings gathered by Arrow, not as a Python object per event
                codes, texts = values[role]
                texts = self.activities if role == "activity" else pa.array(texts, pa.string())
                arrays.append(pa.DictionaryArray.from_arrays(pa.array(codes, type=pa.int64()),
                                                             texts).dictionary_decode())
        self.writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))

    def close(self) -> None:
        """Finish the file (a valid log with no rows when nothing was written)."""
        self.writer.close()


def write_parquet_log(db: SequenceDB, target: Any) -> None:
    """Write ``db`` to ``target`` as a Parquet event log, one row per event.

    See :class:`ParquetLogSink` for the columns, the targets it takes and
    the error raised where pyarrow is not installed.

    Parameters
    ----------
    db : SequenceDB
        The database to write, whole.
    target : path-like or binary stream
        A path, or a binary stream such as ``atomic_output(path, binary=True)``
        yields.
    """
    from .writers import write_all  # noqa: PLC0415 - writers imports this module

    write_all(ParquetLogSink(db, target), db)


_XES_NAMES = ("looks_like_xes", "read_xes", "write_xes")


def __getattr__(name: str) -> Any:
    """Re-export the XES functions of :mod:`dpgpu.data.xes` (imported on first use)."""
    if name in _XES_NAMES:
        from . import xes  # noqa: PLC0415 - xes imports this module

        return getattr(xes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["read_csv_log", "read_parquet_log", "read_xes", "write_csv_log",
           "write_parquet_log", "write_xes", "looks_like_csv_log", "looks_like_xes"]
