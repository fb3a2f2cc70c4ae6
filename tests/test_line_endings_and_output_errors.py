"""Line ends of every kind, text that is not UTF-8, and outputs the file system refuses.

* A lone carriage return (old Mac OS, Excel's "CSV (Macintosh)") ends a line
  in the ``lines``, ``seq`` and ``spmf`` formats, as a line feed or a CRLF
  does, in mixed files too, wherever the blocks end; errors name the right
  line.
* UTF-16 text is named as such; other text that is not UTF-8 is reported
  with its line, byte and column; a NUL byte is still binary data.
* An output folder that cannot be written, or a disk that fills up, is a
  one-line InputError naming the output: no traceback, no temporary file or
  staging directory left, an existing output untouched.
"""

from __future__ import annotations

import errno
import gzip
import io
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpgpu
from dpgpu import InputError
from dpgpu.data import text
from dpgpu.data.io import atomic_output, decode_text, line_number, unix_line_ends
from dpgpu.release import ReleaseWriter

WHOLE = 1 << 30  # a block size that reads any test text as one block
SEQ_HEADER = b"% Different categories found in input file:\n\na b c\n\n% Sequences:\n\n"


def rows(db):
    """The sequences of ``db`` as lists of labels."""
    return [list(s) for s in db]


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def reference_rows(data: bytes, split=str.split):
    """The lines of ``data`` as Python's universal newlines split them, each ``split``."""
    lines = re.split(r"\r\n|\r|\n", data.decode())
    if lines[-1] == "":
        lines.pop()
    return [split(line) for line in lines]


def cli(*args):
    """Run ``python -m dpgpu`` with ``args``: (exit status, stderr)."""
    done = subprocess.run([sys.executable, "-m", "dpgpu", *map(str, args)],
                          capture_output=True, text=True)
    return done.returncode, done.stderr


def one_line_error(status, err, *words):
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert all(w in lines[0] for w in words), lines[0]


# ------------------------------------------------------------- line ends
@pytest.mark.parametrize("tokens", ["auto", "int", "str", "chars"])
@pytest.mark.parametrize("block", [1, 3, WHOLE])
def test_lone_carriage_returns_end_lines(monkeypatch, tokens, block):
    monkeypatch.setattr(text, "BLOCK_BYTES", block)
    body = b"12 34\r5 6\r\r78 9\r" if tokens in ("auto", "int") else b"ab cd\ref\r\rgh i\r"
    db = text.read_lines("f", body, tokens=tokens)
    want = text.read_lines("f", body.replace(b"\r", b"\n"), tokens=tokens)
    assert rows(db) == rows(want) and len(db) == 4 and len(db[2]) == 0


def test_json_lines_end_with_lone_carriage_returns_too(tmp_path):
    """Regression: JSON lines split on line feeds only, so a CR file was one line of JSON
    with extra data after its first object."""
    body = '{"author": "a", "content": "Hello world."}\r{"author": "b", "content": "Bye."}\r'
    path = tmp_path / "cr.jsonl"
    path.write_bytes(body.encode())
    path.with_name("lf.jsonl").write_bytes(body.replace("\r", "\n").encode())
    db, want = dpgpu.load(path), dpgpu.load(path.with_name("lf.jsonl"))
    assert rows(db) == rows(want) and len(db) == 2
    assert db.users.tolist() == want.users.tolist() == [0, 1]
    bad = body.replace('"b"', "b")  # the error names the second line
    path.write_bytes(bad.encode())
    with pytest.raises(InputError, match=r"cr\.jsonl: line 2: "):
        dpgpu.load(path)


@pytest.mark.parametrize("block", [1, 2, 3, 5, WHOLE])
def test_a_crlf_is_one_line_end_wherever_the_blocks_end(monkeypatch, block):
    monkeypatch.setattr(text, "BLOCK_BYTES", block)
    data = b"1\r22\r\n3\r\n\r\n4\r5\n"  # lone CRs, CRLFs (one of them a blank line) and a LF
    assert rows(text.read_lines("f", data)) == [["1"], ["22"], ["3"], [], ["4"], ["5"]]


@settings(max_examples=100, deadline=None)
@given(lines=st.lists(st.lists(st.sampled_from(["1", "23", "-4", "x", "é"]), max_size=4),
                      min_size=1, max_size=8),
       ends=st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=8, max_size=8),
       final=st.booleans(), block=st.sampled_from([1, 2, 4, WHOLE]))
def test_mixed_line_ends_read_line_by_line(lines, ends, final, block):
    body = "".join(" ".join(line) + end for line, end in zip(lines, ends))
    data = (body if final else body[:-len(ends[len(lines) - 1])]).encode()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(text, "BLOCK_BYTES", block)
        assert rows(text.read_lines("f", data, tokens="str")) == reference_rows(data)
        assert rows(text.read_lines("f", data, tokens="chars")) == \
            reference_rows(data, lambda line: list(line.replace(" ", "")))
        if not any(t in ("x", "é") for line in lines for t in line):
            assert rows(text.read_lines("f", data, tokens="int")) == reference_rows(data)


