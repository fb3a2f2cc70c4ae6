"""bench/naive.py: the naive baselines count what they say, checked by brute force."""

from __future__ import annotations

import math
import sys
from itertools import product
from pathlib import Path

import numpy as np
import pytest

import dpgpu

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from naive import db_rows, naive_dpne_histograms, naive_pst_histograms, naive_seconds  # noqa: E402

ROWS = [[0, 1, 0, 2], [1], [], [2, 2, 2, 2, 2, 0], [0, 1]]


def occurrences(text: list, pattern: tuple) -> int:
    n = len(pattern)
    return sum(tuple(text[i:i + n]) == pattern for i in range(len(text) - n + 1))


@pytest.mark.parametrize("l_top", [1, 3, 20])
def test_pst_histograms_count_each_context_followed_by_each_symbol(l_top):
    start, end = 4, 3
    texts = [[start] + r[:l_top] + ([end] if len(r) < l_top else []) for r in ROWS]
    # every context over I ∪ {$} up to length 2, as a suffix-closed tree
    contexts = [()] + [(a,) for a in (0, 1, 2, start)] + list(product((0, 1, 2, start), (0, 1, 2)))
    hist = naive_pst_histograms(ROWS, l_top, contexts, 3)
    for ctx in contexts:
        for x in (0, 1, 2, end):
            expect = sum(occurrences(t, ctx + (x,)) for t in texts)
            assert hist[ctx][x] == expect, (ctx, x)


def test_dpne_histograms_weigh_each_users_valid_grams():
    users = {"a": [[0, 1, 2], [0, 1]], "b": [[1, 2, 1]], "c": [[2]]}
    released = [{(0,), (1,), (2,)}, {(0, 1), (1, 2)}, set()]
    h1, h2, h3 = naive_dpne_histograms(users, released, contribution=10)
    assert h1 == pytest.approx({(0,): 1 / math.sqrt(3), (1,): 1 / math.sqrt(3) + 1 / math.sqrt(2),
                                (2,): 1 / math.sqrt(3) + 1 / math.sqrt(2) + 1})
    # level 2: every 2-gram of released items is valid (a: 01, 12; b: 12, 21; c: none);
    # level 3: a's 012 has prefix 01 and suffix 12 released, b's 121 lacks its suffix 21
    half = 1 / math.sqrt(2)
    assert h2 == pytest.approx({(0, 1): half, (1, 2): 2 * half, (2, 1): half})
    assert h3 == pytest.approx({(0, 1, 2): 1.0})


def test_dpne_histograms_keep_at_most_the_contribution():
    users = {u: [[0, 1, 2, 3, 4]] for u in range(50)}
    (h1,) = naive_dpne_histograms(users, [set()], contribution=2)
    assert sum(h1.values()) == pytest.approx(50 * 2 / math.sqrt(2))
    assert len(h1) > 2  # the kept items vary between users


def test_db_rows_and_scaled_naive_seconds():
    db = dpgpu.SequenceDB.from_sequences([["a", "b"], [], ["b", "b", "a"]])
    labels = [[db.vocab.labels[i] for i in r] for r in db_rows(db)]
    assert labels == [["a", "b"], [], ["b", "b", "a"]]
    assert naive_seconds(db, 2, None, sample_tokens=1) > 0
    assert np.isfinite(naive_seconds(db, 2, 20))
