"""PFS² over Dask partitions: the release is bit-identical to the local run."""

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.mechanisms.pfs2 import pfs2

distributed = pytest.importorskip("dask.distributed")


def toy_db(seed=0, n=600):
    rng = np.random.default_rng(seed)
    rows = [[f"i{x}" for x in rng.choice(5, size=rng.integers(1, 12),
                                        p=[0.35, 0.25, 0.2, 0.12, 0.08])] for _ in range(n)]
    return SequenceDB.from_sequences(rows, vocab=[f"i{x}" for x in range(5)])


def test_dask_pfs2_equals_local():
    db = toy_db()
    local = pfs2(db, 2.0, 0.15, l_upper=8, seed=5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        remote = pfs2(db, 2.0, 0.15, l_upper=8, seed=5, engine="dask", client=client)
    assert len(remote.levels) >= 2  # the test exercises several mining levels
    assert remote.patterns == local.patterns
    assert remote.supports.tolist() == local.supports.tolist()
    assert [lvl.local_noisy for lvl in remote.levels] == \
        [lvl.local_noisy for lvl in local.levels]
    assert remote.report["levels"] == local.report["levels"]
    assert local.report["engine"] == "local" and remote.report["engine"] == "dask"
