"""The real gram kernels, launched by dpgpu.ops.gpu_grams, emulated on the host.

g++ builds the kernel files themselves with a small shim into shared
libraries.  The launch glue runs on NumPy arrays standing in for CuPy ones;
each launch is checked against the kernel's C signature (argument count,
order and exact types: what CuPy passes by value) and then executed on a
small grid, so the grid-stride loops run too.

* kernels/grams.cu (SHIM): ``__global__`` vanishes, ``blockIdx`` and
  ``threadIdx`` are globals, ``atomicAdd`` is serial, and the threads run one
  at a time.
* kernels/gram_counts.cu and gram_readout.cu (WARP_SHIM), whose warps
  cooperate: every thread of a block is a real thread, ``__syncthreads``,
  ``__ballot_sync`` and ``__match_any_sync`` meet at barriers, atomics are
  the compiler's, and ``__CUDA_ARCH__`` is 900 so that the warp-merging code
  runs.  Blocks run one after another.

What this cannot show -- the GPU's scheduling and memory model, CuPy's
argument passing, the run-time NVRTC build -- is left to
tests/test_gpu_parity.py.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import dpgpu
from dpgpu import SequenceDB
from dpgpu.backend import Backend, cuda
from dpgpu.ops import gpu_grams
from dpgpu.ops import keys as K
from dpgpu.ops.grams import GramEngine

pytestmark = pytest.mark.compile

SHIM = r"""
// Just enough CUDA to run a 1-D kernel one thread at a time on the host.
struct dpgpu_dim3 { unsigned int x, y, z; };
static dpgpu_dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
static unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
  const unsigned long long old = *address;
  *address = old + value;
  return old;
}
#include "grams.cu"
extern "C" void dpgpu_emulator_thread(unsigned int block, unsigned int thread,
                                      unsigned int blocks, unsigned int threads) {
  blockIdx = {block, 0, 0};
  threadIdx = {thread, 0, 0};
  gridDim = {blocks, 1, 1};
  blockDim = {threads, 1, 1};
}
"""

#: Words of emulated shared memory (the dense kernels' largest histogram fits).
SHARED_WORDS = 1 << 14

WARP_SHIM = r"""
// Enough CUDA to run warp-level kernels on the host: every thread of a block
// is a real thread; warp intrinsics exchange values at a barrier per warp.
#include <condition_variable>
#include <cstring>
#include <mutex>
#define __CUDA_ARCH__ 900
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__
struct dpgpu_dim3 { unsigned int x, y, z; };
static thread_local dpgpu_dim3 blockIdx, threadIdx;
static dpgpu_dim3 blockDim, gridDim;

class DpgpuBarrier {
 public:
  void reset(unsigned int size) { size_ = size; waiting_ = 0; }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const unsigned long long generation = generation_;
    if (++waiting_ == size_) {
      waiting_ = 0;
      ++generation_;
      done_.notify_all();
    } else {
      done_.wait(lock, [&] { return generation != generation_; });
    }
  }
 private:
  std::mutex mutex_;
  std::condition_variable done_;
  unsigned int size_ = 0, waiting_ = 0;
  unsigned long long generation_ = 0;
};

static DpgpuBarrier block_barrier, warp_barriers[32];
static unsigned long long warp_values[32][32];

static void __syncthreads() { block_barrier.wait(); }

