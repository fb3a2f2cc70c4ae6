#!/usr/bin/env bash
# The GPU checks in one run, for a machine with an NVIDIA GPU and CuPy already
# installed (no network needed): the environment, the whole test suite on the
# default backend (CuPy where a GPU is usable, so every mechanism's GPU path
# runs, the `gpu`-marked tests included), then the GPU benchmarks.
#
#   OUT=/some/dir bash bench/gpu_check.sh [tests|bench|all]
#
# Logs go to $OUT (default ./gpu-check); benchmark results to bench/results/
# and, tarred, to $OUT/results.tar.gz.  Each stage has a time limit
# (T_TESTS, T_BENCH seconds) so that one stuck stage cannot eat the rest.
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
  "$py" -c "import cupy, numba, numpy; print('cupy', cupy.__version__, 'numba', numba.__version__, 'numpy', numpy.__version__)"
} > "$OUT/env.txt" 2>&1

if [[ $stage == tests || $stage == all ]]; then
  timeout "${T_TESTS:-200}" "$py" -m pytest -q -rfE -p no:cacheprovider -n "$jobs" \
    --timeout 150 ${PYTEST_ARGS:-tests} > "$OUT/pytest.txt" 2>&1
  echo "pytest exit $?" >> "$OUT/pytest.txt"
fi

if [[ $stage == bench || $stage == all ]]; then
  {
    timeout "${T_BENCH:-150}" "$py" bench/bench_floors.py --backend cupy
    echo "bench_floors exit $?"
    timeout 60 "$py" bench/bench_grams.py --backend cupy
    echo "bench_grams exit $?"
    timeout 40 "$py" bench/bench_noise.py
    echo "bench_noise exit $?"
  } > "$OUT/bench.txt" 2>&1
  tar czf "$OUT/results.tar.gz" bench/results
fi
