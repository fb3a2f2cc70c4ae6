"""The subsequence-support kernel (kernels/subseq.cuh, subseq.cu) against brute force.

A g++ driver runs the ``__host__ __device__`` functions of ``subseq.cuh`` on
the host exactly as ``dpgpu_subseq_supports`` does (minus the grid and the
atomics); on a GPU (``pytest -m gpu``) the real kernel is compared with the
Numba CPU loop at full size.
"""

from __future__ import annotations

import shutil
import subprocess
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from dpgpu import SequenceDB, Vocabulary
from dpgpu.backend import cuda, get_backend
from dpgpu.eval.truth import group_by_prefix
from dpgpu.mechanisms.pfs2.support import supports

DRIVER = r"""
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "subseq.cuh"

// stdin: n_seq n_items items offsets weights n_groups n_pre pre_flat pre_off
//        n_ext grp_off ext_item; stdout: one support per pattern (grouped order).
static long long scan() {
  long long v = 0;
  if (std::scanf("%lld", &v) != 1) std::exit(2);
  return v;
}

template <typename T>
static std::vector<T> scan_vector(long long count) {
  std::vector<T> v(static_cast<size_t>(count) + 1);
  for (long long i = 0; i < count; ++i) v[static_cast<size_t>(i)] = static_cast<T>(scan());
  return v;
}

int main() {
  const long long n_seq = scan(), n_items = scan();
  const std::vector<int> items = scan_vector<int>(n_items);
  const std::vector<long long> offsets = scan_vector<long long>(n_seq + 1);
  const std::vector<long long> weights = scan_vector<long long>(n_seq);
  const long long n_groups = scan(), n_pre = scan();
  const std::vector<int> pre_flat = scan_vector<int>(n_pre);
  const std::vector<long long> pre_off = scan_vector<long long>(n_groups + 1);
  const long long n_ext = scan();
  const std::vector<long long> grp_off = scan_vector<long long>(n_groups + 1);
  const std::vector<int> ext_item = scan_vector<int>(n_ext);
  std::vector<long long> out(static_cast<size_t>(n_ext), 0);
  for (long long t = 0; t < n_seq * n_groups; ++t) {
    const int* seq = nullptr;
    long long len = 0;
    const long long end = dpgpu_group_match(items.data(), offsets.data(), pre_flat.data(),
                                            pre_off.data(), n_groups, t, &seq, &len);
    if (end >= len) continue;
    const long long g = t % n_groups;
    for (long long e = grp_off[g]; e < grp_off[g + 1]; ++e)
      if (dpgpu_occurs_after(seq, len, end, ext_item[e])) out[e] += weights[t / n_groups];
  }
  for (long long c : out) std::printf("%lld\n", c);
  return 0;
}
"""


def random_data(seed, n_seq=200, n_sym=5, max_len=10, n_pat=150):
    rng = np.random.default_rng(seed)
    rows = [rng.integers(0, n_sym, size=rng.integers(0, max_len + 1)).tolist()
            for _ in range(n_seq)]
    pats = sorted({tuple(rng.integers(0, n_sym, size=rng.integers(1, 5)).tolist())
                   for _ in range(n_pat)})
    db = SequenceDB.from_sequences([[str(x) for x in r] for r in rows],
                                   vocab=[str(i) for i in range(n_sym)])
    return rows, pats, db


def brute(rows, pats, weights):
    return [sum(w for r, w in zip(rows, weights)
                if any(tuple(r[i] for i in pos) == p
                       for pos in combinations(range(len(r)), len(p)))) for p in pats]


@pytest.mark.compile
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_host_run_of_the_cuda_logic_equals_brute_force(seed, tmp_path):
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found on PATH")
    (tmp_path / "driver.cpp").write_text(DRIVER)
    exe = tmp_path / "driver"
    cmd = [gxx, "-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic",
           f"-I{Path(str(cuda.kernel_dir()))}", str(tmp_path / "driver.cpp"), "-o", str(exe)]
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    rows, pats, db = random_data(seed)
    weights = np.random.default_rng(seed).integers(1, 4, size=len(db))
    pre_flat, pre_off, grp_off, ext_item, members = group_by_prefix(pats)
    parts = [[len(db), db.items.size], db.items, db.offsets, weights,
             [pre_off.size - 1, pre_flat.size], pre_flat, pre_off, [ext_item.size], grp_off,
             ext_item]
    text = " ".join(str(int(v)) for p in parts for v in np.ravel(p))
    done = subprocess.run([str(exe)], input=text, capture_output=True, text=True, check=True)
    grouped = np.array(done.stdout.split(), dtype=np.int64)
    got = np.empty_like(grouped)
    got[members] = grouped
    assert got.tolist() == brute(rows, pats, weights)


@pytest.mark.gpu
def test_gpu_kernel_equals_numba_at_full_size():
    pytest.importorskip("cupy")
    be = get_backend("cupy")
    rng = np.random.default_rng(5)
    lens = np.minimum(rng.geometric(0.2, size=300_000), 200)
    items = rng.integers(0, 17, size=int(lens.sum()))
    db = SequenceDB(items, np.concatenate([[0], np.cumsum(lens)]),
                    Vocabulary([str(i) for i in range(17)]))
    weights = np.ones(len(db), dtype=np.int64)
    pats = sorted({tuple(rng.integers(0, 17, size=rng.integers(1, 6)).tolist())
                   for _ in range(3000)})
    cpu = supports(db, weights, pats, get_backend("numpy"))
    gpu = supports(db, weights, pats, be)
    assert gpu.tolist() == cpu.tolist()