@pytest.mark.parametrize("data, line, what", [
    (b"1 2\r3 x\r5\r", 2, "non-numeric token 'x'"),
    (b"1\r\n2\r3\n\r4 y\r\n", 5, "non-numeric token 'y'"),
    (b"1\r2\r\xff\r", 3, "not UTF-8 text"),
])
@pytest.mark.parametrize("block", [1, WHOLE])
def test_errors_name_the_line_of_a_carriage_return_file(monkeypatch, data, line, what, block):
    monkeypatch.setattr(text, "BLOCK_BYTES", block)
    with pytest.raises(InputError, match=rf"^f: line {line}: {what}"):
        text.read_lines("f", data, tokens="int")


def demo_head(lines=14):
    """The first ``lines`` lines of the bundled MSNBC ``.seq`` file (CRLF line ends)."""
    with gzip.open(dpgpu.demo_path(), "rb") as f:
        return b"".join(itertools.islice(f, lines))


@pytest.mark.parametrize("block", [1, 7, WHOLE])
def test_seq_with_carriage_returns_reads_as_with_line_feeds(tmp_path, monkeypatch, block):
    monkeypatch.setattr(text, "BLOCK_BYTES", block)
    crlf = demo_head()
    assert crlf.count(b"\r\n") == 14
    lf = crlf.replace(b"\r\n", b"\n")
    want = dpgpu.load(write(tmp_path, "lf.seq", lf))
    assert len(want) == 7
    for name, data in [("cr.seq", lf.replace(b"\n", b"\r")),
                       ("mixed.seq", lf.replace(b"\n", b"\r", 6).replace(b"\n", b"\r\n", 4))]:
        db = dpgpu.load(write(tmp_path, name, data))
        assert db.source["format"] == "seq" and rows(db) == rows(want)
        assert db.vocab.names == want.vocab.names and db.vocab.public


def test_seq_errors_name_the_line_of_a_carriage_return_file():
    data = SEQ_HEADER.replace(b"\n", b"\r") + b"1 2\r3\r\r2 4\r"
    with pytest.raises(InputError, match=r"^f: line 10: category 4 is not declared"):
        text.read_seq("f", data)
    names, body_start, _ = text.seq_header("f", data)
    assert names == ["a", "b", "c"] and data[body_start:].startswith(b"1 2\r")


def test_spmf_with_carriage_returns_reads_as_with_line_feeds(tmp_path):
    lf = b"@CONVERTED_FROM_TEXT\n@ITEM=1=one\n@ITEM=2=two\n1 -1 2 -1 -2\n# note\n2 -1 -2\n"
    want = dpgpu.load(write(tmp_path, "lf.txt", lf))
    for name, data in [("cr.txt", lf.replace(b"\n", b"\r")),
                       ("mixed.txt", lf.replace(b"\n", b"\r", 3).replace(b"\n", b"\r\n", 2))]:
        db = dpgpu.load(write(tmp_path, name, data))
        assert db.source["format"] == "spmf" and rows(db) == rows(want) == [["1", "2"], ["2"]]
        assert db.source["names"] == {"1": "one", "2": "two"}
    assert text.spmf_without_metadata(b"# a\r1 -2\r") == b"   \r1 -2\r"
    with pytest.raises(InputError, match=r"^f: line 3: sequence not terminated by -2"):
        text.read_spmf("f", b"1 -2\r# meta\r2 -1\r3 -2\r")


def test_line_numbers_count_every_kind_of_line_end():
    data = b"a\rb\r\nc\nd"
    assert [line_number(data, i) for i in range(len(data))] == [1, 1, 2, 2, 2, 3, 3, 4]
    assert unix_line_ends(data) == b"a\nb \nc\nd"
    for same in (b"a\nb", b"a\r\nb\r\n", b""):
        assert unix_line_ends(same) is same


