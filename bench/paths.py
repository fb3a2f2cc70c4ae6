"""Where the benchmarks find the real datasets.

``../shared/datasets`` beside the repository, or the folder named by the
environment variable ``DPGPU_DATASETS`` (as for the tests).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DATASETS = Path(os.environ.get("DPGPU_DATASETS")
                or Path(__file__).resolve().parents[2] / "shared" / "datasets")


def require(*files: str | Path) -> None:
    """Stop with one line naming the first missing dataset file and where datasets are looked
    for, instead of a traceback from the reader."""
    for f in files:
        if not Path(f).is_file():
            sys.exit(f"bench: {f}: no such dataset file; the benchmarks read the shared datasets "
                     f"from {DATASETS} (set DPGPU_DATASETS to the folder that holds them)")
