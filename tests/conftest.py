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
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        yield client


class NoiseDraws(list):
    """Every keyed draw of a run: ``(sampler name, key bytes, tag, identities, packed)``."""

    def assert_distinct(self):
        """Within a ``(key, tag)`` and drawing mode (packed words have a key of their own):
        no identity drawn twice.

        Returns
        -------
        dict
            ``tag -> list of identity arrays`` (all keys together).
        """
        parts, tags = {}, {}
        for _, key, tag, ids, packed in self:
            parts.setdefault((key, tag, packed), []).append(ids)
            tags.setdefault(tag, []).append(ids)
        for (_, tag, _), arrays in parts.items():
            ids = np.concatenate(arrays)
            assert np.unique(ids).size == ids.size, f"tag {tag}: an identity drawn twice"
        return tags


@pytest.fixture
def noise_draws(monkeypatch):
    """Spy on every keyed draw (:class:`NoiseDraws`); the draws themselves are kept.

    Sampler calls are recorded under the sampler's name; direct calls of
    :meth:`NoiseKey.words` and :meth:`NoiseKey.packed_words` (subset choices,
    synthetic sampling) under the method's; the calls a recorded call makes
    itself are not recorded again.
    """
    from dpgpu.backend import to_numpy  # noqa: PLC0415
    from dpgpu.privacy import NoiseKey, samplers  # noqa: PLC0415

    seen = NoiseDraws()
    depth = [0]

    def spy(original, name, is_packed):
        def draw(self, *args, **kw):
            key, identities, tag = (self, args[0], args[1] if len(args) > 1 else kw["tag"]) \
                if isinstance(self, NoiseKey) else (args[0], args[1], kw["tag"])
            if depth[0] == 0:
                seen.append((name or type(self).__name__, key._key, tag,
                             to_numpy(identities).view(np.uint64).copy(), is_packed))  # CuPy too
            depth[0] += 1
            try:
                return original(self, *args, **kw)
            finally:
                depth[0] -= 1
        return draw

    for owner, method, name, is_packed in (
            (samplers._Sampler, "sample", None, False),
            (samplers.Bernoulli, "sample_packed", None, True),
            (NoiseKey, "words", "NoiseKey.words", False),
            (NoiseKey, "packed_words", "NoiseKey.packed_words", True)):
        monkeypatch.setattr(owner, method, spy(getattr(owner, method), name, is_packed))
    return seen
