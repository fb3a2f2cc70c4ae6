"""``dpgpu evaluate --original DATA --release DIR``: judge a release against its original.

Reads the release directory, picks the metrics its files allow (synthetic
data: count queries, top-K patterns, length distribution; ngrams.tsv: errors
of the released counts; pst.json, a PrivTree PST: precision of the top-K
strings and relative error of random count queries, both from the model's
Eq. 12 estimates; frequent.tsv: precision/recall/F-score and relative
error of supports; a DPNE ngrams.tsv: K-anonymity coverage; leaves.csv, a PrivTree
spatial release: relative error of random range counts in any number of
dimensions, small/medium/large query sets), prints a table and
writes ``evaluation.json`` into the release directory.  The original of a
spatial release is a points file (CSV or Parquet) read with the coordinate
columns recorded in its report.json (``--columns`` overrides them).  The
evaluation uses the exact original data: it is a diagnostic, not a private
release.

Before the original is read, the release directory is checked (it must
hold a readable report.json) and so is every output: ``evaluation.json``
replaces the one an earlier evaluation left in the release (dpgpu's own
file, never part of the release; a link or a directory of that name is
refused), and the ``--plot`` figure never replaces an existing file
without ``--force``.  Both are written atomically.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..data.io import check_output
from ..errors import InvalidParameter
from ..report import read_release_report
from .common import (FORMAT_OPTIONS, add_backend_argument, add_command, add_data_arguments,
                     check_outside_release, input_paths, load_from_args, print_json)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``evaluate`` subcommand."""
    from ..eval.evaluate import COVERAGE_KS, K_VALUES, TASKS
    from ..eval.metrics import QUERY_SIZES

    p = add_command(sub, "evaluate", help="compare a release with its original data (exact "
                    "diagnostic, not private)", description=__doc__,
                    example="dpgpu evaluate --original data.seq --release rel/ --plot eval.png")
    add_data_arguments(p, "--original")
    for action in p._actions:  # the dataset is an option here, and it is required
        if action.dest == "original":
            action.required = True
            action.help = "the original dataset the release was made from"
    p.add_argument("--release", required=True, metavar="DIR", help="release directory")
    p.add_argument("--columns", help="spatial release: the original's coordinate columns, in "
                   "the release's order (default: those named in report.json)")
    p.add_argument("--task", action="append", choices=TASKS,
                   help="metric group to compute (repeatable; default: all that the release "
                        "files allow)")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    p.add_argument("--plot", metavar="FILE.png", help="draw a figure (needs dpgpu[plot])")
    p.add_argument("--force", action="store_true", help="replace an existing --plot file "
                   "(evaluation.json in the release is always replaced)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the random query workload (default 0)")
    p.add_argument("--queries", type=int, default=10_000,
                   help="random count queries per maximal size, or range queries per set "
                        "(default 10000)")
    p.add_argument("--query-sizes", type=_int_list, default=list(QUERY_SIZES),
                   help="maximal query sizes (default 4,8,12,16,20)")
    p.add_argument("--k", dest="k_values", type=_int_list, default=list(K_VALUES),
                   help="K values of the top-K comparisons (default 20,40,60,80,100)")
    p.add_argument("--min-length", type=int,
                   help="shortest pattern in top-K lists (default: 2 for the synthetic data, "
                        "single items excluded as in the N-gram paper; 1 for a PST model, as "
                        "in the PrivTree paper)")
    p.add_argument("--threshold", type=float,
                   help="relative support threshold for frequent subsequences "
                        "(default: from report.json parameters)")
    p.add_argument("--coverage-k", dest="coverage_ks", type=_int_list, default=list(COVERAGE_KS),
                   help="user-count thresholds K of the k-gram coverage (default 1,10,100,1000)")
    add_backend_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the release and the outputs, evaluate, print and write the results."""
    from ..eval.evaluate import (EVALUATION, format_table, is_spatial_release, plot_evaluation,
                                 plot_format, require_matplotlib, write_evaluation)

    read_release_report(args.release)  # a mistyped --release is named before the data is read
    inputs = [args.original, *input_paths(args)]
    check_output(Path(args.release) / EVALUATION, force=True, inputs=inputs)
    if args.plot:
        require_matplotlib()
        plot_format(args.plot, "--plot")
        check_outside_release(args.plot, args.release, "the figure shows the exact data, which "
                              "a published release must not hold")
        check_output(args.plot, force=args.force, inputs=inputs)
    result = _spatial(args) if is_spatial_release(args.release) else _sequences(args)
    path = write_evaluation(args.release, result, inputs=inputs)
    if args.plot:
        plot_evaluation(result, args.plot, force=args.force, inputs=inputs)
    if args.json:
        print_json(result)
    else:
        print(format_table(result))
        print(f"(written to {path}{'; figure ' + str(args.plot) if args.plot else ''})")
    return 0


def _sequences(args: argparse.Namespace) -> dict:
    """Evaluate a sequence release against the original sequence dataset."""
    from ..eval.evaluate import evaluate_release

    if args.columns is not None:
        raise InvalidParameter("--columns: applies to spatial releases (leaves.csv) only")
    original = load_from_args(args, "original")
    options = {k: getattr(args, k) for k in FORMAT_OPTIONS if getattr(args, k, None) is not None}
    return evaluate_release(original, args.release, tasks=args.task, seed=args.seed,
                            n_queries=args.queries, query_sizes=args.query_sizes,
                            k_values=args.k_values, min_length=args.min_length,
                            threshold=args.threshold, coverage_ks=args.coverage_ks,
                            backend=args.backend, reader_options=options,
                            original_name=str(args.original))


def _spatial(args: argparse.Namespace) -> dict:
    """Evaluate a spatial release against the original points file."""
    from ..eval.evaluate import evaluate_spatial_release

    used = [k for k in (*FORMAT_OPTIONS, "vocab") if getattr(args, k, None) is not None]
    if used:
        raise InvalidParameter(f"--{used[0]}: a sequence reader option; the original of a "
                               "spatial release is a points file (--format csv|parquet, "
                               "--columns)")
    return evaluate_spatial_release(args.original, args.release, columns=args.columns,
                                    format=args.format, tasks=args.task, seed=args.seed,
                                    n_queries=args.queries, original_name=str(args.original))
