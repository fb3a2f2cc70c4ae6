"""Release files are written in bulk (whole columns, chunks of sequences) exactly as a
simple row-by-row writer would write them, and say so under ``-v``."""

from __future__ import annotations

import io
import logging
import unicodedata
from urllib.parse import unquote

import numpy as np
import pytest

import dpgpu
from dpgpu import SequenceDB, Vocabulary
from dpgpu.cli import main
from dpgpu.data import writers
from dpgpu.release import ReleaseWriter, encode_gram, encode_id_grams, encode_ids

#: Labels a release file %-encodes or must keep apart from the markers.
AWKWARD = ["&", "$", "%", "a b", "Send Fine", "café", "名前 です", "R&D", "$5", "100%", "x\ty",
           "plain", "%26", "&&"]


def test_encoded_grams_equal_encoding_each_gram():
    vocab = Vocabulary(AWKWARD)
    rng = np.random.default_rng(3)
    ids = rng.integers(0, vocab.size + 2, size=(200, 4))  # items and both markers
    assert encode_id_grams(vocab, ids).tolist() == [encode_ids(vocab, g) for g in ids.tolist()]
    ragged = [[0], [1, 2, vocab.end_id], [], [vocab.start_id, 3], [4, 5, 6, 7, 8], [9]]
    assert encode_id_grams(vocab, ragged).tolist() == [encode_ids(vocab, g) for g in ragged]
    items = [g for g in ragged if all(i < vocab.size for i in g)]
    assert encode_id_grams(vocab, items).tolist() == \
        [encode_gram(vocab.decode(g)) for g in items]
    assert encode_id_grams(vocab, [[0, 1]]).tolist() == ["%26 %24"]
    assert encode_id_grams(vocab, np.zeros((0, 3), dtype=np.int32)).tolist() == []
    assert encode_id_grams(vocab, []).tolist() == []


def test_labels_are_encoded_only_where_a_gram_file_needs_it():
    pool = "ab%& $\t\n\r\x0b\x0c\x00\x1f\x7f\x85\u00a0\u2028\u3000éß名前😀-_/"
    rng = np.random.default_rng(8)
    labels = ["".join(rng.choice(list(pool), rng.integers(1, 6))) for _ in range(3000)]
    labels += ["&", "$", "%26", "café", "名前"]
    tokens = encode_gram(labels).split(" ")
    assert len(tokens) == len(labels)
    for label, token in zip(labels, tokens):
        assert unquote(token) == label
        if label in ("&", "$"):
            assert token == {"&": "%26", "$": "%24"}[label]
            continue
        kept = [c for c in label if not (c == "%" or c.isspace() or unicodedata.category(c) == "Cc")]
        assert all(c in token for c in kept)
        assert token.count("%") == sum(len(c.encode()) for c in label if c not in kept)
        assert not any(c.isspace() or unicodedata.category(c) == "Cc" for c in token)
    assert encode_gram(["café", "名前 です", "100%"]) == "café 名前%20です 100%25"


def _reference_tsv(header, rows):
    return "\t".join(header) + "\n" + "".join("\t".join(str(x) for x in r) + "\n" for r in rows)


def test_columns_are_written_as_rows_would_be(tmp_path, monkeypatch):
    monkeypatch.setattr("dpgpu.release._CHUNK_ROWS", 7)  # several chunks, one partial
    vocab = Vocabulary(AWKWARD)
    grams = np.random.default_rng(5).integers(0, vocab.size + 1, size=(30, 3))
    noisy = np.arange(-10, 20, dtype=np.int64)
    counts = [f"{c:.3f}" for c in np.linspace(-1.5, 1e6, 30).tolist()]
    with ReleaseWriter(tmp_path / "rel") as rel:
        rel.write_columns("a.tsv", ["gram", "noisy", "count"],
                          [encode_id_grams(vocab, grams), noisy, counts])
        rel.write_columns("b.tsv", ["k", "x"], [[1, 2], ["a", 0.5]])
        rel.write_columns("empty.tsv", ["k", "gram"], [[], []])
        rel.finish({"mechanism": "test"})
    rows = [(encode_ids(vocab, g), a, c) for g, a, c in zip(grams.tolist(), noisy.tolist(),
                                                             counts)]
    out = tmp_path / "rel"
    assert (out / "a.tsv").read_text(encoding="utf-8") == \
        _reference_tsv(["gram", "noisy", "count"], rows)
    assert (out / "b.tsv").read_text() == "k\tx\n1\ta\n2\t0.5\n"
    assert (out / "empty.tsv").read_text() == "k\tgram\n"


