"""Threads sharing one GPU plan with their share of its free memory (no GPU needed)."""

from __future__ import annotations

import math
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from dpgpu.backend import device_memory_share, free_device_memory, get_backend
from dpgpu.errors import InvalidParameter
from dpgpu.ops import grams

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
import parallel  # noqa: E402

FREE = 1_920_000  # 10_000 cells of 48 bytes in a quarter; 30_000 int64 bins in an eighth


def fake_gpu(free=FREE, total=4 * FREE):
    """A stand-in for the CuPy backend: only ``is_gpu`` and ``xp.cuda.runtime.memGetInfo``."""
    runtime = SimpleNamespace(memGetInfo=lambda: (free, total))
    return SimpleNamespace(name="cupy", is_gpu=True, xp=SimpleNamespace(cuda=SimpleNamespace(
        runtime=runtime)))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, 0, 0.0, -0.5, 1.5, 2,
                                 True, "0.5", None])
def test_share_must_be_a_finite_number_in_0_1(bad):
    with pytest.raises(InvalidParameter, match="fraction"):
        with device_memory_share(bad):
            pass
    assert free_device_memory(fake_gpu()) == FREE  # a failed enter leaves the share alone


@pytest.mark.parametrize("share", [1, 1.0, 0.25, 1 / 3])
def test_valid_shares_scale_the_free_memory(share):
    gpu = fake_gpu()
    with device_memory_share(share) as got:
        assert got == float(share)
        assert free_device_memory(gpu) == int(FREE * share)
    assert free_device_memory(gpu) == FREE


def test_free_device_memory_is_the_backends_free_memory_by_default():
    assert free_device_memory(fake_gpu(free=12_345)) == 12_345
    assert isinstance(free_device_memory(fake_gpu(free=12_345)), int)


def test_free_device_memory_needs_a_gpu_backend():
    with pytest.raises(InvalidParameter, match="backend"):
        free_device_memory(get_backend("numpy"))


def test_shares_nest_and_are_restored():
    gpu = fake_gpu(free=1000)
    with device_memory_share(0.5):
        assert free_device_memory(gpu) == 500
        with device_memory_share(0.25):  # replaces the outer share, does not multiply it
            assert free_device_memory(gpu) == 250
        assert free_device_memory(gpu) == 500
        with pytest.raises(RuntimeError):
            with device_memory_share(0.1):
                raise RuntimeError("boom")
        assert free_device_memory(gpu) == 500  # restored after an exception too
    assert free_device_memory(gpu) == 1000


def test_a_share_is_seen_only_by_the_thread_that_set_it():
    gpu = fake_gpu(free=1000)
    entered, checked = threading.Event(), threading.Event()
    seen = {}

    def holder():
        with device_memory_share(0.25):
            seen["holder"] = free_device_memory(gpu)
            entered.set()
            assert checked.wait(30)
            seen["holder_after"] = free_device_memory(gpu)

    t = threading.Thread(target=holder)
    t.start()
    try:
        assert entered.wait(30)
        seen["main"] = free_device_memory(gpu)  # while the other thread holds its share
        other = threading.Thread(target=lambda: seen.update(fresh=free_device_memory(gpu)))
        other.start()
        other.join(30)
    finally:
        checked.set()
        t.join(30)
    assert seen == {"holder": 250, "main": 1000, "fresh": 1000, "holder_after": 250}

    with device_memory_share(0.5):  # and the other way round: a new thread starts at 1
        t = threading.Thread(target=lambda: seen.update(child=free_device_memory(gpu)))
        t.start()
        t.join(30)
        assert free_device_memory(gpu) == 500
    assert seen["child"] == 1000


def test_gram_sizing_honours_the_share():
    gpu = fake_gpu()
    assert grams._device_cells(gpu) == 10_000
    assert grams._gpu_dense_space(gpu) == 30_000
    with device_memory_share(0.5):
        assert grams._device_cells(gpu) == 5_000
        assert grams._gpu_dense_space(gpu) == 15_000
    assert grams._device_cells(gpu) == 10_000
    assert grams._device_cells(get_backend("numpy")) == grams.MAX_BLOCK_CELLS


def test_gpu_thread_workers_plan_with_one_share_each(monkeypatch):
    monkeypatch.setattr(parallel, "gpu_in_use", lambda: True)
    monkeypatch.setattr(parallel, "_own_stream", lambda: None)
    monkeypatch.setattr(parallel, "_sync_device", lambda: None)
    if parallel._numba_layer() == "workqueue":
        pytest.skip("the work queue layer is not thread-safe: repetitions run in turn")
    gpu = fake_gpu(free=1200)
    out = parallel.run_repetitions(
        lambda x: (free_device_memory(gpu), threading.get_ident()), range(6), 4)
    assert threading.get_ident() not in {o[1] for o in out}  # really ran in threads
    assert [o[0] for o in out] == [300] * 6
    assert free_device_memory(gpu) == 1200  # this thread's share is untouched
