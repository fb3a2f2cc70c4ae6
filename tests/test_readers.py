"""Text readers and writers: UCI .seq, SPMF, lines; malformed input; MSNBC statistics."""

from __future__ import annotations

import gzip
import logging

import numpy as np
import pytest

import dpgpu
from dpgpu import InputError, InvalidParameter, SequenceDB
from dpgpu.data import text as text_module
from dpgpu.data.text import SEQ_DATA_VOCABULARY
from shared_data import dataset, needs, param


SEQ = ("% Different categories found in input file:\n\nfront news tech\n\n\n"
       "% Sequences:\n\n1 1 \n3 2 \n2 \n1 3 3 1 \n")


def write(tmp_path, name, text, gz=False):
    p = tmp_path / name
    data = text.encode() if isinstance(text, str) else text
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


@pytest.mark.parametrize("gz", [False, True])
def test_seq(tmp_path, gz):
    db = dpgpu.load(write(tmp_path, "x.seq", SEQ, gz))
    assert db.source["format"] == "seq"
    assert list(db) == [("1", "1"), ("3", "2"), ("2",), ("1", "3", "3", "1")]
    assert db.vocab.labels == ["1", "2", "3"] and db.vocab.names == ["front", "news", "tech"]


def test_seq_declares_unused_categories_and_crlf(tmp_path):
    text = SEQ.replace("front news tech", "a b c d").replace("\n", "\r\n")
    db = dpgpu.load(write(tmp_path, "x.seq", text))
    assert db.vocab.size == 4 and list(db)[3] == ("1", "3", "3", "1")


def test_seq_undeclared_category(tmp_path):
    with pytest.raises(InputError, match=r"x.seq: line 12: category 4 is not declared"):
        dpgpu.load(write(tmp_path, "x.seq", SEQ + "1 4\n"))


def test_spmf_with_separators_and_itemsets(tmp_path):
    text = "# comment\n@ITEM=7=apple\n7 -1 3 5 -1 -2\n5 -1 -2\n"
    db = dpgpu.load(write(tmp_path, "x.txt", text))
    assert db.source["format"] == "spmf"
    assert list(db) == [("7", "3", "5"), ("5",)]
    assert db.source["names"] == {"7": "apple"}


