"""dpgpu's Numba parallel loops called from several threads at once.

Numba's ``workqueue`` threading layer (its fallback without OpenMP or TBB)
aborts the process on concurrent parallel calls; dpgpu's loops take turns
there (dpgpu.backend.numba_threads) and run freely on the safe layers.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dpgpu.backend import numba_threads

ROOT = Path(__file__).resolve().parent.parent

#: Four threads draw ChaCha20 words (a parallel loop) 50 times each.
SCRIPT = """
import sys, threading
import numpy as np
import numba
from dpgpu.backend import numba_threads
from dpgpu.privacy.rng import NoiseKey

key = NoiseKey.from_seed(1)
ids = np.arange(50_000, dtype=np.uint64)
want = key.words(ids, 3, 4, backend="numpy")
assert numba.threading_layer() == "workqueue", numba.threading_layer()
if sys.argv[1] == "unlocked":  # the broken twin: calls treated as safe
    numba_threads._safe = True
same = []

def work():
    for _ in range(50):
        same.append(bool(np.array_equal(key.words(ids, 3, 4, backend="numpy"), want)))

threads = [threading.Thread(target=work) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert same == [True] * 200, same.count(False)
print("ok")
"""


def _run(mode: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "NUMBA_NUM_THREADS": "2"}
    return subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_concurrent_callers_survive_the_work_queue():
    done = _run("locked")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_without_turns_the_work_queue_aborts():
    """The broken twin: the same script with the turns switched off kills the process,
    so the test above shows the lock doing its work."""
    done = _run("unlocked")
    assert done.returncode != 0 and "Concurrent access" in done.stderr, done.stderr[-2000:]


class _Recorder:
    """A stand-in dispatcher that notes whether the lock was held during each call."""

    def __init__(self):
        self.held = []

    def __call__(self, x):
        self.held.append(numba_threads._lock.locked())
        return x + 1


@pytest.mark.parametrize("layer,locked", [(None, True), ("workqueue", True), ("omp", False),
                                          ("tbb", False)])
def test_turns_are_taken_until_a_safe_layer_is_known(monkeypatch, layer, locked):
    def threading_layer():
        if layer is None:
            raise ValueError("no threading layer has been initialized yet")
        return layer

    monkeypatch.setattr(numba_threads, "_safe", False)
    monkeypatch.setattr(numba_threads.numba, "threading_layer", threading_layer)
    inner = _Recorder()
    wrapped = numba_threads.one_caller_when_unsafe(inner)
    assert wrapped(1) == 2 and wrapped.dispatcher is inner
    assert inner.held == [locked]
    assert numba_threads._safe is (not locked)  # a safe layer is remembered
    assert not numba_threads._lock.locked()     # and the lock is released after the call


def test_safe_layers_run_callers_together(monkeypatch):
    """On a safe layer, two callers are inside the function at the same time."""
    monkeypatch.setattr(numba_threads, "_safe", True)
    inside = threading.Barrier(2, timeout=10)
    wrapped = numba_threads.one_caller_when_unsafe(lambda: inside.wait())
    threads = [threading.Thread(target=wrapped) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not inside.broken
