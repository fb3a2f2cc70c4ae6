"""Reproduce the N-gram paper (CCS'12) on MSNBC: Table 5, Fig. 2, and the speed claim.

Measures, on the full MSNBC file (989,818 sequences; l_max = 20, n_max = 5):

* **Time**: the whole release (tree, consistency, synthetic data) against the
  naive Python ``collections.Counter`` loop that only counts the n-grams
  (n <= 5, first 20 items), in the same run.
* **Top-K** (the paper's Table 5): the share of the original's K most
  frequent contiguous patterns (length >= 2, by occurrences) that are also
  among the synthetic data's top K, for K = 20..100, at epsilon = 1,
  averaged over ``--runs`` releases with fresh keys; against the full
  original and against the original truncated to l_max (the data the
  mechanism sees).  For reading the gap to the paper, also: the same ratio
  for the n-gram model's own estimated counts (``NGramRelease.top_k``,
  before the synthetic data is made), for the paper's No-Approx variant,
  for the non-private Baseline (exact 5-grams, deterministic), and the
  truncated original's own top K against the full original's.
* **Count queries** (Section 6.2.1): average relative error (sanity bound
  0.1 % of |D|) of random count queries with maximal sizes 4..20 on the
  synthetic data, for epsilon in {0.1, 0.5, 1.0}, and for the non-private
  Baseline.

The releases of the top-K runs and of the count-query settings run in
``--jobs`` worker processes (default: one per core; :mod:`parallel`); with
``--seed S`` run ``r`` uses seed ``S + r`` and count-query setting ``i``
seed ``S + 1000 + i``, so the results do not depend on ``--jobs``.

Results go to ``<out>/ngram-<backend>.json`` (``--out``, default
``bench/results``), a markdown summary with the paper's numbers beside ours
(``.md``) and a figure (``.png``).
Usage: ``python bench/reproduce_ngram.py [--runs 5] [--queries 2000] [--backend numpy|cupy]
[--jobs N] [--seed S] [--out DIR]`` (``--runs 1 --queries 200`` for a quick CPU check).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import datetime, timezone
from pathlib import Path

import dpgpu
from dpgpu.backend import get_backend
from dpgpu.eval.metrics import (random_count_queries, relative_errors, sanity_bound,
                                 true_positive_ratio)
from dpgpu.eval.truth import pattern_counts, top_k_strings
from dpgpu.mechanisms.ngram import ngram
from naive import naive_seconds
from parallel import add_jobs_argument, run_repetitions, use_jobs
from paths import add_out_argument, results_dir

K_VALUES = (20, 40, 60, 80, 100)
PAPER_TABLE5 = {"epsilon=0.1": [100, 90, 93, 94, 96], "epsilon=1.0": [100, 93, 97, 99, 97]}
QUERY_SIZES = (4, 8, 12, 16, 20)


def main() -> None:
    """Run the benchmark and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--queries", type=int, default=2000, help="random queries per size class")
    ap.add_argument("--seed", type=int, help="base seed of the releases (default: fresh keys)")
    add_out_argument(ap)
    add_jobs_argument(ap)
    args = ap.parse_args()
    be = get_backend(args.backend)
    jobs = use_jobs(args.jobs, be.name)
    db = dpgpu.load(dpgpu.demo_path())
    truncated = db.truncate(20)
    out: dict = {"benchmark": "ngram on MSNBC", "machine": platform.machine(),
                 "processor": platform.processor() or platform.machine(),
                 "python": platform.python_version(), "backend": be.name,
                 "device": be.device_name(), "dpgpu": dpgpu.__version__,
                 "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "l_max": 20, "n_max": 5, "runs": args.runs, "jobs": jobs, "seed": args.seed}

    t_naive = naive_seconds(db, 5, 20)
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        ngram(db, 1.0, backend=be)
        be.synchronize()
        times.append(time.perf_counter() - t0)
    out["time"] = {"release_s": round(min(times), 3), "naive_counter_s": round(t_naive, 3),
                   "speedup": round(t_naive / min(times), 1)}
    print(out["time"])

    true_top, _ = top_k_strings(db, max(K_VALUES), min_length=2, backend=be)
    trunc_top, _ = top_k_strings(truncated, max(K_VALUES), min_length=2, backend=be)

    def vs_truncated(top: list) -> list[float]:
        return [true_positive_ratio(trunc_top[:k], top[:k]) for k in K_VALUES]

    def top_k_run(r: int) -> tuple[list, list, int, list, list]:
        rel = ngram(db, 1.0, backend=be, seed=_seed(args.seed, r))
        top, _ = top_k_strings(rel.synthetic, max(K_VALUES), min_length=2, backend=be)
        no_approx = ngram(db, 1.0, variant="no-approx", backend=be, seed=_seed(args.seed, r))
        na_top, _ = top_k_strings(no_approx.synthetic, max(K_VALUES), min_length=2, backend=be)
        return ([true_positive_ratio(true_top[:k], top[:k]) for k in K_VALUES],
                vs_truncated(top), len(rel.synthetic), vs_truncated(_model_top(rel)),
                vs_truncated(na_top))

    runs = run_repetitions(top_k_run, range(args.runs), jobs)
    ratios = {"full": [r[0] for r in runs], "truncated": [r[1] for r in runs],
              "truncated_model": [r[3] for r in runs], "truncated_no_approx": [r[4] for r in runs]}
    sizes = [r[2] for r in runs]
    base = ngram(db, 1.0, variant="baseline", backend=be)
    base_top, _ = top_k_strings(base.synthetic, max(K_VALUES), min_length=2, backend=be)
    out["top_k"] = {
        "K": list(K_VALUES), "epsilon": 1.0, "paper_table5_percent": PAPER_TABLE5,
        **{f"vs_{w}_mean_percent": [round(100 * statistics.mean(r[i] for r in ratios[w]), 1)
                                    for i in range(len(K_VALUES))] for w in ratios},
        **{f"vs_{w}_min_percent": [round(100 * min(r[i] for r in ratios[w]), 1)
                                   for i in range(len(K_VALUES))] for w in ratios},
        "baseline_vs_truncated_percent": [round(100 * v, 1) for v in vs_truncated(base_top)],
        "baseline_model_vs_truncated_percent": [round(100 * v, 1)
                                                for v in vs_truncated(_model_top(base))],
        "truncated_vs_full_percent": [round(100 * true_positive_ratio(true_top[:k], trunc_top[:k]),
                                            1) for k in K_VALUES],
        "synthetic_sequences_mean": round(statistics.mean(sizes)),
    }
    print(out["top_k"])

    bound = sanity_bound(len(db))
    queries = {m: random_count_queries(db.vocab.size, m, args.queries, seed=m)
               for m in QUERY_SIZES}
    truth = {m: pattern_counts(db, q, backend=be) for m, q in queries.items()}
    settings = (("epsilon=0.1", 0.1, "adaptive"), ("epsilon=0.5", 0.5, "adaptive"),
                ("epsilon=1.0", 1.0, "adaptive"), ("baseline", 1.0, "baseline"))

    def count_run(i: int) -> list[float]:
        label, eps, variant = settings[i]
        syn = ngram(db, eps, variant=variant, backend=be, seed=_seed(args.seed, 1000 + i)).synthetic
        err = [round(float(relative_errors(pattern_counts(syn, queries[m], backend=be),
                                           truth[m], bound).mean()), 4) for m in QUERY_SIZES]
        print(label, err, flush=True)
        return err

    errors = dict(zip((s[0] for s in settings),
                      run_repetitions(count_run, range(len(settings)), jobs)))
    out["count_queries"] = {"max_sizes": list(QUERY_SIZES), "queries_per_size": args.queries,
                            "sanity_bound": bound, "average_relative_error": errors}
    results = results_dir(args)
    path = results / f"ngram-{be.name}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    path.with_suffix(".md").write_text(summary(out))
    plot(out, path.with_suffix(".png"))
    print(f"written to {path} (.md, .png)")


def _model_top(rel) -> list[tuple[int, ...]]:
    """The model's own top patterns (estimated counts, length >= 2) as id tuples."""
    return [tuple(rel.vocab.id_of(x) for x in labels) for labels, _ in rel.top_k(max(K_VALUES))]


def _seed(base: int | None, offset: int) -> int | None:
    """Seed ``base + offset``, or None (a fresh key) without a base."""
    return None if base is None else base + offset


def summary(out: dict) -> str:
    """Markdown: our figures beside the paper's."""
    t, k, q = out["time"], out["top_k"], out["count_queries"]
    head = "| K | " + " | ".join(str(x) for x in k["K"]) + " |\n|---|" + "---|" * len(k["K"]) + "\n"
    rows = [("paper, epsilon 1.0", k["paper_table5_percent"]["epsilon=1.0"]),
            ("dpgpu vs truncated original (mean)", k["vs_truncated_mean_percent"]),
            ("dpgpu vs truncated original (worst run)", k["vs_truncated_min_percent"]),
            ("dpgpu vs full original (mean)", k["vs_full_mean_percent"])]
    extra = [("n-gram model's own counts vs truncated (mean)", "vs_truncated_model_mean_percent"),
             ("No-Approx variant vs truncated (mean)", "vs_truncated_no_approx_mean_percent"),
             ("Baseline (exact 5-grams, not private) vs truncated", "baseline_vs_truncated_percent"),
             ("Baseline model's own counts vs truncated", "baseline_model_vs_truncated_percent"),
             ("truncated original vs full original", "truncated_vs_full_percent")]
    rows += [(name, k[key]) for name, key in extra if key in k]  # older result files lack them
    table = head + "".join(f"| {name} | " + " | ".join(f"{v:g}" for v in vals) + " |\n"
                           for name, vals in rows)
    qhead = ("| max query size | " + " | ".join(str(m) for m in q["max_sizes"]) + " |\n|---|"
             + "---|" * len(q["max_sizes"]) + "\n")
    qrows = "".join(f"| {name} | " + " | ".join(f"{v:.3f}" for v in vals) + " |\n"
                    for name, vals in q["average_relative_error"].items())
    return (f"# N-gram (CCS'12) on MSNBC\n\nMachine: {out['processor']}, backend "
            f"{out['backend']} ({out['device']}), Python {out['python']}, dpgpu {out['dpgpu']}, "
            f"{out['date']}. l_max = {out['l_max']}, n_max = {out['n_max']}, "
            f"{out['runs']} runs with "
            + ("fresh keys" if out.get("seed") is None else f"seeds from {out['seed']}")
            + f", {out.get('jobs', 1)} at a time.\n\n"
            f"## Time\n\nWhole release (tree, consistency, synthetic data): {t['release_s']} s; "
            f"naive Python Counter of the n-grams alone: {t['naive_counter_s']} s "
            f"({t['speedup']}x).\n\n"
            f"## Top-K frequent patterns (Table 5, epsilon = 1, true positive ratio %)\n\n"
            f"{table}\nThe mechanism sees each sequence's first l_max items, so the truncated "
            f"original is the fair reference; the paper does not say which it used, but the "
            f"truncated original itself agrees with the full one only as the last row shows, "
            f"below the paper's figures.  The Baseline rows are the n-gram model's "
            f"approximation error alone (no noise): on MSNBC the order-4 Markov extension "
            f"misses long runs of one category (e.g. '1' nine times), and the decomposition "
            f"loses part of some 2- and 3-grams (e.g. '1 7', '7 4', '6 7 7').  The No-Approx row shows "
            f"what the Markov-parent estimates of below-threshold children (Section 4.3.4) "
            f"cost here: they shrink the counts of long runs.\n\n"
            f"## Random count queries (Section 6.2.1, Fig. 2)\n\nAverage relative error, "
            f"{q['queries_per_size']} queries per size class, sanity bound "
            f"{q['sanity_bound']:g}:\n\n{qhead}{qrows}")


def plot(out: dict, path: Path) -> None:
    """Top-K ratios and count-query errors, headless."""
    import matplotlib  # noqa: PLC0415 - optional dependency (extra "plot")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    k, q = out["top_k"], out["count_queries"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    a.plot(k["K"], k["paper_table5_percent"]["epsilon=1.0"], "k--o", label="paper")
    a.plot(k["K"], k["vs_truncated_mean_percent"], "o-", label="dpgpu vs truncated")
    a.plot(k["K"], k["vs_full_mean_percent"], "s-", label="dpgpu vs full")
    a.set(xlabel="K", ylabel="true positive ratio (%)", title="Table 5, epsilon = 1")
    a.legend()
    for name, vals in q["average_relative_error"].items():
        b.plot(q["max_sizes"], vals, "o-", label=name)
    b.set(xlabel="maximal query size", ylabel="average relative error",
          title="Fig. 2: count queries")
    b.legend()
    fig.suptitle(f"N-gram on MSNBC ({out['backend']}, {out['device']})")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
