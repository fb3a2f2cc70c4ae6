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
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any, Iterable

import numpy as np

from ..errors import InputError, InvalidParameter
from .eventlog import check_delimiter
from .io import decode_text
from .sequencedb import SequenceDB, sort_labels
from .vocabulary import Vocabulary

#: Default field (JSON) / column (CSV, Parquet) names, as in the DPNE reference.
USER, TEXT = "author", "content"

#: A sentence ends at ``.``, ``!`` or ``?`` followed by white space, or at a line break.
SENTENCE = re.compile(r"(?<=[.!?])\s+|[\r\n]+")
#: A word: letters/digits/underscore, with inner apostrophes or hyphens ("don't", "e-mail").
WORD = re.compile(r"\w+(?:['\u2019-]\w+)*")


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
        Field names (default ``"author"`` and ``"content"``).  A user id may
        be a string or a number; the text must be a string.
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
        A line that is not a JSON object, a missing field, a text that is
        not a string (the message names the file and line), or no words.
    """
    user, text = _names(user, text, lowercase)
    lines = decode_text(path, data).split("\n")  # JSON strings may hold other line breaks
    records = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: line {n}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}: line {n}: expected a JSON object, got "
                             f"{type(obj).__name__}")
        records.append((n, _field(path, n, obj, user), _field(path, n, obj, text)))
    return _build(path, "jsonl", records, user, text, lowercase, allow_empty=allow_empty)


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
        One character (default ``","``).

    Returns
    -------
    SequenceDB
    """
    user, text = _names(user, text, lowercase)
    delimiter = check_delimiter(delimiter)
    reader = csv.reader(io.StringIO(decode_text(path, data), newline=""),
                        delimiter=delimiter or ",")
    header = next(reader, None) or []
    iu, it = (_column(path, header, c) for c in (user, text))
    records = []
    for row in reader:
        if not any(x.strip() for x in row):
            continue
        if len(row) <= max(iu, it):
            raise InputError(f"{path}: line {reader.line_num}: {len(row)} fields, expected "
                             f"{len(header)}")
        records.append((reader.line_num, row[iu], row[it]))
    return _build(path, "text-csv", records, user, text, lowercase)


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
    from .eventlog import _pyarrow  # noqa: PLC0415 - optional dependency loads on demand

    user, text = _names(user, text, lowercase)
    pa, pq = _pyarrow()
    if pa is None:
        raise InputError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow)")
    try:
        table = pq.read_table(str(path))
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    for c in (user, text):
        _column(path, table.column_names, c)
    users = table.column(user).to_pylist()
    texts = table.column(text).to_pylist()
    records = [(n, u, t) for n, (u, t) in enumerate(zip(users, texts), 1)]
    return _build(path, "text-parquet", records, user, text, lowercase, where="row")


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


def _build(path: Any, fmt: str, records: Iterable[tuple[int, Any, Any]], user: str, text: str,
           lowercase: bool, *, where: str = "line", allow_empty: bool = False) -> SequenceDB:
    """Tokenize the records ``(line, user, text)`` into one sequence per sentence."""
    ids: dict[str, int] = {}
    owners, sentences = [], []
    for n, u, t in records:
        if u is None or isinstance(u, (dict, list)):
            raise InputError(f"{path}: {where} {n}: {user!r} must be a string or a number")
        if not isinstance(t, str):
            raise InputError(f"{path}: {where} {n}: {text!r} must be a string, got "
                             f"{type(t).__name__}")
        uid = ids.setdefault(str(u), len(ids))
        for s in tokenize(t, lowercase=lowercase):
            sentences.append(s)
            owners.append(uid)
    if not sentences and not allow_empty:
        raise InputError(f"{path}: no words (no sequences)")
    vocab = Vocabulary(sort_labels({w for s in sentences for w in s}), public=False)
    code = {w: i for i, w in enumerate(vocab.labels)}
    lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
    items = np.fromiter((code[w] for s in sentences for w in s), dtype=np.int32,
                        count=int(lengths.sum()))
    return SequenceDB(items, np.concatenate([[0], np.cumsum(lengths)]), vocab,
                      users=np.asarray(owners, dtype=np.int32),
                      source={"path": str(path), "format": fmt, "user_labels": list(ids),
                              "lowercase": lowercase})
