"""How one token is read never depends on the other records (a privacy review, CRITICAL).

``tokens="auto"`` (the CLI default) reads a ``lines`` or ``column`` file as
integers only when every token is an integer written as it prints
(:func:`dpgpu.data.text.is_canonical_int`).  Before, any integer counted and was
relabelled as it prints (``07`` -> ``7``), so one added record with a word
switched the whole file to text and every other record's ``07`` from the item
``7`` to the item ``07``: with the public vocabulary ``["7", "07", "x"]``,
100 records ``07`` gave unigram counts ``{'7': 100, '07': 0}`` and the same
records plus one ``x`` gave ``{'7': 0, '07': 100, 'x': 1}``, which no epsilon
covers.  Now a token's label is its text in either mode; the mode changes only
the id order of a vocabulary taken from the data.

The synthetic file's format was chosen from the same data-dependent guess
(``source["tokens"]``); it now depends on the labels written only.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import dpgpu
from dpgpu import SequenceDB
from dpgpu.data import text
from dpgpu.data.sequencedb import synthetic_like
from dpgpu.data.writers import label_problem
from dpgpu.release import ReleaseWriter, vocabulary_facts

PUBLIC = ["7", "07", "x"]
#: Records a neighbour adds: a word, a non-canonical integer, -0, a signed integer.
EXTRA = ["x", "07", "-0", "+7", "7 x"]
#: The shared records of the neighbouring files (one sequence each).
SHARED = {"zeros": ["07"] * 100, "plain": ["7"] * 100,
          "mixed": ["07 7", "7", "", "12 -3 07", "0"] * 20}


def write_file(path, fmt, records):
    """A ``lines`` or ``column`` file of ``records`` (one sequence of space-separated
    tokens each); its path."""
    if fmt == "lines":
        path.write_text("".join(r + "\n" for r in records))
    else:
        path.write_text("id,sequence\n" + "".join(f"r{i},{r}\n" for i, r in enumerate(records)))
    return path


def neighbours(tmp_path, fmt, shared, extra):
    """The paths of D (the ``shared`` records) and D' (D and one record ``extra``)."""
    ext = "txt" if fmt == "lines" else "csv"
    return (write_file(tmp_path / f"d.{ext}", fmt, shared),
            write_file(tmp_path / f"d2.{ext}", fmt, shared + [extra]))


def labelled(db):
    """Each sequence of ``db`` as its item labels."""
    return [[db.vocab.labels[i] for i in row] for row in _id_rows(db)]


def _id_rows(db):
    bounds = db.offsets.tolist()
    items = db.items.tolist()
    return [items[lo:hi] for lo, hi in zip(bounds[:-1], bounds[1:])]


def read(path, fmt, loader=dpgpu.load, **options):
    return loader(path, format=fmt, **options)


# ------------------------------------------------------------- the reproduction
@pytest.mark.parametrize("fmt", ["lines", "column"])
def test_the_review_reproduction_no_longer_moves_every_count(tmp_path, fmt):
    d, d2 = neighbours(tmp_path, fmt, ["07"] * 100, "x")
    one, two = read(d, fmt, vocab=PUBLIC), read(d2, fmt, vocab=PUBLIC)
    counts = [collections.Counter(x for s in labelled(db) for x in s) for db in (one, two)]
    assert counts[0] == {"07": 100}
    assert counts[1] == {"07": 100, "x": 1}
    assert _id_rows(two)[:100] == _id_rows(one)  # ids of the public vocabulary: the same


@pytest.mark.parametrize("fmt", ["lines", "column"])
@pytest.mark.parametrize("vocab", [PUBLIC + ["-0", "+7", "0", "12", "-3"], None],
                         ids=["public", "data"])
@pytest.mark.parametrize("shared", list(SHARED))
@pytest.mark.parametrize("extra", EXTRA)
def test_neighbours_read_every_shared_record_identically(tmp_path, fmt, vocab, shared, extra):
    d, d2 = neighbours(tmp_path, fmt, SHARED[shared], extra)
    one, two = read(d, fmt, vocab=vocab), read(d2, fmt, vocab=vocab)
    n = len(SHARED[shared])
    assert labelled(two)[:n] == labelled(one) == [r.split() for r in SHARED[shared]]
    assert labelled(two)[n:] == [extra.split()]
    if vocab is not None:  # ids follow the public vocabulary
        assert _id_rows(two)[:n] == _id_rows(one)


def test_dask_reads_the_neighbours_as_a_local_load(tmp_path, dask_client):
    pytest.importorskip("dask.distributed")
    from dpgpu.scale.loading import load_distributed  # noqa: PLC0415 - needs dask

    # enough records that the extra one lands in a part of its own
    d, d2 = neighbours(tmp_path, "lines", ["07 7", "7"] * 200, "x")
    for vocab in (PUBLIC, None):
        local = [read(p, "lines", vocab=vocab) for p in (d, d2)]
        far = [load_distributed(p, dask_client, format="lines", partitions=4,
                                vocab=vocab).collect() for p in (d, d2)]
        for got, want in zip(far, local):
            assert got.items.tolist() == want.items.tolist()
            assert got.offsets.tolist() == want.offsets.tolist()
            assert got.vocab.labels == want.vocab.labels and got.source == want.source
        assert labelled(far[1])[:400] == labelled(far[0]) == [["07", "7"], ["7"]] * 200


# ------------------------------------------------------------- the rule itself
@pytest.mark.parametrize("token, canonical", [
    ("0", True), ("7", True), ("-12", True), ("123456789012345678", True),
    ("07", False), ("00", False), ("-0", False), ("-07", False), ("+7", False),
    (" 7", False), ("7 ", False), ("1_0", False), ("\u0663", False), ("7\n", False),
    ("1234567890123456789", False), ("", False), ("-", False), ("x", False),
])
def test_canonical_integers_are_those_that_print_as_written(token, canonical):
    assert text.is_canonical_int(token) is canonical
    if canonical:
        assert str(int(token)) == token


