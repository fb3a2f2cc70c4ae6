"""bench/bench_readers.py: its plain-Python readers give dpgpu.load's sequences.

The benchmark's speed ratios are only meaningful when both sides produce the
same data; this runs that comparison on a small corpus in every format.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import dpgpu
from dpgpu.data.generate import markov_sequences

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import bench_readers  # noqa: E402


@pytest.mark.parametrize("fmt", sorted(bench_readers.FILES))
def test_naive_reader_agrees_with_dpgpu(tmp_path, fmt):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    db = markov_sequences(3000, seed=4)
    bench_readers.write_corpus(db, tmp_path, [fmt])
    path = tmp_path / bench_readers.FILES[fmt]
    naive = bench_readers.NAIVE[fmt](str(path))
    assert naive == [tuple(seq) for seq in dpgpu.load(path, **bench_readers.LOAD_OPTIONS.get(
        fmt, {}))]
    if fmt == "trajectory":  # item k is a point in a cell named by k; rows are shuffled
        ids = db.items.tolist()
        want = [tuple(map(bench_readers.cell_label, ids[lo:hi]))
                for lo, hi in zip(db.offsets[:-1].tolist(), db.offsets[1:].tolist())]
        naive, want = sorted(naive), sorted(want)
    else:
        prefix = "w" if fmt == "jsonl" else ""  # the text corpus's words are w<label>
        want = [tuple(prefix + label for label in seq) for seq in db]
    assert naive == want
