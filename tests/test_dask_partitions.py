"""The partition layer of the engines (no cluster needed): splits, local calls, errors."""

import os
import sys
import types

import numpy as np
import pytest

from dpgpu import DPGPUError, InvalidParameter, SequenceDB
from dpgpu.mechanisms.dpne import dpne
from dpgpu.mechanisms.ngram import ngram
from dpgpu.mechanisms.pfs2 import pfs2
from dpgpu.mechanisms.privtree import pst
from dpgpu.scale.partitions import LocalPartitions, check_engine, engine_run, part_of, \
    partition, split_rows


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
        return distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0")

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


# ------------------------------------------------ clients, lost workers
@pytest.fixture
def opened(monkeypatch):
    """The clients the engine opens (in-process clusters here), and those it closed."""
    distributed = pytest.importorskip("dask.distributed")
    from dpgpu.scale import dask as engine  # noqa: PLC0415

    log = {"opened": [], "closed": []}
    close = engine.close

    def connect(scheduler=None, **kw):
        log["opened"].append(scheduler)
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                           dashboard_address=":0")
        return distributed.Client(cluster)

    def spy(client):
        log["closed"].append(client)
        close(client)

    monkeypatch.setattr(engine, "connect", connect)
    monkeypatch.setattr(engine, "close", spy)
    return log


def test_the_engine_opens_a_client_only_inside_a_run(opened):
    with pytest.raises(InvalidParameter, match="client: engine='dask' outside a mechanism"):
        partition(db_of(), "dask")
    with engine_run():
        parts = partition(db_of(), "dask")
        assert partition(db_of(), "dask").client is parts.client  # one client per run
        assert parts.sum(len)[()] == 50
        assert not opened["closed"]
    assert opened["closed"] == [parts.client] and opened["opened"] == [None]


def test_check_engine_checks_client():
    with pytest.raises(InvalidParameter, match="client: only with engine='dask'"):
        check_engine("local", client="tcp://127.0.0.1:8786")
    pytest.importorskip("dask.distributed")
    with pytest.raises(InvalidParameter, match="client: expected a dask.distributed.Client"):
        check_engine("dask", client=8786)
    with pytest.raises(InvalidParameter, match="client: an empty scheduler address"):
        check_engine("dask", client=" ")
    assert check_engine("dask", client="tcp://127.0.0.1:8786") == "dask"


def test_a_bad_scheduler_address_names_client():
    pytest.importorskip("dask.distributed")
    with pytest.raises(InvalidParameter, match="client: cannot connect to 'no-port'"), \
            engine_run():
        partition(db_of(), "dask", "no-port")


def test_a_lost_worker_stops_the_run_with_a_dpgpu_error():
    """A worker killed mid-run: its partitions are lost; a DPGPUError says to repeat the run."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        killed = []

        def progress(msg):  # after the first level: the partitions are on the workers
            if not killed:
                killed.append(sorted(client.scheduler_info()["workers"])[0])
                with pytest.raises(Exception):  # noqa: B017 - the worker dies mid-call
                    client.run(os._exit, 1, workers=killed)

        with pytest.raises(DPGPUError, match="a Dask worker was lost.*repeat the run") as err:
            ngram(db_of(), 1.0, l_max=3, n_max=3, seed=1, engine="dask", client=client,
                  progress=progress)
    assert killed and err.value.exit_status == 1 and not isinstance(err.value, InvalidParameter)


@pytest.mark.parametrize("error", ["FutureCancelledError", "KilledWorker", "CommClosedError"])
def test_lost_worker_errors_become_dpgpu_errors(error):
    distributed = pytest.importorskip("dask.distributed")
    from distributed.client import FutureCancelledError  # noqa: PLC0415
    from distributed.comm import CommClosedError  # noqa: PLC0415

    from dpgpu.scale.dask import gather  # noqa: PLC0415

    raised = {"FutureCancelledError": FutureCancelledError("f", "lost dependencies"),
              "KilledWorker": distributed.KilledWorker("f", types.SimpleNamespace(address="w"),
                                                       3),
              "CommClosedError": CommClosedError("stream closed")}[error]

    class Client:
        def gather(self, futures):
            raise raised

    with pytest.raises(DPGPUError, match=f"worker was lost during the run \\({error}") as err:
        gather(Client(), [])
    assert err.value.__cause__ is raised


# ------------------------------------- every mechanism: its run's client
def _releases():
    """Every mechanism, as ``release(db, **kw)`` on the sequences of :func:`db_of`."""
    from dpgpu import privtree_spatial  # noqa: PLC0415

    points = np.linspace(0, 1, 100).reshape(50, 2)
    return {
        "ngram": lambda db, **kw: ngram(db, 1.0, l_max=3, n_max=2, seed=1, **kw),
        "pst": lambda db, **kw: pst(db, 1.0, l_top=3, seed=1, **kw),
        "pfs2": lambda db, **kw: pfs2(db, 1.0, 0.1, seed=1, **kw),
        "dpne": lambda db, **kw: dpne(db, 1.0, 1e-6, max_n=2, seed=1, **kw),
        "spatial": lambda db, **kw: privtree_spatial(points, 1.0, bounds=[[0, 1], [0, 1]],
                                                     seed=1, **kw),
    }


MECHANISMS = ("ngram", "pst", "pfs2", "dpne", "spatial")


def _workers_alive():
    """This process's live child processes but the multiprocessing resource tracker."""
    psutil = pytest.importorskip("psutil")
    return {p.pid for p in psutil.Process().children(recursive=True)
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE
            and "resource_tracker" not in " ".join(p.cmdline())}


def test_a_run_closes_the_local_cluster_it_started():
    """``engine="dask"`` without a client: the run's cluster is gone when it returns."""
    distributed = pytest.importorskip("dask.distributed")
    before = _workers_alive()
    for _ in range(2):
        release = ngram(db_of(), 1.0, l_max=3, n_max=2, seed=1, engine="dask")
        assert release.report["engine"] == "dask"
        assert _workers_alive() <= before
    with pytest.raises(ValueError, match="No clients found"):
        distributed.default_client()


@pytest.mark.parametrize("name", MECHANISMS)
def test_every_mechanism_closes_the_client_its_run_opened(name, opened):
    release = _releases()[name](db_of(), engine="dask")
    assert release.report["engine"] == "dask"
    assert opened["opened"] == [None] and len(opened["closed"]) == 1
    assert opened["closed"][0].status == "closed"


def test_a_failed_run_closes_its_client_too(opened):
    def progress(msg):
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        ngram(db_of(), 1.0, l_max=3, n_max=2, engine="dask", progress=progress)
    assert len(opened["opened"]) == len(opened["closed"]) == 1


@pytest.mark.parametrize("name", MECHANISMS)
def test_every_mechanism_checks_client(name):
    release = _releases()[name]
    with pytest.raises(InvalidParameter, match="client: only with engine='dask'"):
        release(db_of(), client="tcp://127.0.0.1:8786")
    pytest.importorskip("dask.distributed")
    with pytest.raises(InvalidParameter, match="client: expected a dask.distributed.Client"):
        release(db_of(), engine="dask", client=8786)


def test_client_may_be_a_scheduler_address_which_the_run_disconnects():
    distributed = pytest.importorskip("dask.distributed")
    local = ngram(db_of(), 1.0, l_max=3, n_max=2, seed=4)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster:
        clients = set(cluster.scheduler.clients)
        remote = ngram(db_of(), 1.0, l_max=3, n_max=2, seed=4, engine="dask",
                       client=cluster.scheduler_address)
        assert set(cluster.scheduler.clients) == clients
    assert remote.ngrams() == local.ngrams()