@pytest.mark.parametrize("fmt", ["lines", "column"])
def test_a_file_of_canonical_integers_still_reads_as_integers_in_numeric_order(tmp_path, fmt):
    path = write_file(tmp_path / ("t.txt" if fmt == "lines" else "t.csv"), fmt,
                      ["10 2 -3", "0", "", "100 2"])
    db = read(path, fmt)
    assert db.source["tokens"] == "int"
    assert db.vocab.labels == ["-3", "0", "2", "10", "100"]  # by value, not as text
    assert labelled(db) == [["10", "2", "-3"], ["0"], [], ["100", "2"]]


@pytest.mark.parametrize("fmt", ["lines", "column"])
@pytest.mark.parametrize("body", [["07"], ["7 07"], ["-0 1"], ["5", "007 7"]])
def test_a_non_canonical_integer_makes_the_file_text_in_auto_mode(tmp_path, fmt, body):
    path = write_file(tmp_path / ("t.txt" if fmt == "lines" else "t.csv"), fmt, body)
    db = read(path, fmt)
    assert db.source["tokens"] == "str"
    assert labelled(db) == [r.split() for r in body]  # every token as written
    # tokens="int" was asked for numbers: it still labels them as they print
    assert labelled(read(path, fmt, tokens="int")) == [[str(int(t)) for t in r.split()]
                                                       for r in body]


def test_auto_reads_lines_independently_of_the_block_size(monkeypatch):
    data = b"1 2 3\n" * 20 + b"07\n" + b"4 5\n" * 20
    want = labelled(text.read_lines("f", data))
    for block in (6, 7, 13, 64):
        monkeypatch.setattr(text, "BLOCK_BYTES", block)
        got = text.read_lines("f", data)
        assert labelled(got) == want and got.source["tokens"] == "str"
    assert want[20] == ["07"] and want[0] == ["1", "2", "3"]


def test_a_public_vocabulary_label_is_matched_exactly(tmp_path):
    """A data token that is not exactly a label stays an error, whatever the other records."""
    path = write_file(tmp_path / "t.txt", "lines", ["7"] * 5 + ["07"])
    with pytest.raises(dpgpu.InputError, match="item '07' not in the vocabulary"):
        dpgpu.load(path, vocab=["7", "x"])
    path = write_file(tmp_path / "u.txt", "lines", ["07"] * 5)
    with pytest.raises(dpgpu.InputError, match="item '07' not in the vocabulary"):
        dpgpu.load(path, vocab=["7"])


# ------------------------------------------------------------- synthetic file format
def synthetic_release(db, out, sequences):
    """Write ``sequences`` (labels of ``db``'s public vocabulary) as the synthetic data of a
    release of ``db``; the report entries and the file's bytes."""
    ids = [db.vocab.id_of(x) for s in sequences for x in s]
    synthetic = synthetic_like(db, np.array(ids, dtype=np.int32), [len(s) for s in sequences])
    with ReleaseWriter(out) as rel:
        entries = rel.synthetic_entries(synthetic)
        rel.finish({"mechanism": "test", "epsilon": 1.0,
                    "vocabulary": vocabulary_facts(db.vocab, shown=True), **entries})
    return entries, (out / entries["synthetic_file"]).read_bytes(), synthetic


@pytest.mark.parametrize("fmt", ["lines", "column"])
@pytest.mark.parametrize("output", [[["07", "7"], ["7"]], [["07"]], [["7"], []]])
def test_neighbours_with_the_same_output_labels_get_the_same_synthetic_file(tmp_path, fmt,
                                                                           output):
    d, d2 = neighbours(tmp_path, fmt, ["7"] * 50, "x")  # D all integers, D' not
    files = []
    for path in (d, d2):
        db = read(path, fmt, vocab=PUBLIC)
        assert label_problem(synthetic_like(db, db.items, db.lengths), fmt) is None
        entries, data, synthetic = synthetic_release(db, tmp_path / f"rel-{path.stem}", output)
        files.append((entries, data))
        assert entries["synthetic_format"] == fmt
        back = dpgpu.load_release(tmp_path / f"rel-{path.stem}").synthetic(vocab=PUBLIC)
        assert labelled(back) == output
        assert dpgpu.load(tmp_path / f"rel-{path.stem}" / entries["synthetic_file"],
                          format=fmt, vocab=PUBLIC).items.tolist() == synthetic.items.tolist()
    assert files[0] == files[1]


def test_the_lines_writer_decides_from_the_labels_only():
    """Labels 07 and 7 fit a lines file whatever ``source["tokens"]`` says."""
    db = SequenceDB.from_sequences([["07", "7"]], vocab=["7", "07"])
    for tokens in ("int", "str", None):
        db.source = {"format": "lines"} if tokens is None else {"format": "lines",
                                                                "tokens": tokens}
        assert label_problem(db, "lines") is None and label_problem(db, "column") is None


@pytest.mark.parametrize("fmt, name", [("lines", "out.txt"), ("column", "out.csv")])
def test_integers_with_leading_zeros_are_written_and_read_back_as_written(tmp_path, fmt, name):
    """Once refused (``item '007' would read back as 7``): tokens="auto" now reads them so."""
    db = SequenceDB.from_sequences([["007", "7"], ["-0"], ["7"]])
    db.save(tmp_path / name, format=fmt)
    back = dpgpu.load(tmp_path / name, format=fmt)
    assert labelled(back) == [["007", "7"], ["-0"], ["7"]]
