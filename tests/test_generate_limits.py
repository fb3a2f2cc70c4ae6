"""Bounds of the synthetic generator: sizes it can hold, lengths it can make, disk it can fill."""

import collections
import math
import warnings

import numpy as np
import pytest

import dpgpu
from dpgpu import InvalidParameter
from dpgpu.cli import main
from dpgpu.commands import generate as generate_command
from dpgpu.data import io as io_module
from dpgpu.data.generate import (CONTEXTS, MAX_MEAN_LENGTH, MAX_TABLE, MAX_TOKENS, MAX_ZIPF,
                                 check_mean_length, check_n_items, markov_chunks,
                                 markov_sequences)


# ------------------------------------------------------------------ mean_length
@pytest.mark.parametrize("value", [0.5, 0.999, MAX_MEAN_LENGTH * 1.001, 1e9, 1e19, 1e300,
                                   math.inf, math.nan])
def test_mean_length_out_of_range_is_refused_before_anything_is_generated(value):
    """Regression: 0.5 was taken as 1, 1e9 made one sequence for minutes, 1e19 failed
    with 'array is too big' and 1e300 looped for ever (the sum of the lengths wrapped)."""
    with pytest.raises(InvalidParameter, match="mean_length"):
        markov_chunks(100, mean_length=value)  # no iteration needed


@pytest.mark.parametrize("value", [0.5, 1e19])
def test_markov_sequences_refuses_the_mean_length_too(value):
    with pytest.raises(InvalidParameter, match=r"mean_length: must be in \[1, 100,000\]"):
        markov_sequences(100, mean_length=value)


def test_mean_length_bounds_are_accepted():
    assert check_mean_length(1) == 1.0 and check_mean_length(MAX_MEAN_LENGTH) == MAX_MEAN_LENGTH
    db = markov_sequences(50, mean_length=1, seed=3)
    assert len(db) == 50 and db.n_events == 50  # every sequence has exactly one item


