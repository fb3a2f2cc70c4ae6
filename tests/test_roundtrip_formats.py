"""Written files keep what the input's format records, so that synthetic data and ``dpgpu
convert`` outputs are drop-in replacements: SPMF ``@ITEM`` names, the field delimiter,
integers read as text, gzip; and a label a format would not read back as written is
refused, so that a release falls back to a format that holds it."""

from __future__ import annotations

import gzip

import pytest

import dpgpu
from dpgpu import SequenceDB
from dpgpu.cli import main
from dpgpu.data.sequencedb import synthetic_like
from dpgpu.release import ReleaseWriter, vocabulary_facts

NAMES = ["Send Fine", "Payment", "café"]
#: An SPMF file that names its items (and one item that never occurs).
NAMED = ("@CONVERTED_FROM_TEXT\n@ITEM=0=Send Fine\n@ITEM=1=Payment\n@ITEM=2=café\n"
         "@ITEM=9=never\n0 -1 2 -1 -2\n1 -1 -2\n2 -1 0 -1 1 -1 -2\n")
SEQ = ("% Different categories found in input file:\n\nfrontpage news tech\n\n\n"
       "% Sequences:\n\n1 1 \n3 2 \n2 \n")


def convert(capsys, *argv):
    status = main(["convert", *map(str, argv)])
    return status, capsys.readouterr().err


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def release(db, out):
    """A release whose synthetic data is ``db``'s sequences, made as a mechanism makes it."""
    synthetic = synthetic_like(db, db.items, db.lengths)
    with ReleaseWriter(out) as rel:
        entries = rel.synthetic_entries(synthetic)
        rel.finish({"mechanism": "test", "epsilon": 1.0, "vocabulary": vocabulary_facts(db.vocab, shown=True),
                    **entries})
    return synthetic, entries


# ------------------------------------------------------------------ item names
def test_a_named_spmf_input_gives_a_named_spmf_synthetic_file(tmp_path):
    db = dpgpu.load(write(tmp_path / "named.spmf", NAMED))
    out = dpgpu.ngram(db, 5.0, seed=7).save(tmp_path / "rel")
    text = (out / "synthetic.txt").read_text(encoding="utf-8")
    assert text.startswith("@CONVERTED_FROM_TEXT\n@ITEM=0=Send Fine\n@ITEM=1=Payment\n"
                           "@ITEM=2=café\n")
    back = dpgpu.load_release(out).synthetic()  # labelled by the input's item numbers
    assert set(back.vocab.labels) <= {"0", "1", "2"}
    assert dpgpu.load(out / "synthetic.txt").source["names"] == {"0": "Send Fine",
                                                                 "1": "Payment", "2": "café"}


def test_spmf_to_spmf_keeps_the_numbers_and_their_names(tmp_path, capsys):
    assert convert(capsys, write(tmp_path / "named.spmf", NAMED), tmp_path / "copy.spmf") == (0, "")
    # every item of the vocabulary is named; 9, which never occurs, is not in it
    assert (tmp_path / "copy.spmf").read_text(encoding="utf-8") == NAMED.replace(
        "@ITEM=9=never\n", "")


@pytest.mark.parametrize("name, to, options", [
    ("out.csv", None, {}), ("out.xes", None, {}), ("out.parquet", None, {}),
    ("out.txt", "lines", {}), ("out.wide", "wide", {"format": "wide"})])
@pytest.mark.parametrize("source", ["named.spmf", "web.seq"])
def test_conversions_write_items_by_their_labels(tmp_path, capsys, name, to, options, source):
    """Names stay metadata: every format reads back as the database it was written from
    (the labels ``list(db)`` shows), so evaluation on the original's vocabulary lines up."""
    if name.endswith(".parquet"):
        pytest.importorskip("pyarrow")
    path = write(tmp_path / source, NAMED if source.endswith(".spmf") else SEQ)
    if to == "wide":  # a state column per item of the longest sequence
        options = {**options, "states": f"1:{max(map(len, dpgpu.load(path)))}"}
    assert convert(capsys, path, tmp_path / name, *(["--to", to] if to else [])) == (0, "")
    assert list(dpgpu.load(tmp_path / name, **options)) == list(dpgpu.load(path))


# ------------------------------------------------- labels a format cannot hold
def test_an_item_name_with_a_carriage_return_is_refused_in_spmf(tmp_path, capsys):
    """From a review: SPMF took 'Send\\rFine' for an @ITEM name, and its reader then read
    the file as two lines."""
    log = tmp_path / "cr.csv"
    log.write_bytes(b'case,activity\nc1,"Send\rFine"\nc1,Pay\nc2,Pay\n')
    status, err = convert(capsys, log, tmp_path / "cr.spmf")
    assert status == 2 and "item 'Send\\rFine' contains a line break ('\\r')" in err
    assert not (tmp_path / "cr.spmf").exists()


@pytest.mark.parametrize("label, refused, fallback, why", [
    ("Send\rFine", "spmf", "csv", "contains a line break"),
    ("\ufeffX", "lines", "spmf", "starts with U\\+FEFF")])
