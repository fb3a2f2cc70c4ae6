"""Findings of a new-user sweep: a full disk inside a release, a broken pipe, convert's
output format from a .txt name, a quote as --delimiter, a text table read as an event log,
white space around --vocab labels."""

from __future__ import annotations

import errno
import io
import os
import re
import subprocess
import sys

import pytest

import dpgpu
from dpgpu.cli import main
from dpgpu.errors import InputError, InvalidParameter
from dpgpu.release import ReleaseWriter

ENOSPC = os.strerror(errno.ENOSPC)


def one_line_error(capsys, argv, *words):
    """Run the CLI in-process: exit status 2 and one stderr line holding ``words``."""
    status = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert all(w in lines[0] for w in words), lines[0]
    return lines[0]


# ------------------------------------------------- 1. a full disk inside a release
class FullDisk(io.RawIOBase):
    """A raw file whose every write fails as on a full disk."""

    def __init__(self, fd):
        self.fd = fd

    def writable(self):
        return True

    def write(self, b):
        raise OSError(errno.ENOSPC, ENOSPC)

    def close(self):
        if not self.closed:
            os.close(self.fd)
        super().close()


class FullTextFile(io.StringIO):
    """A text file whose every write fails as on a full disk (naming the file, as an
    OSError of open() would)."""

    def __init__(self, path):
        super().__init__()
        self.path = str(path)

    def write(self, s):
        raise OSError(errno.ENOSPC, ENOSPC, self.path)


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("1 2 3\n2 3\n1 1 2\n3\n" * 5)
    return path


def fill_the_disk(monkeypatch, which):
    """Make writing the release file ``which`` fail as on a full disk."""
    if which == "synthetic":  # written through dpgpu.data.io.atomic_output
        monkeypatch.setattr(os, "fdopen", lambda fd, *a, **k: io.BufferedWriter(FullDisk(fd)))
    else:  # ngrams.tsv: written by ReleaseWriter.write_columns
        real = open

        def full_open(path, *args, **kwargs):
            if str(path).endswith(which):
                return FullTextFile(path)
            return real(path, *args, **kwargs)

        monkeypatch.setattr("dpgpu.release.open", full_open, raising=False)


@pytest.mark.parametrize("which", ["synthetic", "ngrams.tsv"])
def test_a_full_disk_names_the_release_directory_for_every_file(tmp_path, small, monkeypatch,
                                                                which):
    """From a sweep: a full disk while writing the synthetic file named the hidden staging
    file (``.rel._003xpgw.part/synthetic.seq``), while ngrams.tsv named --out."""
    db = dpgpu.load(small)
    release = dpgpu.ngram(db, 1.0, l_max=3, seed=1)
    out = tmp_path / "rel"
    fill_the_disk(monkeypatch, which)
    with pytest.raises(InputError) as info:
        release.save(out)
    assert str(info.value) == f"{out}: cannot write here ({ENOSPC})"
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]  # no release, no staging directory


@pytest.mark.parametrize("which", ["synthetic", "ngrams.tsv"])
def test_the_cli_reports_a_full_disk_in_a_release_naming_out(tmp_path, small, monkeypatch,
                                                             capsys, which):
    out = tmp_path / "rel2"
    fill_the_disk(monkeypatch, which)
    line = one_line_error(capsys, ["ngram", small, "--epsilon", "1", "--seed", "1",
                                   "--out", out])
    assert line == f"dpgpu: error: {out}: cannot write here ({ENOSPC})"
    assert ".part" not in line


def test_the_synthetic_file_alone_fails_as_the_other_release_files(tmp_path, small,
                                                                   monkeypatch):
    db = dpgpu.load(small)
    fill_the_disk(monkeypatch, "synthetic")
    with pytest.raises(InputError, match=rf"^{re.escape(str(tmp_path / 'rel'))}: cannot write "
                                         r"here \(No space left on device\)$"):
        with ReleaseWriter(tmp_path / "rel") as rel:
            rel.write_columns("t.tsv", ["a"], [[1]])
            rel.write_synthetic(db)
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]