def test_cli_reads_a_carriage_return_file(tmp_path):
    path = write(tmp_path, "cr.lines", b"a b\rc d\re f\r")
    done = subprocess.run([sys.executable, "-m", "dpgpu", "stats", str(path), "--json"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)
    assert stats["sequences"] == 3 and stats["items"] == 6


# ------------------------------------------------------ not UTF-8 text
@pytest.mark.parametrize("encoding, name", [("utf-16", "UTF-16"), ("utf-16-be", "UTF-16"),
                                            ("utf-32", "UTF-32")])
def test_utf16_text_is_named(tmp_path, encoding, name):
    data = ("\ufeff" if encoding.endswith("-be") else "") + "a b\nc d\n"
    path = write(tmp_path, "u.txt", data.encode(encoding))
    for fmt in (None, "lines"):
        with pytest.raises(InputError, match=rf"u.txt: line 1: {name} text \(byte-order mark\); "
                                             "dpgpu reads UTF-8 text: save the file as UTF-8"):
            dpgpu.load(path, fmt)


def test_latin1_text_names_its_line_byte_and_column(tmp_path):
    path = write(tmp_path, "l.txt", "a b\nc d\nnaïve café\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"l.txt: line 3: not UTF-8 text \(byte 0xef at column 3\)"
                                         "; dpgpu reads UTF-8 text: save the file as UTF-8"):
        dpgpu.load(path)
    with pytest.raises(InputError, match=r"^f: line 2: not UTF-8 text \(byte 0xe9 at column 3\)"):
        decode_text("f", b"a\rn\xc3\xa9\xe9")  # the column counts characters, not bytes
    status, err = cli("stats", path)
    one_line_error(status, err, "line 3: not UTF-8 text (byte 0xef at column 3)", "save the file")


def test_a_nul_byte_is_still_binary_data():
    with pytest.raises(InputError, match=r"^f: line 2: binary data \(NUL byte\)"):
        decode_text("f", b"a\rb\x00")


# ------------------------------------------------------ output errors
@pytest.fixture
def small(tmp_path):
    return write(tmp_path, "in.txt", b"1 2 3\n2 3\n1 3 2\n")


def refuse(*args, **kwargs):
    raise PermissionError(errno.EACCES, "Permission denied", "/somewhere/.x.part")


class FullDisk(io.RawIOBase):
    """A file on a full disk: every write fails with ENOSPC (the descriptor is closed)."""

    def __init__(self, fd, *args, **kwargs):
        self.fd = fd

    def writable(self):
        return True

    def write(self, b):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self):
        if not self.closed:
            os.close(self.fd)
        super().close()


@pytest.mark.parametrize("name", ["out.csv", "out.txt.gz"])
def test_a_folder_that_cannot_be_written_is_an_input_error(tmp_path, small, monkeypatch, name):
    db = dpgpu.load(small)
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    out = tmp_path / name
    with pytest.raises(InputError, match=rf"^{re.escape(str(out))}: cannot write here "
                                         r"\(Permission denied\)$"):
        db.save(out)
    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    with pytest.raises(InputError, match=r"rel: cannot write here \(Permission denied\)$"):
        ReleaseWriter(tmp_path / "rel")
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]


@pytest.mark.parametrize("name", ["out.txt", "out.txt.gz"])
@pytest.mark.parametrize("buffer", [1, io.DEFAULT_BUFFER_SIZE])  # fails writing, or closing
def test_a_full_disk_leaves_the_old_output_and_no_temporary_file(tmp_path, small, monkeypatch,
                                                                  name, buffer):
    db = dpgpu.load(small)
    out = write(tmp_path, name, b"old output\n")
    monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: io.BufferedWriter(FullDisk(fd), buffer))
    with pytest.raises(InputError, match=r": cannot write here \(No space left on device\)$"):
        db.save(out, force=True)
    assert out.read_bytes() == b"old output\n"
    assert sorted(os.listdir(tmp_path)) == sorted(["in.txt", name])


def test_a_full_disk_leaves_the_old_release_and_no_staging_directory(tmp_path, small,
                                                                     monkeypatch):
    db = dpgpu.load(small)
    out = tmp_path / "rel"
    dpgpu.ngram(db, 1.0, l_max=3, seed=1).save(out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def full(obj, f, **kwargs):
        f.write("{")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("dpgpu.release.dump_json", full)
    with pytest.raises(InputError, match=r"rel: cannot write here \(No space left on device\)$"):
        dpgpu.ngram(db, 2.0, l_max=3, seed=2).save(out, force=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "rel"]


def test_errors_that_are_not_the_file_systems_pass_unchanged(tmp_path):
    with pytest.raises(ZeroDivisionError), atomic_output(tmp_path / "a.txt") as f:
        f.write("x")
        1 / 0  # noqa: B018
    with pytest.raises(ZeroDivisionError), ReleaseWriter(tmp_path / "rel") as rel:
        rel.write_columns("t.tsv", ["a"], [[1]])
        1 / 0  # noqa: B018
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"),
                    reason="needs Linux's /sys, where no one may create a file")
def test_cli_exits_2_when_the_output_folder_cannot_be_written(tmp_path):
    small = write(tmp_path, "small.seq", demo_head())
    status, err = cli("convert", small, "/sys/x.csv")
    one_line_error(status, err, "/sys/x.csv: cannot write here (")
    status, err = cli("ngram", small, "--epsilon", "1", "--out", "/sys/rel")
    one_line_error(status, err, "/sys/rel: cannot write here (")


@pytest.mark.parametrize("block", [1, 2, 3, 1 << 20])
def test_partition_line_counts_count_every_kind_of_line_end(tmp_path, monkeypatch, block):
    """The Dask loader numbers a later partition's lines by counting the line ends before it;
    it counted line feeds only, so errors in CR files named the wrong line."""
    from dpgpu.scale import loading  # noqa: PLC0415

    data = b"a\r\nb\rc\nd\r\r\ne\r"
    path = tmp_path / "ends.txt"
    path.write_bytes(data)
    monkeypatch.setattr(loading, "_BLOCK", block)
    for hi in range(len(data) + 1):
        expected = len(re.findall(rb"\r\n|\r|\n", data[:hi]))  # a CR cut from its LF: one
        assert loading._count_lines(path, 0, hi) == expected, hi
