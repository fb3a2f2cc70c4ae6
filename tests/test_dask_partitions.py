"""The partition layer of the engines (no cluster needed): splits, local calls, errors."""

import sys
import types

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.mechanisms.dpne import dpne
from dpgpu.mechanisms.pfs2 import pfs2
from dpgpu.mechanisms.privtree import pst
from dpgpu.scale.partitions import LocalPartitions, part_of, partition, split_rows


def db_of(n=50, users=None):
    rows = [["a", "b"][: 1 + i % 2] for i in range(n)]
    return SequenceDB.from_sequences(rows, vocab=["a", "b"], users=users)


def test_split_rows_keeps_each_user_in_one_partition():
    rng = np.random.default_rng(0)
    users = rng.integers(0, 17, 200)
    parts = split_rows(db_of(200, users), 4, by_user=True)
    assert 2 <= len(parts) <= 4 and all(p.size for p in parts)
    assert sorted(np.concatenate(parts).tolist()) == list(range(200))
    owners = [set(users[p].tolist()) for p in parts]
    assert sum(len(o) for o in owners) == len(set().union(*owners)) == 17


def test_split_rows_without_users_is_contiguous_and_balanced():
    parts = split_rows(db_of(10), 3)
    assert [p.tolist() for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    assert [p.tolist() for p in split_rows(db_of(2), 5)] == [[0], [1]]
    assert [p.tolist() for p in split_rows(db_of(0), 3)] == [[]]


def test_part_of_keeps_global_user_identities():
    db = db_of(6)
    part = part_of(db, np.array([4, 1]), by_user=True)
    assert part.users.tolist() == [4, 1] and part.lengths.tolist() == [1, 2]
    assert part_of(db, np.array([4, 1])).users is None


def test_local_partitions_run_inline_with_per_row_arguments():
    parts = partition(db_of(4))
    assert isinstance(parts, LocalPartitions) and len(parts) == 1
    doubled = parts.map(lambda db, k, w: w * k, 2, per_row=(np.arange(4),))
    assert doubled.gather(lambda s: s.tolist()) == [[0, 2, 4, 6]]
    assert doubled.sum(lambda s: s + 1).tolist() == [1, 3, 5, 7]


@pytest.mark.parametrize("release", [
    lambda db, **kw: pst(db, 1.0, **kw),
    lambda db, **kw: pfs2(db, 1.0, 0.1, **kw),
    lambda db, **kw: dpne(db, 1.0, 1e-6, **kw),
])
def test_engine_is_validated_and_dask_is_optional(release, monkeypatch):
    with pytest.raises(InvalidParameter, match="engine: must be one of local, dask"):
        release(db_of(), engine="spark")
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # as if not installed
    with pytest.raises(InvalidParameter, match=r"pip install dpgpu\[dist\]"):
        release(db_of(), engine="dask")


def test_gpu_clusters_use_dask_cuda_when_it_is_installed(monkeypatch):
    """``connect(gpus=True)`` starts dask-cuda's LocalCUDACluster (a stand-in here: no GPU)."""
    distributed = pytest.importorskip("dask.distributed")
    from dpgpu.scale.dask import close, connect  # noqa: PLC0415

    made = []

    def local_cuda_cluster(**kw):
        made.append(kw)
        return distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=None)

    fake = types.ModuleType("dask_cuda")
    fake.LocalCUDACluster = local_cuda_cluster
    monkeypatch.setitem(sys.modules, "dask_cuda", fake)
    client = connect(gpus=True, quiet=True)
    try:
        assert made and len(client.scheduler_info()["workers"]) == 1
    finally:
        close(client)
    client = connect(quiet=True)  # without gpus: the CPU cluster of n_workers
    try:
        assert len(made) == 1 and len(client.scheduler_info()["workers"]) == 2
    finally:
        close(client)


def test_gpu_clusters_without_dask_cuda_warn_and_share_the_gpu(monkeypatch, caplog):
    pytest.importorskip("dask.distributed")
    from dpgpu.scale.dask import close, connect  # noqa: PLC0415

    monkeypatch.setitem(sys.modules, "dask_cuda", None)  # as if not installed
    client = connect(gpus=True, n_workers=1, quiet=True)
    try:
        assert len(client.scheduler_info()["workers"]) == 1
    finally:
        close(client)
    assert "dask-cuda is not installed" in caplog.text


def test_cli_asks_for_gpu_workers_with_the_cupy_backend(monkeypatch):
    """``--engine dask`` without ``--scheduler`` asks for a GPU cluster iff the backend is a GPU."""
    import argparse  # noqa: PLC0415

    from dpgpu.commands import common  # noqa: PLC0415
    from dpgpu.scale import dask as engine  # noqa: PLC0415

    asked = []
    monkeypatch.setattr(engine, "connect", lambda scheduler, quiet, gpus: asked.append(gpus))
    monkeypatch.setattr(engine, "close", lambda client: None)
    for name, is_gpu in (("numpy", False), ("cupy", True)):
        monkeypatch.setattr(common, "get_backend",
                            lambda backend, gpu=is_gpu: type("B", (), {"is_gpu": gpu})())
        args = argparse.Namespace(engine="dask", scheduler=None, backend=name, verbose=0)
        with common.engine_client(args):
            pass
    args = argparse.Namespace(engine="dask", scheduler="tcp://x:1", backend="cupy", verbose=0)
    with common.engine_client(args):
        pass
    assert asked == [False, True, False]
