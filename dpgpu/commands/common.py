"""Arguments shared by the subcommands that read a dataset or pick a backend."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..data.load import FORMATS, load

_FORMAT_OPTIONS = ("tokens", "case", "activity", "timestamp", "user", "delimiter", "text",
                   "lowercase")


def add_data_arguments(parser: argparse.ArgumentParser, name: str = "data") -> None:
    """Add the dataset path and the reader options to ``parser``."""
    parser.add_argument(name, help="dataset file (gzip allowed); format detected from content")
    group = parser.add_argument_group("input format")
    group.add_argument("--format", choices=FORMATS, help="input format (default: detect)")
    group.add_argument("--tokens", choices=("auto", "int", "str"),
                       help="lines format: token type")
    group.add_argument("--case", help="csv/parquet: case (sequence) id column")
    group.add_argument("--activity", help="csv/parquet/xes: activity column or attribute")
    group.add_argument("--timestamp", help="csv/parquet/xes: timestamp column or attribute")
    group.add_argument("--user", help="csv/parquet/jsonl/text-*: user id column or field "
                       "(user-level data)")
    group.add_argument("--delimiter", help="csv: field delimiter (default: detect)")
    group.add_argument("--text", help="jsonl/text-csv/text-parquet: text column or field")
    group.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                       help="jsonl/text-*: lower-case the words")


def add_backend_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--backend``."""
    parser.add_argument("--backend", choices=("auto", "numpy", "cupy"),
                        help="array backend (default: $DPGPU_BACKEND, else auto)")


def load_from_args(args: argparse.Namespace, name: str = "data") -> Any:
    """Load the dataset named on the command line with its reader options."""
    options = {k: getattr(args, k) for k in _FORMAT_OPTIONS if getattr(args, k, None) is not None}
    return load(getattr(args, name), format=args.format, **options)


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    json.dump(obj, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")
