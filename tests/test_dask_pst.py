"""PrivTree PST over Dask partitions: the release is bit-identical to the local run."""

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.mechanisms.privtree import pst

distributed = pytest.importorskip("dask.distributed")


def toy_db(seed=1, n=800):
    rng = np.random.default_rng(seed)
    rows = [[f"s{x}" for x in rng.choice(4, size=rng.integers(1, 15), p=[0.4, 0.3, 0.2, 0.1])]
            for _ in range(n)]
    return SequenceDB.from_sequences(rows, vocab=[f"s{x}" for x in range(4)])


def test_dask_pst_equals_local():
    db = toy_db()
    local = pst(db, 2.0, l_top=10, seed=11)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        remote = pst(db, 2.0, l_top=10, seed=11, engine="dask", client=client)
    assert len(local.levels) >= 3  # the tree grows past the root's children
    assert remote.nodes() == local.nodes()
    assert list(remote.synthetic) == list(local.synthetic)
    assert remote.report["tree"] == local.report["tree"]
    assert local.report["engine"] == "local" and remote.report["engine"] == "dask"
