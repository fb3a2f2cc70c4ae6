"""``dpgpu stats DATA``: a summary of a dataset (exact values; not a private release)."""

from __future__ import annotations

import argparse
from typing import Any

from .common import add_command, add_data_arguments, load_from_args, print_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``stats`` subcommand."""
    p = add_command(sub, "stats", help="summarise a dataset (exact, not private)",
                    description=__doc__, example="dpgpu stats clicks.csv --case session --json")
    add_data_arguments(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def item_names(db: Any) -> dict[str, str]:
    """The names a file gives its items, by label, where they differ from the labels.

    Parameters
    ----------
    db : SequenceDB
        Read from a file that may name its items: the categories of a
        ``.seq`` header (``vocab.names``), SPMF's ``@ITEM=id=name`` lines
        (``source["names"]``).

    Returns
    -------
    dict
        Label to name, for the labels whose name is another text.
    """
    pairs = zip(db.vocab.labels, db.vocab.names) if db.vocab.names else \
        (db.source.get("names") or {}).items()
    return {label: name for label, name in pairs if name != label}


def run(args: argparse.Namespace) -> int:
    """Print the summary."""
    db = load_from_args(args)
    stats = {"path": str(args.data), "format": db.source.get("format"), **db.stats()}
    if args.json:
        print_json(stats)
        return 0
    width = max(len(k) for k in stats)
    names = item_names(db)
    for key, value in stats.items():
        if key == "most_frequent":
            value = ", ".join(f"{label}{' ' + names[label] if label in names else ''} ({count})"
                              for label, count in value)
        elif isinstance(value, float):
            value = f"{value:.3f}"
        elif key == "users" and value is None:
            value = "none named (each sequence counts as its own user)"
        print(f"{key.replace('_', ' '):<{width}}  {value}")
    print("(exact statistics of the input: not differentially private)")
    return 0
