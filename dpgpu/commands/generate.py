"""``dpgpu generate OUTPUT --tokens N``: a seeded synthetic dataset of any size."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Iterator

from ..data.generate import (CHUNK_TOKENS, CONTEXTS, MAX_MEAN_LENGTH, MAX_ORDER, MAX_TABLE,
                             MAX_TOKENS, MAX_ZIPF, check_mean_length, check_n_items, check_zipf,
                             markov_chunks)
from ..data.io import MAX_GZIP_RATIO, check_free_space, check_output
from ..data.writers import PART_FORMATS, output_format, write_parts
from ..errors import InvalidParameter

#: What ``generate`` writes: its items are no cells of a grid, so not ``trajectory``.
GENERATED_FORMATS = tuple(f for f in PART_FORMATS if f != "trajectory")
from ..progress import Step
from ..validation import check_positive_int
from .common import Progress, add_command, output_path, print_json, whole_number

#: Most worker processes by default: the writer keeps up with a few at most.
DEFAULT_JOBS = 8

#: Fewest bytes an item takes in a text output: a label of one character and a separator.
MIN_ITEM_BYTES = 2


DESCRIPTION = f"""\
Write a synthetic dataset of about --tokens items, for scaling tests: not
private data, and no privacy mechanism.

The sequences follow a variable-order Markov chain over a Zipf-distributed
alphabet of --n-items items labelled 1, 2, ... (the workload of bench/).  The
data depend only on --tokens, --seed and the chain's options: they are made
in chunks of {CHUNK_TOKENS:,} tokens (chunk i from seed (SEED, i); chunk 0
is the one-chunk dataset of the same seed), by --jobs worker processes (at
most one per CPU this process may use), and written as they come, so memory
does not limit the size.  A process makes about 5 million tokens a second;
writing seq, spmf or lines keeps up with several, csv, parquet and xes with
about one; a ``.gz`` name makes the writer's compression the bound.  The
total exceeds --tokens by less than one sequence per chunk.

--tokens is at most {MAX_TOKENS:,}.  An output in a text format
is refused where even its smallest possible size ({MIN_ITEM_BYTES} bytes an item,
{MAX_GZIP_RATIO} times less with .gz) exceeds the free space of its folder.

The output format is --to, else the one the output's extension names, else
lines; .gz compresses.  Event logs (csv, parquet, xes) name the cases
case-1, case-2, ... and give events synthetic timestamps.
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``generate`` subcommand."""
    p = add_command(sub, "generate", help="write a synthetic dataset of any size",
                    description=DESCRIPTION,
                    example="dpgpu generate big.seq.gz --tokens 1e9 --seed 1")
    p.add_argument("output", type=output_path, help="output file (.gz to compress)")
    p.add_argument("--tokens", required=True,
                   help="items wanted in all, an integer such as 100000000 or 1e8")
    p.add_argument("--seed", default="0", help="seed of the whole dataset (default 0)")
    p.add_argument("--to", choices=GENERATED_FORMATS,
                   help="output format (default: the one the output's extension names, "
                        "else lines)")
    p.add_argument("--n-items", type=int, default=100,
                   help=f"alphabet size, at most {MAX_TABLE // CONTEXTS:,} (default 100); each "
                        f"worker process needs about {16 * CONTEXTS:,} bytes per item")
    p.add_argument("--max-order", type=int, default=3,
                   help=f"longest context of the chain, at most {MAX_ORDER} (default 3)")
    p.add_argument("--zipf", type=float, default=1.1,
                   help=f"exponent of the items' Zipf law, at most {MAX_ZIPF} (default 1.1)")
    p.add_argument("--mean-length", type=float, default=8.0,
                   help=f"mean sequence length, from 1 to {MAX_MEAN_LENGTH:,} (default 8; "
                        f"long sequences are slower to make)")
    p.add_argument("--jobs", type=int, default=None,
                   help=f"worker processes, at most the CPUs this process may use (default: "
                        f"that many, at most {DEFAULT_JOBS}; each needs about 300 MB)")
    p.add_argument("--force", action="store_true", help="replace an existing output")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress and no summary line")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def available_cpus() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def run(args: argparse.Namespace) -> int:
    """Generate chunk by chunk and write atomically."""
    tokens = check_positive_int(whole_number(args.tokens, "--tokens"), "--tokens")
    if tokens > MAX_TOKENS:
        raise InvalidParameter(f"--tokens: at most {MAX_TOKENS:,}, got {args.tokens}")
    seed = whole_number(args.seed, "--seed")
    fmt = output_format(args.output, args.to) or "lines"
    jobs = min(available_cpus(), DEFAULT_JOBS) if args.jobs is None else check_jobs(args.jobs)
    chunks = markov_chunks(tokens, seed=seed, chunk_tokens=CHUNK_TOKENS, jobs=jobs,
                           n_items=check_n_items(args.n_items, CONTEXTS, "--n-items"),
                           max_order=check_positive_int(args.max_order, "--max-order",
                                                        maximum=MAX_ORDER),
                           zipf=check_zipf(args.zipf, "--zipf"),
                           mean_length=check_mean_length(args.mean_length, "--mean-length"))
    target = check_output(args.output, force=args.force)  # before the work
    if fmt != "parquet":  # compressed column by column: no useful lower bound on its size
        check_free_space(target, tokens * MIN_ITEM_BYTES, f"--tokens: {tokens:,} items")
    show = not (args.quiet or args.verbose) and sys.stderr.isatty()
    with Progress("generate", show=show) as progress:
        sequences, events = write_parts(_reported(chunks, tokens, progress), args.output, fmt,
                                        force=args.force)
    summary = {"output": str(args.output), "format": fmt, "sequences": sequences,
               "items": events, "seed": seed}
    if args.json:
        print_json(summary)
    elif not args.quiet:
        print(f"wrote {sequences:,} sequences ({events:,} items) to {args.output} as {fmt}")
    return 0


def check_jobs(value: int) -> int:
    """Return ``--jobs`` if it is from 1 to the CPUs this process may use.

    A worker generates a chunk on one CPU, so more workers than CPUs make
    nothing faster and take about 300 MB each; the data do not depend on
    ``--jobs``.

    Parameters
    ----------
    value : int
        The ``--jobs`` given.

    Returns
    -------
    int

    Raises
    ------
    InvalidParameter
        Naming ``--jobs``, and the CPUs available when it is above them.
    """
    jobs = check_positive_int(value, "--jobs")
    cpus = available_cpus()
    if jobs > cpus:
        raise InvalidParameter(f"--jobs: at most {cpus}, the CPUs this process may use (a worker "
                               f"uses one, and about 300 MB), got {jobs}")
    return jobs


def _reported(chunks: Iterator[Any], tokens: int, progress: Progress) -> Iterator[Any]:
    """``chunks``, reporting each one's arrival to ``progress``."""
    total = -(-tokens // CHUNK_TOKENS)
    progress(Step(f"generating {tokens:,} tokens", 0, total))
    done = 0
    for i, chunk in enumerate(chunks, 1):
        done += chunk.n_events
        progress(Step(f"{done:,} of {tokens:,} tokens", i, total))
        yield chunk
