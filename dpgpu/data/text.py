"""Readers for the text sequence formats: UCI ``.seq``, SPMF, one sequence per line.

Integer formats are parsed without a per-line Python loop: the whole file is
scanned as a byte array, tokens are found with array operations and their
values summed digit by digit (``np.add.reduceat``).  Line numbers are kept
for every token, so every error names the file and line.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..errors import InputError
from ..ops.keys import sorted_unique
from .io import decode_text, line_number
from .sequencedb import SequenceDB, sort_labels
from .vocabulary import Vocabulary

_MINUS = 45
# byte classes: 0 white space, 1 digit, 2 minus sign, 3 anything else
_CLASS = np.full(256, 3, dtype=np.uint8)
_CLASS[[9, 10, 13, 32]] = 0
_CLASS[48:58] = 1
_CLASS[_MINUS] = 2
MAX_DIGITS = 18
_BLANK_BUT_NEWLINE = bytes(10 if b == 10 else 32 for b in range(256))


class IntTokens:
    """Integer tokens of a text and where they stand.

    Attributes
    ----------
    values : numpy.ndarray of int64
    starts : numpy.ndarray of int64
        Byte offset of each token.
    newlines : numpy.ndarray of int64
        Byte offsets of the line feeds.
    n_lines : int
        Lines in the text (a final line without newline counts).
    """

    def __init__(self, values: np.ndarray, starts: np.ndarray, newlines: np.ndarray,
                 n_lines: int):
        self.values, self.starts, self.newlines, self.n_lines = values, starts, newlines, n_lines

    @property
    def lines(self) -> np.ndarray:
        """0-based line index of each token."""
        return np.searchsorted(self.newlines, self.starts)

    def per_line(self) -> np.ndarray:
        """Number of tokens on each line."""
        line_ends = np.searchsorted(self.starts, self.newlines)
        counts = np.diff(line_ends, prepend=0)
        if self.n_lines > self.newlines.size:  # last line has no newline
            counts = np.append(counts, self.starts.size - (line_ends[-1] if line_ends.size else 0))
        return counts


def parse_int_tokens(path: Any, data: bytes, fmt: str) -> IntTokens:
    """Parse whitespace-separated integers (vectorized).

    Raises
    ------
    InputError
        Naming file and line of the first token that is not an integer.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    cls = _CLASS[buf]
    if (cls == 3).any():
        _bad_token(path, data, int(np.argmax(cls == 3)), fmt)
    newlines = np.flatnonzero(buf == 10)
    n_lines = newlines.size + (1 if data and not data.endswith(b"\n") else 0)
    edge = np.diff((cls != 0).view(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edge == 1)
    ends = np.flatnonzero(edge == -1)
    if starts.size == 0:
        return IntTokens(np.zeros(0, np.int64), starts, newlines, n_lines)
    negative = cls[starts] == 2
    first = starts + negative
    width = ends - first
    if (width == 0).any():
        _bad_token(path, data, int(starts[np.argmax(width == 0)]), fmt)
    if (width > MAX_DIGITS).any():
        _bad_token(path, data, int(starts[np.argmax(width > MAX_DIGITS)]), fmt,
                   "integer too large")
    values = np.zeros(starts.size, dtype=np.int64)
    for k in range(int(width.max())):
        live = np.flatnonzero(width > k) if k else None
        at = first + k if live is None else first[live] + k
        if (cls[at] != 1).any():  # a '-' inside a token
            _bad_token(path, data, int(at[np.argmax(cls[at] != 1)]), fmt)
        digit = buf[at].astype(np.int64) - 48
        if live is None:
            values = digit
        else:
            values[live] = values[live] * 10 + digit
    values[negative] = -values[negative]
    return IntTokens(values, starts, newlines, n_lines)


def _bad_token(path: Any, data: bytes, offset: int, fmt: str, why: str = "") -> None:
    line_start = data.rfind(b"\n", 0, offset) + 1
    left = offset
    while left > line_start and data[left - 1:left] not in (b" ", b"\t"):
        left -= 1
    m = re.match(rb"[^\s]*", data[left:left + 64])
    token = m.group(0).decode("utf-8", "replace") if m else ""
    decode_text(path, data)  # binary garbage is reported as such
    reason = why or f"non-numeric token {token!r} in the integer format '{fmt}'"
    raise InputError(f"{path}: line {line_number(data, offset)}: {reason}")


def _db_from_ints(values: np.ndarray, counts: np.ndarray, source: dict,
                  vocab_values: np.ndarray | None = None, names: list | None = None,
                  public: bool = False) -> SequenceDB:
    """A SequenceDB whose labels are the integer values as strings.

    ``public``: the vocabulary (``vocab_values``, a ``.seq`` header) was
    declared, not taken from the items that occur.
    """
    uniq = sorted_unique(values) if vocab_values is None else vocab_values
    ids = np.searchsorted(uniq, values).astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    vocab = Vocabulary([str(v) for v in uniq.tolist()], names=names, public=public)
    return SequenceDB(ids, offsets, vocab, source=source)


# --------------------------------------------------------------- UCI .seq
SEQ_MARK = b"% Sequences:"
#: A header line dpgpu writes when the categories were taken from the data
#: (a ``.seq`` made from another format): they are then not a public vocabulary.
SEQ_DATA_VOCABULARY = "% dpgpu: categories taken from the data, not a public vocabulary"


def looks_like_seq(head: bytes) -> bool:
    """True for the UCI ``.seq`` header (MSNBC)."""
    return head.lstrip().startswith(b"% Different categories")


def read_seq(path: Any, data: bytes) -> SequenceDB:
    """Read a UCI ``.seq`` file (header naming categories, then lines of 1-based ids).

    Item labels are the numbers as written (``"1"`` .. ``"K"``); the header's
    category names become ``vocab.names``.  All K declared categories are in
    the vocabulary, occurring or not (the item universe is public, unless
    the header holds :data:`SEQ_DATA_VOCABULARY`).
    """
    names, body_start, public = seq_header(path, data)
    return read_seq_body(path, data, body_start, names, public)


def seq_header(path: Any, data: bytes) -> tuple[list[str], int, bool]:
    """The category names of a UCI ``.seq`` header, the offset where the sequences start,
    and whether the categories are a public vocabulary.

    ``data`` must hold the whole header (the ``% Sequences:`` line and the
    blank line after it).
    """
    mark = data.find(SEQ_MARK)
    if not looks_like_seq(data[:200]) or mark < 0:
        raise InputError(f"{path}: line 1: not a UCI .seq file (expected a '% Different "
                         "categories' header and a '% Sequences:' line)")
    header = decode_text(path, data[:mark]).splitlines()
    names = [w for line in header[1:] if line.strip() and not line.startswith("%")
             for w in line.split()]
    if not names:
        raise InputError(f"{path}: line 3: the header names no categories")
    body_start = data.find(b"\n", mark) + 1
    if body_start == 0:
        body_start = len(data)
    # the blank line after "% Sequences:" belongs to the header
    if data[body_start:body_start + 1] == b"\n":
        body_start += 1
    elif data[body_start:body_start + 2] == b"\r\n":
        body_start += 2
    public = not any(line.strip() == SEQ_DATA_VOCABULARY for line in header)
    return names, body_start, public


def read_seq_body(path: Any, data: bytes, body_start: int, names: list[str],
                  public: bool = True) -> SequenceDB:
    """The sequences of ``data[body_start:]``, one line each, categories ``1 .. len(names)``.

    Lines are numbered from the start of ``data`` in messages.
    """
    first_line = line_number(data, body_start) - 1
    # blank the header (keeping its line feeds) so that token lines stay absolute
    header_blank = bytes(data[:body_start]).translate(_BLANK_BUT_NEWLINE)
    toks = parse_int_tokens(path, header_blank + data[body_start:], "seq")
    k = len(names)
    bad = (toks.values < 1) | (toks.values > k)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{path}: line {toks.lines[i] + 1}: category "
                         f"{toks.values[i]} is not declared in the header (1..{k})")
    counts = toks.per_line()[first_line:]
    source = {"path": str(path), "format": "seq"}
    return _db_from_ints(toks.values, counts, source, np.arange(1, k + 1), names, public)


