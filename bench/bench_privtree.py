"""Benchmark: PrivTree (SIGMOD'16) on MSNBC and on spatial data, against its baselines.

Sequence data (Section 6.2), MSNBC with ``l_top = 20``, for each epsilon:

* top-k frequent strings (k = 20, 40, ..., 100; items only, any length):
  precision against the exact top-k of the full data, PrivTree (Eq. 12
  estimates of the private PST) vs the N-gram mechanism (``n_max = 5``,
  ``l_max = 20``, its model's estimates) vs EM (``em_top_k``: k noisy-max
  selections at epsilon / k each, on the data cut to ``l_top`` items; one
  release per k, as the paper's EM spends its budget over k) vs Truncate
  (the exact top-k of the data cut to ``l_top`` items: not private, the
  same for every epsilon), as in Fig. 6;
* total variation distance between the length distribution of the
  synthetic data and that of the full data, PrivTree vs N-gram (and
  Truncate's cut lengths; EM releases no synthetic data), as in Fig. 7;
* the PST build time (tree + leaf histograms, data loaded) for the epsilons
  of the paper's Table 4, which reports 1.73-3.05 s for its C++ code, and
  against a naive Python baseline in the same run: counting the histograms of
  the same tree's nodes symbol by symbol with ``Counter`` (:mod:`naive`).

Spatial data (Section 6.1): average relative error of range-count queries
(small / medium / large query sets, Delta = 0.1 % of n), PrivTree vs UG vs AG
(the adaptive grid of Qardaji et al., two-dimensional data only), on
the airports file (longitude, latitude; public domain [-180, -60] x [10, 75])
and on a seeded skewed synthetic point set in the unit square.

The repetitions (PST and N-gram releases per epsilon and seed; spatial
releases per epsilon and seed) run in ``--jobs`` worker processes (default:
one per core; :mod:`parallel`); every repetition has its own seed, so the
results do not depend on ``--jobs`` (the timings inside them do: they then
share the CPU).  The build-time table is measured serially.

Usage: ``python bench/bench_privtree.py [--reps R] [--backend numpy|cupy] [--queries Q]
[--jobs N] [--out DIR] [--sections S ...] [--report-only]``; ``--reps 1 --queries 200`` for a
quick CPU check, ``--sections sequences`` for the MSNBC top-k and length section only.
Results go to ``<out>/privtree-<backend>.json`` and its Markdown summary
``<out>/privtree-<backend>.md`` (a run of some sections only: to
``privtree-<backend>-<sections>.*``, so that the full results stay);
``--report-only`` rewrites the Markdown from an existing JSON without running
anything.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import dpgpu
from dpgpu.data.points import read_points
from dpgpu.eval import metrics as M
from dpgpu.eval import truth as T
from dpgpu.mechanisms.ngram import ngram
from dpgpu.mechanisms.privtree import adaptive_grid, privtree_spatial, pst, uniform_grid
from dpgpu.mechanisms.privtree.em import em_top_k
from naive import db_rows, naive_pst_histograms
from parallel import add_jobs_argument, default_jobs, run_repetitions, use_jobs
from paths import DATASETS, add_out_argument, require, results_dir

MSNBC = DATASETS / "msnbc" / "msnbc990928.seq.gz"
AIRPORTS = DATASETS / "airports" / "airports.csv"
EPSILONS = (0.1, 0.4, 1.6)
TABLE4_EPSILONS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
K_VALUES = (20, 40, 60, 80, 100)
L_TOP = 20  # PST: synthetic sequences and top-k strings use items up to this length
NGRAM_N_MAX, NGRAM_L_MAX = 5, 20
SECTIONS = ("build", "sequences", "spatial")
# spatial result keys, their Markdown titles and the names of their axes
SPATIAL_SETS = (("airports", "Airports", ("lon", "lat")),
                ("skewed_synthetic", "Skewed synthetic", ("x", "y")))


def sequences(db, reps: int, backend: str, jobs: int = 1) -> dict:
    """Top-k precision and length TV distance, PrivTree vs N-gram vs EM vs Truncate."""
    true_top, _ = T.top_k_strings(db, max(K_VALUES), backend=backend)
    true_len = T.length_distribution(db)
    cut_top, _ = T.top_k_strings(db, max(K_VALUES), l_max=L_TOP, backend=backend)
    truncate = {"precision": [M.true_positive_ratio(true_top[:k], cut_top[:k], k)
                              for k in K_VALUES],
                "tv": M.total_variation_distance(true_len,
                                                 T.length_distribution(db, l_max=L_TOP))}

    def one(task: tuple[float, int]) -> dict:
        eps, r = task
        rel = pst(db, eps, l_top=L_TOP, seed=1000 + r, backend=backend)
        top = [tuple(db.vocab.id_of(x) for x in g) for g, _ in rel.top_k(max(K_VALUES))]
        out = {"privtree": {"precision": [M.true_positive_ratio(true_top[:k], top[:k], k)
                                          for k in K_VALUES],
                            "tv": M.total_variation_distance(
                                true_len, T.length_distribution(rel.synthetic)),
                            "build_s": rel.report["timings"]["build_s"],
                            "synthetic_s": rel.report["timings"]["synthetic_s"]}}
        t = time.perf_counter()
        ng = ngram(db, eps, l_max=NGRAM_L_MAX, n_max=NGRAM_N_MAX, seed=2000 + r,
                   backend=backend)
        release_s = round(time.perf_counter() - t, 3)
        top = [tuple(db.vocab.id_of(x) for x in g)
               for g, _ in ng.top_k(max(K_VALUES), min_length=1)]
        out["ngram"] = {"precision": [M.true_positive_ratio(true_top[:k], top[:k], k)
                                      for k in K_VALUES],
                        "tv": M.total_variation_distance(
                            true_len, T.length_distribution(ng.synthetic)),
                        "release_s": release_s}
        precision, t = [], time.perf_counter()
        for i, k in enumerate(K_VALUES):  # one release per k: epsilon / k per selection
            em = em_top_k(db, eps, k, l_top=L_TOP, seed=6000 + 10 * r + i, backend=backend)
            top = [tuple(db.vocab.id_of(x) for x in g) for g in em.strings()]
            precision.append(M.true_positive_ratio(true_top[:k], top, k))
        out["em"] = {"precision": precision,
                     "release_s": round(time.perf_counter() - t, 3)}  # all k together
        print(f"eps={eps} rep={r}: privtree P@100={out['privtree']['precision'][-1]:.2f}"
              f" tv={out['privtree']['tv']:.3f} | ngram "
              f"P@100={out['ngram']['precision'][-1]:.2f} tv={out['ngram']['tv']:.3f} | em "
              f"P@100={out['em']['precision'][-1]:.2f}", flush=True)
        return out

    tasks = [(eps, r) for eps in EPSILONS for r in range(reps)]
    runs = dict(zip(tasks, run_repetitions(one, tasks, jobs)))
    out = {"truncate": {"precision_mean": np.round(truncate["precision"], 3).tolist(),
                        "tv_mean": round(float(truncate["tv"]), 4),
                        "note": "not private: exact top-k of the data cut to l_top items"}}
    for eps in EPSILONS:
        row: dict = {}
        for name in ("privtree", "ngram", "em"):
            m = {key: [runs[eps, r][name][key] for r in range(reps)]
                 for key in runs[eps, 0][name]}
            m["precision_mean"] = np.round(np.mean(m["precision"], axis=0), 3).tolist()
            if "tv" in m:
                m["tv_mean"] = round(float(np.mean(m["tv"])), 4)
            row[name] = m
        out[f"epsilon={eps}"] = row
    return out


def build_times(db, reps: int, backend: str) -> dict:
    """PST build time (report timings: tree + histograms) per epsilon of Table 4, and the time
    :func:`naive.naive_pst_histograms` takes to count the histograms of the same tree's nodes
    in plain Python, in the same run."""
    out = {}
    rows = db_rows(db)
    pst(db, 1.0, l_top=L_TOP, seed=1, synthetic=False, backend=backend)  # JIT warm-up
    for eps in TABLE4_EPSILONS:
        releases = [pst(db, eps, l_top=L_TOP, seed=3000 + r, synthetic=False, backend=backend)
                    for r in range(reps)]
        times = [rel.report["timings"]["build_s"] for rel in releases]
        contexts = [tuple(c) for lvl in releases[0].levels for c in lvl.contexts.tolist()]
        t = time.perf_counter()
        naive_pst_histograms(rows, L_TOP, contexts, db.vocab.size)
        naive_s = time.perf_counter() - t
        out[f"epsilon={eps}"] = {"median_s": round(float(np.median(times)), 3),
                                 "min_s": round(min(times), 3), "nodes": len(contexts),
                                 "naive_python_s": round(naive_s, 2),
                                 "speedup": round(naive_s / times[0], 1)}
        print(f"PST build eps={eps}: {out[f'epsilon={eps}']}", flush=True)
    return out


def skewed_points(n: int, seed: int = 7) -> np.ndarray:
    """Seeded skewed 2-D points: 80 % in 25 Gaussian clusters of widths 1e-3..3e-2."""
    rng = np.random.default_rng(seed)
    n_clustered = int(0.8 * n)
    centers = rng.random((25, 2))
    widths = np.exp(rng.uniform(np.log(1e-3), np.log(3e-2), 25))
    weights = rng.dirichlet(np.full(25, 0.5))
    which = rng.choice(25, n_clustered, p=weights)
    pts = centers[which] + rng.normal(size=(n_clustered, 2)) * widths[which, None]
    pts = np.concatenate([pts, rng.random((n - n_clustered, 2))])
    return np.clip(pts, 0.0, 1.0 - 1e-12)


def spatial(points: np.ndarray, bounds: list, reps: int, backend: str, n_queries: int,
            jobs: int = 1) -> dict:
    """Average relative error per query set, PrivTree vs UG (any dimension) vs AG (2-D only)."""
    b = np.asarray(bounds, dtype=np.float64)
    d = b.shape[0]
    pts = np.clip(points, b[:, 0], b[:, 1])
    queries = {s: M.random_range_queries(b, n_queries, s, seed=11)
               for s in ("small", "medium", "large")}
    truth = {s: T.range_counts(pts, q) for s, q in queries.items()}

    def one(task: tuple[float, int]) -> dict:
        eps, r = task
        rel = privtree_spatial(pts, eps, bounds=bounds, seed=4000 + r, backend=backend)
        ug = uniform_grid(pts, eps, n=len(pts), bounds=bounds, seed=5000 + r, backend=backend)
        ag = adaptive_grid(pts, eps, n=len(pts), bounds=bounds, seed=6000 + r,
                           backend=backend) if d == 2 else None
        hists = [("privtree", rel.leaves), ("ug", ug)] + ([("ag", ag)] if ag is not None else [])
        out = {name: {s: float(M.range_relative_errors(hist.range_count(q[:, :d], q[:, d:]),
                                                       truth[s], len(pts)).mean())
                      for s, q in queries.items()}
               for name, hist in hists}
        return {**out, "privtree_leaves": len(rel.leaves)} | \
            ({"ag_leaves": len(ag)} if ag is not None else {})

    tasks = [(eps, r) for eps in EPSILONS for r in range(reps)]
    runs = dict(zip(tasks, run_repetitions(one, tasks, jobs)))
    out = {}
    names = ("privtree", "ug", "ag") if d == 2 else ("privtree", "ug")
    for eps in EPSILONS:
        rows = [runs[eps, r] for r in range(reps)]
        out[f"epsilon={eps}"] = {
            name: {s: round(float(np.mean([row[name][s] for row in rows])), 4) for s in queries}
            for name in names} | {f"{name}_leaves_mean": float(np.mean([row[f"{name}_leaves"]
                                                                       for row in rows]))
                                  for name in ("privtree", "ag") if name in names}
        print(f"spatial eps={eps}: {out[f'epsilon={eps}']}", flush=True)
    return out


def _epsilons(section: dict) -> list[tuple[str, dict]]:
    """The ``epsilon=...`` entries of a result section, as (epsilon text, entry)."""
    return [(key.removeprefix("epsilon="), row) for key, row in section.items()
            if key.startswith("epsilon=")]


def _spatial_table(title: str, axes: tuple[str, str], entry: dict) -> list[str]:
    """Markdown lines: average relative errors of one spatial data set (AG's columns when the
    results have them: results from before AG keep their table)."""
    about = [f"n = {entry['n']}"]
    if "bounds" in entry:
        about.append("domain " + " x ".join(f"{ax} [{lo}, {hi}]"
                                            for ax, (lo, hi) in zip(axes, entry["bounds"])))
    if "generator" in entry:
        about.append(entry["generator"])
    rows = _epsilons(entry)
    ag = any("ag" in row for _, row in rows)
    names = ("privtree", "ug", "ag") if ag else ("privtree", "ug")
    lines = [f"## Range counts, average relative error: {title} ({', '.join(about)})", "",
             "| epsilon | PrivTree small / medium / large | UG small / medium / large "
             + ("| AG small / medium / large " if ag else "")
             + "| PrivTree leaves |" + (" AG leaves |" if ag else ""),
             "|---|---|---|---|" + ("---|---|" if ag else "")]
    for eps, row in rows:
        errors = [" / ".join(f"{row[name][s]:g}" for s in ("small", "medium", "large"))
                  if name in row else "-" for name in names]
        leaves = [f"{row['privtree_leaves_mean']:g}"] + \
            ([f"{row['ag_leaves_mean']:g}" if "ag_leaves_mean" in row else "-"] if ag else [])
        lines.append(f"| {eps} | {' | '.join(errors)} | {' | '.join(leaves)} |")
    return lines + [""]


def write_report(path: Path, result: dict) -> None:
    """Write the Markdown summary of ``result`` (the JSON's content) to ``path``."""
    cpu = (f"{result['cpus']}-core {result['machine']} CPU" if "cpus" in result
           else f"{result['machine']} CPU")
    lines = [f"# PrivTree benchmark ({result['backend']} backend, {cpu}, "
             f"{result['reps']} reps)", "",
             f"Generated by `bench/bench_privtree.py` from `{path.with_suffix('.json').name}`. "
             f"{result['notes']}."]
    if "jobs" in result:
        lines[-1] += (f" Repetitions ran {result['jobs']} at a time, so the timings inside "
                      "them are of runs sharing the CPU; the build times are measured serially.")
    lines.append("")
    if "msnbc" in result:
        ks = "/".join(str(k) for k in result["k_values"])
        msnbc = result["msnbc"]
        lines += [f"## MSNBC (l_top = {L_TOP}): PrivTree PST vs N-gram "
                  f"(n_max = {NGRAM_N_MAX}, l_max = {NGRAM_L_MAX})"
                  + (" vs EM vs Truncate" if "truncate" in msnbc else ""), ""]
        if "truncate" in msnbc:
            lines += ["EM: k noisy-max selections at epsilon / k each on the data cut to "
                      "l_top items, one release per k (it releases no synthetic data). "
                      "Truncate: the exact top-k of the cut data and its length "
                      "distribution, not private (the same for every epsilon).", ""]
        lines += [f"| epsilon | method | precision k={ks} | length TV |", "|---|---|---|---|"]
        for eps, row in _epsilons(msnbc):
            for name, label in (("privtree", "PrivTree"), ("ngram", "N-gram"), ("em", "EM"),
                                ("truncate", "Truncate (not private)")):
                entry = msnbc.get("truncate") if name == "truncate" else row.get(name)
                if entry is None:
                    continue
                precision = " / ".join(f"{p:.3f}" for p in entry["precision_mean"])
                tv = f"{entry['tv_mean']:.4f}" if "tv_mean" in entry else "-"
                lines.append(f"| {eps} | {label} | {precision} | {tv} |")
        lines.append("")
    if "pst_build_time" in result:
        build = result["pst_build_time"]
        lines += ["## PST build time on MSNBC (data loaded; tree + leaf histograms)", "",
                  f"Paper, Table 4 (seconds): {build['paper_table4_s']}.", "",
                  "Naive: the histograms of the first repetition's tree counted symbol by "
                  "symbol with a Python `Counter` (bench/naive.py), in the same run; speedup: "
                  "its time over that repetition's build time.", "",
                  "| epsilon | median s | min s | nodes | naive Python s | speedup |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {eps} | {row['median_s']:.3f} | {row['min_s']:.3f} | "
                  f"{row.get('nodes', '-')} | {row.get('naive_python_s', '-')} | "
                  f"{str(row['speedup']) + 'x' if 'speedup' in row else '-'} |"
                  for eps, row in _epsilons(build)]
        lines.append("")
    for key, title, axes in SPATIAL_SETS:
        if key in result:
            lines += _spatial_table(title, axes, result[key])
    path.write_text("\n".join(lines))


def main() -> None:
    """Run everything and write <out>/privtree-<backend>.json and .md."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--backend", default="numpy")
    ap.add_argument("--queries", type=int, default=2000)
    add_out_argument(ap)
    ap.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                    help="what to run (default: all): the PST build times, the MSNBC "
                         "sequence comparison, the spatial comparison")
    ap.add_argument("--report-only", action="store_true",
                    help="rewrite privtree-<backend>.md from the existing .json, run nothing")
    add_jobs_argument(ap)
    args = ap.parse_args()
    path = args.out / f"privtree-{args.backend}.json"
    if args.report_only:
        if not path.exists():
            ap.error(f"--report-only: {path} does not exist")
        write_report(path.with_suffix(".md"), json.loads(path.read_text()))
        print(f"written {path.with_suffix('.md')}")
        return
    jobs = use_jobs(args.jobs, args.backend)
    t0 = time.perf_counter()
    require(MSNBC, AIRPORTS)
    db = dpgpu.load(MSNBC)
    result = {
        "benchmark": "PrivTree (SIGMOD'16): MSNBC PST vs N-gram vs EM vs Truncate; "
                     "spatial PrivTree vs UG vs AG",
        "machine": platform.machine(), "python": platform.python_version(),
        "backend": args.backend, "dpgpu": dpgpu.__version__,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "reps": args.reps, "jobs": jobs, "cpus": default_jobs(), "k_values": list(K_VALUES),
        "notes": ("top-k: items-only strings of any length, exact top-k of the full MSNBC; "
                  "TV: synthetic vs full-data length distributions; PrivTree synthetic "
                  "sequences are capped at l_top = 20 items; UG and AG take n as public"),
    }
    if set(args.sections) != set(SECTIONS):
        result["sections"] = [s for s in SECTIONS if s in args.sections]
    if "build" in args.sections:
        result["pst_build_time"] = {"paper_table4_s": "1.73-3.05 (C++, epsilon 0.05-1.6)",
                                    **build_times(db, args.reps, args.backend)}
    if "sequences" in args.sections:
        result["msnbc"] = sequences(db, args.reps, args.backend, jobs)
    if "spatial" in args.sections:
        air = read_points(AIRPORTS, "longitude,latitude")
        result["airports"] = {"n": len(air), "bounds": [[-180, -60], [10, 75]],
                              **spatial(air, [[-180, -60], [10, 75]], args.reps,
                                        args.backend, args.queries, jobs)}
        sk = skewed_points(200_000)
        result["skewed_synthetic"] = {"n": len(sk),
                                      "generator": "skewed_points(200000, seed=7)",
                                      **spatial(sk, [[0, 1], [0, 1]], args.reps, args.backend,
                                                args.queries, jobs)}
    result["total_s"] = round(time.perf_counter() - t0, 1)
    if "sections" in result:  # a partial run leaves the full results as they are
        path = path.with_name(f"{path.stem}-{'-'.join(result['sections'])}.json")
    path = results_dir(args) / path.name
    path.write_text(json.dumps(result, indent=2) + "\n")
    write_report(path.with_suffix(".md"), result)
    print(f"written {path} and {path.with_suffix('.md').name}")


if __name__ == "__main__":
    main()
