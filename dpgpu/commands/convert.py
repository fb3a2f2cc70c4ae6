"""``dpgpu convert IN OUT``: rewrite a dataset in another format."""

from __future__ import annotations

import argparse

from ..data.writers import WRITE_FORMATS
from .common import add_command, add_data_arguments, load_from_args


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``convert`` subcommand."""
    p = add_command(sub, "convert", help="convert a dataset between formats",
                    description=__doc__, example="dpgpu convert log.xes.gz log.txt --to lines")
    add_data_arguments(p, "data")
    p.add_argument("output", help="output file (.gz to compress)")
    p.add_argument("--to", choices=WRITE_FORMATS,
                   help="output format (default: the input's format)")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read, then write atomically."""
    db = load_from_args(args)
    db.save(args.output, format=args.to, force=args.force)
    print(f"wrote {len(db)} sequences to {args.output}")
    return 0