def test_ngram_release_file_matches_a_row_by_row_reference(tmp_path, caplog):
    vocab = Vocabulary(AWKWARD)
    rng = np.random.default_rng(11)
    db = SequenceDB.from_sequences(
        [[AWKWARD[i] for i in rng.integers(0, len(AWKWARD), rng.integers(0, 8))]
         for _ in range(300)], vocab=vocab)
    rel = dpgpu.ngram(db, 2.0, seed=4, synthetic=False)
    with caplog.at_level(logging.INFO, logger="dpgpu"):
        rel.save(tmp_path / "rel")
    rows = [(encode_ids(vocab, g), a, repr(c)) for lvl in rel.levels
            for g, a, c in zip(lvl.grams.tolist(), lvl.noisy.tolist(), lvl.count.tolist())]
    assert (tmp_path / "rel" / "ngrams.tsv").read_text(encoding="utf-8") == \
        _reference_tsv(["gram", "noisy_count", "count"], rows)
    assert f"ngram: writing ngrams.tsv: {len(rows)} rows" in caplog.text


def _reference_rows(db, labels, sep, end):
    """The sequence writers' text as they wrote it one sequence at a time."""
    return "".join(sep.join(labels[j] for j in db.sequence_ids(i).tolist()) + end
                   for i in range(len(db)))


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(writers, "_CHUNK_ITEMS", 5)
    monkeypatch.setattr(writers, "_CHUNK_SEQUENCES", 3)


def _db(labels, n=60, seed=2):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 9, n)
    lengths[[0, 5, 6, -1]] = 0  # empty sequences, first and last included
    lengths[10] = 40  # longer than a chunk
    items = rng.integers(0, len(labels), int(lengths.sum()))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    return SequenceDB(items, offsets, Vocabulary(labels))


@pytest.mark.parametrize("chunked", [False, True])
def test_sequence_writers_match_a_sequence_by_sequence_reference(tmp_path, request, chunked):
    if chunked:
        request.getfixturevalue("small_chunks")
    words = ["a", "b=c", "café", "名前", "x%y", "&", "$", "-1"]
    db = _db(words)
    numbers = [str(i + 1) for i in range(len(words))]  # seq and SPMF number items from 1
    cases = {"lines": _reference_rows(db, words, " ", "\n"),
             "seq": _reference_rows(db, [x + " " for x in numbers], "", "\n"),
             "spmf": _reference_rows(db, [x + " -1 " for x in numbers], "", "-2\n")}
    for fmt, body in cases.items():
        stream = io.StringIO()
        getattr(writers, f"write_{fmt}")(db, stream)
        text = stream.getvalue()
        if fmt == "lines":
            assert text == body
        else:  # after the header
            assert text.endswith(body) and text[:-len(body)].endswith("\n")
    stripped = _db(["0", "7", "12"])
    stripped.source.update(format="spmf", stripped=True)
    stream = io.StringIO()
    writers.write_spmf(stripped, stream)
    assert stream.getvalue() == _reference_rows(stripped, ["0", "7", "12"], " ", "\n")


def test_written_synthetic_files_read_back(tmp_path, small_chunks):
    db = _db(["a", "b=c", "café", "名前"])
    for fmt, name in (("lines", "s.txt"), ("seq", "s.seq"), ("spmf", "s.spmf")):
        db.save(tmp_path / name, format=fmt)
        back = dpgpu.load(tmp_path / name, format=fmt, vocab=db.vocab)
        assert list(back) == list(db)


