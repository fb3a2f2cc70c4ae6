"""Where the benchmarks find the real datasets.

``../shared/datasets`` beside the repository, or the folder named by the
environment variable ``DPGPU_DATASETS`` (as for the tests).
"""

from __future__ import annotations

import os
from pathlib import Path

DATASETS = Path(os.environ.get("DPGPU_DATASETS")
                or Path(__file__).resolve().parents[2] / "shared" / "datasets")