# ------------------------------------------------------------------ 2. broken pipe
@pytest.mark.parametrize("argv", [["completion", "bash"], ["stats", str(dpgpu.demo_path())]])
def test_a_closed_pipe_exits_141_silently(argv):
    """From a sweep: ``dpgpu evaluate ... | head -1`` exited 1, the status of an internal
    error.  Now 128 + SIGPIPE, with nothing on stderr (no "Exception ignored" at exit)."""
    proc = subprocess.Popen([sys.executable, "-m", "dpgpu", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away before the first line
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141, err
    assert err == ""


# ------------------------------------------------------- 3. convert to a .txt name
LOG = "case,activity,time\nc1,a,1\nc1,b,2\nc2,c,1\n"


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(LOG)
    return path


@pytest.mark.parametrize("name", ["rt.txt", "rt.txt.gz", "out.lines", "OUT.TXT"])
def test_convert_writes_lines_to_a_txt_name_and_says_so(tmp_path, log, capsys, name):
    """From a sweep: ``convert log.csv rt.txt`` wrote CSV (the input's format) into rt.txt,
    while ``generate gen.txt`` writes lines; the summary did not say which."""
    out = tmp_path / name
    assert main(["convert", str(log), str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote 2 sequences to {out} as lines"
    back = dpgpu.load(out)
    assert back.source["format"] == "lines" and list(back) == [("a", "b"), ("c",)]


def test_generate_and_convert_share_the_mapping(tmp_path, capsys):
    assert main(["generate", str(tmp_path / "gen.txt"), "--tokens", "200", "--seed", "1"]) == 0
    assert capsys.readouterr().out.strip().endswith("gen.txt as lines")
    assert dpgpu.load(tmp_path / "gen.txt").source["format"] == "lines"


def test_a_txt_name_takes_another_text_format_with_to(tmp_path, log, capsys):
    out = tmp_path / "out.txt"
    assert main(["convert", str(log), str(out), "--to", "spmf"]) == 0
    assert capsys.readouterr().out.strip() == f"wrote 2 sequences to {out} as spmf"
    assert dpgpu.load(out).source["format"] == "spmf"
    one_line_error(capsys, ["convert", log, tmp_path / "p.txt", "--to", "parquet"],
                   "--to: parquet does not match the extension .txt of")
    assert not (tmp_path / "p.txt").exists()


@pytest.mark.parametrize("name, why", [("out.dat", "its extension .dat names none"),
                                       ("out", "it has no extension")])
def test_an_unknown_extension_keeps_the_input_format_and_says_so(tmp_path, capsys, name, why):
    seq = tmp_path / "in.seq"
    seq.write_text("% Different categories found in input file:\n\nfront news tech\n\n\n"
                   "% Sequences:\n\n1 1 \n3 2 \n")
    out = tmp_path / name
    assert main(["convert", str(seq), str(out)]) == 0
    assert capsys.readouterr().out.strip() == (
        f"wrote 2 sequences to {out} as seq (the input's format: {why}; choose another "
        "with --to)")
    assert dpgpu.load(out).source["format"] == "seq"


def test_an_unknown_extension_and_an_input_format_dpgpu_cannot_write(tmp_path, capsys):
    posts = tmp_path / "p.jsonl"
    posts.write_text('{"author": "u", "content": "a b. c"}\n')
    one_line_error(capsys, ["convert", posts, tmp_path / "out.dat"],
                   f"output: {tmp_path / 'out.dat'}: its extension .dat names none, and dpgpu "
                   "cannot write the input's format jsonl; choose one with --to")


def test_the_format_the_summary_names_for_a_wide_table_named_csv(tmp_path, capsys):
    data = tmp_path / "w.csv"
    data.write_text("id,t1,t2\nr1,a,b\nr2,c,\n")
    out = tmp_path / "o.csv"
    assert main(["convert", str(data), str(out), "--format", "wide", "--states", "t1:t2"]) == 0
    assert capsys.readouterr().out.strip() == f"wrote 2 sequences to {out} as wide"


# --------------------------------------------------------------- 4. --delimiter '"'
@pytest.mark.parametrize("fmt, extra", [("csv", {}), ("text-csv", {}),
                                        ("wide", {"states": "t1:t2"})])
@pytest.mark.parametrize("delimiter", ['"', "\n", "\r"])
def test_a_quote_or_a_line_end_is_no_delimiter(tmp_path, log, fmt, extra, delimiter):
    with pytest.raises(InvalidParameter, match=r"^delimiter: .* cannot be a field delimiter: "):
        dpgpu.load(log, fmt, delimiter=delimiter, **extra)


def test_the_cli_refuses_a_quote_delimiter_naming_it(log, capsys):
    line = one_line_error(capsys, ["stats", log, "--delimiter", '"'], "delimiter: '\"' cannot "
                          "be a field delimiter: a quote opens a quoted field")
    assert line.startswith("dpgpu: error: delimiter: ")
    assert main(["stats", str(log), "--delimiter", ","]) == 0  # one that can still goes


# ------------------------------------------------------- 5. a text table, read as a log
def test_a_text_table_read_as_an_event_log_points_to_text_csv(tmp_path, capsys):
    posts = tmp_path / "posts.csv"
    posts.write_text("author,content\nann,Hello there. How are you?\nbob,Fine thanks\n")
    line = one_line_error(capsys, ["stats", posts], "no case column found; choose one with "
                          "--case", "--format wide --states FIRST:LAST")
    assert line.endswith("; a table of a user and a text per row reads with --format text-csv")
    assert main(["stats", str(posts), "--format", "text-csv"]) == 0  # the hint works


@pytest.mark.parametrize("header, options", [
    ("id,tweet", " --user COLUMN --text COLUMN"),  # two columns: either may be the text
    ("who,message", " --user who --text message"),
    ("Post Id,User Name,Body Text,likes", " --user 'User Name' --text 'Body Text'"),
    ("author,content,date", ""),
])
def test_the_text_csv_hint_names_the_columns(tmp_path, header, options):
    path = tmp_path / "t.csv"
    path.write_text(header + "\n" + ",".join("x" * len(header.split(","))) + "\n")
    with pytest.raises(InputError) as info:
        dpgpu.load(path, "csv")
    assert str(info.value).endswith(f"reads with --format text-csv{options}")


def test_no_text_csv_hint_for_a_wide_looking_table(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("pid,t1,t2\n1,a,b\n")
    with pytest.raises(InputError) as info:
        dpgpu.load(path, "csv")
    assert "text-csv" not in str(info.value)


# ------------------------------------------------------ 6. white space in --vocab labels
def test_vocab_labels_keep_their_white_space(tmp_path):
    """From a sweep: a --vocab file's lines were stripped, yet a CSV cell ' B' is the label
    ' B', so such labels could never be listed."""
    log = tmp_path / "log.csv"
    log.write_text("case,activity\nc1, B\nc1,A\nc2,  lead space\n")
    vocab = tmp_path / "v.txt"
    vocab.write_bytes(b"A\r\n B\r  lead space\n\n   \nC\n")  # CRLF, a lone CR, blank lines
    db = dpgpu.load(log, vocab=vocab)
    assert db.vocab.labels == ["A", " B", "  lead space", "C"]
    assert list(db) == [(" B", "A"), ("  lead space",)]
    out = tmp_path / "o.spmf"
    db.save(out, "spmf")
    assert "@ITEM=3=  lead space\n" in out.read_text()
    back = dpgpu.load(out, vocab=vocab)  # dpgpu's own SPMF output reads back on it
    assert list(back) == list(db) and back.items.tolist() == db.items.tolist()


def test_vocab_files_still_refuse_repeats_and_no_labels(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("x y\n")
    with pytest.raises(InputError, match=r"v\.txt: line 3: item 'x' is listed twice "
                                         r"\(first on line 1\)"):
        dpgpu.load(data, vocab=_write(tmp_path / "v.txt", "x\ny\nx\r\n"))
    with pytest.raises(InputError, match=r"e\.txt: no item labels"):
        dpgpu.load(data, vocab=_write(tmp_path / "e.txt", "\n  \r\n\t\n"))
    db = dpgpu.load(data, vocab=_write(tmp_path / "s.txt", "x\n x\ny\n"))  # now two labels
    assert db.vocab.labels == ["x", " x", "y"]


def test_a_label_that_differs_by_white_space_is_pointed_out(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("x y\n")
    with pytest.raises(InputError, match=r"d\.txt: item 'x' not in the vocabulary given .*"
                                         r"\(it lists 'x ': labels are matched exactly, "
                                         r"white space too\)$"):
        dpgpu.load(data, vocab=_write(tmp_path / "v.txt", "x \ny\n"))


def test_a_label_may_hold_a_break_other_than_a_line_end(tmp_path):
    """Only \\n, \\r\\n and \\r end a vocabulary line, as they end a CSV row."""
    log = tmp_path / "log.csv"
    log.write_text("case,activity\nc1,a\u2028b\nc1,c\x85d\n", encoding="utf-8")
    vocab = _write(tmp_path / "v.txt", "a\u2028b\nc\x85d\n")
    assert dpgpu.load(log, vocab=vocab).vocab.labels == ["a\u2028b", "c\x85d"]


def _write(path, text):
    path.write_bytes(text.encode("utf-8"))
    return path