# ------------------------------------------------------------------- SPMF
_SPMF_META = re.compile(rb"^[ \t]*[#%@][^\n]*", re.MULTILINE)
_SPMF_ITEM = re.compile(r"^@ITEM=(-?\d+)=(.*)$")
#: The metadata SPMF opens a file with when its items were text.
_SPMF_OPENING = re.compile(rb"\s*@(?:CONVERTED_FROM_TEXT|ITEM=)")
_INT_BYTES = re.compile(rb"-?[0-9]+")


def looks_like_spmf(head: bytes) -> bool:
    """True when the text uses SPMF's ``-2`` sequence terminator."""
    return re.search(rb"(^|\s)-2(\s|$)", head) is not None


def looks_like_spmf_file(head: bytes) -> bool:
    """Whether a file starting with ``head`` is SPMF text.

    True when it opens with the metadata SPMF writes for text items
    (``@CONVERTED_FROM_TEXT``, ``@ITEM=``), or when a ``-2`` terminator
    occurs and the first line of data ends with ``-2`` or holds only
    integers.  A line of words or an event log's header row that merely
    contains a ``-2`` is not SPMF.
    """
    if _SPMF_OPENING.match(head):
        return True
    body = spmf_without_metadata(head)
    first = next((line.split() for line in body.split(b"\n") if line.strip()), [])
    return (first[-1:] == [b"-2"] or all(_INT_BYTES.fullmatch(t) for t in first)) \
        and looks_like_spmf(body)


