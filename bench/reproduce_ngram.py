"""Reproduce the N-gram paper (CCS'12) on MSNBC: Table 5, Figs. 2, 4, 8, 9, 10 and the speed claim.

Measures, on the full MSNBC file (989,818 sequences; l_max = 20, n_max = 5
unless a sweep says otherwise):

* **Time**: the whole release (tree, consistency, synthetic data) against the
  naive Python ``collections.Counter`` loop that only counts the n-grams
  (n <= 5, first 20 items), in the same run.
* **Top-K** (the paper's Table 5): the share of the original's K most
  frequent contiguous patterns (length >= 2, by occurrences) that are also
  among the synthetic data's top K, for K = 20..100, at epsilon = 1.0 and
  0.1, averaged over ``--runs`` releases with fresh keys; against the full
  original and against the original truncated to l_max (the data the
  mechanism sees).  For reading the gap to the paper, also: the same ratio
  for the n-gram model's own estimated counts (``NGramRelease.top_k``,
  before the synthetic data is made), for the paper's No-Approx variant,
  for the non-private Baseline (exact 5-grams, deterministic), and the
  truncated original's own top K against the full original's.
* **Utility loss vs K** (Fig. 4): the paper's utility loss
  (:func:`dpgpu.eval.metrics.utility_loss`; supports are occurrence counts,
  footnote 9, not rescaled) of the same top-K lists, from the same releases.
* **Count queries** (Section 6.2.1, Fig. 2, and Appendix Fig. 8): average
  relative error (sanity bound 0.1 % of |D|) of random count queries with
  maximal sizes 4..20 on the synthetic data, for epsilon in {0.1, 0.5, 1.0}
  and the variants N-gram (adaptive budget), N-gram-Uniform (Fig. 2) and
  No-Approx (Fig. 8), each averaged over ``--runs`` releases; and the
  non-private Baseline (one release: it is deterministic).
* **Utility loss vs l_max and n_max** (Appendix Figs. 9, 10): epsilon = 1.0,
  n_max = 5 while l_max varies and l_max = 20 while n_max varies, against
  the full original (so a short l_max pays for what truncation drops, the
  paper's "approximation error"), averaged over ``--runs`` releases; and
  the Baseline at each setting, which separates the model's approximation
  error from the Laplace error.

**Not reproduced**: the paper's *Prefix* curves and rows (Chen, Fung, Desai,
its reference [4]; Figs. 2 and 4, Table 5) and *FFS* (McSherry and Mahajan,
[16]; Table 5, Fig. 4): dpgpu has no implementation of either, so only
N-gram, its variants and the Baseline are measured.  The paper's figures
are images without numbers in the text we have, so for them the summary
quotes the paper's claims in words; Table 5's numbers are quoted as printed.
The x values of Figs. 9 and 10 are not in the text either: ours are
``L_MAX_SWEEP`` and ``N_MAX_SWEEP``.

The releases run in ``--jobs`` worker processes (default: one per core;
:mod:`parallel`).  Every release has its own seed, derived from ``--seed S``
and fixed by what it measures, so the results do not depend on ``--jobs``:

======================================================  ===========================
release                                                 seed
======================================================  ===========================
top-K / Fig. 4, epsilon 1.0, run r (N-gram, No-Approx)  ``S + r``
top-K / Fig. 4, epsilon 0.1, run r (N-gram, No-Approx)  ``S + 500 + r``
count-query setting i of ``COUNT_SETTINGS``, run r      ``S + 1000 + i + 10 r``
Fig. 9, l_max = v, run r                                ``S + 10000 + 100 v + r``
Fig. 10, n_max = v, run r                               ``S + 20000 + 100 v + r``
======================================================  ===========================

(``--runs`` is at most 100, so no two releases share a seed; the seeds of
the epsilon = 1.0 top-K runs and of the first four count-query settings are
those of earlier versions of this script.)  Without ``--seed`` every
release gets a fresh key.

Results go to ``<out>/ngram-<backend>.json`` (``--out``, default
``bench/results``), a markdown summary with the paper's numbers beside ours
(``.md``) and a figure (``.png``).
Usage: ``python bench/reproduce_ngram.py [--runs 5] [--queries 2000] [--backend numpy|cupy]
[--jobs N] [--seed S] [--out DIR] [--quick]``.  ``--quick`` (1 run, 200 queries
per size class, two points per sweep; about a minute on two CPU cores) checks
that the script works; it needs ``--out`` so that it cannot overwrite the
recorded results.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import dpgpu
from dpgpu.backend import get_backend
from dpgpu.eval.metrics import (random_count_queries, relative_errors, sanity_bound,
                                 true_positive_ratio, utility_loss)
from dpgpu.eval.truth import pattern_counts, top_k_strings
from dpgpu.mechanisms.ngram import ngram
from naive import naive_seconds
from parallel import add_jobs_argument, run_repetitions, use_jobs
from paths import RESULTS, add_out_argument, results_dir

L_MAX, N_MAX = 20, 5
K_VALUES = (20, 40, 60, 80, 100)
K_MAX = max(K_VALUES)
PAPER_TABLE5 = {"epsilon=0.1": [100, 90, 93, 94, 96], "epsilon=1.0": [100, 93, 97, 99, 97]}
#: Table 5 (a)/(b) and Fig. 4; the position in this tuple picks the seed block.
TOP_K_EPSILONS = (1.0, 0.1)
QUERY_SIZES = (4, 8, 12, 16, 20)
#: (label, epsilon, variant) of the count-query settings; the index picks the seed, so new
#: settings go at the end.
COUNT_SETTINGS = (("epsilon=0.1", 0.1, "adaptive"), ("epsilon=0.5", 0.5, "adaptive"),
                  ("epsilon=1.0", 1.0, "adaptive"), ("baseline", 1.0, "baseline"),
                  ("uniform, epsilon=0.1", 0.1, "uniform"),
                  ("uniform, epsilon=0.5", 0.5, "uniform"),
                  ("uniform, epsilon=1.0", 1.0, "uniform"),
                  ("no-approx, epsilon=0.1", 0.1, "no-approx"),
                  ("no-approx, epsilon=0.5", 0.5, "no-approx"),
                  ("no-approx, epsilon=1.0", 1.0, "no-approx"))
L_MAX_SWEEP = (4, 8, 12, 16, 20, 24, 28)
N_MAX_SWEEP = (2, 3, 4, 5, 6, 7, 8)
QUICK_L_MAX_SWEEP, QUICK_N_MAX_SWEEP = (8, 20), (3, 5)
SWEEP_EPSILON = 1.0
SWEEP_SEED_BLOCK = {"l_max": 10_000, "n_max": 20_000}
MAX_RUNS = 100

PAPER_CLAIMS = {
    "fig2": "N-gram's average relative error is 32 % to 63 % below Prefix's in every setting; "
            "the adaptive allocation's gain over N-gram-Uniform is 'less obvious on MSNBC' "
            "(many paths reach n_max); Baseline (non-noisy 5-grams) shows the model's "
            "approximation error is small.",
    "fig4": "N-gram's utility loss is far below Prefix's and FFS's; the supports of correctly "
            "found patterns are 'typically very small' in error even at epsilon = 0.1.",
    "fig8": "the approximation of below-threshold nodes (Section 4.3.4) lowers the relative "
            "error for all query sizes and epsilons, by up to 47 % against No-Approx.",
    "fig9": "small l_max: approximation error dominates; large l_max: Laplace error "
            "dominates; good utility over a wide range of l_max.",
    "fig10": "some n_max minimises approximation plus Laplace error; the utility loss is "
             "comparable across n_max values.",
}


# ------------------------------------------------------------------ helpers
def _seed(base: int | None, offset: int) -> int | None:
    """Seed ``base + offset``, or None (a fresh key) without a base."""
    return None if base is None else base + offset


def _model_top(rel) -> tuple[list[tuple[int, ...]], list[float]]:
    """The model's own top patterns (estimated counts, length >= 2): id tuples and counts."""
    rows = rel.top_k(K_MAX)
    return ([tuple(rel.vocab.id_of(x) for x in labels) for labels, _ in rows],
            [float(c) for _, c in rows])


