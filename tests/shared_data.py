"""Where the tests find the real datasets of ``../shared/datasets``.

The folder beside the repository, or the one named by the environment
variable ``DPGPU_DATASETS`` (a copy carried to another machine).  A test
that reads a file is marked with :func:`needs`, so that it skips, naming the
file, where that file is missing; CI has them all.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATASETS = Path(os.environ.get("DPGPU_DATASETS")
                or Path(__file__).resolve().parents[2] / "shared" / "datasets")


def dataset(relative: str) -> Path:
    """Path of a file under the datasets folder, e.g. ``"msnbc/msnbc990928.seq.gz"``."""
    return DATASETS / relative


def needs(*relative: str):
    """Skip marker for a test that reads these dataset files."""
    missing = [r for r in relative if not dataset(r).exists()]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} in {DATASETS}")


def param(relative: str, *values):
    """``pytest.param(relative, *values)`` that skips where that file is missing."""
    return pytest.param(relative, *values, marks=needs(relative))
