"""Keyed ChaCha20 randomness: test vector, CPU/xp/GPU bit-equality, identity keying."""

from __future__ import annotations

import numpy as np
import pytest

from dpgpu.errors import InvalidParameter
from dpgpu.privacy import Bernoulli, DiscreteGaussian, DiscreteLaplace, NoiseKey, \
    sample_discrete_gaussian, sample_discrete_laplace
from dpgpu.privacy import rng
from dpgpu.privacy.rng import chacha20_blocks, words_xp

RFC_KEY = bytes(range(32))
# RFC 8439 section 2.3.2: counter 1, nonce 00:00:00:09 00:00:00:4a 00:00:00:00.
RFC_BLOCK = [0xE4E7F110, 0x15593BD1, 0x1FDD0F50, 0xC47120A3, 0xC7F4D1C7, 0x0368C033,
             0x9AAA2204, 0x4E6CD4C3, 0x466482D2, 0x09AA9F07, 0x05D7C214, 0xA2028BD9,
             0xD19C12B5, 0xB94E16DE, 0xE883D0CB, 0x4E3C50A2]
EDGE_IDS = np.array([0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 63, 2 ** 64 - 1, 0x0123456789ABCDEF],
                    dtype=np.uint64)


def _key_words(key: NoiseKey) -> np.ndarray:
    return np.frombuffer(key._key, dtype="<u4").astype(np.uint32)


def test_chacha20_block_matches_rfc8439_vector():
    key = np.frombuffer(RFC_KEY, dtype="<u4").astype(np.uint32)
    out = chacha20_blocks(key, np.array([1], np.uint32), 0x09000000,
                          np.array([0x4A000000], np.uint64), np)
    assert [int(v) for v in out[:, 0]] == RFC_BLOCK


def test_cpu_words_match_rfc8439_vector():
    # Identity 0x4a000000 at tag 0x09000000: block 0 of the stream; the RFC uses
    # counter 1, so compare block 1 = words 8..15.
    words = NoiseKey(RFC_KEY, seeded=True).words(np.array([0x4A000000], np.uint64),
                                                0x09000000, 16, backend="numpy")
    halves = [(int(w) & 0xFFFFFFFF, int(w) >> 32) for w in words[8:, 0]]
    assert [v for pair in halves for v in pair] == RFC_BLOCK


@pytest.mark.parametrize("n_words", [1, 2, 7, 8, 9, 16, 17])
def test_cpu_path_equals_array_namespace_path(n_words):
    key = NoiseKey.from_seed(11)
    ids = np.concatenate([EDGE_IDS, np.arange(100, 130, dtype=np.uint64)])
    cpu = key.words(ids, 12345, n_words, backend="numpy")
    ref = words_xp(_key_words(key), ids, 12345, n_words, np, chunk=5)
    assert cpu.dtype == np.uint64 and cpu.shape == (n_words, ids.size)
    np.testing.assert_array_equal(cpu, ref)


def test_cpu_words_do_not_depend_on_the_number_of_threads():
    numba = pytest.importorskip("numba")
    key = NoiseKey.from_seed(5)
    ids = np.arange(5_000, dtype=np.uint64) * 7919
    threads = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = key.words(ids, 9, 3, backend="numpy")
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(key.words(ids, 9, 3, backend="numpy"), one)
    np.testing.assert_array_equal(one, words_xp(_key_words(key), ids, 9, 3, np, chunk=997))


def test_word_k_does_not_depend_on_how_many_words_are_asked():
    key = NoiseKey.from_seed(3)
    long = key.words(EDGE_IDS, 1, 20, backend="numpy")
    for n in (1, 5, 8, 13):
        np.testing.assert_array_equal(key.words(EDGE_IDS, 1, n, backend="numpy"), long[:n])


def test_signed_identities_use_their_64_bit_pattern():
    key = NoiseKey.from_seed(4)
    signed = np.array([-1, -2, 5], dtype=np.int64)
    np.testing.assert_array_equal(key.words(signed, 0, 3, backend="numpy"),
                                  key.words(signed.view(np.uint64), 0, 3, backend="numpy"))
    np.testing.assert_array_equal(key.words(signed.astype(np.int32), 0, 3, backend="numpy"),
                                  key.words(signed, 0, 3, backend="numpy"))


SAMPLERS = [DiscreteLaplace(0.5), DiscreteLaplace(1e4), DiscreteLaplace(3e9),
            DiscreteGaussian(2.5), Bernoulli(0.3)]


