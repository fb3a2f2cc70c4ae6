"""The ``__host__ __device__`` functions of kernels/grams.cuh and chacha.cuh, run on the host.

A tiny g++ driver includes the header and applies the per-element functions
to every work item, as the kernels in kernels/grams.cu do (minus the grid and
the atomics); its results are compared with the NumPy reference
(:func:`dpgpu.ops.keys.packed_keys`, ``GramEngine.next_symbol_histogram``)
and with brute-force counting.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.backend import cuda
from dpgpu.ops import keys as K
from dpgpu.ops.grams import GramEngine
from dpgpu.privacy.rng import words_xp

pytestmark = pytest.mark.compile

DRIVER = r"""
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "chacha.cuh"
#include "grams.cuh"

// stdin: an op name, then its integers; stdout: its results, one per line.
static long long scan() {
  long long v = 0;
  if (std::scanf("%lld", &v) != 1) std::exit(2);
  return v;
}

template <typename T>
static std::vector<T> scan_vector(long long count) {
  std::vector<T> v(static_cast<size_t>(count));
  for (auto& x : v) x = static_cast<T>(scan());
  return v;
}

int main() {
  char op[16];
  while (std::scanf("%15s", op) == 1) {
    if (std::strcmp(op, "keys") == 0) {  // n_rows row_stride width n radix tokens
      const long long n_rows = scan(), row_stride = scan(), width = scan();
      const int n = static_cast<int>(scan());
      const long long radix = scan();
      const std::vector<int> tokens = scan_vector<int>(n_rows * row_stride);
      const long long n_windows = width - n + 1;
      for (long long t = 0; n_windows > 0 && t < n_rows * n_windows; ++t)
        std::printf("%lld\n", dpgpu_packed_key_at(tokens.data(), row_stride,
                                                  n_windows, n, radix, t));
    } else if (std::strcmp(op, "dense") == 0) {  // n_rows row_stride width n radix tokens lengths
      const long long n_rows = scan(), row_stride = scan(), width = scan();
      const int n = static_cast<int>(scan());
      const long long radix = scan();
      const std::vector<int> tokens = scan_vector<int>(n_rows * row_stride);
      const std::vector<int> lengths = scan_vector<int>(n_rows);
      long long space = 1;
      for (int i = 0; i < n; ++i) space *= radix;
      std::vector<long long> counts(static_cast<size_t>(space), 0);
      const long long n_windows = width - n + 1;
      for (long long t = 0; n_windows > 0 && t < n_rows * n_windows; ++t) {
        const long long key = dpgpu_gram_key_at(tokens.data(), row_stride, lengths.data(),
                                                n_windows, n, radix, t);
        if (key >= 0) ++counts[static_cast<size_t>(key)];
      }
      for (long long c : counts) std::printf("%lld\n", c);
    } else if (std::strcmp(op, "cursor") == 0) {  // t step n_windows steps
      const long long t = scan(), step = scan(), n_windows = scan(), steps = scan();
      DpgpuCursor c = dpgpu_cursor(t, step, n_windows);
      for (long long k = 0; k < steps; ++k, dpgpu_cursor_advance(&c))
        std::printf("%lld\n%lld\n", c.row, c.pos);
    } else if (std::strcmp(op, "slot") == 0) {  // capacity n_keys keys
      const unsigned long long capacity = static_cast<unsigned long long>(scan());
      for (long long key : scan_vector<long long>(scan()))
        std::printf("%lld\n", static_cast<long long>(dpgpu_hash_slot(key, capacity)));
    } else if (std::strcmp(op, "search") == 0) {  // size sorted n_queries queries
      const long long size = scan();
      const std::vector<long long> sorted = scan_vector<long long>(size);
      const std::vector<long long> queries = scan_vector<long long>(scan());
      for (long long q : queries)
        std::printf("%lld %lld\n", dpgpu_lower_bound(sorted.data(), size, q),
                    dpgpu_find_key(sorted.data(), size, q));
    } else if (std::strcmp(op, "hist") == 0) {
      // n_rows row_stride width m n_symbols n_ctx tokens lengths sorted_keys ctx_order
      const long long n_rows = scan(), row_stride = scan(), width = scan();
      const int m = static_cast<int>(scan()), n_symbols = static_cast<int>(scan());
      const long long n_ctx = scan();
      const std::vector<int> tokens = scan_vector<int>(n_rows * row_stride);
      const std::vector<int> lengths = scan_vector<int>(n_rows);
      const std::vector<long long> sorted_keys = scan_vector<long long>(n_ctx);
      const std::vector<long long> ctx_order = scan_vector<long long>(n_ctx);
      std::vector<long long> counts(static_cast<size_t>(n_ctx * n_symbols), 0);
      const long long n_windows = width - m;
      for (long long t = 0; n_windows > 0 && t < n_rows * n_windows; ++t) {
        const long long bin = dpgpu_level_bin_at(
            tokens.data(), row_stride, lengths.data(), n_windows, m, n_symbols + 1LL,
            sorted_keys.data(), ctx_order.data(), n_ctx, n_symbols, t);
        if (bin >= 0) ++counts[static_cast<size_t>(bin)];
      }
      for (long long c : counts) std::printf("%lld\n", c);
    } else if (std::strcmp(op, "chacha") == 0) {  // key(8) tag n_words m ids(m)
      const std::vector<unsigned int> key = scan_vector<unsigned int>(8);
      const unsigned int tag = static_cast<unsigned int>(scan());
      const int n_words = static_cast<int>(scan());
      const long long m = scan();
      const std::vector<long long> ids = scan_vector<long long>(m);
      std::vector<unsigned long long> words(static_cast<size_t>(n_words * m));
      for (long long i = 0; i < m; ++i)
        for (int block = 0; 8 * block < n_words; ++block)
          dpgpu_chacha_words_of_block(key.data(), tag, static_cast<unsigned long long>(ids[i]),
                                      block, n_words, words.data() + i, m);
      for (unsigned long long w : words) std::printf("%lld\n", static_cast<long long>(w));
    } else {
      return 3;
    }
  }
  return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    """Run the g++-built driver on one op; returns its outputs as int64."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found on PATH")
    work = tmp_path_factory.mktemp("grams_host")
    (work / "driver.cpp").write_text(DRIVER)
    exe = work / "driver"
    cmd = [gxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic",
           f"-I{Path(str(cuda.kernel_dir()))}", str(work / "driver.cpp"), "-o", str(exe)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, f"{' '.join(cmd)}\n{built.stderr}"

    def run(op: str, *parts) -> np.ndarray:
        ints = [op] + [str(int(v)) for p in parts for v in np.ravel(p)]
        done = subprocess.run([str(exe)], input=" ".join(ints), capture_output=True,
                              text=True, check=True)
        return np.fromiter(map(int, done.stdout.split()), dtype=np.int64)

    return run


def padded(rng, n_rows, width, n_symbols, stride=None):
    """Random padded block: tokens (n_rows, stride) with rows valid up to lengths <= width."""
    stride = width if stride is None else stride
    tokens = rng.integers(0, n_symbols, size=(n_rows, stride), dtype=np.int32)
    lengths = rng.integers(0, width + 1, size=n_rows).astype(np.int32)
    tokens[np.arange(stride)[None, :] >= lengths[:, None]] = -1
    return tokens, lengths


def host_keys(driver, buf, width, n, radix):
    n_rows, stride = buf.shape
    out = driver("keys", [n_rows, stride, width, n, radix], buf)
    return out.reshape(n_rows, max(width - n + 1, 0))


def host_hist(driver, buf, width, lengths, m, contexts, n_symbols):
    n_rows, stride = buf.shape
    ctx_keys = K.rows_keys(np.asarray(contexts, dtype=np.int32).reshape(len(contexts), m),
                           n_symbols + 1, True)
    order = np.argsort(ctx_keys)
    out = driver("hist", [n_rows, stride, width, m, n_symbols, len(ctx_keys)],
                 buf, lengths, ctx_keys[order], order)
    return out.reshape(len(ctx_keys), n_symbols)


def brute_hist(tokens, lengths, contexts, n_symbols):
    contexts = [tuple(c) for c in contexts]
    m = len(contexts[0]) if contexts else 0
    seen = Counter()
    for row, length in zip(tokens.tolist(), lengths.tolist()):
        for p in range(length - m):
            seen[tuple(row[p:p + m]), row[p + m]] += 1
    out = np.zeros((len(contexts), n_symbols), dtype=np.int64)
    for f, c in enumerate(contexts):
        for x in range(n_symbols):
            out[f, x] = seen[c, x]
    return out


# ------------------------------------------------------------------ packed keys
@pytest.mark.parametrize("n_rows,width,n,n_symbols", [
    (37, 29, 3, 6), (5, 257, 1, 2), (64, 255, 4, 90), (3, 8, 8, 5),
    (0, 10, 2, 4),     # empty batch
    (9, 6, 5, 4),      # most rows shorter than n
    (4, 5, 6, 4),      # width == n - 1: no windows
    (6, 7, 0, 4),      # n = 0: all keys 0
    (40, 12, 3, 2 ** 21 - 2),  # radix**3 just below 2**63
    (40, 12, 5, 2 ** 20),      # radix**5 > 2**63: wraps like NumPy int64
])
def test_packed_keys(driver, n_rows, width, n, n_symbols):
    rng = np.random.default_rng(n_rows * 1000 + width + n)
    radix = n_symbols + 1
    buf, _ = padded(rng, n_rows, width, n_symbols)
    np.testing.assert_array_equal(host_keys(driver, buf, width, n, radix),
                                  K.packed_keys(buf, n, radix))


@pytest.mark.parametrize("n_rows,width,n,n_symbols,stride", [
    (37, 29, 3, 6, None), (5, 64, 1, 2, None), (60, 20, 2, 17, 23), (9, 6, 5, 4, None),
    (4, 5, 6, 4, None), (0, 10, 2, 4, None)])
def test_dense_counts_equal_brute_force(driver, n_rows, width, n, n_symbols, stride):
    """The per-window logic of kernels/gram_counts.cu: windows inside their sequence only."""
    rng = np.random.default_rng(n_rows + width + n)
    buf, lengths = padded(rng, n_rows, width, n_symbols, stride)
    radix = n_symbols + 1
    got = driver("dense", [n_rows, buf.shape[1], width, n, radix], buf, lengths)
    seen = Counter(tuple(row[p:p + n]) for row, length in zip(buf.tolist(), lengths.tolist())
                   for p in range(length - n + 1))
    expected = np.zeros(radix ** n, dtype=np.int64)
    for gram, c in seen.items():
        expected[sum((s + 1) * radix ** (n - 1 - i) for i, s in enumerate(gram))] = c
    np.testing.assert_array_equal(got, expected)


def test_packed_keys_wider_than_block(driver):
    """n > W + 1 gives no windows (the NumPy reference needs W + 1 >= n; callers guard)."""
    buf = np.zeros((4, 3), dtype=np.int32)
    assert host_keys(driver, buf, 3, 6, 5).shape == (4, 0)


def test_packed_keys_row_stride(driver):
    """A column slice (GramEngine's ``tokens[:, :W-1]``) is read in place through row_stride."""
    rng = np.random.default_rng(7)
    buf, _ = padded(rng, 50, 33, 11)
    view = buf[:, :32]
    np.testing.assert_array_equal(host_keys(driver, buf, 32, 3, 12), K.packed_keys(view, 3, 12))


# ---------------------------------------------------------------- binary search
@pytest.mark.parametrize("t,step,n_windows", [(0, 1, 1), (5, 7, 3), (3, 256, 20),
                                               (1000, 132 * 4 * 256, 13), (2, 3, 1000),
                                               (9, 96, 32), (2 ** 33 + 5, 2 ** 20 + 1, 7)])
def test_cursor_walks_like_division(driver, t, step, n_windows):
    """The grid-stride cursor of the counting kernels gives divmod(t + k step, n_windows)."""
    got = driver("cursor", t, step, n_windows, 50).reshape(-1, 2).tolist()
    assert got == [list(divmod(t + k * step, n_windows)) for k in range(50)]


@pytest.mark.parametrize("capacity", [1, 7, 1_000_003, 2 ** 40 + 3, 2 ** 63 - 1])
def test_hash_slot_is_the_high_word(driver, capacity):
    """Home slot = (splitmix64(key) * capacity) >> 64, exactly, and below capacity."""
    keys = [0, 1, 2, 101, 2 ** 33 + 7, 10_510_100_500, 2 ** 62 + 12345]
    got = driver("slot", capacity, len(keys), keys).tolist()
    mask = 2 ** 64 - 1

    def mix(z):
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9 & mask
        z = (z ^ (z >> 27)) * 0x94d049bb133111eb & mask
        return z ^ (z >> 31)

    assert got == [mix(k) * capacity >> 64 for k in keys]
    assert all(0 <= g < capacity for g in got)


def test_search(driver):
    rng = np.random.default_rng(3)
    for size in (0, 1, 2, 7, 100):
        sorted_keys = np.sort(rng.integers(-50, 50, size=size))  # with duplicates
        queries = np.arange(-60, 61)
        got = driver("search", [size], sorted_keys, [queries.size], queries).reshape(-1, 2)
        lower = np.searchsorted(sorted_keys, queries, side="left")
        np.testing.assert_array_equal(got[:, 0], lower)
        found = [i if i < size and sorted_keys[i] == q else -1 for i, q in zip(lower, queries)]
        np.testing.assert_array_equal(got[:, 1], found)


# ------------------------------------------------------------- level histogram
def contexts_of(rng, tokens, lengths, m, n_symbols, k):
    """Up to ``k`` distinct present m-grams plus absent ones."""
    present = {tuple(row[p:p + m]) for row, length in zip(tokens.tolist(), lengths.tolist())
               for p in range(length - m)}
    chosen = sorted(present)[:k]
    absent = tuple([n_symbols - 1] * m)
    if m and absent not in present:
        chosen.append(absent)
    return chosen or [tuple(rng.integers(0, n_symbols, size=m).tolist())]


@pytest.mark.parametrize("n_rows,width,m,n_symbols", [
    (60, 29, 2, 5), (300, 257, 1, 3), (20, 255, 3, 4), (45, 9, 0, 7),
    (0, 10, 1, 4),    # empty batch
    (30, 3, 3, 4),    # width < m + 1: no windows at all
    (30, 6, 4, 3),    # most rows shorter than m + 1
])
def test_level_histogram(driver, n_rows, width, m, n_symbols):
    rng = np.random.default_rng(n_rows * 7 + width * 3 + m)
    tokens, lengths = padded(rng, n_rows, width, n_symbols)
    contexts = contexts_of(rng, tokens, lengths, m, n_symbols, 40)
    got = host_hist(driver, tokens, width, lengths, m, contexts, n_symbols)
    np.testing.assert_array_equal(got, brute_hist(tokens, lengths, contexts, n_symbols))


def test_level_histogram_single_context(driver):
    rng = np.random.default_rng(11)
    tokens, lengths = padded(rng, 80, 20, 3)
    contexts = [(1, 2)]
    got = host_hist(driver, tokens, 20, lengths, 2, contexts, 3)
    np.testing.assert_array_equal(got, brute_hist(tokens, lengths, contexts, 3))
    assert got.sum() > 0


def test_level_histogram_one_bin(driver):
    """Every window hits the same bin (the worst case for atomics on the GPU)."""
    rng = np.random.default_rng(12)
    lengths = rng.integers(0, 31, size=70).astype(np.int32)
    tokens = np.where(np.arange(31)[None, :] < lengths[:, None], 2, -1).astype(np.int32)
    got = host_hist(driver, tokens, 31, lengths, 2, [(2, 2)], 4)
    assert got[0, 2] == np.maximum(lengths - 2, 0).sum()
    assert got.sum() == got[0, 2]


def test_level_histogram_uses_lengths(driver):
    """Cells past a row's length are ignored even when they hold symbols, not padding."""
    rng = np.random.default_rng(14)
    tokens = rng.integers(0, 3, size=(50, 12), dtype=np.int32)
    lengths = rng.integers(0, 13, size=50).astype(np.int32)
    contexts = contexts_of(rng, tokens, np.full(50, 12), 2, 3, 9)
    np.testing.assert_array_equal(host_hist(driver, tokens, 12, lengths, 2, contexts, 3),
                                  brute_hist(tokens, lengths, contexts, 3))


def test_level_histogram_row_stride(driver):
    rng = np.random.default_rng(13)
    buf, lengths = padded(rng, 40, 24, 5, stride=31)
    view = np.ascontiguousarray(buf[:, :24])
    contexts = contexts_of(rng, view, lengths, 2, 5, 30)
    np.testing.assert_array_equal(host_hist(driver, buf, 24, lengths, 2, contexts, 5),
                                  brute_hist(view, lengths, contexts, 5))


@pytest.mark.parametrize("m", [0, 1, 2, 3])
def test_level_histogram_matches_engine(driver, m):
    """Per-block host histograms sum to GramEngine's NumPy answer (markers, several blocks)."""
    rng = np.random.default_rng(100 + m)
    lens = rng.geometric(0.15, size=300)
    seqs = [[str(x) for x in rng.integers(0, 6, size=k)] for k in lens]
    db = SequenceDB.from_sequences(seqs, vocab=[str(i) for i in range(6)])
    engine = GramEngine(db, l_max=25, start=True, end=True, backend="numpy",
                        max_block_cells=500)
    assert len(engine.blocks) > 2
    contexts = engine.count(m)[0] if m else np.zeros((1, 0), dtype=np.int32)
    expected = engine.next_symbol_histogram(contexts)
    got = sum(host_hist(driver, tokens, tokens.shape[1], lengths, m, contexts, engine.n_symbols)
              for tokens, lengths in engine.blocks)
    np.testing.assert_array_equal(got, expected)
    assert expected.sum() > 0


# --------------------------------------------------------------------- chacha20
@pytest.mark.parametrize("n_words,tag", [(1, 0), (8, 77), (9, 2 ** 32 - 1), (19, 5)])
def test_chacha_words_match_the_reference(driver, n_words, tag):
    """kernels/chacha.cuh gives the words of dpgpu.privacy.rng.words_xp, bit for bit."""
    rng = np.random.default_rng(n_words)
    key = rng.integers(0, 2 ** 32, size=8, dtype=np.uint64).astype(np.uint32)
    ids = np.concatenate([np.array([0, 1, 2 ** 63, 2 ** 64 - 1], dtype=np.uint64),
                          rng.integers(0, 2 ** 63, size=40).astype(np.uint64)])
    got = driver("chacha", key, [tag, n_words, ids.size], ids.view(np.int64))
    expected = words_xp(key, ids, tag, n_words, np)
    np.testing.assert_array_equal(got.view(np.uint64).reshape(n_words, ids.size), expected)