def read_spmf(path: Any, data: bytes, *, stripped: bool | None = None) -> SequenceDB:
    """Read SPMF sequences: items, ``-1`` after each itemset, ``-2`` ending a sequence.

    One sequence per line; itemsets are flattened in the order written
    (dpgpu's sequences hold one item per position).  A file without any
    ``-2`` is the stripped variant: one sequence of space-separated items per
    line.  Lines starting with ``#``, ``%`` or ``@`` are metadata;
    ``@ITEM=id=name`` lines name items.

    Parameters
    ----------
    path : path-like
        For messages and ``source``.
    data : bytes
    stripped : bool, optional
        Which variant ``data`` is (default: stripped when it holds no ``-2``);
        for a part of a file, whose variant the whole file decides.

    Returns
    -------
    SequenceDB
        One sequence per line that is not metadata (a blank line is an
        empty sequence in the stripped variant and is skipped in the ``-2``
        variant).

    Raises
    ------
    InputError
        Naming the file and line: a token that is not an integer, a
        negative item, or (``-2`` variant) a line whose last token is not
        ``-2`` or that holds ``-2`` before its end.
    """
    names: dict[str, str] = {}
    meta_starts = []
    for m in _SPMF_META.finditer(data):
        meta_starts.append(m.start())
        line = m.group(0).strip().decode("utf-8", "replace")
        item = _SPMF_ITEM.match(line)
        if item:
            names[item.group(1)] = item.group(2)
    toks = parse_int_tokens(path, spmf_without_metadata(data), "spmf")
    source = {"path": str(path), "format": "spmf"}
    values = toks.values
    if stripped if stripped is not None else not (values == -2).any():
        source["stripped"] = True
        bad = values < 0
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"{path}: line {toks.lines[i] + 1}: negative item {values[i]}")
        meta_lines = np.searchsorted(toks.newlines, meta_starts)
        counts = np.delete(toks.per_line(), meta_lines)
        if names:
            source["names"] = names
        return _db_from_ints(values, counts, source)
    bad = (values < 0) & (values != -1) & (values != -2)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{path}: line {toks.lines[i] + 1}: negative item {values[i]} "
                         "(SPMF uses only -1 and -2 as separators)")
    ends = np.flatnonzero(values == -2)
    _check_one_sequence_per_line(path, toks, ends)
    is_item = values >= 0
    seq_of_item = np.searchsorted(ends, np.flatnonzero(is_item))
    counts = np.bincount(seq_of_item, minlength=ends.size)
    if names:
        source["names"] = names
    return _db_from_ints(values[is_item], counts, source)


def _check_one_sequence_per_line(path: Any, toks: IntTokens, ends: np.ndarray) -> None:
    """InputError unless every line with tokens holds one ``-2``, as its last token.

    SPMF holds one sequence per line: a line without its ``-2`` must not run
    on into the next line's sequence, nor two sequences share a line.
    ``ends`` are the indices of the ``-2`` tokens.
    """
    counts = toks.per_line()
    last = np.cumsum(counts)[counts > 0] - 1  # the last token of each line with tokens
    if ends.size == last.size and (toks.values[last] == -2).all():
        return
    lines = toks.lines  # locating the first offence costs more; only on failure
    last_on_line = np.append(lines[1:] != lines[:-1], True)
    i = int(np.argmax(last_on_line != (toks.values == -2)))
    why = "sequence not terminated by -2" if last_on_line[i] else "-2 before the end of the line"
    raise InputError(f"{path}: line {lines[i] + 1}: {why} (SPMF holds one sequence per "
                     "line, each ending with -2)")


def spmf_without_metadata(data: bytes) -> bytes:
    """``data`` with its SPMF metadata lines (``#``, ``%``, ``@``) blanked, line feeds kept."""
    if not _SPMF_META.search(data):
        return data
    return _SPMF_META.sub(lambda m: b" " * len(m.group(0)), data)


# ----------------------------------------------------------------- lines
def read_lines(path: Any, data: bytes, *, tokens: str = "auto") -> SequenceDB:
    """Read one sequence per line, items separated by white space.

    Parameters
    ----------
    tokens : {"auto", "int", "str"}
        ``"int"`` requires integer items, ``"str"`` takes any non-blank
        strings, ``"auto"`` uses ``"int"`` when every token is an integer.

    A blank line is an empty sequence.
    """
    source = {"path": str(path), "format": "lines"}
    if tokens in ("auto", "int"):
        try:
            toks = parse_int_tokens(path, data, "lines")
        except InputError:
            if tokens == "int":
                raise
        else:
            source["tokens"] = "int"
            counts = toks.per_line()
            return _db_from_ints(toks.values, counts, source)
    text = decode_text(path, data)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    split = [line.split() for line in lines]
    flat = np.array([t for row in split for t in row], dtype=object)
    counts = np.array([len(row) for row in split], dtype=np.int64)
    labels = sort_labels(set(flat.tolist()))
    index = {label: i for i, label in enumerate(labels)}
    ids = np.array([index[t] for t in flat.tolist()], dtype=np.int32)
    source["tokens"] = "str"
    return SequenceDB(ids, np.concatenate([[0], np.cumsum(counts)]),
                      Vocabulary(labels, public=False), source=source)
