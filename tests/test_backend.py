"""Backend resolution: explicit choice, environment, and following an input array."""

from __future__ import annotations

import os
import subprocess
import sys

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


@pytest.mark.parametrize("preset, expected", [(None, "1 True"), ("0", "0 False")])
def test_cupy_compiles_with_precompiled_headers_unless_the_user_said_otherwise(preset, expected):
    """dpgpu asks CuPy for NVRTC's precompiled headers before it first imports CuPy (the
    first releases on a fresh machine then wait about half as long); a value set is kept."""
    pytest.importorskip("cupy")
    env = {k: v for k, v in os.environ.items() if k != "CUPY_NVRTC_USE_PCH"}
    if preset is not None:
        env["CUPY_NVRTC_USE_PCH"] = preset
    code = ("import os, dpgpu, dpgpu.backend as b; b.gpu_available(); "
            "import cupy.cuda.compiler as c; print(os.environ['CUPY_NVRTC_USE_PCH'], c._use_pch)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == expected.split()