def _top(db, be, l_max: int | None = None) -> tuple[list[tuple[int, ...]], list[int]]:
    """The K_MAX most frequent strings of length >= 2 of ``db`` with their occurrence counts."""
    patterns, counts = top_k_strings(db, K_MAX, min_length=2, l_max=l_max, backend=be)
    return patterns, counts.tolist()


def _scores(reference: tuple[list, list], released: tuple[list, list]) -> dict[str, list]:
    """True positive ratio and utility loss of a released top list, for each K of K_VALUES.

    Both arguments are ``(patterns, supports)`` ranked largest first; the
    reference is ``F_K(D)``, the released list ``F_K(D~)``.
    """
    (tp, tc), (rp, rc) = reference, released
    ratio, loss = [], []
    for k in K_VALUES:
        ratio.append(true_positive_ratio(tp[:k], rp[:k]))
        loss.append(utility_loss(dict(zip(tp[:k], tc[:k])), dict(zip(rp[:k], rc[:k]))))
    return {"ratio": ratio, "utility_loss": loss}


def _column_mean(rows: Sequence[Sequence[float]], digits: int = 4, scale: float = 1.0
                 ) -> list[float]:
    """Element-wise mean of equal-length rows, scaled and rounded."""
    return [round(scale * statistics.mean(col), digits) for col in zip(*rows)]


