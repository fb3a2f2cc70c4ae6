"""A file written on a public vocabulary reads back on it, or is refused up front.

``dpgpu convert --vocab V in.csv out.FMT`` followed by ``dpgpu.load(out.FMT,
vocab=V)`` must give the same sequences with the same item ids under V, for
every format the writers support; a format that cannot hold a label is an
error naming the file and the label, and leaves no file behind.
"""

from __future__ import annotations

import csv
import importlib.util
import logging

import pytest

import dpgpu
from dpgpu import SequenceDB, Vocabulary
from dpgpu.cli import main
from dpgpu.data.load import DETECT_BYTES, detect_format
from dpgpu.data.writers import WRITE_FORMATS
from dpgpu.errors import InputError, InvalidParameter

FORMATS = [pytest.param(f, marks=pytest.mark.skipif(
    f == "parquet" and importlib.util.find_spec("pyarrow") is None, reason="needs pyarrow"))
    for f in WRITE_FORMATS if f != "trajectory"]  # grid cells only: tests/test_trajectory.py

#: Labels every format can hold: '=', non-ASCII, integers with a leading zero;
#: "never" and "ünused=0" do not occur in the data.
PLAIN = ["a=b", "x=1=y", "café", "名前", "never", "007", "42", "ünused=0", "Ünïcödé"]
PLAIN_CASES = [["a=b", "café", "007"], ["名前", "42", "a=b"], ["x=1=y"],
               ["Ünïcödé", "007", "42", "café"]]
#: Labels with white space (and a '-2' word); "Insert Fine Notification" does not occur.
SPACED = ["Send Fine", "Payment", "a = b", "café crème", "名前 です", "Step -2 back",
          "Insert Fine Notification", "x=1=y"]
SPACED_CASES = [["Step -2 back", "Send Fine", "Payment"], ["a = b", "café crème"],
                ["名前 です", "x=1=y", "Payment", "Send Fine"]]
#: The formats that cannot hold a label of SPACED (white space).
NO_SPACES = {"seq", "lines", "column"}


def event_log(tmp_path, cases):
    """A CSV event log with one case per list of activities; its path."""
    path = tmp_path / "in.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["case", "activity", "timestamp"])
        for i, case in enumerate(cases):
            out.writerows([f"c{i}", a, t] for t, a in enumerate(case))
    return path


def vocab_file(tmp_path, labels):
    path = tmp_path / "vocab.txt"
    path.write_text("".join(label + "\n" for label in labels), encoding="utf-8")
    return path


def read_back(out, fmt, **options):
    """``dpgpu.load(out)``; a wide file is never detected, so it is named with its state
    columns (all but the id column of the header it was written with); nor is a column
    file."""
    if fmt == "column":
        return dpgpu.load(out, "column", **options)
    if fmt != "wide":
        return dpgpu.load(out, **options)
    with open(out, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f))
    return dpgpu.load(out, "wide", states=header[1:], **options)


def assert_same(back, want):
    """Same sequences, same item ids, same public vocabulary."""
    assert back.vocab.public and back.vocab.labels == want.vocab.labels
    assert list(back) == list(want)
    assert back.items.tolist() == want.items.tolist()
    assert back.offsets.tolist() == want.offsets.tolist()


@pytest.mark.parametrize("fmt", FORMATS)
def test_convert_with_vocab_reads_back_on_it(tmp_path, caplog, fmt):
    data, words = event_log(tmp_path, PLAIN_CASES), vocab_file(tmp_path, PLAIN)
    out = tmp_path / f"out.{fmt}"
    assert main(["convert", str(data), str(out), "--to", fmt, "--vocab", str(words)]) == 0
    want = dpgpu.load(data, vocab=words)
    assert want.vocab.labels == PLAIN
    assert_same(read_back(out, fmt, vocab=words), want)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


