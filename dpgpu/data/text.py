"""Readers for the text sequence formats: UCI ``.seq``, SPMF, one sequence per line.

Integer formats are parsed a block of whole lines at a time
(:data:`BLOCK_BYTES`), without a per-line Python loop: in a block, the
tokens are found with array operations and their digits accumulated one
digit position at a time.  Each block keeps only its values (in the
smallest integer type that holds them) and the number of tokens on each of
its lines, so memory stays a few bytes per token besides the file itself.

A malformed file is reported as a scan of the whole file would report it,
whatever the block size: first the token that is not an integer (rank by
rank: a character that cannot be part of an integer, a lone ``-``, too
many digits, a ``-`` inside a number), then the checks of the format (an
undeclared category, a negative item, an SPMF line without its ``-2``);
each names the file and the first offending line.

A line ends with a line feed, a CRLF or a lone carriage return (old Mac
OS): each reader first makes every line end a line feed, keeping the byte
offsets (:func:`~dpgpu.data.io.unix_line_ends`), so blocks end after line
feeds only.
"""

from __future__ import annotations

import logging
import re
from itertools import chain
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from ..errors import InputError, InvalidParameter
from ..ops.keys import sorted_unique
from .io import decode_text, line_number, unix_line_ends
from .reading import encode_values, numbering
from .sequencedb import SequenceDB, sort_labels
from .vocabulary import Vocabulary

log = logging.getLogger("dpgpu")

_MINUS = 45
_NEWLINE = 10
# byte classes: 0 white space, 1 digit, 2 minus sign, 3 anything else
_CLASS = np.full(256, 3, dtype=np.uint8)
_CLASS[[9, 10, 13, 32]] = 0
_CLASS[48:58] = 1
_CLASS[_MINUS] = 2
MAX_DIGITS = 18
_BLANK_BUT_NEWLINE = bytes(10 if b == 10 else 32 for b in range(256))
#: Bytes of an integer file parsed at a time.  A block ends just after a line
#: feed, so a block holds whole lines (a longer line makes a longer block).
BLOCK_BYTES = 1 << 19


class _IntBlock:
    """The integer tokens of a block of whole lines.

    ``values``: the tokens' values (the smallest signed integer type that
    holds them); ``counts``: tokens on each line (int64); ``first_line``:
    the 0-based line index of the block's first line in the file; ``lo``:
    its byte offset; ``blanked``: the matches of the lines read as blank
    (SPMF metadata).
    """

    def __init__(self, values: np.ndarray, counts: np.ndarray, first_line: int, lo: int,
                 blanked: list[re.Match]):
        self.values, self.counts, self.first_line = values, counts, first_line
        self.lo, self.blanked = lo, blanked

    def line(self, i: int) -> int:
        """The 1-based line number of token ``i``."""
        return self.first_line + int(np.searchsorted(np.cumsum(self.counts), i, "right")) + 1


class _BadToken(Exception):
    """A token of a block that is not an integer, at ``offset`` in the block.

    ``(rank, digit, offset)`` ranks it among the bad tokens of a file: the
    smallest is reported.
    """

    def __init__(self, rank: int, offset: int, digit: int = 0, why: str = ""):
        super().__init__(why)
        self.rank, self.offset, self.digit, self.why = rank, offset, digit, why


def _int_blocks(path: Any, data: bytes, fmt: str, start: int = 0,
                blank: re.Pattern | None = None, *,
                canonical: bool = False) -> Iterator[_IntBlock]:
    """The integer tokens of ``data[start:]``, a block of whole lines at a time.

    ``data``'s lines end with line feeds (:func:`~dpgpu.data.io.unix_line_ends`).
    Bytes before ``start`` are read as blank (lines are numbered from the
    start of ``data``), and so are the lines that ``blank`` matches.  After
    the last block, an InputError names the token that a scan of the whole
    text finds first not to be an integer; no block is given after a block
    that holds one.  With ``canonical`` (the ``lines`` reader's ``"auto"``
    test), an integer not written as it prints (:func:`is_canonical_int`:
    ``07``, ``-0``) is not taken either, and the first bad token found
    ends the scan (the error only says "not integers": it is not reported).
    """
    whole = np.frombuffer(data, dtype=np.uint8)
    first_line = data.count(b"\n", 0, start)
    first_bad = None  # ((rank, digit, offset), why)
    for lo, hi in _line_blocks(data, start):
        partial = hi == len(data) and data[-1:] not in (b"", b"\n")  # no final line feed
        try:
            values, counts, blanked = _read_block(data, whole, lo, hi, partial, blank,
                                                  canonical)
        except _BadToken as bad:
            found = ((bad.rank, bad.digit, lo + bad.offset), bad.why)
            first_bad = min(first_bad, found) if first_bad else found
            if bad.rank == 0 or canonical:  # a later block cannot hold one reported before it
                break
            continue
        if first_bad is None:
            yield _IntBlock(values, counts, first_line, lo, blanked)
        first_line += counts.size
    if first_bad:
        (_, _, offset), why = first_bad
        _bad_token(path, _as_parsed(data, start, blank), offset, fmt, why)


