"""Every kernels/*.cu compiles under NVRTC exactly as CuPy compiles it, and under nvcc -Werror.

No GPU needed: NVRTC and nvcc only generate PTX.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dpgpu.backend import cuda

pytestmark = pytest.mark.compile

NAMES = cuda.kernel_names()
ARCHS = (75, 90)
_ENTRY = re.compile(r"^\.visible \.entry (\w+)\(", re.MULTILINE)


def nvrtc_ptx(name: str, arch: int) -> str:
    """PTX of ``kernel_source(name)`` from NVRTC with CuPy's run-time options."""
    core = pytest.importorskip("cupy._core.core", reason="CuPy is needed (pip install dpgpu[ci])")
    from cupy_backends.cuda.libs import nvrtc  # noqa: PLC0415

    options = tuple(core.assemble_cupy_compiler_options(cuda.COMPILE_OPTIONS))
    options += ("-ftz=true", f"--gpu-architecture=compute_{arch}")  # CuPy adds -ftz=true too
    program = nvrtc.createProgram(cuda.kernel_source(name), f"{name}.cu", (), ())
    try:
        nvrtc.compileProgram(program, options)
    except nvrtc.NVRTCError as err:
        pytest.fail(f"NVRTC rejected {name}.cu for compute_{arch}:\n"
                    f"{nvrtc.getProgramLog(program)}\n{err}")
    log = nvrtc.getProgramLog(program).strip("\x00\n ")
    assert not log, f"NVRTC warnings for {name}.cu:\n{log}"
    ptx = nvrtc.getPTX(program)
    return ptx.decode() if isinstance(ptx, bytes) else ptx


def find_nvcc() -> str | None:
    """nvcc from PATH, else from CUDA_HOME or /usr/local/cuda."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    return shutil.which("nvcc") or shutil.which("nvcc", path=str(Path(home) / "bin"))


def test_kernels_found():
    assert "grams" in NAMES


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", NAMES)
def test_nvrtc_as_cupy(name, arch):
    entries = _ENTRY.findall(nvrtc_ptx(name, arch))
    assert entries, f"{name}.cu defines no kernel"
    assert all(e.startswith("dpgpu_") for e in entries), entries


def test_gram_kernels_present():
    entries = set(_ENTRY.findall(nvrtc_ptx("grams", 90)))
    assert {"dpgpu_packed_keys", "dpgpu_level_histogram", "dpgpu_unpack_counts"} <= entries
    counting = set(_ENTRY.findall(nvrtc_ptx("gram_counts", 90)))
    assert counting == {"dpgpu_gram_hash_packed", "dpgpu_gram_hash_counts"} | {
        f"dpgpu_gram_counts{kind}_{bits}" for kind in ("", "_shared") for bits in ("u32", "u64")}
    assert set(_ENTRY.findall(nvrtc_ptx("gram_readout", 90))) == {
        f"dpgpu_{op}_chunks_{bits}" for op in ("nonzero", "pack") for bits in ("u32", "u64")}


def test_headers_inlined():
    source = cuda.kernel_source("grams")
    assert '#include "' not in source
    assert source.count("DPGPU_GRAMS_CUH") == 3 and source.count("DPGPU_COMMON_CUH") == 3


@pytest.mark.parametrize("name", NAMES)
def test_nvcc_werror(name, tmp_path):
    nvcc = find_nvcc()
    if nvcc is None:
        pytest.skip("nvcc not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin")
    kernels = Path(str(cuda.kernel_dir()))
    cmd = [nvcc, "-Werror", "all-warnings", "-std=c++17", "-ptx", "-arch=compute_90",
           f"-I{kernels}", str(kernels / f"{name}.cu"), "-o", str(tmp_path / f"{name}.ptx")]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout}{done.stderr}"
