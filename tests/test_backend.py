"""Backend resolution: explicit choice, environment, and following an input array."""

from __future__ import annotations

import numpy as np
import pytest

from dpgpu.backend import backend_of, get_backend, gpu_available
from dpgpu.errors import BackendUnavailable
from dpgpu.privacy import NoiseKey


def test_unknown_backend_names_its_source(monkeypatch):
    monkeypatch.setenv("DPGPU_BACKEND", "tpu")
    with pytest.raises(BackendUnavailable, match="DPGPU_BACKEND"):
        get_backend()


def test_numpy_input_stays_on_numpy_whatever_the_default(monkeypatch):
    monkeypatch.setenv("DPGPU_BACKEND", "cupy")
    assert backend_of(np.zeros(3)).name == "numpy"
    words = NoiseKey.from_seed(1).words(np.arange(4), 0, 2)
    assert isinstance(words, np.ndarray) and words.shape == (2, 4)


def test_explicit_backend_wins_over_the_input():
    assert backend_of(np.zeros(3), "numpy").name == "numpy"


@pytest.mark.skipif(gpu_available(), reason="checks the error where no GPU is usable")
def test_device_input_without_a_gpu_is_a_clear_error():
    class DeviceArray:
        __cuda_array_interface__ = {}

    with pytest.raises(BackendUnavailable):
        backend_of(DeviceArray())


def test_gpu_in_use_follows_detection():
    from dpgpu.backend import gpu_in_use

    assert gpu_in_use() == gpu_available()  # detection ran: in use exactly when usable
