"""bench/parallel.py: repetitions in worker processes give the serial results, in order."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import dpgpu
from dpgpu.backend import gpu_in_use

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import parallel  # noqa: E402


def tiny_db(tmp_path):
    rng = np.random.default_rng(0)
    lines = [" ".join(rng.choice(list("abcd"), rng.integers(1, 7))) for _ in range(300)]
    path = tmp_path / "data.txt"
    path.write_text("\n".join(lines) + "\n")
    return dpgpu.load(path)


def test_parallel_releases_equal_the_serial_loop(tmp_path):
    db = tiny_db(tmp_path)

    def one(seed):  # a closure over the data: the workers inherit it
        rel = dpgpu.pst(db, 1.0, l_top=6, seed=seed)
        return rel.top_k(5), rel.synthetic.lengths.tolist(), os.getpid()

    seeds = [11, 3, 7, 5, 2]
    serial = parallel.run_repetitions(one, seeds, 1)
    par = parallel.run_repetitions(one, seeds, 2)
    assert [r[:2] for r in par] == [r[:2] for r in serial]
    assert {r[2] for r in serial} == {os.getpid()}
    if parallel._numba_layer() == "omp" or gpu_in_use():  # serial fallbacks
        assert {r[2] for r in par} == {os.getpid()}
    else:
        assert os.getpid() not in {r[2] for r in par}        # ran in workers
    # different seeds really give different releases: the order is checked
    assert len({str(r[1]) for r in serial}) > 1


def test_repetitions_run_in_threads_once_cuda_is_initialised(monkeypatch):
    """No fork after CUDA: threads of this process, each given its own stream."""
    streams = []
    monkeypatch.setattr(parallel, "gpu_in_use", lambda: True)
    monkeypatch.setattr(parallel, "_own_stream", lambda: streams.append(threading.get_ident()))
    monkeypatch.setattr(parallel, "_sync_device", lambda: streams.append("synchronized"))
    if parallel._numba_layer() == "workqueue":
        pytest.skip("the work queue layer is not thread-safe: repetitions run in turn")
    out = parallel.run_repetitions(lambda x: (x, os.getpid(), threading.get_ident()), range(6), 2)
    assert [o[0] for o in out] == list(range(6))
    assert {o[1] for o in out} == {os.getpid()}
    assert threading.get_ident() not in {o[2] for o in out}
    assert streams[0] == "synchronized" and len(streams) >= 2


def test_thread_workers_give_the_serial_releases(tmp_path, monkeypatch):
    db = tiny_db(tmp_path)
    monkeypatch.setattr(parallel, "_THREADS", True)

    def one(seed):
        return dpgpu.pst(db, 1.0, l_top=6, seed=seed).top_k(5)

    seeds = [4, 9, 1]
    assert parallel.run_repetitions(one, seeds, 3) == [one(s) for s in seeds]


@pytest.mark.gpu
def test_gpu_thread_workers_give_the_serial_releases(tmp_path, monkeypatch):
    db = tiny_db(tmp_path)
    monkeypatch.setattr(parallel, "_THREADS", False)  # restored after the test
    assert parallel.use_jobs(2, "cupy") in (1, 2)

    def one(seed):
        rel = dpgpu.ngram(db, 1.0, l_max=6, seed=seed, backend="cupy")
        return rel.top_k(5), dpgpu.pst(db, 1.0, l_top=6, seed=seed, backend="cupy").top_k(5)

    seeds = [4, 9, 1, 7]
    assert parallel.run_repetitions(one, seeds, 2) == [one(s) for s in seeds]


def test_errors_and_options(monkeypatch):
    monkeypatch.setattr(parallel, "_THREADS", False)  # use_jobs(.., "cupy") sets it
    def boom(x):
        if x == 2:
            raise ValueError("rep 2 failed")
        return x

    with pytest.raises(ValueError, match="rep 2 failed"):
        parallel.run_repetitions(boom, range(4), 2)
    assert parallel.run_repetitions(boom, [], 4) == []
    assert parallel.run_repetitions(lambda x: x * x, range(3), 8) == [0, 1, 4]
    assert parallel.use_jobs(1) == 1
    assert parallel.use_jobs(3, "numpy") == (1 if parallel._numba_layer() == "omp" else 3)
    assert parallel.use_jobs(4, "cupy") in (1, 4)  # 4 with a thread-safe Numba layer
    with pytest.raises(ValueError):
        parallel.use_jobs(0)
    assert parallel.default_jobs() >= 1


PRELUDE = """
import sys
sys.path.insert(0, {bench!r})
import parallel

_TOTAL = []


