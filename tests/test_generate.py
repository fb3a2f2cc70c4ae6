"""The benchmark workload generator, in chunks, and ``dpgpu generate``."""

import json

import numpy as np
import pytest

import dpgpu
from dpgpu import InvalidParameter, SequenceDB
from dpgpu.cli import main
from dpgpu.commands import generate as generate_command
from dpgpu.data import writers
from dpgpu.data.generate import markov_chunks, markov_sequences
from dpgpu.commands.generate import GENERATED_FORMATS


def test_size_seed_and_shape():
    a = markov_sequences(20_000, n_items=50, seed=3)
    b = markov_sequences(20_000, n_items=50, seed=3)
    c = markov_sequences(20_000, n_items=50, seed=4)
    assert 20_000 <= a.n_events < 20_000 + a.max_length
    assert np.array_equal(a.items, b.items) and not np.array_equal(a.items[:1000], c.items[:1000])
    assert a.lengths.min() >= 1 and abs(a.lengths.mean() - 8) < 0.5
    freq = np.bincount(a.items, minlength=50)
    assert freq.max() > 5 * np.median(freq)  # Zipf-skewed, not uniform


def test_order_one_contexts_predict_the_next_item():
    db = markov_sequences(50_000, n_items=30, max_order=1, contexts=64, seed=1)
    pairs = db.gram_counts(2)
    # with one context per previous item, each item's most likely successor is far above 1/30
    best = {}
    for (x, y), c in pairs.items():
        best.setdefault(x, []).append(c)
    shares = [max(v) / sum(v) for v in best.values() if sum(v) > 200]
    assert min(shares) > 2 / 30


@pytest.mark.parametrize("kwargs", [{"n_tokens": 0}, {"zipf": float("nan")},
                                    {"mean_length": -1}, {"n_items": 0}])
def test_invalid_parameters(kwargs):
    args = {"n_tokens": 100, **kwargs}
    with pytest.raises(InvalidParameter, match=next(iter(kwargs))):
        markov_sequences(**args)


# ------------------------------------------------------------------ in chunks
def concatenated(parts):
    """One database of ``parts`` (brute force: every sequence as a list of labels)."""
    return SequenceDB.from_sequences([s for part in parts for s in part],
                                     vocab=parts[0].vocab)


def test_one_chunk_is_markov_sequences_itself():
    (only,) = markov_chunks(30_000, seed=5, chunk_tokens=30_000)
    whole = markov_sequences(30_000, seed=5)
    assert np.array_equal(only.items, whole.items) and np.array_equal(only.offsets, whole.offsets)


def test_chunks_sizes_seeds_and_workers():
    parts = list(markov_chunks(25_000, seed=2, chunk_tokens=7_000))
    assert len(parts) == 4
    assert [p.n_events >= size for p, size in zip(parts, (7_000, 7_000, 7_000, 4_000))] == [True] * 4
    assert all(p.n_events < size + p.max_length
               for p, size in zip(parts, (7_000, 7_000, 7_000, 4_000)))
    # chunk i > 0 comes from seed (2, i), chunk 0 from 2
    assert np.array_equal(parts[0].items, markov_sequences(7_000, seed=2).items)
    assert np.array_equal(parts[2].items, markov_sequences(7_000, seed=(2, 2)).items)
    assert not np.array_equal(parts[1].items[:500], parts[2].items[:500])
    spawned = list(markov_chunks(25_000, seed=2, chunk_tokens=7_000, jobs=2))
    assert all(np.array_equal(a.items, b.items) and np.array_equal(a.offsets, b.offsets)
               for a, b in zip(parts, spawned)) and len(spawned) == 4


@pytest.mark.parametrize("kwargs", [{"seed": -1}, {"chunk_tokens": 0}, {"jobs": 0},
                                    {"n_tokens": 1.5}, {"zipf": float("inf")}])
def test_chunk_parameters_are_checked_when_called(kwargs):
    args = {"n_tokens": 100, **kwargs}
    with pytest.raises(InvalidParameter, match=next(iter(kwargs))):
        markov_chunks(**args)  # no iteration needed


@pytest.mark.parametrize("fmt", GENERATED_FORMATS)
def test_written_in_parts_as_written_whole(tmp_path, fmt, monkeypatch):
    if fmt == "parquet":
        pq = pytest.importorskip("pyarrow.parquet")
    monkeypatch.setattr(writers, "_CHUNK_ITEMS", 500)  # parts within the chunks too
    parts = list(markov_chunks(6_000, seed=1, chunk_tokens=2_000, n_items=12))
    counts = writers.write_parts(iter(parts), tmp_path / f"parts.{fmt}", fmt)
    whole = concatenated(parts)
    whole.source.update(parts[0].source)
    writers.write(whole, tmp_path / f"whole.{fmt}", fmt)
    assert counts == (len(whole), whole.n_events)
    a, b = tmp_path / f"parts.{fmt}", tmp_path / f"whole.{fmt}"
    if fmt == "parquet":  # row groups may differ
        assert pq.read_table(a).equals(pq.read_table(b))
    else:
        assert a.read_bytes() == b.read_bytes()
    assert list(dpgpu.load(a, format=fmt)) == list(whole)


