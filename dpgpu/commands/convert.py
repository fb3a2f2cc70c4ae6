"""``dpgpu convert IN OUT``: rewrite a dataset in another format."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path
from typing import Any

from ..data.load import EXTENSIONS, extension_format
from ..data.writers import WRITE_FORMATS, output_format
from ..errors import InvalidParameter
from ..data.io import check_free_space, check_output
from .common import add_command, add_data_arguments, input_paths, load_from_args, \
    output_path

_EXTENSIONS = textwrap.fill(", ".join(f"{suffix} ({fmt})" for suffix, fmt in EXTENSIONS.items()
                                      if fmt in WRITE_FORMATS),
                            width=76, initial_indent="  ", subsequent_indent="  ")
#: Most cells (rows times the longest sequence) a wide output may have.
MAX_WIDE_CELLS = 1_000_000_000


DESCRIPTION = f"""\
Rewrite a dataset in another format.

The output format is --to, else the one the output file's extension names
(after any .gz), else the input's own format (the summary line says which it
wrote); --to and an extension that names another format are refused.  The
extensions:
{_EXTENSIONS}
A .csv or .tsv name keeps a wide, trajectory or column input in its own
format (these are CSV tables too); --to csv makes an event log of it.  A .txt
name takes any format written as text with --to (--to spmf: SPMF's datasets
are .txt files).

Kept: the sequences of items, in order (an event log's cases, each in time
order).  Written as an event log (csv, parquet, xes), every event gets a
synthetic timestamp instead of its real one: event j of a case at
2000-01-01T00:00:00Z plus j seconds (the number j where a csv or parquet
input had numeric times, none where it had no timestamp column).  Case names
are kept; every other attribute or column of the input (resource, lifecycle,
...) is dropped, xes drops users, csv, parquet and trajectory drop empty
sequences (with a warning that counts them).
The other formats (seq, spmf, lines) keep the sequences only: no case names,
times or users.  A column file (--to column, a CSV row per sequence) keeps the
case names and users, and empty sequences as empty cells.

Items are written by their labels, as dpgpu stats and the releases show
them: a .seq file's items are its category numbers (its header names them),
and an SPMF file's its item numbers; SPMF output keeps the @ITEM names of an
SPMF input, a .seq output the category names of a .seq input.  To write the
names themselves in another format, read the input with --vocab listing
them.  Labels such as 007 are written as they are to lines and column
files, and read back so (--tokens auto reads integers only from a file
whose every token is one as it prints).

A wide table pads every row to the longest sequence: its rows times that
length is at most {MAX_WIDE_CELLS:,} cells, and it is refused where even its
smallest possible size (a byte a cell; with .gz, that over gzip's largest ratio)
exceeds the free space of the output's folder.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``convert`` subcommand."""
    p = add_command(sub, "convert", help="convert a dataset between formats",
                    description=DESCRIPTION, example="dpgpu convert log.xes.gz log.csv")
    add_data_arguments(p, "data")
    p.add_argument("output", type=output_path, help="output file (.gz to compress)")
    p.add_argument("--to", choices=WRITE_FORMATS,
                   help="output format (default: the one the output's extension names, "
                        "else the input's format; a .csv or .tsv name keeps a wide, "
                        "trajectory or column input's format)")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    p.set_defaults(func=run)


def check_wide_size(db: Any, output: str) -> None:
    """Refuse a wide table of ``db`` too large to write as ``output``.

    Every row of a wide table has a cell per item of the longest sequence,
    each at least a byte (its delimiter); the table may have at most
    :data:`MAX_WIDE_CELLS` cells, and at least that many bytes
    (:data:`~dpgpu.data.io.MAX_GZIP_RATIO` times less for a
    ``.gz`` output) must fit in the free space of ``output``'s folder.

    Parameters
    ----------
    db : SequenceDB
        The data to write.
    output : str
        The output file, in an existing folder (:func:`~dpgpu.data.io.check_output`).

    Raises
    ------
    InvalidParameter
        Naming ``--to wide``, the cells, and the limit or the bytes free.
    """
    cells = len(db) * max(int(db.lengths.max(initial=0)), 1)
    if cells > MAX_WIDE_CELLS:
        raise InvalidParameter(f"--to wide: {len(db):,} rows padded to the longest sequence "
                               f"make {cells:,} cells, above the limit of {MAX_WIDE_CELLS:,}; "
                               "write another format (lines, column, csv)")
    check_free_space(Path(output), cells, f"--to wide: {cells:,} cells")




def run(args: argparse.Namespace) -> int:
    """Read, then write atomically; the summary line names the format written."""
    fmt = output_format(args.output, args.to, args.format)
    check_output(args.output, force=args.force, inputs=input_paths(args))  # before reading
    db = load_from_args(args)
    written = fmt or db.source.get("format") or "lines"
    note = ""
    suffix, named = extension_format(args.output)
    if fmt is None and named is None:  # neither --to nor the name chose it
        why = f"its extension {suffix} names none" if suffix else "it has no extension"
        if written not in WRITE_FORMATS:
            raise InvalidParameter(f"output: {args.output}: {why}, and dpgpu cannot write the "
                                   f"input's format {written}; choose one with --to")
        note = f" (the input's format: {why}; choose another with --to)"
    if written == "wide":
        check_wide_size(db, args.output)
    n = db.save(args.output, format=written, force=args.force)
    print(f"wrote {n} sequences to {args.output} as {written}{note}")
    return 0
