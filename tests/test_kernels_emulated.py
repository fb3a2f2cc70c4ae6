"""The real kernels of kernels/grams.cu, launched by dpgpu.ops.gpu_grams, emulated on the host.

g++ builds grams.cu itself with a small shim (``__global__`` vanishes,
``blockIdx``/``threadIdx`` are globals, ``atomicAdd`` is serial) into a
shared library.  The launch glue runs on NumPy arrays standing in for CuPy
ones; each launch is checked against the kernel's C signature (argument
count, order and exact types: what CuPy passes by value) and then executed
thread by thread on a small grid, so the grid-stride loops run too.
What this cannot show -- true concurrency, CuPy's argument passing, the
run-time NVRTC build -- is left to tests/test_gpu_parity.py.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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

    def __call__(self, grid, block, args):
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
        self.launches.append(self.name)
        blocks, threads = 3, 32  # a small grid: every kernel loops grid-stride
        for b in range(blocks):
            for t in range(threads):
                self.set_thread(b, t, blocks, threads)
                self.fn(*c_args)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    work = tmp_path_factory.mktemp("grams_emulated")
    (work / "emulator.cpp").write_text(SHIM)
    lib = work / "libgrams_emulated.so"
    cmd = [gxx(), "-std=c++17", "-O1", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror",
           f"-I{Path(str(cuda.kernel_dir()))}", str(work / "emulator.cpp"), "-o", str(lib)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, f"{' '.join(cmd)}\n{built.stderr}"
    return ctypes.CDLL(str(lib))


@pytest.fixture
def launches(library, monkeypatch):
    """Route gpu_grams' launches to the emulator, with NumPy posing as CuPy; list the launches."""
    done: list[str] = []
    types = signatures("grams")
    monkeypatch.setitem(sys.modules, "cupy", np)
    monkeypatch.setattr(cuda, "function",
                        lambda name, kernel: EmulatedKernel(library, kernel, types[kernel], done))
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


class _ZeroedNumpy:
    """NumPy posing as CuPy, with ``empty`` giving zeros (no kernel runs to fill it)."""

    def __getattr__(self, name):
        return np.zeros if name == "empty" else getattr(np, name)


@pytest.fixture
def checked_launches(monkeypatch):
    """Launches of kernels that need a GPU, each only checked against its C signature.

    Warp intrinsics keep gram_counts.cu and gram_readout.cu off the emulator,
    but the arguments the launch code passes can still be checked: a wrong
    count or type there crashes the process on a GPU rather than failing
    cleanly.  A chunk-count launch reports one nonzero entry per chunk, so
    that the second read-out pass is launched too.
    """
    types = {k: v for name in ("grams", "gram_counts", "gram_readout")
             for k, v in signatures(name).items()}
    done: list[str] = []

    def launch(kernel, n_items, args, **options):
        params = types[kernel]
        assert len(args) == len(params), (kernel, args)
        for ctype, arg in zip(params, args):
            if ctype.endswith("*"):
                assert arg.dtype.type in _POINTEES[ctype[:-1].strip()], (kernel, ctype, arg.dtype)
            else:
                assert type(arg) is _SCALARS[ctype][0], (kernel, ctype, type(arg))
        if kernel.startswith("dpgpu_nonzero_chunks_"):
            args[-1][:] = 1
        done.append(kernel)

    monkeypatch.setitem(sys.modules, "cupy", _ZeroedNumpy())
    monkeypatch.setattr(cuda, "function", lambda name, kernel: kernel)
    monkeypatch.setattr(cuda, "launch", launch)
    monkeypatch.setattr(cuda, "multiprocessors", lambda: 132)
    return done


def test_gpu_only_launches_match_their_signatures(checked_launches):
    tokens, lengths = np.zeros((50, 12), dtype=np.int32), np.full(50, 12, dtype=np.int32)
    for dtype, space_n in [(np.uint32, 1), (np.uint64, 1), (np.int64, 1), (np.uint32, 3)]:
        gpu_grams.dense_counts_gpu(tokens, lengths, space_n, 30, np.zeros(30 ** space_n, dtype))
        gpu_grams.pack_nonzero(np.zeros(30 ** space_n, dtype), 9)
    gpu_grams.hash_counts_gpu([(tokens, lengths)], 5, 30, 2 ** 30, 400)  # packed slots
    gpu_grams.hash_counts_gpu([(tokens, lengths)], 9, 2 ** 7, 2 ** 30, 200)  # (key, count) pairs
    assert checked_launches == [
        "dpgpu_gram_counts_shared_u32", "dpgpu_nonzero_chunks_u32", "dpgpu_pack_chunks_u32",
        "dpgpu_gram_counts_shared_u64", "dpgpu_nonzero_chunks_u64", "dpgpu_pack_chunks_u64",
        "dpgpu_gram_counts_shared_u64", "dpgpu_nonzero_chunks_u64", "dpgpu_pack_chunks_u64",
        "dpgpu_gram_counts_u32", "dpgpu_nonzero_chunks_u32", "dpgpu_pack_chunks_u32",
        "dpgpu_gram_hash_packed", "dpgpu_nonzero_chunks_u64", "dpgpu_pack_chunks_u64",
        "dpgpu_unpack_counts", "dpgpu_gram_hash_counts"]


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


def test_dense_count_read_out(launches, monkeypatch):
    """count_grams_gpu's dense path: 32-bit counters, packed in key order, equal to the engine's."""
    def numpy_dense(tokens, lengths, n, radix, counts):  # stand-ins for the warp-level kernels
        n_win = tokens.shape[1] - n + 1
        r, j = np.nonzero(K.window_valid(lengths, n, n_win))
        np.add.at(counts, K.packed_keys(tokens, n, radix)[r, j], 1)
        assert counts.dtype == np.uint32

    def numpy_pack(values, index_shift):
        index = np.flatnonzero(values).astype(np.uint64)
        return (index << np.uint64(index_shift)) | values[index]

    monkeypatch.setattr(gpu_grams, "dense_counts_gpu", numpy_dense)
    monkeypatch.setattr(gpu_grams, "pack_nonzero", numpy_pack)
    rng = np.random.default_rng(7)
    seqs = [[str(x) for x in rng.integers(0, 6, size=k)] for k in rng.geometric(0.1, size=300)]
    db = SequenceDB.from_sequences(seqs, vocab=[str(i) for i in range(6)])
    engine = GramEngine(db, start=True, backend="numpy", max_block_cells=500)
    for n in (1, 2, 4):
        grams, counts = engine.count(n)
        got = gpu_grams.count_grams_gpu(engine.blocks, n, engine.radix, engine.n_windows(n),
                                        10 ** 6, 2 ** 30)
        np.testing.assert_array_equal(got[0], grams)
        np.testing.assert_array_equal(got[1], counts)
    assert launches.count("dpgpu_unpack_counts") == 3