def _line_blocks(data: bytes, start: int) -> Iterator[tuple[int, int]]:
    """Byte ranges ``(lo, hi)`` covering ``data[start:]``, each ending after a line feed
    or at the end (at least one range, maybe empty)."""
    lo = start
    while True:
        hi = min(lo + BLOCK_BYTES, len(data))
        if hi < len(data):
            cut = data.rfind(b"\n", lo, hi)
            hi = cut + 1 if cut >= 0 else data.find(b"\n", hi) + 1 or len(data)
        yield lo, hi
        if hi >= len(data):
            return
        lo = hi


def _read_block(data: bytes, whole: np.ndarray, lo: int, hi: int, partial: bool,
                blank: re.Pattern | None, canonical: bool = False,
                ) -> tuple[np.ndarray, np.ndarray, list[re.Match]]:
    """:func:`_parse_block` of ``data[lo:hi]`` with the lines that ``blank`` matches
    read as blank, and those matches."""
    buf = whole[lo:hi]
    try:
        return *_parse_block(buf, partial, canonical), []
    except _BadToken as bad:  # only a block with other characters can hold such a line
        if blank is None or bad.rank != 0:
            raise
        matches = list(blank.finditer(data, lo, hi))
        if not matches:
            raise
    buf = buf.copy()
    for m in matches:
        buf[m.start() - lo:m.end() - lo] = ord(" ")
    return *_parse_block(buf, partial, canonical), matches