def total(n):
    \"\"\"A parallel Numba loop; Numba is imported on the first call.\"\"\"
    if not _TOTAL:
        import numba

        @numba.njit(parallel=True)
        def kernel(n):
            s = 0
            for i in numba.prange(n):
                s += i
            return s

        _TOTAL.append(kernel)
    return _TOTAL[0](n)
"""


def run_python(code, **env):
    """Run ``PRELUDE + code`` in a fresh interpreter with Numba's defaults (plus ``env``)."""
    clean = {k: v for k, v in os.environ.items()
             if k not in ("NUMBA_THREADING_LAYER", "NUMBA_NUM_THREADS")}
    done = subprocess.run([sys.executable, "-c", PRELUDE.format(bench=str(BENCH)) + code],
                          capture_output=True, text=True, timeout=600, env={**clean, **env})
    assert done.returncode == 0, done.stderr
    return done


def test_serial_fallback_once_openmp_runs():
    if importlib.util.find_spec("numba.np.ufunc.omppool") is None:
        pytest.skip("no OpenMP threading layer in this Numba")
    done = run_python("""
total(10)                                  # OpenMP started before any use_jobs
jobs = parallel.use_jobs(2, "numpy")
rows = parallel.run_repetitions(lambda k: total(10 + k), range(3), 2)
assert jobs == 1 and rows == [45, 55, 66], (jobs, rows)
""", NUMBA_THREADING_LAYER="omp")
    assert "run in turn" in done.stderr


def test_numba_parallel_code_survives_the_fork(tmp_path):
    tiny_db(tmp_path)
    done = run_python(f"""
jobs = parallel.use_jobs(2, "numpy")      # before any Numba work, as the scripts do
import dpgpu
from dpgpu.eval import truth as T
db = dpgpu.load({str(tmp_path / "data.txt")!r})
pats = [(0, 1), (1, 0), (0, 2, 1), (3,)]
parent = T.subsequence_supports(db, pats).tolist()          # parallel Numba in the parent
rows = parallel.run_repetitions(lambda k: T.subsequence_supports(db, pats[k:]).tolist(),
                                range(4), jobs)              # ... and in forked workers
assert jobs == 2 and rows == [parent[k:] for k in range(4)], (jobs, rows, parent)
import numba
threads = parallel.run_repetitions(lambda k: numba.get_num_threads(), range(2), 2)
share = min(max(1, parallel.default_jobs() // 2), numba.config.NUMBA_NUM_THREADS)
assert threads == [share, share], (threads, share)        # the workers share the cores
print(numba.threading_layer())
""")
    assert done.stdout.strip() in ("tbb", "workqueue")


def test_workers_share_the_cores_when_numba_comes_later():
    run_python("""
jobs = parallel.use_jobs(2, "numpy")
assert "numba" not in sys.modules


def one(k):
    import numba                                 # first imported in the worker
    return total(10 + k), numba.get_num_threads()


rows = parallel.run_repetitions(one, range(3), jobs)
share = max(1, parallel.default_jobs() // 2)
assert rows == [(45, share), (55, share), (66, share)], rows
""")


@pytest.mark.parametrize("script", ["reproduce_ngram.py", "bench_privtree.py", "bench_pfs2.py",
                                    "bench_dpne.py"])
def test_scripts_take_jobs(script):
    done = subprocess.run([sys.executable, str(BENCH / script), "--help"], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "--jobs" in done.stdout and "--out" in done.stdout


def test_threads_never_share_the_work_queue():
    """Numba's work queue aborts the process on concurrent use: asked for, it means serial."""
    done = run_python("""
import threading
parallel._THREADS = True
rows = parallel.run_repetitions(lambda k: (total(10 + k), threading.get_ident()), range(4), 2)
assert [r[0] for r in rows] == [45, 55, 66, 78], rows
assert {r[1] for r in rows} == {threading.get_ident()}, "ran in threads"
""", NUMBA_THREADING_LAYER="workqueue")
    assert done.returncode == 0


def test_threads_pick_a_thread_safe_layer():
    if importlib.util.find_spec("numba.np.ufunc.omppool") is None \
            and importlib.util.find_spec("numba.np.ufunc.tbbpool") is None:
        pytest.skip("no thread-safe Numba threading layer installed")
    done = run_python("""
import threading
parallel._THREADS = True
rows = parallel.run_repetitions(lambda k: (total(10 + k), threading.get_ident()), range(6), 3)
assert [r[0] for r in rows] == [45, 55, 66, 78, 91, 105], rows
import numba
assert numba.threading_layer() in ("omp", "tbb"), numba.threading_layer()
""")
    assert done.returncode == 0