def _column_extreme(rows: Sequence[Sequence[float]], fn, digits: int = 4, scale: float = 1.0
                    ) -> list[float]:
    """Element-wise ``fn`` (min or max) of equal-length rows, scaled and rounded."""
    return [round(scale * fn(col), digits) for col in zip(*rows)]


def _label(eps: float) -> str:
    return f"epsilon={eps}"


# ------------------------------------------------------------------ main
def main() -> None:
    """Run the benchmark and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None)
    ap.add_argument("--runs", type=int, default=None,
                    help=f"releases per setting, 1..{MAX_RUNS} (default 5; 1 with --quick)")
    ap.add_argument("--queries", type=int, default=None,
                    help="random queries per size class (default 2000; 200 with --quick)")
    ap.add_argument("--seed", type=int, help="base seed of the releases (default: fresh keys)")
    ap.add_argument("--quick", action="store_true",
                    help="a small check that the script works: 1 run, 200 queries, two points "
                         "per sweep (needs --out, to keep the recorded results)")
    add_out_argument(ap)
    add_jobs_argument(ap)
    args = ap.parse_args()
    if args.quick and args.out.resolve() == RESULTS.resolve():
        sys.exit("reproduce_ngram: --quick needs --out DIR (its numbers would replace the "
                 "recorded results)")
    runs = args.runs if args.runs is not None else (1 if args.quick else 5)
    if not 1 <= runs <= MAX_RUNS:
        sys.exit(f"reproduce_ngram: --runs must be 1..{MAX_RUNS} (the seed blocks hold that "
                 f"many), got {runs}")
    n_queries = args.queries if args.queries is not None else (200 if args.quick else 2000)
    sweeps = {"l_max": QUICK_L_MAX_SWEEP if args.quick else L_MAX_SWEEP,
              "n_max": QUICK_N_MAX_SWEEP if args.quick else N_MAX_SWEEP}

    be = get_backend(args.backend)
    jobs = use_jobs(args.jobs, be.name)
    started = time.perf_counter()
    db = dpgpu.load(dpgpu.demo_path())
    truncated = db.truncate(L_MAX)
    out: dict = {"benchmark": "ngram on MSNBC", "machine": platform.machine(),
                 "processor": platform.processor() or platform.machine(),
                 "python": platform.python_version(), "backend": be.name,
                 "device": be.device_name(), "dpgpu": dpgpu.__version__,
                 "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "l_max": L_MAX, "n_max": N_MAX, "runs": runs, "jobs": jobs,
                 "seed": args.seed, "quick": args.quick,
                 "not_reproduced": "Prefix (Chen et al. KDD'11, the paper's [4]) and FFS "
                                   "(McSherry and Mahajan, [16]): no implementation in dpgpu",
                 "paper_claims": PAPER_CLAIMS}

    out["time"] = measure_time(db, be)
    print(out["time"], flush=True)

    full_top, trunc_top = _top(db, be), _top(truncated, be)
    out["top_k"], out["utility_loss"] = top_k_and_utility_loss(db, be, full_top, trunc_top,
                                                               runs, jobs, args.seed)
    print(json.dumps(out["top_k"]["by_epsilon"]), flush=True)
    out["count_queries"] = count_queries(db, be, runs, n_queries, jobs, args.seed)
    out["utility_loss_sweeps"] = utility_loss_sweeps(db, be, full_top, sweeps, runs, jobs,
                                                     args.seed)
    out["wall_s"] = round(time.perf_counter() - started, 1)

    results = results_dir(args)
    path = results / f"ngram-{be.name}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    path.with_suffix(".md").write_text(summary(out))
    plot(out, path.with_suffix(".png"))
    print(f"written to {path} (.md, .png) after {out['wall_s']} s")


def measure_time(db, be) -> dict:
    """Best of two whole releases at epsilon 1 against the naive Counter of the n-grams."""
    t_naive = naive_seconds(db, N_MAX, L_MAX)
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        ngram(db, 1.0, backend=be)
        be.synchronize()
        times.append(time.perf_counter() - t0)
    return {"release_s": round(min(times), 3), "naive_counter_s": round(t_naive, 3),
            "speedup": round(t_naive / min(times), 1)}


def top_k_and_utility_loss(db, be, full_top, trunc_top, runs: int, jobs: int,
                           seed: int | None) -> tuple[dict, dict]:
    """Table 5 (true positive ratios) and Fig. 4 (utility loss) from the same releases.

    Each run releases N-gram and No-Approx with one seed at each epsilon of
    TOP_K_EPSILONS; the non-private Baseline is released once.
    """
    def one(item: tuple[int, int]) -> dict:
        e, r = item
        eps, s = TOP_K_EPSILONS[e], _seed(seed, 500 * e + r)
        rel = ngram(db, eps, backend=be, seed=s)
        syn = _top(rel.synthetic, be)
        no_approx = _top(ngram(db, eps, variant="no-approx", backend=be, seed=s).synthetic, be)
        print(f"top-K {_label(eps)} run {r} done", flush=True)
        return {"full": _scores(full_top, syn), "truncated": _scores(trunc_top, syn),
                "truncated_model": _scores(trunc_top, _model_top(rel)),
                "truncated_no_approx": _scores(trunc_top, no_approx),
                "full_no_approx": _scores(full_top, no_approx),
                "sequences": len(rel.synthetic)}

    items = [(e, r) for e in range(len(TOP_K_EPSILONS)) for r in range(runs)]
    done = dict(zip(items, run_repetitions(one, items, jobs)))
    base = ngram(db, 1.0, variant="baseline", backend=be)
    base_syn, base_model = _top(base.synthetic, be), _model_top(base)
    fixed = {"baseline_vs_truncated": _scores(trunc_top, base_syn),
             "baseline_model_vs_truncated": _scores(trunc_top, base_model),
             "baseline_vs_full": _scores(full_top, base_syn),
             "truncated_vs_full": _scores(full_top, trunc_top)}

    top_k = {"K": list(K_VALUES), "epsilons": list(TOP_K_EPSILONS),
             "paper_table5_percent": PAPER_TABLE5, "by_epsilon": {},
             **{f"{name}_percent": [round(100 * v, 1) for v in s["ratio"]]
                for name, s in fixed.items()}}
    loss = {"K": list(K_VALUES), "epsilons": list(TOP_K_EPSILONS),
            "support": "occurrences (footnote 9), not rescaled to |D|", "by_epsilon": {},
            **{name: [round(v, 4) for v in s["utility_loss"]] for name, s in fixed.items()}}
    for e, eps in enumerate(TOP_K_EPSILONS):
        rows = [done[(e, r)] for r in range(runs)]
        comparisons = [w for w in rows[0] if w != "sequences"]
        top_k["by_epsilon"][_label(eps)] = {
            **{f"vs_{w}_mean_percent": _column_mean([x[w]["ratio"] for x in rows], 1, 100)
               for w in comparisons},
            **{f"vs_{w}_min_percent": _column_extreme([x[w]["ratio"] for x in rows], min, 1, 100)
               for w in comparisons},
            "synthetic_sequences_mean": round(statistics.mean(x["sequences"] for x in rows))}
        loss["by_epsilon"][_label(eps)] = {
            **{f"vs_{w}_mean": _column_mean([x[w]["utility_loss"] for x in rows])
               for w in comparisons},
            **{f"vs_{w}_max": _column_extreme([x[w]["utility_loss"] for x in rows], max)
               for w in comparisons}}
    return top_k, loss


def count_queries(db, be, runs: int, n_queries: int, jobs: int, seed: int | None) -> dict:
    """Fig. 2 and Fig. 8: average relative errors of random count queries per setting."""
    bound = sanity_bound(len(db))
    queries = {m: random_count_queries(db.vocab.size, m, n_queries, seed=m) for m in QUERY_SIZES}
    truth = {m: pattern_counts(db, q, backend=be) for m, q in queries.items()}

    def one(item: tuple[int, int]) -> list[float]:
        i, r = item
        label, eps, variant = COUNT_SETTINGS[i]
        syn = ngram(db, eps, variant=variant, backend=be,
                    seed=_seed(seed, 1000 + i + len(COUNT_SETTINGS) * r)).synthetic
        err = [float(relative_errors(pattern_counts(syn, queries[m], backend=be),
                                     truth[m], bound).mean()) for m in QUERY_SIZES]
        print(label, f"run {r}", [round(x, 4) for x in err], flush=True)
        return err

    items = [(i, r) for i, (_, _, variant) in enumerate(COUNT_SETTINGS)
             for r in range(1 if variant == "baseline" else runs)]
    done = dict(zip(items, run_repetitions(one, items, jobs)))
    per_run = {label: [done[(i, r)] for r in range(runs) if (i, r) in done]
               for i, (label, _, _) in enumerate(COUNT_SETTINGS)}
    return {"max_sizes": list(QUERY_SIZES), "queries_per_size": n_queries,
            "sanity_bound": bound,
            "settings": [{"label": lb, "epsilon": eps, "variant": v}
                         for lb, eps, v in COUNT_SETTINGS],
            "average_relative_error": {lb: _column_mean(rows) for lb, rows in per_run.items()},
            "average_relative_error_max_over_runs": {lb: _column_extreme(rows, max)
                                                     for lb, rows in per_run.items()},
            "releases_per_setting": {lb: len(rows) for lb, rows in per_run.items()}}


def utility_loss_sweeps(db, be, full_top, sweeps: dict, runs: int, jobs: int,
                        seed: int | None) -> dict:
    """Figs. 9 and 10: utility loss against the full original as l_max or n_max varies."""
    def one(item: tuple[str, int, int | None]) -> list[float]:
        kind, value, r = item
        params = {"l_max": L_MAX, "n_max": N_MAX, kind: value}
        if r is None:  # the Baseline: deterministic, no noise
            rel = ngram(db, SWEEP_EPSILON, variant="baseline", backend=be, **params)
        else:
            rel = ngram(db, SWEEP_EPSILON, backend=be, **params,
                        seed=_seed(seed, SWEEP_SEED_BLOCK[kind] + 100 * value + r))
        loss = _scores(full_top, _top(rel.synthetic, be))["utility_loss"]
        print(f"{kind}={value}", "baseline" if r is None else f"run {r}",
              [round(x, 4) for x in loss], flush=True)
        return loss

    items = [(kind, v, r) for kind, values in sweeps.items() for v in values
             for r in [*range(runs), None]]
    done = dict(zip(items, run_repetitions(one, items, jobs)))
    out = {"epsilon": SWEEP_EPSILON, "K": list(K_VALUES), "reference": "full original",
           "fixed": {"l_max": {"n_max": N_MAX}, "n_max": {"l_max": L_MAX}}}
    for kind, values in sweeps.items():
        out[kind] = {str(v): {"mean": _column_mean([done[(kind, v, r)] for r in range(runs)]),
                              "max": _column_extreme([done[(kind, v, r)] for r in range(runs)],
                                                     max),
                              "baseline": [round(x, 4) for x in done[(kind, v, None)]]}
                     for v in values}
    return out


# ------------------------------------------------------------------ report
def _row(name: str, values: Sequence[Any], fmt: str) -> str:
    return f"| {name} | " + " | ".join(format(v, fmt) for v in values) + " |\n"


def _head(first: str, columns: Sequence[Any]) -> str:
    return (f"| {first} | " + " | ".join(str(c) for c in columns) + " |\n|---|"
            + "---|" * len(columns) + "\n")


def _change(reference: Sequence[float], values: Sequence[float]) -> list[float]:
    """Per column, ``values`` relative to ``reference``, in % (negative: lower)."""
    return [100 * (v - r) / r for r, v in zip(reference, values) if r > 0]


def summary(out: dict) -> str:
    """Markdown: our figures beside the paper's."""
    t, k, ul, q = out["time"], out["top_k"], out["utility_loss"], out["count_queries"]
    sw = out["utility_loss_sweeps"]
    ks = k["K"]

    rows = []
    for eps in k["epsilons"]:
        lab, by = _label(eps), k["by_epsilon"][_label(eps)]
        rows += [(f"paper, epsilon {eps}", k["paper_table5_percent"][lab]),
                 (f"dpgpu eps {eps} vs truncated original (mean)", by["vs_truncated_mean_percent"]),
                 (f"dpgpu eps {eps} vs truncated original (worst run)",
                  by["vs_truncated_min_percent"]),
                 (f"dpgpu eps {eps} vs full original (mean)", by["vs_full_mean_percent"]),
                 (f"eps {eps}: n-gram model's own counts vs truncated (mean)",
                  by["vs_truncated_model_mean_percent"]),
                 (f"eps {eps}: No-Approx variant vs truncated (mean)",
                  by["vs_truncated_no_approx_mean_percent"])]
    rows += [("Baseline (exact 5-grams, not private) vs truncated",
              k["baseline_vs_truncated_percent"]),
             ("Baseline model's own counts vs truncated", k["baseline_model_vs_truncated_percent"]),
             ("truncated original vs full original", k["truncated_vs_full_percent"])]
    table5 = _head("K", ks) + "".join(_row(n, v, "g") for n, v in rows)

    urows = []
    for eps in ul["epsilons"]:
        by = ul["by_epsilon"][_label(eps)]
        urows += [(f"N-gram eps {eps} vs full original (mean)", by["vs_full_mean"]),
                  (f"N-gram eps {eps} vs truncated original (mean)", by["vs_truncated_mean"]),
                  (f"N-gram eps {eps} vs truncated (worst run)", by["vs_truncated_max"]),
                  (f"eps {eps}: model's own counts vs truncated", by["vs_truncated_model_mean"]),
                  (f"eps {eps}: No-Approx vs truncated", by["vs_truncated_no_approx_mean"])]
    urows += [("Baseline vs full original", ul["baseline_vs_full"]),
              ("Baseline vs truncated original", ul["baseline_vs_truncated"]),
              ("truncated original vs full original", ul["truncated_vs_full"])]
    fig4 = _head("K", ks) + "".join(_row(n, v, ".3f") for n, v in urows)

    err = q["average_relative_error"]
    qtable = _head("max query size", q["max_sizes"]) + "".join(
        _row(f"{name} ({q['releases_per_setting'][name]} rel.)", vals, ".3f")
        for name, vals in err.items())
    notes = []
    for eps in (0.1, 0.5, 1.0):
        ad, un, na = (err.get(f"{p}{_label(eps)}") for p in ("", "uniform, ", "no-approx, "))
        if ad and un and na:
            cu, cn = _change(un, ad), _change(na, ad)
            notes.append(f"- epsilon {eps}: N-gram's error relative to N-gram-Uniform's "
                         f"{min(cu):+.0f} % to {max(cu):+.0f} % (mean {statistics.mean(cu):+.0f} "
                         f"%), to No-Approx's {min(cn):+.0f} % to {max(cn):+.0f} % (mean "
                         f"{statistics.mean(cn):+.0f} %), over the query sizes; negative: "
                         f"N-gram lower.")

    sweep_text = ""
    for kind, fig, claim in (("l_max", "Fig. 9", "fig9"), ("n_max", "Fig. 10", "fig10")):
        fixed = ", ".join(f"{a} = {b}" for a, b in sw["fixed"][kind].items())
        head = (f"| {kind} | " + " | ".join(f"N-gram K={x}" for x in sw["K"]) + " | "
                + " | ".join(f"Baseline K={x}" for x in sw["K"]) + " |\n|---|"
                + "---|" * (2 * len(sw["K"])) + "\n")
        body = "".join(f"| {v} | " + " | ".join(f"{x:.3f}" for x in d["mean"] + d["baseline"])
                       + " |\n" for v, d in sw[kind].items())
        sweep_text += (f"### Utility loss vs {kind} ({fig}, epsilon = {sw['epsilon']}, {fixed})\n\n"
                       f"Mean over {out['runs']} releases against the {sw['reference']}; the "
                       f"Baseline (non-noisy n-grams at the same setting) is the model's "
                       f"approximation error alone.  Paper (figure only): "
                       f"{out['paper_claims'][claim]}\n\n{head}{body}\n")

    claims = out["paper_claims"]
    return (
        f"# N-gram (CCS'12) on MSNBC\n\nMachine: {out['processor']}, backend "
        f"{out['backend']} ({out['device']}), Python {out['python']}, dpgpu {out['dpgpu']}, "
        f"{out['date']}. l_max = {out['l_max']}, n_max = {out['n_max']}, "
        f"{out['runs']} runs per setting with "
        + ("fresh keys" if out.get("seed") is None else f"seeds from {out['seed']}")
        + f", {out.get('jobs', 1)} at a time"
        + (" (**--quick check**: too few runs and queries to compare with the paper)"
           if out.get("quick") else "")
        + f"; {out['wall_s']} s in all.\n\n"
        "**Not reproduced:** the paper's *Prefix* curve and rows (Chen et al., its reference "
        "[4]; Figs. 2 and 4, Table 5) and *FFS* ([16]; Table 5, Fig. 4): dpgpu has no "
        "implementation of either.  The paper's figures carry no numbers in the text we "
        "have, so beside them we quote what the paper says of them.\n\n"
        f"## Time\n\nWhole release (tree, consistency, synthetic data): {t['release_s']} s; "
        f"naive Python Counter of the n-grams alone: {t['naive_counter_s']} s "
        f"({t['speedup']}x).\n\n"
        f"## Top-K frequent patterns (Table 5, true positive ratio %)\n\n"
        f"{table5}\nThe mechanism sees each sequence's first l_max items, so the truncated "
        f"original is the fair reference; the paper does not say which it used, but the "
        f"truncated original itself agrees with the full one only as the last row shows, "
        f"below the paper's figures.  The Baseline rows are the n-gram model's "
        f"approximation error alone (no noise): on MSNBC the order-4 Markov extension "
        f"misses long runs of one category (e.g. '1' nine times), and the decomposition "
        f"loses part of some 2- and 3-grams (e.g. '1 7', '7 4', '6 7 7').  The No-Approx rows "
        f"show what the Markov-parent estimates of below-threshold children (Section 4.3.4) "
        f"cost here: they shrink the counts of long runs.\n\n"
        f"## Utility loss vs K (Fig. 4)\n\nThe paper's utility loss of the same top-K "
        f"lists (0: same patterns and supports; 1: disjoint), supports = occurrences, not "
        f"rescaled.  Paper (figure only): {claims['fig4']}\n\n{fig4}\n"
        f"## Random count queries (Section 6.2.1, Fig. 2; Appendix Fig. 8)\n\nAverage "
        f"relative error, {q['queries_per_size']} queries per size class, sanity bound "
        f"{q['sanity_bound']:g}, mean over the releases named.  Unlabelled epsilon rows are "
        f"N-gram (adaptive budget); 'uniform' is N-gram-Uniform (Fig. 2), 'no-approx' is "
        f"No-Approx (Fig. 8).  The Prefix curve of Fig. 2 is not reproduced (no "
        f"implementation).\n\n{qtable}\n"
        + ("\n".join(notes) + "\n\n" if notes else "")
        + f"Paper, Fig. 2: {claims['fig2']}  Paper, Fig. 8: {claims['fig8']}\n\n"
        f"## Utility loss vs l_max and n_max (Appendix Figs. 9, 10)\n\n{sweep_text}")