def test_the_synthetic_format_check_stops_at_the_wanted_format(tmp_path, monkeypatch):
    """Checking csv/xes/parquet builds every sequence's case name: not done when the input's
    own format can hold the synthetic data."""
    asked = []
    problem = writers._label_problem
    monkeypatch.setattr(writers, "_label_problem",
                        lambda db, fmt, occurring: asked.append(fmt) or problem(db, fmt,
                                                                                occurring))
    db = SequenceDB.from_sequences([["a", "b"], ["b"]], vocab=Vocabulary(["a", "b"]))
    db.source["format"] = "lines"
    with ReleaseWriter(tmp_path / "rel") as rel:
        assert rel.write_synthetic(db) == ("synthetic.txt", "lines")
    assert set(asked) == {"lines"}
    asked.clear()
    spaced = SequenceDB.from_sequences([["Send Fine"]], vocab=Vocabulary(["Send Fine"]))
    spaced.source["format"] = "lines"
    with ReleaseWriter(tmp_path / "rel2") as rel:
        assert rel.write_synthetic(spaced) == ("synthetic.txt", "spmf")  # spmf holds it
    assert "csv" not in asked and "xes" not in asked and "spmf" in asked


def test_synthetic_writing_is_logged(tmp_path, caplog):
    db = SequenceDB.from_sequences([["a", "b"], ["b"]])
    rel = dpgpu.pst(db, 1.0, seed=1)
    with caplog.at_level(logging.INFO, logger="dpgpu"):
        rel.save(tmp_path / "rel")
    assert "pst: writing pst.json" in caplog.text
    assert f"pst: writing synthetic.txt: {len(rel.synthetic)} sequences" in caplog.text


@pytest.mark.parametrize("fmt, name", [("lines", "e.txt"), ("seq", "e.seq"), ("spmf", "e.spmf"),
                                       ("xes", "e.xes"), ("wide", "e.wide.csv"),
                                       ("csv", "e.csv"), ("parquet", "e.parquet"),
                                       ("trajectory", "t.csv")])
def test_empty_sequences_are_written_or_counted_in_a_warning(tmp_path, caplog, fmt, name):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    labels = ["0_0", "1_0", "0_1", "1_1"]  # cells of a 2x2 grid, for trajectories
    db = _db(labels, n=30)
    options = {}
    if fmt == "trajectory":
        options = {"grid": "2x2", "bounds": "0,2,0,2", "repeats": "keep"}
        db.source.update(format="trajectory", grid=[2, 2], bounds=[0.0, 2.0, 0.0, 2.0])
    if fmt == "wide":
        options = {"states": f"1:{db.lengths.max()}"}
    empty = int(np.count_nonzero(db.lengths == 0))
    assert empty >= 4
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        n = db.save(tmp_path / name, format=fmt)
    back = dpgpu.load(tmp_path / name, format=fmt, vocab=db.vocab, **options)
    dropped = fmt in writers.ROW_FORMATS
    assert n == len(back) == len(db) - (empty if dropped else 0)
    assert back.n_events == db.n_events
    warned = [r.getMessage() for r in caplog.records if "were not written" in r.getMessage()]
    assert warned == ([f"{name}: {empty} of the {len(db)} sequences are empty and "
                       f"were not written: a {fmt} file has a row per item, so a sequence "
                       "without items has no row"] if dropped else [])


def test_convert_counts_the_sequences_it_wrote(tmp_path, capsys, caplog):
    src = tmp_path / "in.txt"
    src.write_text("a b\n\nc\n\n")
    assert main(["convert", str(src), str(tmp_path / "out.csv")]) == 0
    assert capsys.readouterr().out.strip() == f"wrote 2 sequences to {tmp_path / 'out.csv'} as csv"
    assert "2 of the 4 sequences are empty" in caplog.text
