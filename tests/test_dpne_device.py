"""DPNE's array path (the GPU path, :mod:`dpgpu.mechanisms.dpne.device`) against the host path.

Without a GPU the array path runs on NumPy arrays: the same sorts and searches
CuPy runs, compared bit for bit with the Numba loops and with brute force.  The
``gpu`` tests run it on CuPy.
"""

from __future__ import annotations


import numpy as np
import pytest

from dpgpu import SequenceDB, Vocabulary
from dpgpu.mechanisms import dpne as dpne_module
from dpgpu.mechanisms.dpne import dpne
from dpgpu.mechanisms.dpne.calibration import unit_weights
from dpgpu.mechanisms.dpne.counting_numba import candidate_keys, remaining_lengths
from dpgpu.mechanisms.dpne.device import DeviceOccurrences, device_bounded_histogram
from dpgpu.mechanisms.dpne.histogram import TAG_SUBSET, bounded_histogram, merge_histograms
from dpgpu.mechanisms.dpne.levels import MAX_REMAIN, index_of
from dpgpu.ops import bounding
from dpgpu.privacy import NoiseKey


def _offsets(rng, n, max_len):
    return np.r_[0, np.cumsum(rng.integers(0, max_len, n))].astype(np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_remaining_lengths_and_candidate_keys_equal_the_loops(seed):
    rng = np.random.default_rng(seed)
    offsets = _offsets(rng, 60, 400 if seed else 5)         # some beyond MAX_REMAIN
    assert np.array_equal(bounding.remaining_lengths(offsets, MAX_REMAIN),
                          remaining_lengths(offsets, MAX_REMAIN))
    m = int(offsets[-1])
    left = rng.integers(-1, 7, m)
    right = rng.integers(-1, 5, m)
    for shift in (1, 3, m, m + 2):
        valid = rng.random(m) < 0.7
        want_valid = valid.copy()                           # the loop writes into its mask
        want = candidate_keys(want_valid, left, right, shift, 5)
        got_valid, got = bounding.candidate_keys(valid, left, right, shift, 5)
        assert np.array_equal(got_valid, want_valid) and np.array_equal(got, want)


def test_index_of_equals_the_table_lookup():
    rng = np.random.default_rng(1)
    released = np.unique(rng.integers(0, 1000, 300))
    values = rng.integers(-5, 1100, 5000)
    want = index_of(values, released, np.int32)
    assert np.array_equal(bounding.index_of(values, released, np.int32), want)
    assert np.array_equal(bounding.index_of(values, released[:0]), np.full(values.size, -1))


def _brute_bounded(users, grams, cap, key, tag):
    """Dictionary version of the bounded histogram: each user's distinct grams, the ``cap``
    with the smallest keyed words (identity ``user * 2**32 + rank``) when it holds more,
    each weighted ``floor(GRID / sqrt(min(t, cap)))``."""
    held = {}
    for u, g in zip(users.tolist(), grams.tolist()):
        held.setdefault(u, set()).add(g)
    w = unit_weights(cap)
    out = {}
    for u, gs in held.items():
        gs = sorted(gs)
        kept = gs
        if len(gs) > cap:
            ident = np.array([(u << 32) | r for r in range(len(gs))], dtype=np.uint64)
            words = key.packed_words(ident, tag + TAG_SUBSET, backend="numpy").tolist()
            kept = [g for _, _, g in sorted(zip(words, range(len(gs)), gs))[:cap]]
        for g in kept:
            out[g] = out.get(g, 0) + w[min(len(gs), cap)]
    return out


@pytest.mark.parametrize("seed,cap", [(0, 1), (1, 3), (2, 8), (3, 50)])
def test_bounded_histogram_equals_the_loops_and_brute_force(seed, cap):
    rng = np.random.default_rng(seed)
    users = rng.integers(0, 80, 3000)                       # unsorted, many over the cap
    grams = rng.integers(0, 40, users.size) * rng.integers(1, 1000)
    key = NoiseKey.from_seed(seed)
    got = device_bounded_histogram(users, grams, cap, key, 4)
    want = bounded_histogram(users, grams, cap, key, 4)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))
    brute = _brute_bounded(users, grams, cap, key, 4)
    assert dict(zip(got[0].tolist(), got[1].tolist())) == brute
    empty = device_bounded_histogram(users[:0], grams[:0], cap, key, 4)
    assert [e.size for e in empty] == [0, 0]


def test_merged_sums_equal_the_host_merge():
    rng = np.random.default_rng(5)
    parts = []
    for _ in range(3):
        g = np.unique(rng.integers(0, 500, 200))
        parts.append((g, rng.integers(1, 300, g.size)))
    got, want = bounding.merged_sums(parts), merge_histograms(parts)
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


