"""dpgpu.data.reading: the helpers the block readers share."""

from __future__ import annotations

import gc
import logging
import random

import numpy as np
import pytest

from dpgpu.data import reading
from dpgpu.data.users import read_text_csv


def test_numbering_numbers_values_in_order_of_first_appearance_across_blocks():
    rng = random.Random(3)
    values = [rng.choice("abcdefg") for _ in range(500)]
    table = reading.numbering(["z"])
    codes = np.concatenate([reading.encode_values(values[i:i + 37], table)
                            for i in range(0, len(values), 37)])
    first = ["z"] + list(dict.fromkeys(values))
    assert list(table) == first
    assert codes.tolist() == [first.index(v) for v in values]
    assert "q" not in table and len(table) == len(first)  # `in` numbers nothing


def test_distinct_values_inverts():
    values = ["b", "a", "b", "c", "a"]
    distinct, inverse = reading.distinct_values(values)
    assert distinct == ["b", "a", "c"]
    assert [distinct[i] for i in inverse] == values


def test_gc_paused_restores_the_collector_after_an_error():
    was = gc.isenabled()
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            with pytest.raises(ValueError):
                with reading.gc_paused():
                    assert not gc.isenabled()
                    raise ValueError
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_read_progress_logs_only_when_due(monkeypatch, caplog):
    with caplog.at_level(logging.INFO, logger="dpgpu"):
        reading.ReadProgress("f.csv")(5, 10, 7)  # not due: 5 s have not passed
        assert not caplog.records
        monkeypatch.setattr(reading, "PROGRESS_SECONDS", -1.0)
        reading.ReadProgress("f.csv", "row")(5, 10, 7)
    assert [r.getMessage() for r in caplog.records] == ["f.csv: 50% read (row 7)"]


@pytest.mark.parametrize(("data", "utf8"), [(b"plain", True), ("é€".encode(), True),
                                           (b"\xff", False), ("é".encode()[:1], False)])
def test_is_utf8(data, utf8):
    assert reading.is_utf8(data) is utf8


def test_text_csv_reads_a_post_longer_than_the_csv_modules_default_field_limit(tmp_path):
    post = "word " * 40_000  # 200,000 characters; the csv module stops at 131,072 by default
    path = tmp_path / "posts.csv"
    path.write_text(f'author,content\nann,"{post}"\n')
    db = read_text_csv(path, path.read_bytes())
    assert db.n_events == 40_000



def test_text_csv_leaves_the_csv_field_limit_as_it_was(tmp_path):
    import csv

    before = csv.field_size_limit()
    path = tmp_path / "posts.csv"
    path.write_text("author,content\nann,hello\n")
    read_text_csv(path, path.read_bytes())
    assert csv.field_size_limit() == before