// Every lane posts a value; each gets the mask of lanes whose value equals its own.
static unsigned int dpgpu_lanes_equal(unsigned long long mine, bool any_true) {
  const unsigned int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  warp_values[warp][lane] = mine;
  warp_barriers[warp].wait();
  unsigned int mask = 0;
  for (unsigned int other = 0; other < 32; ++other) {
    const unsigned long long v = warp_values[warp][other];
    if (any_true ? v != 0 : v == mine) mask |= 1u << other;
  }
  warp_barriers[warp].wait();
  return mask;
}
static unsigned int __ballot_sync(unsigned int, bool p) { return dpgpu_lanes_equal(p, true); }
template <typename T>
static unsigned int __match_any_sync(unsigned int, T v) {
  return dpgpu_lanes_equal(static_cast<unsigned long long>(v), false);
}
static int __popc(unsigned int x) { return __builtin_popcount(x); }
static int __ffs(unsigned int x) { return __builtin_ffs(static_cast<int>(x)); }
static unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
template <typename T>
static T atomicAdd(T* address, T value) { return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST); }
static unsigned long long atomicCAS(unsigned long long* address, unsigned long long expected,
                                    unsigned long long desired) {
  __atomic_compare_exchange_n(address, &expected, desired, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  return expected;
}
#include "gram_counts.cu"
#include "gram_readout.cu"
namespace {
unsigned int local[SHARED_WORDS];  // the block's shared memory
}
// Before a block's threads start: the grid's shape and fresh barriers.
extern "C" void dpgpu_emulator_block(unsigned int blocks, unsigned int threads) {
  gridDim = {blocks, 1, 1};
  blockDim = {threads, 1, 1};
  block_barrier.reset(threads);
  for (auto& barrier : warp_barriers) barrier.reset(32);
}
// In each thread: its own indices (thread-local).
extern "C" void dpgpu_emulator_thread(unsigned int block, unsigned int thread, unsigned int,
                                      unsigned int) {
  blockIdx = {block, 0, 0};
  threadIdx = {thread, 0, 0};
}
""".replace("SHARED_WORDS", str(SHARED_WORDS))

_KERNEL = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)')
_SCALARS = {"int": (np.int32, ctypes.c_int), "long long": (np.int64, ctypes.c_longlong)}
_POINTEES = {"int": (np.int32,), "long long": (np.int64,), "unsigned int": (np.uint32,),
             "unsigned long long": (np.uint64, np.int64)}


def gxx() -> str:
    """g++ from PATH (the test skips without it)."""
    found = shutil.which("g++")
    if found is None:
        pytest.skip("g++ not found on PATH")
    return found


def signatures(name: str) -> dict[str, list[str]]:
    """Parameter types of each kernel of ``<name>.cu`` (macros expanded), names and qualifiers dropped."""
    kernels = Path(str(cuda.kernel_dir()))
    done = subprocess.run([gxx(), "-E", "-P", "-x", "c++", f"-I{kernels}", str(kernels / f"{name}.cu")],
                          capture_output=True, text=True, check=True)
    source = done.stdout
    found = {}
    for kernel, params in _KERNEL.findall(source):
        types = []
        for param in params.split(","):
            words = [w for w in param.replace("*", " * ").split()
                     if w not in ("const", "__restrict__")][:-1]
            types.append(" ".join(words))
        found[kernel] = types
    return found


class EmulatedKernel:
    """Stands in for a ``cupy.RawKernel``: checks the arguments, then runs the host build."""

    def __init__(self, lib, name, param_types, launches):
        self.fn, self.name, self.types, self.launches = getattr(lib, name), name, param_types, launches
        self.set_thread = lib.dpgpu_emulator_thread

    def __call__(self, grid, block, args, shared_mem=0):
        assert len(args) == len(self.types), (self.name, args)
        c_args = []
        for ctype, arg in zip(self.types, args):
            if ctype.endswith("*"):
                assert isinstance(arg, np.ndarray), (self.name, ctype, arg)
                assert arg.dtype.type in _POINTEES[ctype[:-1].strip()], (self.name, ctype, arg.dtype)
                c_args.append(ctypes.c_void_p(arg.ctypes.data))
            else:
                numpy_type, c_type = _SCALARS[ctype]
                assert type(arg) is numpy_type, (self.name, ctype, type(arg))
                c_args.append(c_type(int(arg)))
        assert 1 <= grid[0] <= cuda.MAX_BLOCKS and block == (cuda.BLOCK_SIZE,)
        assert shared_mem <= 4 * SHARED_WORDS, (self.name, shared_mem)
        self.launches.append(self.name)
        self.run(c_args)

    def run(self, c_args):
        """A small grid (every kernel loops grid-stride), one thread at a time."""
        blocks, threads = 3, 32
        for b in range(blocks):
            for t in range(threads):
                self.set_thread(b, t, blocks, threads)
                self.fn(*c_args)


class WarpKernel(EmulatedKernel):
    """The same for kernels with warp intrinsics: a block's threads run at once.

    Each thread is a Python thread calling into the library (ctypes lets go
    of the GIL), so ``__syncthreads``, ``__ballot_sync`` and
    ``__match_any_sync`` meet at real barriers (WARP_SHIM).  Blocks run one
    after another: they share the emulated shared memory.
    """

    def __init__(self, lib, name, param_types, launches):
        super().__init__(lib, name, param_types, launches)
        self.fn_block = lib.dpgpu_emulator_block

    def run(self, c_args):
        blocks, threads = 3, 64  # two warps a block
        for b in range(blocks):
            self.fn_block(blocks, threads)
            failed = []

            def lane(t):
                try:
                    self.set_thread(b, t, blocks, threads)
                    self.fn(*c_args)
                except BaseException as err:  # noqa: BLE001 - reported below
                    failed.append(err)

            pool = [threading.Thread(target=lane, args=(t,), daemon=True) for t in range(threads)]
            for thread in pool:
                thread.start()
            for thread in pool:
                thread.join(timeout=60)
            assert not any(t.is_alive() for t in pool), f"{self.name}: lanes stuck at a barrier"
            assert not failed, failed


def build(work: Path, source: str, name: str):
    """g++ ``source`` (a shim including kernels) into a shared library and load it."""
    (work / f"{name}.cpp").write_text(source)
    lib = work / f"lib{name}.so"
    cmd = [gxx(), "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", "-Wall", "-Wextra",
           "-Werror", f"-I{Path(str(cuda.kernel_dir()))}", str(work / f"{name}.cpp"), "-o", str(lib)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, f"{' '.join(cmd)}\n{built.stderr}"
    return ctypes.CDLL(str(lib))


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    return build(tmp_path_factory.mktemp("grams_emulated"), SHIM, "grams_emulated")


@pytest.fixture(scope="module")
def warp_library(tmp_path_factory):
    return build(tmp_path_factory.mktemp("warp_emulated"), WARP_SHIM, "warp_emulated")


@pytest.fixture
def launches(library, monkeypatch):
    """Route gpu_grams' launches to the emulator, with NumPy posing as CuPy; list the launches."""
    done: list[str] = []
    types = signatures("grams")
    monkeypatch.setitem(sys.modules, "cupy", np)
    monkeypatch.setattr(cuda, "function",
                        lambda name, kernel: EmulatedKernel(library, kernel, types[kernel], done))
    return done


@pytest.fixture
def all_launches(library, warp_library, monkeypatch):
    """As ``launches``, with the warp-level kernels (gram_counts.cu, gram_readout.cu) too."""
    done: list[str] = []
    kinds = {"grams": (EmulatedKernel, library), "gram_counts": (WarpKernel, warp_library),
             "gram_readout": (WarpKernel, warp_library)}
    types = {name: signatures(name) for name in kinds}
    monkeypatch.setitem(sys.modules, "cupy", np)
    monkeypatch.setattr(cuda, "multiprocessors", lambda: 2)

    def function(name, kernel):
        kind, lib = kinds[name]
        return kind(lib, kernel, types[name][kernel], done)

    monkeypatch.setattr(cuda, "function", function)
    return done


def test_signatures_parsed():
    assert signatures("grams") == {
        "dpgpu_packed_keys": ["int *", "long long", "long long", "long long", "int",
                              "long long", "long long *"],
        "dpgpu_level_histogram": ["int *", "long long", "int *", "long long", "long long",
                                  "int", "long long", "long long *", "long long *",
                                  "long long", "int", "unsigned long long *"],
        "dpgpu_unpack_counts": ["unsigned long long *", "long long", "int", "int", "long long",
                                "int *", "long long *"],
    }
    assert signatures("gram_readout")["dpgpu_pack_chunks_u32"] == [
        "unsigned int *", "long long", "long long *", "int", "unsigned long long *"]


@pytest.mark.parametrize("n_rows,width,n,view", [
    (41, 29, 3, None), (7, 300, 1, None), (0, 9, 2, None), (5, 4, 6, None),
    (30, 18, 2, "head"), (30, 18, 2, "every_other_column"), (30, 18, 2, "reversed_rows"),
])
def test_packed_keys(launches, n_rows, width, n, view):
    rng = np.random.default_rng(n_rows + width)
    tokens = rng.integers(-1, 9, size=(n_rows, width), dtype=np.int32)
    tokens = {None: tokens, "head": tokens[:, :-1], "every_other_column": tokens[:, ::2],
              "reversed_rows": tokens[::-1]}[view]
    got = gpu_grams.packed_keys_gpu(tokens, n, 10)
    assert launches == (["dpgpu_packed_keys"] if got.size else [])
    np.testing.assert_array_equal(got, K.packed_keys(tokens, n, 10)
                                  if n <= tokens.shape[1] + 1 else np.zeros((n_rows, 0)))


@pytest.mark.parametrize("n_rows,width,m", [(53, 21, 2), (200, 5, 0), (0, 8, 1), (9, 3, 3),
                                            (64, 40, 4)])
def test_level_histogram(launches, n_rows, width, m):
    rng = np.random.default_rng(n_rows * 3 + m)
    n_symbols = 4
    tokens = rng.integers(0, n_symbols, size=(n_rows, width), dtype=np.int32)
    lengths = rng.integers(0, width + 1, size=n_rows).astype(np.int32)
    tokens[np.arange(width)[None, :] >= lengths[:, None]] = -1
    every = np.array(list(itertools.product(range(n_symbols), repeat=m)), dtype=np.int32)
    contexts = np.ascontiguousarray(every.reshape(n_symbols ** m, m)[::3])  # every third m-gram
    ctx_keys = K.rows_keys(contexts, n_symbols + 1, True)
    order = np.argsort(ctx_keys)
    got = gpu_grams.level_histogram_gpu(tokens, lengths, m, ctx_keys[order], order, n_symbols)
    expected = np.zeros_like(got)
    for row, length in zip(tokens.tolist(), lengths.tolist()):
        for p in range(length - m):
            hit = np.flatnonzero((contexts == row[p:p + m]).all(axis=1))
            expected[hit, row[p + m]] += 1
    np.testing.assert_array_equal(got, expected)
    assert launches == (["dpgpu_level_histogram"] if n_rows and width > m else [])


def test_level_histogram_rejects_inexact_keys():
    with pytest.raises(ValueError, match="63 bits"):
        gpu_grams.level_histogram_gpu(np.zeros((1, 9), np.int32), np.ones(1, np.int32), 7,
                                      np.zeros(1, np.int64), np.zeros(1, np.int64), 2 ** 10)


@pytest.mark.parametrize("m", [0, 1, 2, 3])
def test_engine_dispatch(launches, m):
    """GramEngine on a (posing) CuPy backend takes the kernel path and agrees with NumPy."""
    rng = np.random.default_rng(m)
    seqs = [[str(x) for x in rng.integers(0, 5, size=k)] for k in rng.geometric(0.2, size=150)]
    db = SequenceDB.from_sequences(seqs, vocab=[str(i) for i in range(5)])
    reference = GramEngine(db, start=True, end=True, backend="numpy", max_block_cells=300)
    emulated = GramEngine(db, start=True, end=True, backend="numpy", max_block_cells=300)
    emulated.backend = Backend("cupy", np)
    contexts = reference.count(m)[0] if m else np.zeros((1, 0), dtype=np.int32)
    expected = reference.next_symbol_histogram(contexts)
    np.testing.assert_array_equal(emulated.next_symbol_histogram(contexts), expected)
    wide = [t for t, _ in emulated.blocks if t.shape[1] > m]
    assert launches.count("dpgpu_level_histogram") == len(wide) > 1


@pytest.mark.parametrize("n,radix,count_bits", [(1, 3, 1), (3, 101, 27), (5, 40, 30), (9, 101, 3)])
def test_unpack_counts_inverts_the_packing(launches, n, radix, count_bits):
    rng = np.random.default_rng(n * radix)
    grams = rng.integers(0, radix - 1, size=(500, n)).astype(np.int32)
    keys = K.rows_keys(grams, radix, True).astype(np.uint64)
    counts = rng.integers(0, 2 ** count_bits, size=500).astype(np.uint64)
    got_grams, got_counts = gpu_grams.unpack_counts((keys << np.uint64(count_bits)) | counts,
                                                    count_bits, n, radix)
    np.testing.assert_array_equal(got_grams, grams)
    np.testing.assert_array_equal(got_counts, counts.astype(np.int64))
    assert got_grams.dtype == np.int32 and got_counts.dtype == np.int64
    assert launches == ["dpgpu_unpack_counts"]


def zipf_db(n_symbols: int, seed: int, rows: int = 400):
    """Sequences of Zipf-distributed symbols: hot grams and a long tail."""
    rng = np.random.default_rng(seed)
    lens = rng.geometric(0.12, size=rows)
    items = np.minimum(rng.zipf(1.4, size=int(lens.sum())), n_symbols) - 1
    vocab = [str(i) for i in range(n_symbols)]
    return SequenceDB(items, np.concatenate([[0], np.cumsum(lens)]), dpgpu.Vocabulary(vocab))


@pytest.mark.parametrize("n,n_symbols,dtype", [(1, 5, np.uint32), (2, 30, np.uint64),
                                               (3, 30, np.uint32), (2, 200, np.int64)])
def test_dense_counts_run_on_the_warp_emulator(all_launches, n, n_symbols, dtype):
    """Shared-memory ((n_symbols + 1)**n <= SHARED_BINS) and global histograms, warp merging
    included, equal a NumPy count and add up over launches."""
    rng = np.random.default_rng(n * n_symbols)
    tokens = rng.integers(0, n_symbols, size=(120, 17), dtype=np.int32)
    tokens[:40] = 0  # a hot gram, held by whole warps at once
    lengths = rng.integers(0, 18, size=120).astype(np.int32)
    tokens[np.arange(17)[None, :] >= lengths[:, None]] = -1
    radix = n_symbols + 1
    r, j = np.nonzero(K.window_valid(lengths, n, 17 - n + 1))
    expected = np.bincount(K.packed_keys(tokens, n, radix)[r, j], minlength=radix ** n)
    got = np.zeros(radix ** n, dtype=dtype)
    for _ in range(2):
        gpu_grams.dense_counts_gpu(tokens, lengths, n, radix, got)
    np.testing.assert_array_equal(got, 2 * expected)
    shared = radix ** n <= gpu_grams.SHARED_BINS
    assert all_launches == 2 * [f"dpgpu_gram_counts_{'shared_' if shared else ''}"
                                f"{'u32' if dtype == np.uint32 else 'u64'}"]


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
@pytest.mark.parametrize("size,density", [(0, 0.5), (1, 1.0), (511, 0.3), (512, 1.0),
                                          (513, 0.5), (3_000, 0.05), (2_049, 0.0)])
def test_pack_nonzero_runs_on_the_warp_emulator(all_launches, dtype, size, density):
    """Both read-out passes: every nonzero entry, in index order, packed with its index or bare."""
    rng = np.random.default_rng(size)
    values = np.where(rng.random(size) < density, rng.integers(1, 2 ** 20, size=size), 0)
    values = values.astype(dtype)
    index = np.flatnonzero(values).astype(np.uint64)
    got = gpu_grams.pack_nonzero(values, 21)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, (index << np.uint64(21)) | values[index])
    np.testing.assert_array_equal(gpu_grams.pack_nonzero(values, -1), values[index])
    suffix = "u32" if dtype == np.uint32 else "u64"
    passes = [f"dpgpu_nonzero_chunks_{suffix}"] + [f"dpgpu_pack_chunks_{suffix}"] * bool(index.size)
    assert all_launches == (2 * passes if size else [])