@pytest.mark.parametrize("sampler", SAMPLERS, ids=lambda s: type(s).__name__)
def test_values_depend_on_identity_not_on_batch_order_or_chunking(sampler, monkeypatch):
    key = NoiseKey.from_seed(99)
    ids = np.random.default_rng(0).integers(0, 2 ** 63, size=1000).astype(np.int64)
    whole = sampler.sample(key, ids, tag=7, backend="numpy")
    perm = np.random.default_rng(1).permutation(ids.size)
    np.testing.assert_array_equal(sampler.sample(key, ids[perm], tag=7, backend="numpy"),
                                  whole[perm])
    pieces = [sampler.sample(key, ids[i:i + 37], tag=7, backend="numpy")
              for i in range(0, ids.size, 37)]
    np.testing.assert_array_equal(np.concatenate(pieces), whole)
    monkeypatch.setitem(rng._CHUNK, "numpy", 64)   # force the internal chunk loop
    np.testing.assert_array_equal(sampler.sample(key, ids, tag=7, backend="numpy"), whole)


def test_tags_and_keys_separate_streams():
    key = NoiseKey.from_seed(5)
    ids = np.arange(50)
    a = key.words(ids, 0, 2, backend="numpy")
    assert not np.array_equal(a, key.words(ids, 1, 2, backend="numpy"))
    assert not np.array_equal(a, NoiseKey.from_seed(6).words(ids, 0, 2, backend="numpy"))
    np.testing.assert_array_equal(a, NoiseKey.from_seed(5).words(ids, 0, 2, backend="numpy"))


def test_fresh_keys_are_unseeded_and_differ():
    a, b = NoiseKey.fresh(), NoiseKey.fresh()
    assert not a.seeded and NoiseKey.from_seed(0).seeded
    ids = np.arange(8)
    assert not np.array_equal(a.words(ids, 0, 1, backend="numpy"),
                              b.words(ids, 0, 1, backend="numpy"))
    assert repr(a) == "NoiseKey(seeded=False)"          # never shows key material


def test_derive_refuses_to_hand_out_a_key_twice():
    root = NoiseKey.from_seed(8)
    child = root.derive("release-1")
    assert child.seeded
    with pytest.raises(InvalidParameter, match="already derived"):
        root.derive("release-1")
    other = root.derive("release-2")
    ids = np.arange(10)
    assert not np.array_equal(child.words(ids, 0, 1, backend="numpy"),
                              other.words(ids, 0, 1, backend="numpy"))


@pytest.mark.parametrize("bad", [-1, 2 ** 32, 1.5, float("nan"), True, None])
def test_tag_is_validated(bad):
    with pytest.raises(InvalidParameter, match="tag"):
        NoiseKey.from_seed(1).words(np.arange(3), bad, 1, backend="numpy")


@pytest.mark.parametrize("bad", [np.zeros((2, 2), np.int64), np.array([0.5, 1.0]),
                                 np.array(["a"])])
def test_identities_must_be_1d_integers(bad):
    with pytest.raises(InvalidParameter, match="identities"):
        NoiseKey.from_seed(1).words(bad, 0, 1, backend="numpy")


@pytest.mark.gpu
def test_numpy_and_cupy_give_bit_identical_words_and_samples():
    import cupy  # noqa: PLC0415 - only on a GPU machine

    key = NoiseKey.from_seed(2024)
    ids = np.concatenate([EDGE_IDS, np.random.default_rng(2).integers(
        0, 2 ** 63, size=200_000).astype(np.uint64)])
    for tag, n_words in ((0, 1), (77, 8), (2 ** 32 - 1, 19)):
        np.testing.assert_array_equal(
            cupy.asnumpy(key.words(cupy.asarray(ids), tag, n_words, backend="cupy")),
            key.words(ids, tag, n_words, backend="numpy"))
    for sampler in SAMPLERS + [DiscreteGaussian(1e4)]:
        gpu = sampler.sample(key, cupy.asarray(ids), tag=3, backend="cupy")
        assert isinstance(gpu, cupy.ndarray)
        np.testing.assert_array_equal(cupy.asnumpy(gpu),
                                      sampler.sample(key, ids, tag=3, backend="numpy"))
    np.testing.assert_array_equal(
        cupy.asnumpy(sample_discrete_laplace(50, (300, 7), seed=1, backend="cupy")),
        sample_discrete_laplace(50, (300, 7), seed=1, backend="numpy"))
    np.testing.assert_array_equal(
        cupy.asnumpy(sample_discrete_gaussian(50, 1000, seed=1, backend="cupy")),
        sample_discrete_gaussian(50, 1000, seed=1, backend="numpy"))
