"""PFS² and ``convert --to wide`` stay bounded whatever the vocabulary or the data."""

from __future__ import annotations


import numpy as np
import pytest

import dpgpu.commands.convert as convert_module
import dpgpu.data.io as io_module
import dpgpu.eval.subseq_numba as subseq_numba
import dpgpu.mechanisms.pfs2 as pfs2_module
from dpgpu.backend import get_backend
from dpgpu.cli import main
from dpgpu.data.sequencedb import SequenceDB
from dpgpu.errors import InvalidParameter
from dpgpu.eval.truth import subsequence_supports
from dpgpu.mechanisms.pfs2 import MAX_CANDIDATES, MAX_CANDIDATES_LIMIT, pfs2
from dpgpu.mechanisms.pfs2 import support as support_module


@pytest.fixture
def no_data_read(monkeypatch):
    """Fail any PFS2 run that reaches the data."""
    def read(*args, **kwargs):
        raise AssertionError("the data was read")
    monkeypatch.setattr(pfs2_module, "partition", read)


def small_db():
    return SequenceDB.from_sequences([["a", "b"], ["b", "a", "c"]], vocab=["a", "b", "c"])


def test_max_candidates_above_the_limit_is_refused_up_front(no_data_read):
    """Regression: the default cap of 10^7 candidates, Python tuples of about 1 KB each, took
    about 10 GB and minutes on 100 sequences when noise made half a large vocabulary frequent."""
    assert MAX_CANDIDATES <= MAX_CANDIDATES_LIMIT
    with pytest.raises(InvalidParameter, match=rf"^max_candidates: at most "
                                               rf"{MAX_CANDIDATES_LIMIT} .*got 10000000$"):
        pfs2(small_db(), 1.0, 0.1, max_candidates=10_000_000)


def test_a_vocabulary_above_the_limit_is_refused_up_front(no_data_read, monkeypatch):
    monkeypatch.setattr(pfs2_module, "MAX_CANDIDATES_LIMIT", 2)
    with pytest.raises(InvalidParameter, match=r"^max_candidates: the vocabulary's 3 items "
                                               r"need at least as many, above the limit of 2"):
        pfs2(small_db(), 1.0, 0.1, max_candidates=2)


def test_cli_refuses_max_candidates_above_the_limit(tmp_path, capsys):
    data = tmp_path / "toy.txt"
    data.write_text("a b\nb a c\n")
    assert main(["pfs2", str(data), "--epsilon", "1", "--threshold", "0.1", "--quiet",
                 "--max-candidates", "1e7", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpgpu: error: max_candidates: at most") and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_cpu_supports_are_counted_in_chunks_of_sequences(monkeypatch):
    """Regression: one Numba call counted all sequences against all candidates, so SIGTERM
    waited for minutes; the chunks' supports add up to the same integers."""
    rng = np.random.default_rng(3)
    rows = [[str(x) for x in rng.integers(0, 5, size=rng.integers(0, 7))] for _ in range(50)]
    db = SequenceDB.from_sequences(rows, vocab=[str(i) for i in range(5)])
    weights = rng.integers(1, 4, size=len(db))
    patterns = [(0,), (1, 2), (2, 1), (3, 3, 4), (4,), (0, 1, 2)]
    calls = []
    kernel = subseq_numba.support_counts
    monkeypatch.setattr(subseq_numba, "support_counts",
                        lambda *args: calls.append(args[1].size - 1) or kernel(*args))
    monkeypatch.setattr(support_module, "CHUNK_WORK", 1)
    monkeypatch.setattr(support_module, "MIN_CHUNK_SEQUENCES", 7)
    got = support_module.supports(db, weights, patterns, get_backend("numpy"))
    assert calls == [7] * 7 + [1]
    assert got.tolist() == subsequence_supports(db, patterns, weights=weights).tolist()


def test_convert_refuses_a_wide_table_above_the_cell_limit(tmp_path, capsys, monkeypatch):
    """Regression: ``--to wide`` padded 100 rows to a 10^6-item sequence (108 MB from 2.9 MB)
    and would fill the disk, unchecked, with more rows."""
    data = tmp_path / "in.txt"
    data.write_text("a\nb\n" + " ".join(["a"] * 10) + "\n")
    monkeypatch.setattr(convert_module, "MAX_WIDE_CELLS", 29)
    out = tmp_path / "out.csv"
    assert main(["convert", str(data), str(out), "--to", "wide"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dpgpu: error: --to wide: 3 rows padded to the longest sequence "
                          "make 30 cells, above the limit of 29") and "\n" not in err
    assert not out.exists()
    monkeypatch.setattr(convert_module, "MAX_WIDE_CELLS", 30)
    assert main(["convert", str(data), str(out), "--to", "wide"]) == 0


def test_convert_refuses_a_wide_table_beyond_the_free_space(tmp_path, capsys, monkeypatch):
    data = tmp_path / "in.txt"
    data.write_text("a\nb c d\n")

    class Usage:
        free = 5
    monkeypatch.setattr(io_module.shutil, "disk_usage", lambda path: Usage)
    out = tmp_path / "out.csv"
    assert main(["convert", str(data), str(out), "--to", "wide"]) == 2
    assert capsys.readouterr().err.startswith(
        "dpgpu: error: --to wide: 6 cells need at least 6 bytes as out.csv, but ")
    assert not out.exists()