def test_spmf_itemsets_of_several_items_are_counted_in_a_warning(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(text_module, "BLOCK_BYTES", 64)  # blocks of a few lines
    rng = np.random.default_rng(5)
    lines, big, first = [], 0, None
    for line in range(1, 200):
        sets = [rng.integers(0, 9, rng.choice([1, 1, 1, 2, 3])).tolist()
                for _ in range(rng.integers(1, 5))]
        lines.append(" ".join(f"{' '.join(map(str, s))} -1" for s in sets) + " -2")
        several = sum(len(s) > 1 for s in sets)
        big += several
        first = first or (line if several else None)
    path = write(tmp_path, "sets.txt", "\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        db = dpgpu.load(path)
    assert [" ".join(s) for s in db] == [" ".join(t for t in line.split() if not t.startswith("-"))
                                         for line in lines]
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: {big} itemsets hold more than one item (the first on line {first}); dpgpu's "
        "sequences hold one item per position, so each is read as its items one after "
        "another, in the order written"]
    caplog.clear()
    dpgpu.load(write(tmp_path, "single.txt", "1 -1 2 -1 -2\n3 -1 -2\n"))
    assert not caplog.records
    dpgpu.load(write(tmp_path, "one.txt", "1 -1 2 -1 -2\n3 4 -1 -2\n"))
    assert "one.txt: 1 itemset holds more than one item (the first on line 2)" in caplog.text


def test_spmf_stripped_variant(tmp_path):
    db = dpgpu.load(write(tmp_path, "x.txt", "10 20 10\n30\n"), format="spmf")
    assert list(db) == [("10", "20", "10"), ("30",)]
    assert db.source["stripped"]


def test_spmf_unterminated(tmp_path):
    with pytest.raises(InputError, match=r"x.txt: line 2: sequence not terminated by -2"):
        dpgpu.load(write(tmp_path, "x.txt", "1 -1 -2\n2 -1 3 -1\n"))


def test_spmf_bad_negative(tmp_path):
    with pytest.raises(InputError, match=r"line 1: negative item -3"):
        dpgpu.load(write(tmp_path, "x.txt", "1 -3 -2\n"))


def test_lines_int_and_blank_lines(tmp_path):
    db = dpgpu.load(write(tmp_path, "x.txt", "3 1 2\n\n10\n2 2"))
    assert db.source["format"] == "lines"
    assert list(db) == [("3", "1", "2"), (), ("10",), ("2", "2")]
    assert db.vocab.labels == ["1", "2", "3", "10"]


def test_lines_string_tokens(tmp_path):
    db = dpgpu.load(write(tmp_path, "x.txt", "home cart pay\nhome\tsearch\n"))
    assert list(db) == [("home", "cart", "pay"), ("home", "search")]
    assert db.source["tokens"] == "str"


@pytest.mark.parametrize("fmt,text,line", [
    ("seq", SEQ + "1 x2 3\n", 12),
    ("spmf", "1 -1 -2\n2 -1 a -1 -2\n", 2),
    ("lines", "1 2\n3 4\n5 6-7\n", 3),
])
def test_non_numeric_token_in_integer_format(tmp_path, fmt, text, line):
    p = write(tmp_path, "bad.txt", text)
    kwargs = {"tokens": "int"} if fmt == "lines" else {}
    with pytest.raises(InputError, match=rf"bad.txt: line {line}: non-numeric token"):
        dpgpu.load(p, format=fmt, **kwargs)


def test_truncated_gzip(tmp_path):
    data = gzip.compress(SEQ.encode() * 50)
    with pytest.raises(InputError, match="truncated or corrupt gzip"):
        dpgpu.load(write(tmp_path, "x.seq.gz", data[: len(data) // 2]))


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_empty_file(tmp_path, content):
    with pytest.raises(InputError, match="empty file"):
        dpgpu.load(write(tmp_path, "e.txt", content))


@pytest.mark.parametrize("gz", [False, True])
def test_blank_lines_are_empty_sequences_given_the_lines_format(tmp_path, capsys, gz):
    """README: in a lines file a blank line is an empty sequence, also when every line is
    blank (it was refused as an empty file); without a format the file stays empty."""
    from dpgpu.cli import main

    path = write(tmp_path, "e.txt", "\n\n\n", gz=gz)
    assert main(["stats", str(path), "--format", "lines"]) == 0
    out = capsys.readouterr().out
    assert "sequences            3\n" in out and "empty sequences      3\n" in out
    assert main(["stats", str(path)]) == 2
    assert "empty file (no sequences); to read its blank lines as empty sequences, give " \
           "the format 'lines' (--format lines)" in capsys.readouterr().err


def test_binary_garbage(tmp_path):
    rng = np.random.default_rng(1)
    with pytest.raises(InputError, match=r"g.bin: line \d+: (binary data|not UTF-8)"):
        dpgpu.load(write(tmp_path, "g.bin", rng.integers(0, 256, 4096, dtype=np.uint8).tobytes()))


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        dpgpu.load(tmp_path / "nope.txt")
    with pytest.raises(InvalidParameter, match="format: unknown format 'fasta'"):
        dpgpu.load(write(tmp_path, "x.txt", "1 2\n"), format="fasta")
    with pytest.raises(InvalidParameter, match="case: not an option of the 'lines' format"):
        dpgpu.load(write(tmp_path, "y.txt", "1 2\n"), case="id")


def test_input_never_modified(tmp_path):
    p = write(tmp_path, "x.seq", SEQ)
    before = (p.read_bytes(), p.stat().st_mtime_ns)
    db = dpgpu.load(p)
    db.save(tmp_path / "out.seq")
    assert (p.read_bytes(), p.stat().st_mtime_ns) == before


@pytest.mark.parametrize("fmt", ["seq", "spmf", "lines"])
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_round_trip(tmp_path, fmt, suffix):
    db = dpgpu.load(write(tmp_path, "x.seq", SEQ))
    out = tmp_path / f"out.{fmt}{suffix}"
    db.save(out, format=fmt)
    back = dpgpu.load(out, format=fmt)
    assert list(back) == list(db)


def test_seq_round_trip_is_byte_identical_to_a_clean_input(tmp_path):
    db = dpgpu.load(write(tmp_path, "x.seq", SEQ))
    db.save(tmp_path / "y.seq")
    assert (tmp_path / "y.seq").read_text() == SEQ


def test_string_labels_to_spmf_and_lines(tmp_path):
    db = SequenceDB.from_sequences([["Send Fine", "Payment"], ["Payment"]])
    db.save(tmp_path / "a.spmf", format="spmf")
    text = (tmp_path / "a.spmf").read_text()
    # SPMF's items are positive integers: numbered from 1 (item 0 broke SPMF's tools)
    assert "@ITEM=1=Payment" in text and "@ITEM=2=Send Fine" in text and "@ITEM=0" not in text
    assert list(dpgpu.load(tmp_path / "a.spmf")) == [("2", "1"), ("1",)]
    # white space separates the items of a lines file: refused, not rewritten
    with pytest.raises(InvalidParameter, match=r"a\.txt as lines: item 'Send Fine' contains "
                                               "white space"):
        db.save(tmp_path / "a.txt", format="lines")
    assert not (tmp_path / "a.txt").exists()


def test_outputs_are_atomic_and_not_overwritten(tmp_path, monkeypatch):
    db = dpgpu.load(write(tmp_path, "x.seq", SEQ))
    out = tmp_path / "out.txt"
    out.write_text("keep me")
    with pytest.raises(InputError, match="already exists"):
        db.save(out, format="lines")
    assert out.read_text() == "keep me"
    from dpgpu.data import writers

    def boom(sink, db):
        sink.write(db, 0)  # some output, then a failure
        raise RuntimeError("disk full")

    monkeypatch.setattr(writers, "write_all", boom)
    with pytest.raises(RuntimeError):
        db.save(out, format="lines", force=True)
    assert out.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt", "x.seq"]


def test_truncate_and_select():
    db = SequenceDB.from_sequences([["a", "b", "c"], [], ["c"]])
    assert list(db.truncate(2)) == [("a", "b"), (), ("c",)]
    assert list(db.select([2, 0])) == [("c",), ("a", "b", "c")]
    with pytest.raises(InvalidParameter, match="l_max"):
        db.truncate(0)


@needs("msnbc/msnbc990928.seq.gz")
def test_msnbc_statistics_match_the_dataset_readme():
    db = dpgpu.load(dataset("msnbc/msnbc990928.seq.gz"))
    assert len(db) == 989_818 and db.vocab.size == 17 and db.n_events == 4_698_794
    assert db.max_length == 14_795 and int((db.lengths == 1).sum()) == 365_435
    assert int((db.lengths >= 20).sum()) == 31_606
    per_item = [940469, 452387, 207479, 386217, 151409, 414928, 305615, 439398, 196614,
                131760, 96817, 264899, 216125, 395880, 56576, 25249, 16972]
    assert np.bincount(db.items).tolist() == per_item
    assert db.vocab.names[0] == "frontpage" and db.vocab.names[-1] == "travel"


@pytest.mark.parametrize("name,n,items,avg,longest", [
    param("msnbc_spmf/MSNBC.txt.gz", 31_790, 17, 13.330, 100),
    param("bms1/BMS1_spmf.txt.gz", 59_601, 497, 2.511, 267),
    param("bms2/BMS2.txt.gz", 77_512, 3_340, 4.622, 161),
    param("sign/SIGN.txt", 730, 267, 51.997, 94),
    param("kosarak/Kosarak_converted.txt.gz", 69_999, 21_144, 7.977, 796),
])
def test_shared_spmf_datasets(name, n, items, avg, longest):
    db = dpgpu.load(dataset(name))
    assert len(db) == n and db.vocab.size == items and db.max_length == longest
    assert round(float(db.lengths.mean()), 3) == avg


def test_csv_event_logs_with_carriage_return_line_ends(tmp_path):
    path = tmp_path / "cr.txt"
    path.write_bytes(b"case,activity\r1,a\r1,b\r2,a\r")
    db = dpgpu.load(path)
    assert db.source["format"] == "csv"
    assert list(db) == [("a", "b"), ("a",)]


def test_jsonl_text_may_hold_unicode_line_separators(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"author": "a", "content": "one\u2028two three"}\n'
                    '{"author": "b", "content": "four"}\n', encoding="utf-8")
    db = dpgpu.load(path)
    # a line separator is white space inside a sentence, not a record boundary
    assert db.users.tolist() == [0, 1]
    assert list(db) == [("one", "two", "three"), ("four",)]


@pytest.mark.parametrize("name,text,public", [
    ("d.seq", SEQ, True),
    ("d.txt", "1 2\n3\n", False), ("d.txt", "x y\nz\n", False),
    ("d.spmf", "1 -1 2 -1 -2\n3 -1 -2\n", False),
    ("d.jsonl", '{"author": "u", "content": "x y. z"}\n', False),
])
def test_a_vocabulary_is_public_only_when_declared(tmp_path, name, text, public):
    assert dpgpu.load(write(tmp_path, name, text)).vocab.public is public
    assert not SequenceDB.from_sequences([["a", "b"]]).vocab.public
    assert SequenceDB.from_sequences([["a", "b"]], vocab=["b", "a", "c"]).vocab.public


def test_load_on_a_public_vocabulary(tmp_path):
    path = write(tmp_path, "d.txt", "x y\nz x\n")
    words = write(tmp_path, "v.txt", "z\n\nw\ny\r\nx\n")
    for vocab in (words, str(words), ["z", "w", "y", "x"], dpgpu.Vocabulary(["z", "w", "y", "x"])):
        db = dpgpu.load(path, vocab=vocab)
        assert db.vocab.labels == ["z", "w", "y", "x"] and db.vocab.public
        assert list(db) == [("x", "y"), ("z", "x")] and db.items.tolist() == [3, 2, 0, 3]
    with pytest.raises(InputError, match=r"d\.txt: item 'y' not in the vocabulary given"):
        dpgpu.load(path, vocab=["x", "z"])
    with pytest.raises(InputError, match=r"v2\.txt: line 3: item 'a' is listed twice "
                                         r"\(first on line 1\)"):
        dpgpu.load(path, vocab=write(tmp_path, "v2.txt", "a\nb\na\n"))
    with pytest.raises(InputError, match=r"v3\.txt: no item labels"):
        dpgpu.load(path, vocab=write(tmp_path, "v3.txt", "\n \n"))
    with pytest.raises(InputError, match=r"nope\.txt"):
        dpgpu.load(path, vocab=tmp_path / "nope.txt")
    with pytest.raises(InvalidParameter, match="vocab: this vocabulary was taken from"):
        dpgpu.load(path, vocab=dpgpu.load(path).vocab)
    with pytest.raises(InvalidParameter, match="vocab: labels must be distinct"):
        dpgpu.load(path, vocab=["x", "x"])
    with pytest.raises(InvalidParameter, match="vocab: expected a Vocabulary"):
        dpgpu.load(path, vocab=3)


def test_a_seq_file_keeps_its_header_and_a_data_vocabulary_stays_marked(tmp_path):
    """From a review: converting to .seq must not make a data vocabulary public, and
    a vocabulary given for a .seq input would renumber its categories."""
    seq = write(tmp_path, "x.seq", SEQ)
    with pytest.raises(InvalidParameter, match=r"x\.seq is a \.seq file, whose header"):
        dpgpu.load(seq, vocab=["1", "2", "3"])
    data = dpgpu.load(write(tmp_path, "d.txt", "a b c\nb c\n"))
    out = tmp_path / "d.seq"
    data.save(out, format="seq")
    again = dpgpu.load(out)
    assert not again.vocab.public and list(again) == [("1", "2", "3"), ("2", "3")]
    assert again.vocab.names == ["a", "b", "c"]
    dpgpu.load(seq).save(tmp_path / "y.seq")
    assert dpgpu.load(tmp_path / "y.seq").vocab.public
    assert SEQ_DATA_VOCABULARY in out.read_text()
    assert "dpgpu" not in (tmp_path / "y.seq").read_text()


@pytest.mark.parametrize("text, line, why", [
    ("1 -1 2 -1\n3 -1 -2\n", 1, "sequence not terminated by -2"),
    ("1 -1 -2 2 -1 -2\n", 1, "-2 before the end of the line"),
    ("# note\n1 -1 -2\r\n\n@ITEM=5=five\n5 -1\n6 -1 -2\n", 5, "sequence not terminated by -2"),
])
def test_spmf_holds_one_sequence_per_line(tmp_path, capsys, text, line, why):
    """From a review: a line missing its -2 was merged into the next line's sequence
    (one sequence of length 3, exit 0); SPMF holds one sequence per line."""
    from dpgpu.cli import main

    path = write(tmp_path, "x.txt", text)
    with pytest.raises(InputError, match=rf"x\.txt: line {line}: {why} \(SPMF holds one "
                                         r"sequence per line"):
        dpgpu.load(path, format="spmf")
    assert main(["stats", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dpgpu: error: ") and len(err.strip().splitlines()) == 1
    assert f"line {line}: {why}" in err and "Traceback" not in err


def test_spmf_lines_with_blank_lines_metadata_and_crlf_between_them(tmp_path):
    db = dpgpu.load(write(tmp_path, "x.txt", "# c\r\n1 -1 2 -1 -2\r\n\r\n@ITEM=5=five\n"
                                            "-2\n5 -1 -1 -2 \n"))
    assert db.source["format"] == "spmf" and list(db) == [("1", "2"), (), ("5",)]


def test_stripped_spmf_metadata_lines_are_not_sequences(tmp_path):
    """Metadata lines were read as empty sequences of a file without -2 terminators."""
    db = dpgpu.load(write(tmp_path, "x.spmf", "@ITEM=1=one\n# made by hand\n1 2\n\n2\n"
                                              "@ITEM=2=two"), format="spmf")
    assert db.source["stripped"] and db.source["names"] == {"1": "one", "2": "two"}
    assert list(db) == [("1", "2"), (), ("2",)]


def test_an_spmf_item_named_twice_differently_is_refused(tmp_path):
    """Regression: a second @ITEM line for one number silently renamed the item."""
    path = tmp_path / "d.spmf"
    path.write_text("@CONVERTED_FROM_TEXT\n@ITEM=1=a\n@ITEM=2=b\n@ITEM=1=c\n1 -1 2 -1 -2\n")
    with pytest.raises(InputError, match=r"d\.spmf: line 4: item 1 is named again \('c', "
                                         r"after 'a'\)"):
        dpgpu.load(path)
    path.write_text("@CONVERTED_FROM_TEXT\n@ITEM=1=a\n@ITEM=1=a\n1 -1 -2\n")  # the same name
    assert dpgpu.load(path).source["names"] == {"1": "a"}