def plot(out: dict, path: Path) -> None:
    """Six panels: Table 5, Fig. 4, Fig. 2, Fig. 8, Fig. 9, Fig. 10; headless."""
    import matplotlib  # noqa: PLC0415 - optional dependency (extra "plot")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    k, ul, q = out["top_k"], out["utility_loss"], out["count_queries"]
    sw = out["utility_loss_sweeps"]
    colours = {0.1: "tab:red", 0.5: "tab:orange", 1.0: "tab:blue"}
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    (a, b, c), (d, e, f) = axes

    for eps in k["epsilons"]:
        lab = _label(eps)
        a.plot(k["K"], k["paper_table5_percent"][lab], "--o", color=colours[eps],
               label=f"paper, eps {eps}")
        a.plot(k["K"], k["by_epsilon"][lab]["vs_truncated_mean_percent"], "-s",
               color=colours[eps], label=f"dpgpu vs truncated, eps {eps}")
        a.plot(k["K"], k["by_epsilon"][lab]["vs_full_mean_percent"], ":^", color=colours[eps],
               label=f"dpgpu vs full, eps {eps}")
    a.set(xlabel="K", ylabel="true positive ratio (%)", title="Table 5: top-K")
    a.legend(fontsize=7)

    for eps in ul["epsilons"]:
        by = ul["by_epsilon"][_label(eps)]
        b.plot(ul["K"], by["vs_full_mean"], ":^", color=colours[eps], label=f"vs full, eps {eps}")
        b.plot(ul["K"], by["vs_truncated_mean"], "-s", color=colours[eps],
               label=f"vs truncated, eps {eps}")
    b.plot(ul["K"], ul["baseline_vs_full"], "k:", label="Baseline vs full")
    b.set(xlabel="K", ylabel="utility loss", title="Fig. 4: utility loss vs K")
    b.legend(fontsize=7)

    err = q["average_relative_error"]
    for panel, other, style, title in ((c, "uniform", "--", "Fig. 2: N-gram vs N-gram-Uniform"),
                                       (d, "no-approx", ":", "Fig. 8: N-gram vs No-Approx")):
        for setting in q["settings"]:
            lab, eps, variant = setting["label"], setting["epsilon"], setting["variant"]
            if variant == "adaptive":
                panel.plot(q["max_sizes"], err[lab], "-o", color=colours.get(eps),
                           label=f"N-gram, eps {eps}")
            elif variant == other:
                panel.plot(q["max_sizes"], err[lab], style + "s", color=colours.get(eps),
                           label=f"{other}, eps {eps}")
        if "baseline" in err:
            panel.plot(q["max_sizes"], err["baseline"], "k-.", label="Baseline")
        panel.set(xlabel="maximal query size", ylabel="average relative error", title=title)
        panel.legend(fontsize=7)

    for panel, kind, fig_name in ((e, "l_max", "Fig. 9"), (f, "n_max", "Fig. 10")):
        values = [int(v) for v in sw[kind]]
        for i, kk in enumerate(sw["K"]):
            if kk not in (min(sw["K"]), max(sw["K"])):
                continue
            colour = "tab:green" if kk == min(sw["K"]) else "tab:purple"
            panel.plot(values, [sw[kind][str(v)]["mean"][i] for v in values], "-o",
                       color=colour, label=f"N-gram, K={kk}")
            panel.plot(values, [sw[kind][str(v)]["baseline"][i] for v in values], "--s",
                       color=colour, label=f"Baseline (no noise), K={kk}")
        panel.set_xticks(values)
        panel.set(xlabel=kind, ylabel="utility loss (vs full original)",
                  title=f"{fig_name}: utility loss vs {kind}, eps {sw['epsilon']}")
        panel.legend(fontsize=7)

    fig.suptitle(f"N-gram on MSNBC ({out['backend']}, {out['device']}; Prefix and FFS not "
                 f"reproduced)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
