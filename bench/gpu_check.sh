#!/usr/bin/env bash
# The GPU checks in one run, for a machine with an NVIDIA GPU and CuPy already
# installed (no network needed): the environment, the whole test suite on the
# default backend (CuPy where a GPU is usable, so every mechanism's GPU path
# runs, the `gpu`-marked tests included), then the benchmarks.
#
#   OUT=/some/dir bash bench/gpu_check.sh [tests|bench|all]
#
# Logs go to $OUT (default ./gpu-check): env.txt, pytest.txt, bench.txt,
# profile.txt, first_use.txt, scaling.txt; benchmark results to bench/results/ and, tarred,
# to $OUT/results.tar.gz (one archive: the device returns only a few files).
# Each stage has a time limit (seconds; T_TESTS, T_FIRST_USE,
# T_SCALING) so that one stuck stage cannot eat the rest; MAX_TOKENS, RELEASE_MAX_TOKENS
# and MECHANISMS size the scaling run, SCALING_TAG names its results
# (scaling-cupy-<tag>; the counting curve to 1e9 tokens is scaling-cupy).  Tests and benchmarks read the real
# datasets from ../shared/datasets, or from $DPGPU_DATASETS (all of them are
# 11 MB: copy them into an ignored folder such as .gpu-data/datasets, carry it
# to the device, and set DPGPU_DATASETS=$PWD/.gpu-data/datasets); a test skips,
# naming the file, where its file is missing.
set -u
stage=${1:-all}
OUT=${OUT:-$PWD/gpu-check}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
export NUMBA_CACHE_DIR=${NUMBA_CACHE_DIR:-/tmp/numba-cache}
py=${PYTHON:-python3}
jobs=$(( $(nproc) > 4 ? $(nproc) - 2 : 2 ))

{
  date -u; nvidia-smi; "$py" -m dpgpu info
  echo "datasets: ${DPGPU_DATASETS:-../shared/datasets}"; ls "${DPGPU_DATASETS:-../shared/datasets}"
  "$py" -c "import cupy, numba, numpy; print('cupy', cupy.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__)"
} > "$OUT/env.txt" 2>&1

# Numba's parallel loops start one thread per core in every pytest worker: 14
# workers x 16 threads made the suite 4x slower (half of it in 230 s, against
# 63 s for all of it with 2 threads each).  -v names each failure as it
# happens, so a stage cut short by its time limit still says what failed.
# pytest-xdist (-n) and pytest-timeout (--timeout) are used where installed (the GPU
# image has them; dpgpu's extras do not): without them the suite runs in one process.
if [[ $stage == tests || $stage == all ]]; then
  plugins=()
  "$py" -c "import xdist" 2> /dev/null && plugins+=(-n "$jobs")
  "$py" -c "import pytest_timeout" 2> /dev/null && plugins+=(--timeout 150)
  echo "pytest plugins: ${plugins[*]:-none}" >> "$OUT/env.txt"
  NUMBA_NUM_THREADS=${TEST_THREADS:-2} timeout "${T_TESTS:-200}" "$py" -m pytest -v -rfE \
    --tb=short -p no:cacheprovider ${plugins[@]+"${plugins[@]}"} --junitxml="$OUT/junit.xml" \
    ${PYTEST_ARGS:-tests} > "$OUT/pytest.txt" 2>&1
  echo "pytest exit $?" >> "$OUT/pytest.txt"
fi

if [[ $stage == bench || $stage == all ]]; then
  {
    timeout 160 "$py" bench/bench_floors.py --backend cupy; echo "bench_floors exit $?"
    for b in cupy numpy; do
      timeout 70 "$py" bench/bench_grams.py --backend "$b"; echo "bench_grams $b exit $?"
    done
    timeout 40 "$py" bench/bench_noise.py; echo "bench_noise exit $?"
  } > "$OUT/bench.txt" 2>&1
  tar czf "$OUT/results.tar.gz" bench/results
  timeout 120 "$py" bench/profile_release.py --backend cupy --top 15 > "$OUT/profile.txt" 2>&1
  # each case in a fresh process on its own empty kernel cache: ~40 s a mechanism
  (cd bench && timeout "${T_FIRST_USE:-240}" "$py" bench_first_use.py) > "$OUT/first_use.txt" 2>&1
  echo "bench_first_use exit $?" >> "$OUT/first_use.txt"
  timeout "${T_SCALING:-150}" "$py" bench/bench_scaling.py --backend cupy --max-tokens "${MAX_TOKENS:-3e7}" \
    --release-max-tokens "${RELEASE_MAX_TOKENS:-3e7}" --mechanisms "${MECHANISMS:-ngram,pst,pfs2,dpne}" \
    --tag "${SCALING_TAG:-releases}" \
    > "$OUT/scaling.txt" 2>&1
  echo "bench_scaling exit $?" >> "$OUT/scaling.txt"
  tar czf "$OUT/results.tar.gz" bench/results
fi