def _device_on(backend):
    """``_occurrences`` that picks the array path on ``backend``."""
    return lambda be: (DeviceOccurrences, (backend,))


def _users_db(data_vocab=False):
    """Users' texts over ``a .. h``; ``data_vocab``: in a vocabulary taken from the data,
    whose ids (``h`` first) are not in text order, so the release re-encodes its levels."""
    rng = np.random.default_rng(7)
    base = [list("abcd"), list("bca"), list("dab"), list("abcab")]
    seqs = [base[i % 4] for i in range(600)] + [list(rng.choice(list("abcdefgh"), 8))
                                                for _ in range(200)]
    seqs.append(list("ab") * 200)                           # one text beyond MAX_REMAIN
    users = [i // 3 for i in range(len(seqs))]
    db = SequenceDB.from_sequences(seqs, vocab=list("abcdefgh"), users=users)
    if data_vocab:
        db = SequenceDB(7 - db.items, db.offsets, Vocabulary(list("hgfedcba"), public=False),
                        users=db.users)
    return db


@pytest.mark.parametrize("data_vocab", [False, True], ids=["public-vocab", "data-vocab"])
@pytest.mark.parametrize("rule", ["both", "single"])
@pytest.mark.parametrize("users", [True, False], ids=["users", "one-user-per-text"])
def test_dpne_release_on_the_array_path_equals_the_host_path(monkeypatch, rule, users,
                                                              data_vocab):
    db = _users_db(data_vocab)
    if not users:
        db = SequenceDB(db.items, db.offsets, db.vocab)
    kw = dict(max_n=5, contribution=4, eta=0.5, rule=rule)
    for seed in range(3):
        host = dpne(db, 3.0, 1e-5, seed=seed, **kw)
        with monkeypatch.context() as mp:
            mp.setattr(dpne_module, "_occurrences", _device_on("numpy"))
            arrays = dpne(db, 3.0, 1e-5, seed=seed, **kw)
        assert host.counts()[1] > 0 and len(host.counts()) >= 3     # levels to compare
        assert all(np.array_equal(a, b) for a, b in zip(host.levels, arrays.levels))
        assert host.vocab.labels == arrays.vocab.labels


def test_dpne_on_the_array_path_over_dask_partitions_equals_the_host_path(monkeypatch,
                                                                         dask_client):
    """Several partitions: the array path's histograms are merged like the host's."""
    db = _users_db()
    kw = dict(max_n=4, contribution=4, seed=2)
    host = dpne(db, 3.0, 1e-5, **kw)
    monkeypatch.setattr(dpne_module, "_occurrences", _device_on("numpy"))
    arrays = dpne(db, 3.0, 1e-5, engine="dask", client=dask_client, **kw)
    assert arrays.report["engine"] == "dask"
    assert all(np.array_equal(a, b) for a, b in zip(host.levels, arrays.levels))


@pytest.mark.gpu
@pytest.mark.parametrize("data_vocab", [False, True], ids=["public-vocab", "data-vocab"])
@pytest.mark.parametrize("rule", ["both", "single"])
def test_dpne_on_cupy_equals_numpy(rule, data_vocab):
    db = _users_db(data_vocab)
    kw = dict(max_n=5, contribution=4, eta=0.5, rule=rule, seed=4)
    host = dpne(db, 3.0, 1e-5, backend="numpy", **kw)
    gpu = dpne(db, 3.0, 1e-5, backend="cupy", **kw)
    assert gpu.report["backend"] == "cupy"
    assert all(type(b) is np.ndarray and np.array_equal(a, b)
               for a, b in zip(host.levels, gpu.levels))
    assert host.vocab.labels == gpu.vocab.labels


@pytest.mark.gpu
def test_array_path_functions_on_cupy_equal_numpy():
    import cupy  # noqa: PLC0415

    rng = np.random.default_rng(9)
    users = rng.integers(0, 80, 3000)
    grams = rng.integers(0, 40, users.size) * 977
    key = NoiseKey.from_seed(9)
    want = device_bounded_histogram(users, grams, 3, key, 8)
    got = device_bounded_histogram(cupy.asarray(users), cupy.asarray(grams), 3, key, 8)
    assert all(np.array_equal(a, cupy.asnumpy(b)) for a, b in zip(want, got))
    offsets = _offsets(rng, 60, 400)
    assert np.array_equal(cupy.asnumpy(bounding.remaining_lengths(cupy.asarray(offsets), 255)),
                          remaining_lengths(offsets, 255))
    released = np.unique(rng.integers(0, 1000, 300))
    values = rng.integers(-5, 1100, 5000)
    assert np.array_equal(cupy.asnumpy(bounding.index_of(cupy.asarray(values),
                                                         cupy.asarray(released))),
                          index_of(values, released))