@pytest.mark.parametrize("n,n_symbols,path", [(1, 6, "dense"), (3, 6, "dense"), (4, 40, "packed"),
                                              (3, 2 ** 20, "pairs")])
def test_count_grams_run_on_the_warp_emulator(all_launches, n, n_symbols, path):
    """count_grams_gpu, dense or hashed (one-word or pair slots), equals the NumPy engine."""
    db = zipf_db(n_symbols, n + n_symbols)
    engine = GramEngine(db, start=True, backend="numpy", max_block_cells=900)
    grams, counts = engine.count(n)
    windows = engine.n_windows(n)
    assert windows == counts.sum() and len(engine.blocks) > 2
    got = gpu_grams.count_grams_gpu(engine.blocks, n, engine.radix, windows,
                                    10 ** 5 if path == "dense" else 0, 2 ** 30)
    np.testing.assert_array_equal(got[0], grams)
    np.testing.assert_array_equal(got[1], counts)
    kernel = {"dense": "dpgpu_gram_counts_", "packed": "dpgpu_gram_hash_packed",
              "pairs": "dpgpu_gram_hash_counts"}[path]
    assert any(k.startswith(kernel) for k in all_launches)
    assert ("dpgpu_unpack_counts" in all_launches) == (path != "pairs")


def test_dense_counts_refuse_key_spaces_past_int(launches):
    """Dense kernels match keys as 32-bit ints: 2**31 bins or more is refused, not miscounted."""
    tokens, lengths = np.zeros((2, 3), dtype=np.int32), np.full(2, 3, dtype=np.int32)
    with pytest.raises(ValueError, match="below 2\\*\\*31"):
        gpu_grams.dense_counts_gpu(tokens, lengths, 1, 2 ** 31, np.zeros(1, dtype=np.uint32))
    with pytest.raises(ValueError, match="below 2\\*\\*31"):
        gpu_grams.dense_counts_gpu(tokens, lengths, 3, 1291, np.zeros(1, dtype=np.uint32))
    assert launches == []