# ------------------------------------------------------------------ n_items and n_tokens
def test_n_items_is_bounded_by_the_chain_table():
    most = MAX_TABLE // CONTEXTS
    assert check_n_items(most) == most == 16_384
    with pytest.raises(InvalidParameter, match="n_items: at most 16,384 with 4,096 contexts"):
        markov_chunks(100, n_items=most + 1)
    assert check_n_items(MAX_TABLE, contexts=1) == MAX_TABLE
    with pytest.raises(InvalidParameter, match="n_items: at most 64 with"):
        markov_chunks(100, n_items=65, contexts=MAX_TABLE // 64)
    with pytest.raises(InvalidParameter, match="contexts"):
        markov_chunks(100, n_items=1, contexts=MAX_TABLE + 1)


def test_markov_sequences_refuses_more_tokens_than_int64_counts_hold():
    with pytest.raises(InvalidParameter, match="n_tokens: must be an integer in"):
        markov_sequences(MAX_TOKENS + 1)
    with pytest.raises(InvalidParameter, match="chunk_tokens"):
        markov_chunks(10, chunk_tokens=MAX_TOKENS + 1)


# ------------------------------------------------------------------ zipf
@pytest.mark.parametrize("value", [MAX_ZIPF * (1 + 2**-52), 400, 1e308])
def test_a_zipf_beyond_the_bound_is_refused(value):
    """Regression: 400 and 1e308 were taken, with NumPy's 'overflow encountered in power'
    on stderr (n_items ** zipf past the largest float)."""
    with pytest.raises(InvalidParameter, match=rf"^zipf: at most {MAX_ZIPF} \(item 2 then"):
        markov_chunks(100, zipf=value)  # no iteration needed
    with pytest.raises(InvalidParameter, match="^zipf: at most"):
        markov_sequences(100, zipf=value)


def test_the_zipf_bound_makes_no_warning_with_the_largest_alphabet():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        db = markov_sequences(2_000, zipf=MAX_ZIPF, n_items=MAX_TABLE // CONTEXTS, seed=1)
    assert db.n_events >= 2_000
    with pytest.raises(InvalidParameter, match="zipf"):
        markov_sequences(2_000, zipf=MAX_ZIPF + 1, n_items=2, seed=1)


# ------------------------------------------------------------------ the CLI
@pytest.fixture
def no_writing(monkeypatch):
    """Fail at once where the command starts to write (the old code wrote until the disk
    was full, or looped, for these options)."""
    def write_parts(*args, **kwargs):
        raise AssertionError("generate started writing")

    monkeypatch.setattr(generate_command, "write_parts", write_parts)


@pytest.mark.parametrize("argv, message", [
    (["--tokens", "1e20"], "--tokens: at most 1,000,000,000,000,000,000, got 1e20"),
    (["--tokens", "1e400"], "--tokens: at most 1,000,000,000,000,000,000, got 1e400"),
    (["--tokens", "99999999999999999999999"], "--tokens: at most 1,000,000,000,000,000,000"),
    (["--tokens", "1000", "--mean-length", "0.5"], "--mean-length: must be in [1, 100,000]"),
    (["--tokens", "1000", "--mean-length", "1e9"], "--mean-length: must be in [1, 100,000]"),
    (["--tokens", "1000", "--mean-length", "1e19"], "--mean-length: must be in [1, 100,000]"),
    (["--tokens", "1000", "--mean-length", "1e300"], "--mean-length: must be in [1, 100,000]"),
    (["--tokens", "1000", "--n-items", "100000000"],
     "--n-items: at most 16,384 with 4,096 contexts"),
    (["--tokens", "1000", "--n-items", "16385"], "--n-items: at most 16,384"),
    (["--tokens", "200", "--zipf", "400"], f"--zipf: at most {MAX_ZIPF} (item 2 then has "
                                           f"2**-{MAX_ZIPF} of item 1's weight), got 400.0"),
    (["--tokens", "200", "--zipf", "1e308"], f"--zipf: at most {MAX_ZIPF}"),
])
def test_generate_cli_refuses_what_it_cannot_make(tmp_path, capsys, no_writing, argv, message):
    out = tmp_path / "g.lines"
    assert main(["generate", str(out), "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_generate_cli_takes_at_most_as_many_jobs_as_cpus(tmp_path, capsys, monkeypatch):
    """Regression: 12 workers started on a 2-CPU machine (about 300 MB each), and 2**63 was
    taken, limited only by the number of chunks."""
    monkeypatch.setattr(generate_command, "available_cpus", lambda: 2)
    out = tmp_path / "g.lines"
    for jobs in ("3", "12", str(2**63)):
        assert main(["generate", str(out), "--tokens", "1e8", "--jobs", jobs]) == 2
        err = capsys.readouterr().err
        assert err == (f"dpgpu: error: --jobs: at most 2, the CPUs this process may use (a "
                       f"worker uses one, and about 300 MB), got {jobs}\n")
        assert list(tmp_path.iterdir()) == []
    taken = []
    real = generate_command.markov_chunks
    monkeypatch.setattr(generate_command, "markov_chunks",
                        lambda *a, **kw: taken.append(kw["jobs"]) or real(*a, **kw))
    assert main(["generate", str(out), "--tokens", "100", "--jobs", "2", "--quiet"]) == 0
    assert taken == [2] and capsys.readouterr().err == ""


Usage = collections.namedtuple("Usage", "total used free")


def test_generate_cli_refuses_an_output_larger_than_the_free_space(tmp_path, capsys, no_writing,
                                                                   monkeypatch):
    monkeypatch.setattr(io_module.shutil, "disk_usage", lambda path: Usage(1, 1, 10_000))
    out = tmp_path / "g.lines"
    assert main(["generate", str(out), "--tokens", "1e4"]) == 2
    err = capsys.readouterr().err
    assert "--tokens: 10,000 items need at least 20,000 bytes as g.lines" in err
    assert f"{tmp_path} has 10,000 bytes free" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["g.lines.gz", "g.seq.gz", "g.parquet"])
def test_compressed_outputs_are_not_refused_for_their_text_size(tmp_path, capsys, monkeypatch,
                                                                name):
    """A .gz output (at least 1/1032 of its text) or a Parquet one may fit where the text
    would not: it is written."""
    if name.endswith("parquet"):
        pytest.importorskip("pyarrow")
    monkeypatch.setattr(io_module.shutil, "disk_usage", lambda path: Usage(1, 1, 10_000))
    out = tmp_path / name
    assert main(["generate", str(out), "--tokens", "1e4", "--seed", "2", "--jobs", "1",
                 "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    back = dpgpu.load(out)
    assert back.n_events == markov_sequences(10_000, seed=2).n_events


def test_generate_cli_takes_the_bounds(tmp_path, capsys):
    out = tmp_path / "g.lines"
    assert main(["generate", str(out), "--tokens", "100", "--mean-length", "1", "--quiet"]) == 0
    back = dpgpu.load(out)
    assert len(back) == 100 and np.all(back.lengths == 1)


@pytest.mark.parametrize("order", [65, 10**6])
def test_a_max_order_beyond_the_cap_is_refused_by_name(tmp_path, order):
    """A history of 1e6 items per sequence ran out of memory ('try fewer sequences')."""
    with pytest.raises(InvalidParameter, match="^max_order: "):
        markov_sequences(1000, seed=1, max_order=order)
    out = tmp_path / "out.lines"
    assert main(["generate", str(out), "--tokens", "1000", "--max-order", str(order)]) == 2
    assert not out.exists()
