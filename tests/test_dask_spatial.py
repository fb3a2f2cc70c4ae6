"""PrivTree spatial over Dask partitions of the points: the release is bit-identical to local."""

import numpy as np
import pytest

from dpgpu import privtree_spatial
from dpgpu.scale.partitions import partition_points

distributed = pytest.importorskip("dask.distributed")


def skewed_points(n=20_000, seed=3):
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(0.3, 0.02, (n // 2, 2)), rng.random((n // 2, 2))])


def test_dask_spatial_equals_local():
    pts = skewed_points()
    local = privtree_spatial(pts, 1.0, bounds=[[0, 1], [0, 1]], seed=5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        remote = privtree_spatial(pts, 1.0, bounds=[[0, 1], [0, 1]], seed=5, engine="dask",
                                  client=client)
        parts = partition_points(pts, "dask", client, partitions=3)
        sizes = [len(p) for p, _ in parts.gather(lambda state: state)]
    assert len(local.report["tree"]["nodes_per_depth"]) >= 4  # a real tree
    for field in ("lo", "hi", "counts"):
        np.testing.assert_array_equal(getattr(remote.leaves, field), getattr(local.leaves, field))
    assert remote.report["tree"] == local.report["tree"]
    assert local.report["engine"] == "local" and remote.report["engine"] == "dask"
    assert sorted(sizes) == sorted(np.diff(np.linspace(0, len(pts), 4).astype(int)).tolist())