@pytest.mark.parametrize("n_symbols,dense_space,kernel", [
    (6, 10 ** 6, "dpgpu_gram_counts_"), (40, 0, "dpgpu_gram_hash_packed"),
    (2 ** 20, 0, "dpgpu_gram_hash_counts")])
def test_count_levels_run_on_the_warp_emulator(all_launches, monkeypatch, n_symbols,
                                               dense_space, kernel):
    """GramEngine.count_levels on the kernel path (the top level's keys from a dense
    histogram, a one-word or a two-word hash table) equals the NumPy engine at every level."""
    from dpgpu.ops import grams  # noqa: PLC0415

    monkeypatch.setattr(grams, "free_device_memory", lambda backend: 2 ** 30)
    monkeypatch.setattr(grams, "_gpu_dense_space", lambda backend: dense_space)
    db = zipf_db(n_symbols, n_symbols)
    n_max = 3 if n_symbols > 2 ** 16 else 4  # keys of 3-grams over 2**20 symbols: 61 bits
    want = GramEngine(db, 30, start=True, end=True, backend="numpy",
                      max_block_cells=900).count_levels(n_max)
    emulated = GramEngine(db, 30, start=True, end=True, backend="numpy", max_block_cells=900)
    emulated.backend = Backend("cupy", np)
    got = emulated.count_levels(n_max)
    for (g, c), (wg, wc) in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, wg)
        np.testing.assert_array_equal(c, wc)
    assert any(k.startswith(kernel) for k in all_launches)
    assert "dpgpu_unpack_counts" not in all_launches  # keys, not rows, from the kernels