def test_write_parts_refuses_the_wide_format(tmp_path):
    with pytest.raises(InvalidParameter, match="wide is not written a part at a time"):
        writers.write_parts(markov_chunks(100, seed=1), tmp_path / "w.csv", "wide")
    assert list(tmp_path.iterdir()) == []


def test_write_parts_refuses_parts_it_cannot_name(tmp_path):
    first = markov_sequences(1_000, seed=1, n_items=10)
    other = markov_sequences(1_000, seed=2, n_items=11)
    users = markov_sequences(1_000, seed=2, n_items=10)
    users.users = np.zeros(len(users), dtype=np.int32)
    cases = markov_sequences(1_000, seed=2, n_items=10)
    cases.source["cases"] = [f"c{i}" for i in range(len(cases))]
    for bad in (other, users, cases):
        with pytest.raises(InvalidParameter, match="db_parts"):
            writers.write_parts([first, bad], tmp_path / "x.csv", "csv")
        assert not (tmp_path / "x.csv").exists()  # nothing left behind
    with pytest.raises(InvalidParameter, match="db_parts: no part"):
        writers.write_parts([], tmp_path / "x.csv", "csv")


# ------------------------------------------------------------------ the CLI
def test_generate_cli_writes_the_chunks(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(generate_command, "CHUNK_TOKENS", 3_000)
    out = tmp_path / "g.seq.gz"
    assert main(["generate", str(out), "--tokens", "1e4", "--seed", "4", "--n-items", "20",
                 "--jobs", "1", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    parts = list(markov_chunks(10_000, seed=4, chunk_tokens=3_000, n_items=20))
    back = dpgpu.load(out)
    assert list(back) == list(concatenated(parts))
    assert summary == {"output": str(out), "format": "seq", "sequences": len(back),
                       "items": back.n_events, "seed": 4}


@pytest.mark.parametrize("argv, message", [
    (["--tokens", "1.5"], "--tokens: expected a whole number"),
    (["--tokens", "nan"], "--tokens: expected a whole number"),
    (["--tokens", "-5"], "--tokens: expected a whole number"),
    (["--tokens", "0"], "--tokens: must be an integer at least 1"),
    (["--tokens", "100", "--jobs", "0"], "--jobs: must be an integer at least 1"),
    (["--tokens", "100", "--n-items", "0"], "--n-items: must be an integer at least 1"),
    (["--tokens", "100", "--seed", "x"], "--seed: expected a whole number"),
    (["--tokens", "100", "--zipf", "nan"], "--zipf: must be finite"),
    (["--tokens", "100", "--mean-length", "-1"], "--mean-length: must be finite and > 0"),
    (["--tokens", "100", "--to", "csv"], "--to: csv does not match the extension .seq"),
])
def test_generate_cli_refuses_bad_options(tmp_path, capsys, argv, message):
    out = tmp_path / "g.seq"
    assert main(["generate", str(out), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_generate_cli_keeps_an_existing_output(tmp_path, capsys):
    out = tmp_path / "g.txt"
    out.write_text("mine\n")
    assert main(["generate", str(out), "--tokens", "100"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert out.read_text() == "mine\n"
    assert main(["generate", str(out), "--tokens", "100", "--force", "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    assert list(dpgpu.load(out)) == list(markov_sequences(100, seed=0))


def test_at_least_n_tokens_even_when_the_first_lengths_fall_short():
    # at 7,000 tokens the 5% margin on the drawn lengths is about two standard
    # deviations: seed 2's first draw falls short
    for seed in range(12):
        db = markov_sequences(7_000, seed=seed)
        assert 7_000 <= db.n_events < 7_000 + db.max_length


def test_chunks_are_planned_as_they_are_needed():
    """Regression: every chunk's call was built up front, 5.3 GB before writing at 1e14 tokens
    (and a hang at 1e30)."""
    chunks = markov_chunks(10**30, seed=3, chunk_tokens=500)
    first, second = next(chunks), next(chunks)
    assert first.n_events >= 500 and second.n_events >= 500
    alone = markov_sequences(500, seed=3)
    assert np.array_equal(first.items, alone.items) and np.array_equal(first.offsets, alone.offsets)