def test_a_release_falls_back_from_a_format_that_would_change_a_label(tmp_path, label, refused,
                                                                     fallback, why):
    """A carriage return in an @ITEM name, a byte-order mark starting a lines file: the
    synthetic file went out unreadable, or read back with another label."""
    db = SequenceDB.from_sequences([[label, "Y"], ["Y"]])
    db.source["format"] = "lines"
    with pytest.raises(dpgpu.InvalidParameter, match=why):
        db.save(tmp_path / "x.txt", format=refused)
    synthetic, entries = release(db, tmp_path / "rel")
    assert entries["synthetic_format"] == fallback
    assert list(dpgpu.load_release(tmp_path / "rel").synthetic()) == list(synthetic)


# ------------------------------------------------------------------ delimiters
@pytest.mark.parametrize("text, fmt, options, name", [
    ("case;activity;time\nc1;a;1\nc1;b;2\nc2;b;1\n", "csv", {}, "synthetic.csv"),
    ("case\tactivity\ttime\nc1\ta\t1\nc1\tb\t2\nc2\tb\t1\n", "csv", {}, "synthetic.tsv"),
    ("id;t1;t2\n1;a;b\n2;b;\n", "wide", {"states": "t1:t2", "case": "id", "delimiter": ";"},
     "synthetic.csv"),
    ("id\tsequence\n1\ta b\n2\tb\n", "column",
     {"sequence": "sequence", "case": "id", "delimiter": "\t"}, "synthetic.tsv"),
    ("trip;x;y\nt1;0.5;0.5\nt1;1.5;0.5\nt2;1.5;1.5\n", "trajectory",
     {"grid": "2x2", "bounds": "0,2,0,2", "case": "trip", "x": "x", "y": "y",
      "delimiter": ";"}, "synthetic.csv")])
def test_synthetic_csv_tables_are_delimited_as_their_input(tmp_path, text, fmt, options, name):
    """From a review: semicolon and tab inputs gave a comma-separated synthetic.csv."""
    delimiter = ";" if ";" in text else "\t"
    db = dpgpu.load(write(tmp_path / "in.txt", text), format=fmt, **options)
    synthetic, entries = release(db, tmp_path / "rel")
    assert entries["synthetic_file"] == name
    assert entries["synthetic_options"]["delimiter"] == delimiter
    header = (tmp_path / "rel" / name).read_text().splitlines()[0]
    assert delimiter in header and "," not in header
    again = dpgpu.load(tmp_path / "rel" / name, format=fmt,  # the input's own reader options
                       **{**options, "delimiter": delimiter})
    assert list(again) == list(synthetic)
    assert list(dpgpu.load_release(tmp_path / "rel").synthetic()) == list(synthetic)


# --------------------------------------------------------- integers as written
def test_labels_read_as_text_are_written_as_lines(tmp_path, capsys):
    """From a review: labels such as 007, read with --tokens str, could not be written as
    lines (synthetic data went to SPMF; convert refused to copy the file)."""
    text = "007 7 01\n0012 12\n\n7\n"
    source = write(tmp_path / "codes.txt", text)
    assert convert(capsys, source, tmp_path / "copy.txt", "--tokens", "str") == (0, "")
    assert (tmp_path / "copy.txt").read_text() == text
    db = dpgpu.load(source, tokens="str")
    synthetic, entries = release(db, tmp_path / "rel")
    assert (entries["synthetic_file"], entries["synthetic_format"]) == ("synthetic.txt", "lines")
    back = dpgpu.load_release(tmp_path / "rel").synthetic()
    assert list(back) == list(synthetic) and "007" in back.vocab.labels


# ------------------------------------------------------------------ compression
def test_a_release_of_a_gzip_file_writes_gzip_synthetic_data(tmp_path):
    """From a review: web.seq.gz gave an uncompressed synthetic.seq."""
    path = tmp_path / "web.seq.gz"
    path.write_bytes(gzip.compress(SEQ.encode()))
    out = dpgpu.pst(dpgpu.load(path), 5.0, seed=7).save(tmp_path / "rel")
    assert (out / "synthetic.seq.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert len(dpgpu.load_release(out).synthetic()) > 0


# ------------------------------------------------------------ convert's format
@pytest.mark.parametrize("name, delimiter", [("out.csv", ","), ("out.tsv", "\t")])
def test_a_csv_name_keeps_a_csv_table_input_in_its_format(tmp_path, capsys, name, delimiter):
    """From a review: converting a wide file to out.csv silently wrote an event log."""
    wide = write(tmp_path / "w.csv", "id,t1,t2,t3\n1,A,B,\n2,A,,\n3,B,B,B\n")
    options = ["--format", "wide", "--states", "t1:t3", "--case", "id"]
    assert convert(capsys, wide, tmp_path / name, *options) == (0, "")
    assert (tmp_path / name).read_text().splitlines()[0] == delimiter.join(["id", "t1", "t2",
                                                                            "t3"])
    back = dpgpu.load(tmp_path / name, format="wide", states="t1:t3", case="id")
    assert list(back) == list(dpgpu.load(wide, format="wide", states="t1:t3", case="id"))
    assert convert(capsys, wide, tmp_path / "log.csv", *options, "--to", "csv") == (0, "")
    assert dpgpu.load(tmp_path / "log.csv").source["format"] == "csv"
