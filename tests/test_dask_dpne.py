"""DPNE over Dask partitions by user: the release is bit-identical to the local run."""

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.mechanisms.dpne import dpne

distributed = pytest.importorskip("dask.distributed")


def user_db(seed=2, n_users=120, users=True):
    """Texts of a few users; each user writes several texts, interleaved in the rows."""
    rng = np.random.default_rng(seed)
    rows, owner = [], []
    for u in range(n_users):
        for _ in range(rng.integers(1, 5)):
            rows.append([f"w{x}" for x in rng.choice(6, size=rng.integers(2, 14),
                                                    p=[0.3, 0.25, 0.2, 0.12, 0.08, 0.05])])
            owner.append(u)
    order = rng.permutation(len(rows))  # a user's texts are spread over the input
    return SequenceDB.from_sequences([rows[i] for i in order], vocab=[f"w{x}" for x in range(6)],
                                     users=np.asarray(owner)[order] if users else None)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.mark.parametrize("users", [True, False])
def test_dask_dpne_equals_local(client, users):
    db = user_db(users=users)
    # a small contribution cap makes most users keep a keyed random subset
    kw = dict(max_n=4, contribution=3, seed=13)
    local = dpne(db, 8.0, 1e-5, **kw)
    remote = dpne(db, 8.0, 1e-5, engine="dask", client=client, **kw)
    assert local.counts()[1] > 0  # the test reaches level 2 at least
    assert [g.tolist() for g in remote.levels] == [g.tolist() for g in local.levels]
    assert local.report["engine"] == "local" and remote.report["engine"] == "dask"


def test_dask_engine_is_for_dpne_only(client):
    with pytest.raises(InvalidParameter, match="engine"):
        dpne(user_db(), 8.0, 1e-5, method="dpsu-all", engine="dask", client=client)