@pytest.mark.parametrize("fmt", FORMATS)
def test_labels_with_white_space_read_back_or_are_refused(tmp_path, capsys, fmt):
    data, words = event_log(tmp_path, SPACED_CASES), vocab_file(tmp_path, SPACED)
    out = tmp_path / f"out.{fmt}"
    code = main(["convert", str(data), str(out), "--to", fmt, "--vocab", str(words)])
    err = capsys.readouterr().err
    if fmt in NO_SPACES:
        assert code == 2 and "Traceback" not in err
        assert f"dpgpu: error: format: cannot write {out} as {fmt}: item '" in err
        assert "contains white space" in err and "write spmf, csv, parquet, xes or wide instead" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "vocab.txt"]
        return
    assert code == 0
    assert_same(read_back(out, fmt, vocab=words), dpgpu.load(data, vocab=words))


def test_lines_writes_only_the_items_that_occur(tmp_path):
    """White space in an item of the vocabulary that never occurs does not matter to a
    lines file (a .seq header lists every item, so it refuses)."""
    words = vocab_file(tmp_path, [*PLAIN, "never used"])
    db = dpgpu.load(event_log(tmp_path, PLAIN_CASES), vocab=words)
    db.save(tmp_path / "out.txt", format="lines")
    assert_same(dpgpu.load(tmp_path / "out.txt", vocab=words), db)
    with pytest.raises(InvalidParameter, match=r"out\.seq as seq: item 'never used' contains"):
        db.save(tmp_path / "out.seq", format="seq")


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_vocabulary_from_the_data_never_becomes_public(tmp_path, fmt):
    data, words = event_log(tmp_path, PLAIN_CASES), vocab_file(tmp_path, PLAIN)
    out = tmp_path / f"out.{fmt}"
    dpgpu.load(data).save(out, format=fmt)
    assert not read_back(out, fmt).vocab.public
    if fmt != "seq":  # its header, taken from the data, declares other categories than PLAIN
        assert_same(read_back(out, fmt, vocab=words), dpgpu.load(data, vocab=words))


def test_integers_with_leading_zeros(tmp_path):
    """'007' and '7' are two items: SPMF names them; a lines file holds them as written,
    since tokens="auto" reads a file with 007 (not an integer as it prints) as text."""
    vocab = Vocabulary(["007", "7", "10"])
    db = SequenceDB.from_sequences([["007", "7"], ["10", "007"]], vocab=vocab)
    db.save(tmp_path / "out.spmf", format="spmf")
    assert "@ITEM=1=007" in (tmp_path / "out.spmf").read_text()
    assert_same(dpgpu.load(tmp_path / "out.spmf", vocab=vocab), db)
    db.save(tmp_path / "out.txt", format="lines")
    assert (tmp_path / "out.txt").read_text() == "007 7\n10 007\n"
    assert_same(dpgpu.load(tmp_path / "out.txt", vocab=vocab), db)
    plain = SequenceDB.from_sequences([["7", "10"], ["-3"]], vocab=["7", "10", "-3", "x y"])
    plain.save(tmp_path / "ints.txt", format="lines")
    assert_same(dpgpu.load(tmp_path / "ints.txt", vocab=plain.vocab), plain)


def test_spmf_items_are_matched_by_their_item_names(tmp_path):
    path = tmp_path / "named.spmf"
    path.write_text("@CONVERTED_FROM_TEXT\n@ITEM=0=Send Fine\n@ITEM=1=a=b\n@ITEM=5=unused\n"
                    "0 -1 1 -1 -2\n1 -1 -2\n", encoding="utf-8")
    db = dpgpu.load(path, vocab=["a=b", "x", "Send Fine"])
    assert list(db) == [("Send Fine", "a=b"), ("a=b",)] and db.items.tolist() == [2, 0, 0]
    assert db.vocab.public
    alone = dpgpu.load(path)  # without a vocabulary: the numbers, taken from the data
    assert alone.vocab.labels == ["0", "1"] and not alone.vocab.public
    assert alone.source["names"] == {"0": "Send Fine", "1": "a=b", "5": "unused"}
    with pytest.raises(InputError, match=r"named\.spmf: item 'Send Fine' and 1 more not in"):
        dpgpu.load(path, vocab=["0", "1"])


