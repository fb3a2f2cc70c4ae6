"""Shared pytest configuration."""

from __future__ import annotations

import numpy as np
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


class NoiseDraws(list):
    """Every keyed draw of a run: ``(sampler name, key bytes, tag, identities, packed)``."""

    def assert_distinct(self):
        """Within a ``(key, tag)``: no identity drawn twice, and one drawing mode only
        (identity ``8 j`` packed and ``j`` unpacked share a ChaCha word).

        Returns
        -------
        dict
            ``tag -> list of identity arrays`` (all keys together).
        """
        parts, modes, tags = {}, {}, {}
        for _, key, tag, ids, packed in self:
            parts.setdefault((key, tag), []).append(ids)
            modes.setdefault((key, tag), set()).add(packed)
            tags.setdefault(tag, []).append(ids)
        for (_, tag), arrays in parts.items():
            ids = np.concatenate(arrays)
            assert np.unique(ids).size == ids.size, f"tag {tag}: an identity drawn twice"
        assert all(len(m) == 1 for m in modes.values()), "a tag drawn packed and unpacked"
        return tags


@pytest.fixture
def noise_draws(monkeypatch):
    """Spy on every keyed sampler call (:class:`NoiseDraws`); the draws themselves are kept."""
    from dpgpu.privacy import samplers  # noqa: PLC0415

    seen = NoiseDraws()
    sample, packed = samplers._Sampler.sample, samplers.Bernoulli.sample_packed

    def spy(original, is_packed):
        def draw(self, key, identities, *, tag, backend=None):
            seen.append((type(self).__name__, key._key, tag,
                         np.asarray(identities).view(np.uint64).copy(), is_packed))
            return original(self, key, identities, tag=tag, backend=backend)
        return draw

    monkeypatch.setattr(samplers._Sampler, "sample", spy(sample, False))
    monkeypatch.setattr(samplers.Bernoulli, "sample_packed", spy(packed, True))
    return seen
