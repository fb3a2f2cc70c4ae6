"""Shared pytest configuration."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items):
    """Skip ``gpu``-marked tests where no usable CUDA GPU is present."""
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    from dpgpu.backend import gpu_available  # noqa: PLC0415 - imports CuPy; only when needed

    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no usable CUDA GPU (dpgpu.backend.gpu_available() is False)")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(scope="module")
def dask_client():
    """A client of a local Dask cluster of two single-threaded workers (skips without Dask)."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        yield client