def _parse_block(buf: np.ndarray, partial: bool,
                 canonical: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The values of the tokens of ``buf`` and the number on each line.

    ``partial``: the last line has no line feed.  Raises :class:`_BadToken`
    for the block's first bad token; with ``canonical``, an integer with a
    leading zero or ``-0`` (not :func:`is_canonical_int`) is one too, ranked
    after the others.
    """
    cls = _CLASS.take(buf)
    if cls.max(initial=0) == 3:
        raise _BadToken(0, int(np.argmax(cls == 3)))
    starts, ends = _token_bounds(cls)
    negative = cls[starts] == 2
    first = starts + negative
    width = ends - first
    _check_shapes(cls, starts, negative, first, width)
    if canonical and starts.size:
        # "0" alone is the only token whose first digit may be 0 ("-0", "07", "-07" are not)
        loose = (buf[first] == 48) & ((width > 1) | negative)
        if loose.any():
            raise _BadToken(4, int(starts[np.argmax(loose)]), why="not a canonical integer")
    values = np.subtract(buf[first], 48, dtype=np.int64)
    for k in range(1, int(width.max(initial=0))):
        live = np.flatnonzero(width > k)
        values[live] = values[live] * 10 + (buf[first[live] + k] - 48)
    values *= 1 - 2 * negative.view(np.int8)  # -1 for a negative token, else 1
    return _compact(values), _line_counts(buf, starts, partial)


def _token_bounds(cls: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and ends (exclusive) of the tokens: the runs of bytes not white space."""
    text = np.zeros(cls.size + 2, dtype=bool)
    np.not_equal(cls, 0, out=text[1:-1])
    edges = np.flatnonzero(text[1:] != text[:-1]).reshape(-1, 2)
    return edges[:, 0].copy(), edges[:, 1].copy()


def _check_shapes(cls: np.ndarray, starts: np.ndarray, negative: np.ndarray,
                  first: np.ndarray, width: np.ndarray) -> None:
    """Raise :class:`_BadToken` for the first token that is not ``-?[0-9]{1,18}``.

    The ranks, in order: a lone ``-``, too many characters, a ``-`` after a
    token's first character (the smallest digit position, then the first).
    """
    if starts.size == 0:
        return
    if not width.all():
        raise _BadToken(1, int(starts[np.argmin(width)]))
    if width.max() > MAX_DIGITS:
        raise _BadToken(2, int(starts[np.argmax(width > MAX_DIGITS)]), why="integer too large")
    if np.count_nonzero(cls == 2) > np.count_nonzero(negative):
        for k in range(int(width.max())):
            at = first[width > k] + k
            inner = cls[at] == 2
            if inner.any():
                raise _BadToken(3, int(at[np.argmax(inner)]), digit=k)


def _compact(values: np.ndarray) -> np.ndarray:
    """``values`` in the smallest signed integer type that holds them."""
    if values.size:
        lo, hi = values.min(), values.max()
        for dtype in (np.int8, np.int16, np.int32):
            if np.iinfo(dtype).min <= lo and hi <= np.iinfo(dtype).max:
                return values.astype(dtype)
    return values


def _line_counts(buf: np.ndarray, starts: np.ndarray, partial: bool) -> np.ndarray:
    """Tokens on each line of ``buf`` (``partial``: the last line has no line feed)."""
    before = np.searchsorted(starts, np.flatnonzero(buf == _NEWLINE))  # tokens before each
    if partial:
        before = np.append(before, starts.size)
    return np.diff(before, prepend=0)


def _as_parsed(data: bytes, start: int, blank: re.Pattern | None) -> bytes:
    """``data`` as :func:`_int_blocks` reads it: before ``start`` and ``blank`` lines blanked,
    line feeds kept."""
    text = bytes(data[:start]).translate(_BLANK_BUT_NEWLINE) + data[start:] if start else data
    return _blanked(blank, text) if blank else text


def _blanked(pattern: re.Pattern, text: bytes) -> bytes:
    """``text`` with the matches of ``pattern`` replaced by spaces."""
    return pattern.sub(lambda m: b" " * len(m.group(0)), text)


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


def _first_where(block: _IntBlock, mask: np.ndarray) -> tuple[_IntBlock, int] | None:
    """``(block, i)`` for the first token ``i`` where ``mask`` holds; None if none."""
    return (block, int(np.argmax(mask))) if mask.any() else None


def _raise_first(path: Any, blocks: list[_IntBlock], test: Callable, why: str) -> None:
    """InputError naming the first token whose value passes ``test`` (``why`` formats it)."""
    for block in blocks:
        found = _first_where(block, test(block.values))
        if found:
            _raise_at(path, *found, why)


def _raise_at(path: Any, block: _IntBlock, i: int, why: str) -> None:
    """InputError naming the line of token ``i`` of ``block`` (``why`` formats its value)."""
    raise InputError(f"{path}: line {block.line(i)}: {why.format(block.values[i])}")


def _ids(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of the arrays ``parts``, ascending, and the index of every
    value among them (int32, the parts concatenated).  Empties ``parts``."""
    if not any(p.size for p in parts):
        return np.zeros(0, dtype=np.int64), _joined(parts, np.asarray)
    lo = min(int(p.min()) for p in parts if p.size)
    hi = max(int(p.max()) for p in parts if p.size)
    if hi - lo < max(sum(p.size for p in parts), 1 << 16):  # a lookup table is small
        seen = np.zeros(hi - lo + 1, dtype=bool)
        for p in parts:
            seen[np.subtract(p, lo, dtype=np.int64)] = True
        index = np.cumsum(seen, dtype=np.int32) - 1
        return (np.flatnonzero(seen) + lo,
                _joined(parts, lambda p: index[np.subtract(p, lo, dtype=np.int64)]))
    uniq = sorted_unique(np.concatenate([sorted_unique(p) for p in parts]))
    return uniq, _joined(parts, lambda p: np.searchsorted(uniq, p))


def _joined(parts: list[np.ndarray], convert: Callable) -> np.ndarray:
    """``convert`` of each part, concatenated as int32; empties ``parts`` as it goes."""
    out = np.empty(sum(p.size for p in parts), dtype=np.int32)
    at = 0
    while parts:
        part = parts.pop(0)
        out[at:at + part.size] = convert(part)
        at += part.size
    return out


def _sequence_db(ids: np.ndarray, counts: list[np.ndarray], labels: Iterable[int], source: dict,
                 names: list | None = None, public: bool = False) -> SequenceDB:
    """A SequenceDB of ``ids`` (into ``labels``, integers written as strings), ``counts``
    items per sequence (one array per block)."""
    offsets = np.zeros(sum(c.size for c in counts) + 1, dtype=np.int64)
    np.concatenate(counts, out=offsets[1:])
    np.cumsum(offsets, out=offsets)
    vocab = Vocabulary([str(v) for v in labels], names=names, public=public)
    return SequenceDB(ids, offsets, vocab, source=source)


# --------------------------------------------------------------- UCI .seq
SEQ_MARK = b"% Sequences:"
#: A header line dpgpu writes when the categories were taken from the data
#: (a ``.seq`` made from another format): they are then not a public vocabulary.
SEQ_DATA_VOCABULARY = "% dpgpu: categories taken from the data, not a public vocabulary"
_LINE_END = re.compile(rb"\r\n|\r|\n")


def looks_like_seq(head: bytes) -> bool:
    """True for the UCI ``.seq`` header (MSNBC).

    Parameters
    ----------
    head : bytes
        The start of a file.

    Returns
    -------
    bool
        Whether, after leading white space, it opens with
        ``% Different categories``.
    """
    return head.lstrip().startswith(b"% Different categories")


def read_seq(path: Any, data: bytes) -> SequenceDB:
    """Read a UCI ``.seq`` file (header naming categories, then lines of 1-based ids).

    Item labels are the numbers as written (``"1"`` .. ``"K"``); the header's
    category names become ``vocab.names``.  All K declared categories are in
    the vocabulary, occurring or not (the item universe is public, unless
    the header holds :data:`SEQ_DATA_VOCABULARY`).

    Parameters
    ----------
    path : str or path-like
        The file, named in ``source`` and in errors.
    data : bytes
        Its contents, decompressed.

    Returns
    -------
    SequenceDB

    Raises
    ------
    InputError
        No ``.seq`` header, a header without categories, a token that is
        not an integer, or a category the header does not declare.
    """
    names, body_start, public = seq_header(path, data)
    return read_seq_body(path, data, body_start, names, public)


def seq_header(path: Any, data: bytes) -> tuple[list[str], int, bool]:
    """The category names of a UCI ``.seq`` header, the offset where the sequences start,
    and whether the categories are a public vocabulary.

    ``data`` must hold the whole header (the ``% Sequences:`` line and the
    blank line after it).

    Parameters
    ----------
    path : str or path-like
        The file, named in errors.
    data : bytes
        The file's contents, or a head of them holding the header.

    Returns
    -------
    names : list of str
        The category names, in order (category ``i`` is ``names[i - 1]``).
    body_start : int
        The byte offset of the first sequence line.
    public : bool
        False when the header holds :data:`SEQ_DATA_VOCABULARY`.

    Raises
    ------
    InputError
        No ``% Different categories`` header or ``% Sequences:`` line, a
        header that is not text, or one that names no categories.
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
    line_end = _LINE_END.search(data, mark)
    body_start = line_end.end() if line_end else len(data)
    blank = _LINE_END.match(data, body_start)  # the blank line after "% Sequences:"
    if blank:
        body_start = blank.end()
    public = not any(line.strip() == SEQ_DATA_VOCABULARY for line in header)
    return names, body_start, public


def read_seq_body(path: Any, data: bytes, body_start: int, names: list[str],
                  public: bool = True) -> SequenceDB:
    """The sequences of ``data[body_start:]``, one line each, categories ``1 .. len(names)``.

    Lines are numbered from the start of ``data`` in messages.

    Parameters
    ----------
    path : str or path-like
        The file, named in ``source`` and in errors.
    data : bytes
        The file's contents.
    body_start : int
        Where the sequences start (:func:`seq_header`).
    names : list of str
        The header's category names: the vocabulary's ``names``.
    public : bool
        Whether the categories are a public vocabulary.

    Returns
    -------
    SequenceDB
        Items labelled ``"1"`` .. ``str(len(names))`` (ids one less), every
        category in the vocabulary.

    Raises
    ------
    InputError
        A token that is not an integer, or a category outside
        ``1 .. len(names)``.
    """
    k = len(names)
    values, counts, undeclared = [], [], None
    for block in _int_blocks(path, unix_line_ends(data), "seq", body_start):
        if undeclared is None:
            undeclared = _first_where(block, (block.values < 1) | (block.values > k))
        values.append(block.values)
        counts.append(block.counts)
    if undeclared:
        _raise_at(path, *undeclared, f"category {{}} is not declared in the header (1..{k})")
    ids = _joined(values, lambda v: np.subtract(v, 1, dtype=np.int32))
    source = {"path": str(path), "format": "seq"}
    return _sequence_db(ids, counts, range(1, k + 1), source, names, public)


# ------------------------------------------------------------------- SPMF
_SPMF_META = re.compile(rb"(?:^|(?<=\r))[ \t]*[#%@][^\r\n]*", re.MULTILINE)
_SPMF_ITEM = re.compile(r"^@ITEM=(-?\d+)=(.*)$")
#: The metadata SPMF opens a file with when its items were text.
_SPMF_OPENING = re.compile(rb"\s*@(?:CONVERTED_FROM_TEXT|ITEM=)")
_INT_BYTES = re.compile(rb"-?[0-9]+")


def looks_like_spmf(head: bytes) -> bool:
    """True when the text uses SPMF's ``-2`` sequence terminator.

    Parameters
    ----------
    head : bytes
        Text (a file's start, its metadata lines blanked).

    Returns
    -------
    bool
        Whether a ``-2`` token, standing apart from its neighbours by white
        space or the text's ends, occurs.
    """
    return re.search(rb"(^|\s)-2(\s|$)", head) is not None


def looks_like_spmf_file(head: bytes) -> bool:
    """Whether a file starting with ``head`` is SPMF text.

    True when it opens with the metadata SPMF writes for text items
    (``@CONVERTED_FROM_TEXT``, ``@ITEM=``), or when a ``-2`` terminator
    occurs and the first line of data ends with ``-2`` or holds only
    integers.  A line of words or an event log's header row that merely
    contains a ``-2`` is not SPMF.

    Parameters
    ----------
    head : bytes
        The start of the file.

    Returns
    -------
    bool
    """
    if _SPMF_OPENING.match(head):
        return True
    body = spmf_without_metadata(unix_line_ends(head))
    first = next((line.split() for line in body.split(b"\n") if line.strip()), [])
    return (first[-1:] == [b"-2"] or all(_INT_BYTES.fullmatch(t) for t in first)) \
        and looks_like_spmf(body)


def read_spmf(path: Any, data: bytes, *, stripped: bool | None = None,
              itemsets: list | None = None) -> SequenceDB:
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
    itemsets : list, optional
        When given, the warning of itemsets of several items is not logged:
        their number and the first one's line (or None) are appended to it
        instead, for a part of a file, whose reader gives the whole file's
        warning (:func:`warn_of_itemsets`).

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
    items, counts, names, stripped = _spmf_sequences(path, unix_line_ends(data), stripped,
                                                     itemsets)
    source = {"path": str(path), "format": "spmf"}
    if stripped:
        source["stripped"] = True
    if names:
        source["names"] = names
    labels, ids = _ids(items)
    return _sequence_db(ids, counts, labels.tolist(), source)


def _spmf_sequences(path: Any, data: bytes, stripped: bool | None, itemsets: list | None
                    ) -> tuple[list[np.ndarray], list[np.ndarray], dict[str, str], bool]:
    """The items of an SPMF text and the number in each sequence (one array of each per
    block), the ``@ITEM`` names, and whether the text is the stripped variant.  Itemsets
    of several items are warned of, or appended to ``itemsets`` (:func:`read_spmf`)."""
    blocks = list(_int_blocks(path, data, "spmf", blank=_SPMF_META))
    names: dict[str, str] = {}
    for m in (m for block in blocks for m in block.blanked):
        item = _SPMF_ITEM.match(m.group(0).strip().decode("utf-8", "replace"))
        if item and names.setdefault(item.group(1), item.group(2)) != item.group(2):
            line = data.count(b"\n", 0, m.start()) + 1
            raise InputError(f"{path}: line {line}: item "
                             f"{item.group(1)} is named again ({item.group(2)!r}, after "
                             f"{names[item.group(1)]!r}); an @ITEM line names an item once")
    if stripped is None:
        stripped = not any((block.values == -2).any() for block in blocks)
    if stripped:
        _raise_first(path, blocks, lambda v: v < 0, "negative item {}")
        return ([block.values for block in blocks],
                [np.delete(block.counts, _lines_of(data, block)) for block in blocks],
                names, True)
    _raise_first(path, blocks, lambda v: (v < 0) & (v != -1) & (v != -2),
                 "negative item {} (SPMF uses only -1 and -2 as separators)")
    for block in blocks:
        _check_one_sequence_per_line(path, block)
    found = _itemsets(blocks)
    if itemsets is None:
        warn_of_itemsets(path, *found)
    else:
        itemsets.append(found)
    return ([block.values[block.values >= 0] for block in blocks],
            [np.diff(np.cumsum(block.values >= 0)[block.values == -2], prepend=0)
             for block in blocks], names, False)


def _itemsets(blocks: list[_IntBlock]) -> tuple[int, int | None]:
    """The number of itemsets of several items, and the line of the first (None: none)."""
    total, first = 0, None
    for block in blocks:
        item = block.values >= 0
        follows = item[1:] & item[:-1]  # an item right after an item: one itemset
        starts = np.flatnonzero(follows & ~np.concatenate([[False], follows[:-1]]))
        if starts.size and first is None:
            first = block.line(int(starts[0]))
        total += starts.size
    return total, first


def warn_of_itemsets(path: Any, total: int, first: int | None) -> None:
    """Warn, with their number and the first one's line, of itemsets of several items.

    They are read flattened, which changes what a pattern means: items of
    one itemset happen together, while a sequence's positions follow one
    another.

    Parameters
    ----------
    path : path-like
        The file, for the message.
    total : int
        The itemsets of several items (nothing is said for 0).
    first : int or None
        The first one's line in the file.
    """
    if total:
        log.warning("%s: %d %s more than one item (the first on line %d); dpgpu's "
                    "sequences hold one item per position, so each is read as its items one "
                    "after another, in the order written", path, total,
                    "itemset holds" if total == 1 else "itemsets hold", first)


def _lines_of(data: bytes, block: _IntBlock) -> list[int]:
    """The lines of ``block`` (indices in it) that were read as blank."""
    out, line, at = [], 0, block.lo
    for m in block.blanked:  # count on from the previous one: linear in the block
        line += data.count(b"\n", at, m.start())
        at = m.start()
        out.append(line)
    return out


def _check_one_sequence_per_line(path: Any, block: _IntBlock) -> None:
    """InputError unless every line with tokens holds one ``-2``, as its last token.

    SPMF holds one sequence per line: a line without its ``-2`` must not run
    on into the next line's sequence, nor two sequences share a line.
    """
    values, counts = block.values, block.counts
    last = np.cumsum(counts)[counts > 0] - 1  # the last token of each line with tokens
    ends = values == -2
    if np.count_nonzero(ends) == last.size and ends[last].all():
        return
    last_on_line = np.zeros(values.size, dtype=bool)
    last_on_line[last] = True
    i = int(np.argmax(last_on_line != ends))
    why = "sequence not terminated by -2" if last_on_line[i] else "-2 before the end of the line"
    raise InputError(f"{path}: line {block.line(i)}: {why} (SPMF holds one sequence per "
                     "line, each ending with -2)")


def spmf_without_metadata(data: bytes) -> bytes:
    """``data`` with its SPMF metadata lines (``#``, ``%``, ``@``) blanked, line ends kept.

    Parameters
    ----------
    data : bytes
        SPMF text.

    Returns
    -------
    bytes
        Of the same length (each metadata character replaced by a space, so
        offsets and line numbers are kept); ``data`` itself when it has no
        metadata.
    """
    return _blanked(_SPMF_META, data) if _SPMF_META.search(data) else data


# ----------------------------------------------------------------- lines
#: White space, as ``str.isspace`` has it (``tokens="chars"`` leaves it out).
_SPACE = re.compile(r"\s+")
#: What ``read_lines`` takes as items (its ``tokens`` option).
LINE_TOKENS = ("auto", "int", "str", "chars")
#: An integer written as it prints (``str(int(t)) == t``) that the integer reader takes
#: (at most :data:`MAX_DIGITS` digits): no leading zero, no ``-0``, no ``+``, no white
#: space, no ``_``, ASCII digits only.
CANONICAL_INT = re.compile(rf"0|-?[1-9][0-9]{{0,{MAX_DIGITS - 1}}}")


def is_canonical_int(token: str) -> bool:
    """Whether ``token`` is an integer written as it prints (:data:`CANONICAL_INT`).

    ``tokens="auto"`` reads a ``lines`` or ``column`` file as integers only
    when every token is one.  Reading such a token as a number does not
    change its text, so whether a file is read as integers or as text
    changes only the order of the ids and never which tokens are the same
    item: how one record is read never depends on the other records (a
    record with ``x`` or ``07`` added to a file of ``7`` records leaves every
    ``7`` the item ``"7"``).

    Parameters
    ----------
    token : str

    Returns
    -------
    bool
        True for ``"0"``, ``"7"``, ``"-12"``; False for ``"07"``, ``"-0"``,
        ``"+7"``, ``" 7"``, ``"1_0"``, ``"٣"`` and for integers of more than
        :data:`MAX_DIGITS` digits.
    """
    return CANONICAL_INT.fullmatch(token) is not None


def read_lines(path: Any, data: bytes, *, tokens: str = "auto") -> SequenceDB:
    """Read one sequence per line, items separated by white space.

    A blank line is an empty sequence.

    Parameters
    ----------
    path : str or path-like
        The file, named in ``source`` and in errors.
    data : bytes
        Its contents, decompressed.
    tokens : {"auto", "int", "str", "chars"}
        ``"int"`` requires integer items and labels them as they print
        (``007`` and ``7`` are both the item ``"7"``, ``-0`` is ``"0"``: the
        user asked for numbers), ``"str"`` takes any non-blank strings as
        written, ``"auto"`` uses ``"int"`` when every token is an integer
        written as it prints (:func:`is_canonical_int`), else ``"str"``: a
        token such as ``07`` makes the file text, so that no token's label
        ever depends on the other tokens of the file;
        ``"chars"`` makes every character but white space an item (strings
        of one-letter symbols: DNA, proteins).

    Returns
    -------
    SequenceDB
        In a vocabulary of the items that occur (not public), sorted
        (integers by value, else as :func:`~dpgpu.data.sequencedb.sort_labels`
        sorts them); ``source["tokens"]`` says how the items were read
        (``"int"``, ``"str"`` or ``"chars"``).  With ``"auto"`` every label
        is the token as written either way.

    Raises
    ------
    InvalidParameter
        ``tokens`` not one of :data:`LINE_TOKENS`.
    InputError
        ``data`` is not text, or (``tokens="int"``) a token is not an integer.
    """
    if tokens not in LINE_TOKENS:
        raise InvalidParameter(f"tokens: expected one of {', '.join(LINE_TOKENS)}, got "
                               f"{tokens!r}")
    source = {"path": str(path), "format": "lines"}
    data = unix_line_ends(data)
    if tokens in ("auto", "int"):
        values, counts = [], []
        try:
            # auto: only canonical integers, so reading as numbers keeps every token's text
            for block in _int_blocks(path, data, "lines", canonical=tokens == "auto"):
                values.append(block.values)
                counts.append(block.counts)
        except InputError:
            if tokens == "int":
                raise
        else:
            source["tokens"] = "int"
            labels, ids = _ids(values)
            return _sequence_db(ids, counts, labels.tolist(), source)
    source["tokens"] = "chars" if tokens == "chars" else "str"
    split = (lambda line: list(_SPACE.sub("", line))) if tokens == "chars" else str.split
    table = numbering()  # word -> code, in order of first appearance
    codes, counts = [], []
    for lines in _text_line_blocks(decode_text(path, data)):
        rows = [split(line) for line in lines]
        counts.append(np.fromiter(map(len, rows), dtype=np.int64, count=len(rows)))
        codes.append(encode_values(list(chain.from_iterable(rows)), table))
    labels = sort_labels(table)
    position = {label: i for i, label in enumerate(labels)}
    remap = np.fromiter((position[word] for word in table), dtype=np.int32, count=len(table))
    return _sequence_db(_joined(codes, remap.take), counts or [np.zeros(0, np.int64)], labels,
                        source)


def _text_line_blocks(text: str) -> Iterator[list[str]]:
    """The lines of ``text`` (a final line feed ends the last line, it does not start
    an empty one), a list of whole lines of about :data:`BLOCK_BYTES` characters at a time."""
    lo = 0
    while lo < len(text):
        hi = text.find("\n", min(lo + BLOCK_BYTES, len(text) - 1))
        hi = len(text) if hi < 0 else hi + 1
        yield text[lo:hi - 1 if text[hi - 1] == "\n" else hi].split("\n")
        lo = hi
