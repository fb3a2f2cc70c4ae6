"""The benchmark workload generator."""

import numpy as np
import pytest

from dpgpu import InvalidParameter
from dpgpu.data.generate import markov_sequences


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
