"""``dpgpu evaluate --original DATA --release DIR``: judge a release against its original.

Reads the release directory, picks the metrics its files allow (synthetic
data: count queries, top-K patterns, length distribution; ngrams.tsv: errors
of the released counts; pst.json, a PrivTree PST: precision of the top-K
strings and relative error of random count queries, both from the model's
Eq. 12 estimates; topk.tsv, an EM top-k release (dpgpu em-top-k):
precision of its top-K strings against the original's exact top-K, beside
the non-private Truncate baseline; frequent.tsv: precision/recall/F-score and relative
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

The work is bounded: ``--queries``, the query items it draws with
``--query-sizes``, and ``--k`` have maxima (see their help), and a top-K or
frequent-subsequence search that would examine more candidate patterns than
dpgpu.eval.evaluate.MAX_CANDIDATES (a low ``--threshold``, a large ``--k``
or ``--min-length``) stops with an error naming the option to change.
Top-K rows where the original has no pattern of ``--min-length`` read
``n/a``.  An option that no task computed uses is refused, not ignored,
before the original is read: ``--seed`` and ``--queries`` (count-queries,
pst, range-queries), ``--query-sizes`` (count-queries, pst), ``--k``
(top-k, pst, em; for em at most the release's k, which is its default),
``--min-length`` (top-k, pst), ``--threshold`` (frequent), ``--coverage-k``
(coverage) and ``--backend`` (count-queries, top-k, pst, em, ngrams); so are
all but ``--seed`` and ``--queries`` for a spatial release, as
``--columns`` is for a sequence release.
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from ..data.io import check_output
from ..errors import InvalidParameter
from .common import (FORMAT_OPTIONS, add_backend_argument, add_command, add_data_arguments,
                     check_outside_release, input_paths, load_from_args, nonempty_path,
                     print_json)

#: The options that set the evaluation's keywords, by keyword (how its messages name them).
OPTIONS = {"n_queries": "--queries", "query_sizes": "--query-sizes", "k_values": "--k",
           "min_length": "--min-length", "threshold": "--threshold",
           "coverage_ks": "--coverage-k", "seed": "--seed", "columns": "--columns",
           "backend": "--backend", "tasks": "--task"}


def _int_list(text: str, maximum: int | None = None) -> list[int]:
    """argparse ``type`` of comma-separated integers ``>= 1`` (at most ``maximum``)."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    if maximum is not None and max(values) > maximum:
        raise argparse.ArgumentTypeError(f"at most {maximum:,}, got {max(values)}")
    return values


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``evaluate`` subcommand."""
    from ..eval.evaluate import COVERAGE_KS, K_VALUES, MAX_K, N_QUERIES, SEED, TASKS
    from ..eval.metrics import MAX_QUERIES, MAX_QUERY_ITEMS, QUERY_SIZES

    p = add_command(sub, "evaluate", help="compare a release with its original data (exact "
                    "diagnostic, not private)", description=__doc__,
                    example="dpgpu evaluate --original data.seq --release rel/ --plot eval.png")
    add_data_arguments(p, "--original")
    for action in p._actions:  # the dataset is an option here, and it is required
        if action.dest == "original":
            action.required = True
            action.help = "the original dataset the release was made from"
    p.add_argument("--release", required=True, metavar="DIR", type=nonempty_path,
                   help="release directory")
    p.add_argument("--columns", help="spatial release: the original's coordinate columns, in "
                   "the release's order (default: those named in report.json)")
    p.add_argument("--task", action="append", choices=TASKS,
                   help="metric group to compute (repeatable; default: all that the release "
                        "files allow)")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    p.add_argument("--plot", metavar="FILE.png", type=nonempty_path,
                   help="draw a figure (needs dpgpu[plot])")
    p.add_argument("--force", action="store_true", help="replace an existing --plot file "
                   "(evaluation.json in the release is always replaced)")
    p.add_argument("--seed", type=int,
                   help=f"seed of the random query workload (default {SEED})")
    p.add_argument("--queries", dest="n_queries", type=int,
                   help=f"random count queries per maximal size, or range queries per set "
                        f"(default {N_QUERIES}; at most {MAX_QUERIES}, and --queries times the sum "
                        f"of --query-sizes at most {MAX_QUERY_ITEMS})")
    p.add_argument("--query-sizes", type=_int_list,
                   help=f"maximal query sizes (default {','.join(map(str, QUERY_SIZES))})")
    p.add_argument("--k", dest="k_values", type=functools.partial(_int_list, maximum=MAX_K),
                   help=f"K values of the top-K comparisons (default "
                        f"{','.join(map(str, K_VALUES))}; at most {MAX_K}; an EM release: its "
                        "k, and at most that)")
    p.add_argument("--min-length", type=int,
                   help="shortest pattern in top-K lists (default: 2 for the synthetic data, "
                        "single items excluded as in the N-gram paper; 1 for a PST model, as "
                        "in the PrivTree paper)")
    p.add_argument("--threshold", type=float,
                   help="relative support threshold for frequent subsequences "
                        "(default: from report.json parameters)")
    p.add_argument("--coverage-k", dest="coverage_ks", type=_int_list,
                   help=f"user-count thresholds K of the k-gram coverage (default "
                        f"{','.join(map(str, COVERAGE_KS))})")
    add_backend_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the release and the outputs, evaluate, print and write the results."""
    from ..eval.evaluate import (EVALUATION, check_release_report, format_table,
                                 is_spatial_release, plot_evaluation, plot_format,
                                 require_matplotlib, write_evaluation)

    report = check_release_report(args.release)  # a mistyped --release is named before reading
    inputs = [args.original, *input_paths(args)]
    check_output(Path(args.release) / EVALUATION, force=True, inputs=inputs)
    if args.plot:
        require_matplotlib()
        plot_format(args.plot, "--plot")
        check_outside_release(args.plot, args.release, "the figure shows the exact data, which "
                              "a published release must not hold")
        check_output(args.plot, force=args.force, inputs=inputs)
    result = _spatial(args, report) if is_spatial_release(args.release) else _sequences(args)
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
    from ..eval.evaluate import (SETTING_TASKS, check_count_workload, em_k_values,
                                 evaluate_release, sequence_tasks)
    from ..eval.metrics import QUERY_SIZES

    if args.columns is not None:
        raise InvalidParameter("--columns: applies to spatial releases (leaves.csv) only")
    check_count_workload(args.n_queries, args.query_sizes or QUERY_SIZES, OPTIONS)  # before reading
    given = {k: getattr(args, k) for k in SETTING_TASKS if getattr(args, k) is not None}
    # refuses the options no task uses
    _, files, chosen = sequence_tasks(args.release, args.task, given, OPTIONS)
    if "em" in chosen:  # a --k past the strings an EM release selected
        em_k_values(files["topk"], args.k_values, OPTIONS)
    original = load_from_args(args, "original")
    options = {k: getattr(args, k) for k in FORMAT_OPTIONS if getattr(args, k, None) is not None}
    return evaluate_release(original, args.release, tasks=args.task, reader_options=options,
                            original_name=str(args.original), names=OPTIONS, **given)


def _spatial(args: argparse.Namespace, report: dict) -> dict:
    """Evaluate a spatial release against the original points file."""
    from ..eval.evaluate import (SETTING_TASKS, check_settings_apply, evaluate_spatial_release,
                                 release_files)

    used = [k for k in (*FORMAT_OPTIONS, "vocab") if getattr(args, k, None) is not None]
    if used:
        raise InvalidParameter(f"--{used[0]}: a sequence reader option; the original of a "
                               "spatial release is a points file (--format csv|parquet, "
                               "--columns)")
    tasks = ["range-queries"]  # all a spatial release allows: the sequence options are refused
    check_settings_apply([k for k in SETTING_TASKS if getattr(args, k) is not None], tasks,
                         tasks, report, release_files(args.release), OPTIONS)
    return evaluate_spatial_release(args.original, args.release, columns=args.columns,
                                    format=args.format, tasks=args.task, seed=args.seed,
                                    n_queries=args.n_queries, original_name=str(args.original),
                                    names=OPTIONS)