def test_spmf_unnamed_items_keep_their_numbers(tmp_path):
    path = tmp_path / "part.spmf"
    path.write_text("@ITEM=7=apple\n7 -1 3 -1 -2\n", encoding="utf-8")
    assert list(dpgpu.load(path, vocab=["3", "apple"])) == [("apple", "3")]
    path.write_text("@ITEM=0=3\n0 -1 3 -1 -2\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"part\.spmf: items 0 and 3 both stand for '3'"):
        dpgpu.load(path, vocab=["3"])


def test_spmf_with_a_large_vocabulary_is_still_detected(tmp_path):
    """Over 64 KiB of @ITEM lines before the first sequence."""
    vocab = Vocabulary([f"product {i:05d}" for i in range(8000)])
    db = SequenceDB.from_sequences([["product 07999", "product 00000"], ["product 04000"]],
                                   vocab=vocab)
    db.save(tmp_path / "big.txt", format="spmf")
    assert (tmp_path / "big.txt").stat().st_size > 1 << 16
    assert_same(dpgpu.load(tmp_path / "big.txt", vocab=vocab), db)


def test_a_seq_file_reads_back_on_the_vocabulary_of_its_header(tmp_path):
    words = vocab_file(tmp_path, PLAIN)
    db = dpgpu.load(event_log(tmp_path, PLAIN_CASES), vocab=words)
    db.save(tmp_path / "out.seq", format="seq")
    alone = dpgpu.load(tmp_path / "out.seq")
    assert alone.vocab.public and alone.vocab.names == PLAIN
    assert alone.items.tolist() == db.items.tolist()
    with pytest.raises(InvalidParameter, match=r"out\.seq is a \.seq file, whose header"):
        dpgpu.load(tmp_path / "out.seq", vocab=PLAIN[::-1])
    assert_same(dpgpu.load(tmp_path / "out.seq", vocab=words), db)
    comment = SequenceDB.from_sequences([["%off", "b"]], vocab=["%off", "b"])
    with pytest.raises(InvalidParameter, match=r"item '%off' starts with '%'"):
        comment.save(tmp_path / "p.seq", format="seq")


def test_characters_a_format_cannot_hold(tmp_path):
    cr = SequenceDB.from_sequences([["a\rb", "c"]], vocab=["a\rb", "c"])
    cr.save(tmp_path / "cr.csv", format="csv")  # quoted, so the reader keeps the carriage return
    assert_same(dpgpu.load(tmp_path / "cr.csv", vocab=cr.vocab), cr)
    control = SequenceDB.from_sequences([["a\x01b"]], vocab=["a\x01b"])
    with pytest.raises(InvalidParameter, match=r"c\.xes as xes: item 'a\\x01b' holds "
                                               r"'\\x01', a character XML 1\.0 cannot"):
        control.save(tmp_path / "c.xes", format="xes")
    nul = SequenceDB.from_sequences([["a\x00b"]], vocab=["a\x00b"])
    for fmt in WRITE_FORMATS:
        with pytest.raises(InvalidParameter, match="holds a NUL character; no format dpgpu"):
            nul.save(tmp_path / f"n.{fmt}", format=fmt)
    trailing = SequenceDB.from_sequences([["tail "]], vocab=["tail "])
    with pytest.raises(InvalidParameter, match="ends in white space, which its @ITEM line"):
        trailing.save(tmp_path / "t.spmf", format="spmf")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cr.csv"]


def test_a_bare_carriage_return_in_a_csv_log_is_an_input_error(tmp_path):
    path = tmp_path / "cr.csv"
    path.write_bytes(b"case,activity\nc1,a\rb\nc1,z\n")
    with pytest.raises(InputError, match=r"cr\.csv: line \d+: 1 fields, but the header has 2"):
        dpgpu.load(path)


def test_a_lines_file_that_looks_like_another_format_says_so(tmp_path, caplog):
    db = SequenceDB.from_sequences([["{x", "y"], ["y"]], vocab=["{x", "y"])
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        db.save(tmp_path / "out.txt", format="lines")
    assert "look like jsonl; read it back with format='lines'" in caplog.text
    assert_same(dpgpu.load(tmp_path / "out.txt", format="lines", vocab=db.vocab), db)


def test_synthetic_data_the_input_format_cannot_hold_is_written_in_another(tmp_path, caplog):
    """A lines input on a public vocabulary with a spaced label: synthetic data may generate
    that label, and the finished release must not fail at its last step."""
    from dpgpu.release import ReleaseWriter

    vocab = Vocabulary(["Send Fine", "Payment"])
    synthetic = SequenceDB.from_sequences([["Send Fine", "Payment"], ["Payment"]], vocab=vocab)
    synthetic.source["format"] = "lines"
    with caplog.at_level(logging.WARNING, logger="dpgpu"), \
            ReleaseWriter(tmp_path / "rel") as rel:
        name, fmt = rel.write_synthetic(synthetic)
        rel.finish({"mechanism": "test"})
    assert (name, fmt) == ("synthetic.txt", "spmf") and "written as spmf" in caplog.text
    back = dpgpu.load(tmp_path / "rel" / name, vocab=vocab)
    assert list(back) == [("Send Fine", "Payment"), ("Payment",)]
    plain = SequenceDB.from_sequences([["a", "b"]], vocab=Vocabulary(["a", "b"]))
    plain.source["format"] = "lines"
    with ReleaseWriter(tmp_path / "rel2") as rel:
        assert rel.write_synthetic(plain) == ("synthetic.txt", "lines")
        rel.finish({"mechanism": "test"})
    assert dpgpu.load(tmp_path / "rel2" / "synthetic.txt").source["format"] == "lines"


@pytest.mark.parametrize("prefix", ["é", "xé", "€", "x€", "xx€", "𝄞"])
def test_a_first_line_longer_than_detection_reads_back(tmp_path, prefix):
    """Regression: format detection looks at the first 64 KiB; when that cut a character of a
    long first line, reading it (and the check after writing it) said 'not UTF-8 text'."""
    labels = [f"{prefix}{i}" for i in range(30_000)]
    db = SequenceDB.from_sequences([labels, labels[:3]], vocab=labels)
    db.save(tmp_path / "long.txt", format="lines")
    back = dpgpu.load(tmp_path / "long.txt", vocab=labels)
    assert back.source["format"] == "lines" and list(back) == list(db)
    # the distributed loader hands detection a head of exactly DETECT_BYTES
    head = (tmp_path / "long.txt").read_bytes()[:DETECT_BYTES]
    assert detect_format(tmp_path / "long.txt", head) == "lines"


@pytest.mark.parametrize("fmt", ["csv", "xes"])
def test_case_names_a_format_cannot_hold_are_refused(tmp_path, capsys, fmt):
    """Event logs write case names too: a control character XML forbids, or a NUL, is
    refused before writing, naming it (it used to give an XES file that cannot be read)."""
    (tmp_path / "in.csv").write_bytes(b"case,activity\nc\x01,a\nc\x01,b\nd,a\n")
    out = tmp_path / f"out.{fmt}"
    code = main(["convert", str(tmp_path / "in.csv"), str(out), "--to", fmt])
    err = capsys.readouterr().err
    if fmt == "csv":
        assert code == 0 and dpgpu.load(out).source["cases"] == ["c\x01", "d"]
        return
    assert code == 2 and "Traceback" not in err and not out.exists()
    assert "case or user name 'c\\x01' holds '\\x01', a character XML 1.0 cannot" in err


def test_synthetic_sentences_of_a_text_input_are_written_as_lines(tmp_path, caplog):
    """Regression: N-gram and PST on a jsonl input failed at the very end: dpgpu cannot write
    jsonl, and the synthetic sentences were written in the input's format."""
    import json

    posts = [{"author": f"u{i % 7}", "content": "the cat sat. the dog ran."} for i in range(40)]
    path = tmp_path / "posts.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in posts))
    db = dpgpu.load(path)
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        dpgpu.ngram(db, 1.0, seed=1).save(tmp_path / "rel")
    assert "written as" not in caplog.text
    back = dpgpu.load(tmp_path / "rel" / "synthetic.txt")
    assert back.source["format"] == "lines" and set(back.vocab.labels) <= set(db.vocab.labels)
