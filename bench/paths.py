"""Where the benchmarks find the real datasets and write their results.

Datasets: ``../shared/datasets`` beside the repository, or the folder named by
the environment variable ``DPGPU_DATASETS`` (as for the tests).  Results:
``bench/results`` unless a script is given ``--out DIR``, so that a trial run
need not overwrite the recorded files.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DATASETS = Path(os.environ.get("DPGPU_DATASETS")
                or Path(__file__).resolve().parents[2] / "shared" / "datasets")
RESULTS = Path(__file__).resolve().parent / "results"


def require(*files: str | Path) -> None:
    """Stop with one line naming the first missing dataset file and where datasets are looked
    for, instead of a traceback from the reader."""
    for f in files:
        if not Path(f).is_file():
            sys.exit(f"bench: {f}: no such dataset file; the benchmarks read the shared datasets "
                     f"from {DATASETS} (set DPGPU_DATASETS to the folder that holds them)")


def add_out_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--out DIR``, the results folder (default ``bench/results``)."""
    parser.add_argument("--out", type=Path, default=RESULTS,
                        help="folder for the results files (default bench/results; "
                             "give another to keep the recorded ones)")


def results_dir(args: argparse.Namespace) -> Path:
    """The folder ``--out`` names, created if missing."""
    args.out.mkdir(parents=True, exist_ok=True)
    return args.out
