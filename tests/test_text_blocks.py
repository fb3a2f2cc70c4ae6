"""Integer text readers parse a block of lines at a time: the block edges change nothing.

The readers are checked against a plain Python parser (``str.split`` and
``int``) with blocks of a few bytes, and, on random malformed text, against
themselves reading the whole text as one block: results and error
messages must not depend on where the blocks end.
"""

from __future__ import annotations

import re
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpgpu import InputError
from dpgpu.data import text

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
HEADER = b"% Different categories found in input file:\n\na b c d e f g\n\n% Sequences:\n\n"
K = 7  # categories HEADER declares
WHOLE = 1 << 30  # a block size that reads any test text as one block


def rows(db):
    """The sequences of ``db`` as lists of labels."""
    return [list(s) for s in db]


def outcome(read, *args, **kwargs):
    """What ``read`` makes of its arguments: the database's contents, or the error message."""
    try:
        db = read(*args, **kwargs)
    except InputError as exc:
        return str(exc)
    return (db.items.tolist(), db.offsets.tolist(), db.vocab.labels, db.vocab.names,
            db.vocab.public, db.source)


def with_blocks(size, read, *args, **kwargs):
    """:func:`outcome` with blocks of ``size`` bytes."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(text, "BLOCK_BYTES", size)
        return outcome(read, *args, **kwargs)


# ------------------------------------------------------ reference parsers
def reference_lines(data: bytes) -> list[list[int]]:
    lines = data.decode().split("\n")
    if lines[-1] == "":
        lines.pop()
    return [[int(t) for t in line.split()] for line in lines]


def is_metadata(line: str) -> bool:
    return re.match(r"[ \t]*[#%@]", line) is not None


def reference_spmf(data: bytes, stripped: bool) -> tuple[list[list[int]], dict]:
    """Sequences and ``@ITEM`` names, one line at a time."""
    sequences, names = [], {}
    lines = data.decode().split("\n")
    if lines[-1] == "":
        lines.pop()
    for line in lines:
        if is_metadata(line):
            item = re.match(r"^@ITEM=(-?\d+)=(.*)$", line.strip())
            if item:
                names[item.group(1)] = item.group(2)
            continue
        tokens = [int(t) for t in line.split()]
        if stripped:
            sequences.append(tokens)
        elif tokens:
            assert tokens[-1] == -2 and tokens.count(-2) == 1
            sequences.append([t for t in tokens if t >= 0])
    return sequences, names


# ------------------------------------------------------------ rendering
items = st.one_of(st.integers(0, 12), st.integers(0, 40_000),
                  st.integers(0, 10 ** 18 - 1))
separators = st.sampled_from([" ", "  ", "\t", " \t "])
line_ends = st.sampled_from(["\n", "\r\n", " \n", "\t\r\n"])


@st.composite
def lines_of(draw, tokens):
    """Lines of ``tokens``: random separators and line ends, maybe no last line feed."""
    out = [draw(separators).join(str(t) for t in row) + draw(line_ends)
           for row in draw(st.lists(st.lists(tokens, max_size=7), max_size=12))]
    if out and draw(st.booleans()):
        out[-1] = out[-1].rstrip("\r\n")
    return "".join(out).encode()


# -------------------------------------------------------- against Python
@SETTINGS
@given(lines_of(st.one_of(items, st.integers(-10 ** 18 + 1, -1))), st.integers(1, 24))
def test_lines_match_a_plain_python_parser(data, block):
    expected = reference_lines(data)
    for tokens in ("int", "auto"):
        got = with_blocks(block, text.read_lines, "f", data, tokens=tokens)
        assert not isinstance(got, str), got
        ids, offsets, labels, *_ = got
        assert labels == [str(v) for v in sorted({v for row in expected for v in row})]
        flat = [int(labels[i]) for i in ids]
        assert [flat[a:b] for a, b in zip(offsets, offsets[1:])] == expected


def spmf_row(itemsets):
    return " ".join(" ".join(map(str, s)) + " -1" for s in itemsets) + " -2"


@st.composite
def spmf_texts(draw, stripped):
    """SPMF text with metadata and blank lines between the sequences."""
    if stripped:
        lines = draw(lines_of(items)).decode().split("\n")
    else:
        sequences = draw(st.lists(st.lists(st.lists(items, min_size=1, max_size=3),
                                           max_size=4), max_size=10))
        lines = [spmf_row(s) + draw(st.sampled_from(["", "\r", " "])) for s in sequences]
    extra = st.sampled_from(["# comment", "% note -2", "@CONVERTED_FROM_TEXT",
                             "  @ITEM=3=three", "@ITEM=12=twelve\r", "\t#", ""])
    for _ in range(draw(st.integers(0, 4))):
        lines.insert(draw(st.integers(0, len(lines))), draw(extra))
    return "\n".join(lines).encode() + draw(st.sampled_from([b"", b"\n"]))


@SETTINGS
@given(st.booleans(), st.data(), st.integers(1, 24))
def test_spmf_matches_a_plain_python_parser(stripped, data, block):
    raw = data.draw(spmf_texts(stripped))
    told = data.draw(st.sampled_from([stripped, None]))
    if told is None:  # a text with no -2 at all is the stripped variant
        stripped = not any(b"-2" in line for line in raw.split(b"\n")
                           if not is_metadata(line.decode()))
    expected, names = reference_spmf(raw, stripped)
    got = with_blocks(block, text.read_spmf, "f", raw, stripped=told)
    assert not isinstance(got, str), got
    ids, offsets, labels, _, public, source = got
    flat = [int(labels[i]) for i in ids]
    assert [flat[a:b] for a, b in zip(offsets, offsets[1:])] == expected
    assert source.get("names", {}) == names and not public
    assert source.get("stripped", False) == stripped


@SETTINGS
@given(lines_of(st.integers(1, K)), st.integers(1, 24))
def test_seq_matches_a_plain_python_parser(body, block):
    expected = reference_lines(body)
    data = HEADER + body
    got = with_blocks(block, text.read_seq, "f", data)
    assert not isinstance(got, str), got
    ids, offsets, labels, names, public, _ = got
    assert labels == [str(i) for i in range(1, K + 1)] and names == list("abcdefg") and public
    assert [[i + 1 for i in ids[a:b]] for a, b in zip(offsets, offsets[1:])] == expected
    # as the distributed loader reads a part of a file: the header, then a byte range
    part = with_blocks(block, text.read_seq_body, "f", data, len(HEADER), list("abcdefg"))
    assert part == got


# ---------------------------------------------------- block size itself
PIECES = [b"1", b"7", b"12", b"-1", b"-2", b"-02", b"-", b"--", b"1-", b"3-4",
          b"1234567890123456789", b"-123456789012345678", b" ", b" ", b"\t", b"\r", b"\n",
          b"\n", b"\r\n", b"x", b"\xff", b"\x00", b"# m\n", b"@ITEM=5=five\n", b"0", b"99"]


@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=80), st.integers(1, 16))
def test_results_and_errors_do_not_depend_on_the_block_size(pieces, block):
    """Errors included: the one reported is the one a scan of the whole text finds first."""
    data = b"".join(pieces)
    calls = [(text.read_seq, "f", HEADER + data), (text.read_lines, "f", data)]
    calls += [(text.read_seq_body, "f", HEADER + data, len(HEADER) - 1, list("abcdefg"))]
    for read, *args in calls:
        assert with_blocks(block, read, *args) == with_blocks(WHOLE, read, *args)
    for stripped in (None, True, False):
        assert with_blocks(block, text.read_spmf, "f", data, stripped=stripped) == \
            with_blocks(WHOLE, text.read_spmf, "f", data, stripped=stripped)
    for tokens in ("int", "auto"):
        assert with_blocks(block, text.read_lines, "f", data, tokens=tokens) == \
            with_blocks(WHOLE, text.read_lines, "f", data, tokens=tokens)


# ----------------------------------------------- errors at block edges
ROW = "1 2 3\n"  # 6 bytes: with blocks of 6 or 12 bytes, every block starts a line


@pytest.mark.parametrize("block", [6, 12, 5, 7])
@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("bad, message", [
    ("x", "non-numeric token 'x' in the integer format 'lines'"),
    ("-", "non-numeric token '-' in the integer format 'lines'"),
    ("4-4", "non-numeric token '4-4' in the integer format 'lines'"),
    ("1234567890123456789", "integer too large"),
])
def test_a_bad_token_on_a_block_edge_names_its_line(monkeypatch, block, where, bad, message):
    monkeypatch.setattr(text, "BLOCK_BYTES", block)
    for line in range(1, 7):
        body = [ROW] * 6
        body[line - 1] = f"{bad} 2 3\n" if where == "first" else f"1 2 {bad}\n"
        with pytest.raises(InputError) as exc:
            text.read_lines("f", "".join(body).encode(), tokens="int")
        assert str(exc.value) == f"f: line {line}: {message}"


@pytest.mark.parametrize("block", [6, 12, 7])
def test_format_errors_on_a_block_edge_name_their_line(monkeypatch, block):
    monkeypatch.setattr(text, "BLOCK_BYTES", block)
    header_lines = HEADER.count(b"\n")
    for line in range(1, 7):
        body = [ROW] * 6
        body[line - 1] = "1 2 9\n"
        with pytest.raises(InputError, match=rf"^f: line {header_lines + line}: category 9 "
                                             r"is not declared in the header \(1\.\.7\)$"):
            text.read_seq("f", HEADER + "".join(body).encode())
        body[line - 1] = "-5 2 3\n"
        with pytest.raises(InputError, match=rf"^f: line {line}: negative item -5$"):
            text.read_spmf("f", "".join(body).encode())
        body = ["1 -1 -2\n"] * 6
        body[line - 1] = "1 -1 2\n"
        with pytest.raises(InputError, match=rf"^f: line {line}: sequence not terminated"):
            text.read_spmf("f", "".join(body).encode())


def test_the_first_problem_in_the_order_of_a_whole_scan_is_reported(monkeypatch):
    monkeypatch.setattr(text, "BLOCK_BYTES", 8)
    early, late = "1 2 3\n" * 3, "\n4 5 6\n"
    cases = [  # (text, line, what): an earlier line loses to a problem reported first
        (f"7-7\n{early}x{late}", 5, "non-numeric token 'x'"),
        (f"7-7\n{early}-{late}", 5, "non-numeric token '-'"),
        (f"7-7\n{early}12345678901234567890{late}", 5, "integer too large"),
        (f"1 77-\n{early}7-7{late}", 5, "non-numeric token '7-7'"),  # '-' as 2nd, 3rd digit
        (f"-- 1\n{early}7-7{late}", 1, "non-numeric token '--'"),
    ]
    for body, line, what in cases:
        with pytest.raises(InputError, match=rf"^f: line {line}: {what}"):
            text.read_lines("f", body.encode(), tokens="int")
    with pytest.raises(InputError, match=r"^f: line 11: non-numeric token '4-4'"):
        text.read_seq("f", HEADER + b"1 9\n" + early.encode() + b"4-4\n")
    with pytest.raises(InputError, match=r"^f: line 5: non-numeric token 'x'"):
        text.read_spmf("f", b"1 -5 -2\n" + early.encode() + b"x\n")
    with pytest.raises(InputError, match=r"^f: line 5: not UTF-8 text"):
        text.read_spmf("f", b"1 - -2\n" + early.encode() + b"\xff\n")


# -------------------------------------------------- line ends and edges
@pytest.mark.parametrize("block", [1, 3, WHOLE])
def test_crlf_no_final_newline_and_empty_texts(monkeypatch, block):
    monkeypatch.setattr(text, "BLOCK_BYTES", block)

    def lines(data):
        return rows(text.read_lines("f", data, tokens="int"))

    assert lines(b"") == []
    assert lines(b"\n") == [[]]
    assert lines(b"1 2") == [["1", "2"]]
    assert lines(b"1\r\n\r\n-3 2\r\n") == [["1"], [], ["-3", "2"]]
    assert lines(b"5\n\n") == [["5"], []]
    assert rows(text.read_spmf("f", b"1 -1 2 -1 -2\r\n\r\n3 -1 -2")) == [["1", "2"], ["3"]]
    assert rows(text.read_spmf("f", b"")) == []
    assert rows(text.read_spmf("f", b"@ITEM=1=a\r\n1 2\r\n\r\n3")) == [["1", "2"], [], ["3"]]
    assert rows(text.read_seq("f", HEADER + b"1 2\r\n7")) == [["1", "2"], ["7"]]
    assert rows(text.read_seq("f", HEADER)) == []


def test_a_line_longer_than_a_block(monkeypatch):
    monkeypatch.setattr(text, "BLOCK_BYTES", 4)
    row = " ".join(str(i) for i in range(300))
    db = text.read_lines("f", f"7\n{row}\n8".encode())
    assert rows(db) == [["7"], [str(i) for i in range(300)], ["8"]]


def test_values_of_every_width_in_one_file(monkeypatch):
    """Blocks whose values need 8, 16, 32 and 64 bits make one vocabulary."""
    monkeypatch.setattr(text, "BLOCK_BYTES", 8)
    values = [5, -3, 300, -40000, 3_000_000_000, -(10 ** 18) + 1, 10 ** 18 - 1, 5]
    db = text.read_lines("f", "".join(f"{v}\n" for v in values).encode())
    assert [int(s[0]) for s in db] == values
    assert db.vocab.labels == [str(v) for v in sorted(set(values))]


def test_a_non_integer_in_a_late_block_makes_auto_read_strings(monkeypatch):
    monkeypatch.setattr(text, "BLOCK_BYTES", 4)
    db = text.read_lines("f", b"1 2\n3 4\n5 -\n")
    assert db.source["tokens"] == "str" and rows(db)[2] == ["5", "-"]


@pytest.mark.parametrize("fmt", ["lines", "seq", "spmf"])
def test_memory_stays_a_few_bytes_per_token(monkeypatch, fmt):
    """Each block keeps compact results: the peak is far below the old whole-file parse
    (about 70 bytes a token)."""
    monkeypatch.setattr(text, "BLOCK_BYTES", 1 << 16)
    rng = np.random.default_rng(0)
    n = 1_000_000
    tokens = rng.integers(1, K + 1, n).astype(str).astype(object)
    gaps = np.where(rng.random(n) < 0.15, "\n", " ").astype(object)
    if fmt == "spmf":
        tokens = tokens + " -1"
        gaps = np.where(gaps == "\n", " -2\n", " ").astype(object)
        gaps[-1] = " -2\n"
    body = "".join((tokens + gaps).tolist()).encode()
    data = HEADER + body if fmt == "seq" else body
    read = {"lines": text.read_lines, "seq": text.read_seq, "spmf": text.read_spmf}[fmt]
    tracemalloc.start()
    try:
        db = read("f", data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert db.items.size == n
    assert peak < 16 * n


# ------------------------------------------------------ lines of words
WORDS = st.lists(st.sampled_from(["a", "b", "é", "10", "9", "01", "x-y", "-", "\u00df"]),
                 max_size=6)


@SETTINGS
@given(st.lists(st.tuples(WORDS, st.sampled_from([" ", "\t", "  ", " \v"])), max_size=12),
       st.booleans(), st.integers(1, 24))
def test_lines_of_words_equal_plain_split_with_tiny_blocks(lines, final_newline, block):
    data = "\n".join(sep.join(words) for words, sep in lines)
    if final_newline and lines:
        data += "\n"
    want = [line.split() for line in data.split("\n")]
    if want and data.endswith("\n") or data == "":
        want.pop()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(text, "BLOCK_BYTES", block)
        db = text.read_lines("w.txt", data.encode(), tokens="str")
    assert rows(db) == want
    labels = sorted({w for row in want for w in row}, key=lambda s: (int(s), s)) \
        if all(re.fullmatch(r"-?\d+", w) for row in want for w in row) \
        else sorted({w for row in want for w in row})
    assert db.vocab.labels == labels
    assert db.source["tokens"] == "str"
