"""User-level text: JSON lines and CSV/Parquet tables of ``(user, text)``, tokenized.

The DPNE reference reads JSON lines ``{"author": ..., "content": ...}``; the
same records come as CSV or Parquet tables with a user column and a text
column.  Every record's text is split into sentences and each sentence into
words (:func:`tokenize`, no downloads); each sentence becomes one sequence
of the :class:`~dpgpu.data.sequencedb.SequenceDB`, with the record's user
id in :attr:`~dpgpu.data.sequencedb.SequenceDB.users`, so n-grams never
cross a sentence boundary and all the sentences of a user share its id.
User ids are ``0 .. U-1`` in order of first appearance; the labels are kept
in ``source["user_labels"]``.

The readers take the records a block at a time.  The texts of a block are
joined and tokenized by one regular expression that finds what
:func:`tokenize` finds text by text, and words and users become integer
codes at once, so no word string outlives its block.  Long reads log their
progress (INFO, shown with ``-v``).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections import defaultdict
from typing import Any, Iterator

import numpy as np

from ..errors import InputError, InvalidParameter
from .eventlog import check_delimiter, csv_layout
from .io import unix_line_ends
from .reading import (ReadProgress, check_text, csv_fields_up_to, csv_reader, gc_paused, numbering,
                      optional_pyarrow)
from .sequencedb import SequenceDB, sort_labels
from .vocabulary import Vocabulary

#: Default field (JSON) / column (CSV, Parquet) names, as in the DPNE reference.
USER, TEXT = "author", "content"

#: A sentence ends at ``.``, ``!`` or ``?`` followed by white space, or at a line break.
SENTENCE = re.compile(r"(?<=[.!?])\s+|[\r\n]+")
#: A word: letters/digits/underscore, with inner apostrophes or hyphens ("don't", "e-mail").
WORD = re.compile(r"\w+(?:['\u2019-]\w+)*")

#: Bytes of JSON lines parsed at a time (a block runs on to the end of its last line).
BLOCK_BYTES = 1 << 22
#: CSV rows or Parquet rows taken at a time.
BLOCK_RECORDS = 1 << 14

#: Ends every text of a block's joined texts.  It is no word character, no white
#: space, no sentence punctuation and no letter with a case (so lower-casing the
#: joined texts lower-cases each text as on its own, a final sigma included).
_END = "\x00"
#: Stands in for an ``_END`` inside a text: a character of the same kinds, so
#: the text's words and sentences stay the same.
_STAND_IN = "\x01"
#: What :func:`tokenize` finds, in one pass over joined texts: group 1 is a word
#: or an ``_END``; a sentence break leaves it empty.
_TOKENS = re.compile(f"({WORD.pattern}|{_END})|{SENTENCE.pattern}")
#: The tokens numbered before the words: a sentence break (group 1 empty), ``_END``.
_NOT_WORDS = ("", _END)
#: The codes of ``_END`` and of the first word.
_RECORD_END, _FIRST_WORD = _NOT_WORDS.index(_END), len(_NOT_WORDS)


def tokenize(text: str, *, lowercase: bool = True) -> list[list[str]]:
    """Split ``text`` into sentences of words (empty sentences dropped).

    Parameters
    ----------
    text : str
    lowercase : bool
        Lower-case the words first.

    Returns
    -------
    list of list of str
        One list of words per sentence.  Punctuation is dropped; an
        abbreviation's period ("Dr. Smith") ends a sentence.
    """
    if lowercase:
        text = text.lower()
    return [w for w in (WORD.findall(s) for s in SENTENCE.split(text)) if w]


def read_jsonl(path: Any, data: bytes, *, user: str | None = None, text: str | None = None,
               lowercase: bool = True, allow_empty: bool = False) -> SequenceDB:
    """Read JSON lines, one object per line with a user field and a text field.

    Parameters
    ----------
    path : path-like
        The file (for messages and ``source``).
    data : bytes
        Its contents (decompressed).
    user, text : str, optional
        Field names (default ``"author"`` and ``"content"``).  A user id is a
        string that is not blank or a whole number (``1.0`` is the user
        ``1``, as ``"1"`` is); the text must be a string.
    lowercase : bool
        Lower-case the words.
    allow_empty : bool
        Return an empty database instead of failing when there are no words
        (for a part of a file).

    Returns
    -------
    SequenceDB

    Raises
    ------
    InputError
        A line that is not a JSON object, a missing field, a blank user, a
        user that is neither a string nor a whole number (a boolean, a
        fraction, NaN), a text that is not a string (the message names the
        file, line and field), or no words.

    Notes
    -----
    Lines end at ``"\\n"`` only (JSON strings may hold other line breaks).
    Of several errors, the one reported is the first of: data that is not
    UTF-8 text, the first line that is not a JSON object with both fields,
    the first record with a bad user or text, no words.
    """
    user, text = _names(user, text, lowercase)
    check_text(path, data)
    data = unix_line_ends(data)  # lone CRs too end lines; offsets, so line numbers, are kept
    return _build(path, "jsonl", _jsonl_blocks(path, data, user, text), user, text, lowercase,
                  allow_empty=allow_empty)


def read_text_csv(path: Any, data: bytes, *, user: str | None = None, text: str | None = None,
                  lowercase: bool = True, delimiter: str | None = None) -> SequenceDB:
    """Read a CSV table (header row, one record per row) with a user and a text column.

    Parameters
    ----------
    path : path-like
    data : bytes
    user, text : str, optional
        Column names (default ``"author"`` and ``"content"``).
    lowercase : bool
    delimiter : str, optional
        One character (a tab also as ``\\t`` or ``tab``); by default the most
        frequent of ``, TAB ; |`` in the header row.

    Returns
    -------
    SequenceDB

    Raises
    ------
    InputError
        Not UTF-8 text, no header row, a missing column, a row with another
        number of fields than the header, a quote never closed, a blank
        user, or no words (the message names the file and line).
    """
    user, text = _names(user, text, lowercase)
    start, delimiter = csv_layout(path, data, check_delimiter(delimiter), "a text table")
    with csv_fields_up_to(len(data)):  # a post may pass the csv module's 128 KiB
        return _build(path, "text-csv", _csv_blocks(path, data, start, user, text, delimiter),
                      user, text, lowercase)


def read_text_parquet(path: Any, *, user: str | None = None, text: str | None = None,
                      lowercase: bool = True) -> SequenceDB:
    """Read a Parquet table with a user and a text column (needs pyarrow).

    Parameters
    ----------
    path : path-like
    user, text : str, optional
        Column names (default ``"author"`` and ``"content"``).
    lowercase : bool

    Returns
    -------
    SequenceDB
    """
    user, text = _names(user, text, lowercase)
    pa, pq = optional_pyarrow()
    if pa is None:
        raise InputError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)")
    try:
        table = pq.read_table(str(path))
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    for c in (user, text):
        _column(path, table.column_names, c)
    return _build(path, "text-parquet", _parquet_blocks(path, table, user, text), user, text,
                  lowercase, where="row")


def _names(user: str | None, text: str | None, lowercase: bool) -> tuple[str, str]:
    """Checked field names (defaults filled in); checks ``lowercase`` too."""
    if not isinstance(lowercase, bool):
        raise InvalidParameter(f"lowercase: must be True or False, got {lowercase!r}")
    for value, name in ((user, "user"), (text, "text")):
        if value is not None and (not isinstance(value, str) or not value):
            raise InvalidParameter(f"{name}: must be a non-empty field name, got {value!r}")
    return user or USER, text or TEXT


def _field(path: Any, n: int, obj: dict, name: str) -> Any:
    if name not in obj:
        raise InputError(f"{path}: line {n}: no field {name!r}")
    return obj[name]


def _column(path: Any, header: list[str], name: str) -> int:
    if name not in header:
        raise InputError(f"{path}: no column {name!r} (columns: {', '.join(header) or 'none'})")
    return header.index(name)


# ------------------------------------------------------------------- records
def _jsonl_blocks(path: Any, data: bytes, user: str,
                  text: str) -> Iterator[list[tuple[int, Any, Any]]]:
    """The records ``(line, user, text)`` of JSON lines (UTF-8 ``data``), a block at a time.

    Blank lines are skipped; a block is never empty.

    Raises
    ------
    InputError
        A line that is not a JSON object or lacks a field.
    """
    progress = ReadProgress(path, "line")
    start, line = 0, 1
    while start < len(data):
        end = data.find(b"\n", start + BLOCK_BYTES) + 1 or len(data)
        lines = data[start:end].decode("utf-8").split("\n")
        block = [_jsonl_record(path, n, s, user, text)
                 for n, s in enumerate(lines, line) if s.strip()]
        if block:
            yield block
        start, line = end, line + len(lines) - 1
        progress(start, len(data), line - 1)


def _jsonl_record(path: Any, n: int, line: str, user: str, text: str) -> tuple[int, Any, Any]:
    """``(n, user, text)`` of line ``n``, a JSON object."""
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: line {n}: not valid JSON ({exc.msg})") from None
    if not isinstance(obj, dict):
        raise InputError(f"{path}: line {n}: expected a JSON object, got "
                         f"{type(obj).__name__}")
    return n, _field(path, n, obj, user), _field(path, n, obj, text)


def _csv_blocks(path: Any, data: bytes, start: int, user: str, text: str,
                delimiter: str) -> Iterator[list[tuple[int, str, str]]]:
    """The records ``(line, user, text)`` of a CSV table (UTF-8 ``data[start:]``), a block
    at a time.

    A record's line is where its row ends; rows of blank fields are skipped.

    Raises
    ------
    InputError
        A missing column, a row with another number of fields than the
        header, or a malformed line.
    """
    reader, stream = csv_reader(data, start, delimiter)
    try:
        yield from _csv_records(path, reader, stream, len(data), user, text, delimiter)
    except csv.Error as exc:
        raise InputError(f"{path}: line {reader.line_num}: malformed CSV ({exc})") from None


def _csv_records(path: Any, reader: Any, stream: Any, size: int, user: str, text: str,
                 delimiter: str) -> Iterator[list[tuple[int, str, str]]]:
    """:func:`_csv_blocks` of a csv ``reader`` of ``stream`` (``size`` bytes)."""
    header = next(reader, None) or []
    iu, it = (_column(path, header, c) for c in (user, text))
    progress = ReadProgress(path, "line")
    block: list[tuple[int, str, str]] = []
    for row in reader:
        if not any(map(str.strip, row)):
            continue
        if len(row) != len(header):
            hint = (f" (a cell that holds the delimiter {delimiter!r} must be quoted)"
                    if len(row) > len(header) else "")
            raise InputError(f"{path}: line {reader.line_num}: {len(row)} fields, but the "
                             f"header has {len(header)}{hint}")
        block.append((reader.line_num, row[iu], row[it]))
        if len(block) >= BLOCK_RECORDS:
            yield block
            block = []
            progress(stream.buffer.tell(), size, reader.line_num)
    if block:
        yield block


def _parquet_blocks(path: Any, table: Any, user: str,
                    text: str) -> Iterator[list[tuple[int, Any, Any]]]:
    """The records ``(row, user, text)`` of a pyarrow table, a block at a time (rows from 1)."""
    users, texts = table.column(user), table.column(text)
    progress = ReadProgress(path, "row")
    for start in range(0, table.num_rows, BLOCK_RECORDS):
        us = users.slice(start, BLOCK_RECORDS).to_pylist()
        ts = texts.slice(start, BLOCK_RECORDS).to_pylist()
        yield list(zip(range(start + 1, start + len(us) + 1), us, ts))
        progress(start + len(us), table.num_rows, start + len(us))


# ------------------------------------------------------------------ building
def _build(path: Any, fmt: str, blocks: Iterator[list[tuple[int, Any, Any]]], user: str,
           text: str, lowercase: bool, *, where: str = "line",
           allow_empty: bool = False) -> SequenceDB:
    """Tokenize the records ``(line, user, text)`` into one sequence per sentence.

    Parameters
    ----------
    path : path-like
        The file, for messages and ``source``.
    fmt : str
        ``source["format"]``.
    blocks : iterator of lists of tuples
        The records, a block at a time.
    user, text : str
        Field names, for messages.
    lowercase : bool
    where : str
        What a record's number counts, for messages (``"line"``, ``"row"``).
    allow_empty : bool
        Return an empty database when there are no words.

    Returns
    -------
    SequenceDB

    Raises
    ------
    InputError
        What ``blocks`` raises (anywhere in them), else the first record
        with a bad user or text (see :func:`_user_labels`), else no words.
    """
    words = numbering(_NOT_WORDS)
    users = numbering()
    parts = []
    kind = "field" if fmt == "jsonl" else "column"
    with gc_paused():  # the records and tokens are many short-lived objects
        for block in blocks:
            try:
                labels = _user_labels(path, where, kind, block, user, text)
            except InputError:
                for _ in blocks:  # a malformed record further on is reported first
                    pass
                raise
            parts.append(_block_sentences(block, labels, words, users, lowercase))
    items, lengths, owners = _concatenated(parts)
    del parts  # the items of the blocks
    if not lengths.size and not allow_empty:
        raise InputError(f"{path}: no words (no sequences)")
    labels = list(words)[_FIRST_WORD:]
    vocab = Vocabulary(sort_labels(labels), public=False)
    position = {w: i for i, w in enumerate(vocab.labels)}
    ids = np.fromiter(map(position.__getitem__, labels), dtype=np.int32, count=len(labels))
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return SequenceDB(ids[items], offsets, vocab, users=owners,
                      source={"path": str(path), "format": fmt, "user_labels": list(users),
                              "lowercase": lowercase})


def _concatenated(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """The arrays of the blocks (see :func:`_block_sentences`), each concatenated."""
    if not parts:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int64), \
            np.zeros(0, dtype=np.int32)
    return tuple(np.concatenate(arrays) for arrays in zip(*parts))


def _user_labels(path: Any, where: str, kind: str, block: list[tuple[int, Any, Any]],
                 user: str, text: str) -> list[str]:
    """The user of each record of ``block``, as text; InputError for the first record whose
    user or text is bad.

    A user is a string that is not blank or a number; a float must be a
    whole number, and is then that integer (``1.0`` is ``"1"``, as
    :meth:`~dpgpu.data.sequencedb.SequenceDB.from_sequences` takes it).
    Refused: a blank, which would make one user of all the records without
    one, and a boolean, a fraction, NaN or an infinity, which rounding or
    writing as text would merge with other users (``true`` with ``"True"``).
    The text is a string.  ``kind`` (``"field"``, ``"column"``) is what
    ``user`` names.
    """
    labels = []
    for n, u, t in block:
        if isinstance(u, str):
            if not u.strip():
                raise InputError(f"{path}: {where} {n}: empty user ({kind} {user!r})")
        elif isinstance(u, float) and math.isfinite(u) and u.is_integer():
            u = str(int(u))
        elif u is None or isinstance(u, (bool, float, dict, list)):
            got = type(u).__name__ if isinstance(u, (dict, list)) else json.dumps(u)
            raise InputError(f"{path}: {where} {n}: {user!r} must be a string or a whole "
                             f"number, got {got}")
        else:
            u = str(u)
        if not isinstance(t, str):
            raise InputError(f"{path}: {where} {n}: {text!r} must be a string, got "
                             f"{type(t).__name__}")
        labels.append(u)
    return labels


def _block_sentences(block: list[tuple[int, Any, Any]], labels: list[str], words: defaultdict,
                     users: defaultdict, lowercase: bool,
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sentences of the texts of ``block``, as :func:`tokenize` splits each text.

    Parameters
    ----------
    block : list of tuples
        Records ``(line, user, text)``, checked.
    labels : list of str
        The user of each record, as text (see :func:`_user_labels`).
    words, users : defaultdict
        Numberings (see :func:`~dpgpu.data.reading.numbering`) of the tokens (``_NOT_WORDS``
        first, then the words) and of the users as strings; new ones are
        added.
    lowercase : bool

    Returns
    -------
    items : array of int32
        Codes in ``words``, less ``_FIRST_WORD``, of the words of all the
        sentences, concatenated.
    lengths : array of int64
        Words per sentence.
    owners : array of int32
        User code of each sentence.
    """
    texts = [record[2] for record in block]
    user_codes = np.fromiter(map(users.__getitem__, labels), dtype=np.int32, count=len(labels))
    joined = _END.join(texts) + _END
    if joined.count(_END) != len(texts):
        joined = _END.join(t.replace(_END, _STAND_IN) for t in texts) + _END
    tokens = _TOKENS.findall(joined.lower() if lowercase else joined)
    codes = np.fromiter(map(words.__getitem__, tokens), dtype=np.int32, count=len(tokens))
    at = np.flatnonzero(codes >= _FIRST_WORD)  # where the words are among the tokens
    # a sentence starts at a word after a break (token -1 is the last text's _END)
    first = np.flatnonzero(codes[at - 1] < _FIRST_WORD)
    lengths = np.diff(first, append=at.size)
    record = np.searchsorted(np.flatnonzero(codes == _RECORD_END), at[first])
    return codes[at] - _FIRST_WORD, lengths, user_codes[record]
