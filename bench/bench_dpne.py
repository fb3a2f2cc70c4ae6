"""DPNE benchmark: MSNBC Table 5 settings (5 runs), the DPSU baselines, K-anonymity, SPMF timing.

Writes ``bench/results/dpne-numpy-cpu.json`` and ``.md`` (``dpne-cupy.*`` on a GPU,
where the level work runs on the device: :mod:`dpgpu.mechanisms.dpne.device`).  The paper's
Table 5 (Delta_0 = 10, epsilon = 1, delta = 1e-7, eta = 0.01, k <= 6) used the
full UCI MSNBC file (989,818 users, paper Table 1); each sequence is a user.
DPSU-single is one run per ``k`` with the whole budget.  One
release is also timed alone against a naive Python baseline that computes
the same level histograms user by user (:func:`naive.naive_dpne_histograms`).  K-anonymity
coverage (paper Figure 4) is of the first run's release, all lengths.

The runs (seed ``r`` for run ``r`` of every method) run in ``--jobs`` worker
processes (default: one per core; :mod:`parallel`), so the counts do not
depend on ``--jobs``; the seconds per run do (runs then share the CPU).  The
SPMF timing runs alone.

Usage: ``python bench/bench_dpne.py [--runs 5] [--jobs N] [--out DIR]``
(``--runs 1`` for a quick CPU check).
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np

import dpgpu
from dpgpu.backend import get_backend
from dpgpu.eval.metrics import kanonymity_coverage
from dpgpu.eval.truth import gram_user_counts
from dpgpu.mechanisms.dpne import dpne
from naive import db_rows, naive_dpne_histograms
from parallel import add_jobs_argument, run_repetitions, use_jobs
from paths import DATASETS, add_out_argument, require, results_dir

T = 6
PAPER = {"dpne": [17, 254, 1273, 1954, 2221, 2020], "dpsu-all": [17, 249, 930, 1145, 1007, 768],
         "dpsu-even": [17, 246, 899, 1107, 996, 766],
         "dpsu-single": [17, 260, 1483, 2180, 2210, 1819]}
ROWS = [("dpne", "weighted"), ("dpsu-all", "weighted"), ("dpsu-even", "weighted"),
        ("dpsu-single", "weighted"), ("dpsu-all", "laplace"), ("dpsu-even", "laplace"),
        ("dpsu-single", "laplace")]
KS = (10, 100, 1000)
SPMF = str(DATASETS / "msnbc_spmf" / "MSNBC.txt.gz")


def db_ids(release, db) -> list:
    """The release's levels as ids of ``db``'s vocabulary (a release made with a vocabulary
    taken from the data has one of its own: the released labels alone)."""
    to_db = np.asarray([db.vocab.id_of(label) for label in release.vocab.labels], dtype=np.int32)
    return [to_db[lvl] for lvl in release.levels]


def _release(db, method, policy, seed):
    """Per-k counts and released grams (tuples of ids) of one run of ``method``."""
    common = dict(contribution=10, seed=seed, method=method, policy=policy,
                  **({"eta": 0.01} if method == "dpne" else {}))
    if method != "dpsu-single":
        levels = db_ids(dpne(db, 1.0, 1e-7, max_n=T, **common), db)
        levels += [np.zeros((0, k), np.int32) for k in range(len(levels) + 1, T + 1)]
    else:
        levels = [db_ids(dpne(db, 1.0, 1e-7, max_n=k, **common), db)[k - 1]
                  for k in range(1, T + 1)]
    return [lv.shape[0] for lv in levels], {tuple(g) for lv in levels for g in lv.tolist()}


def versus_naive(db) -> dict:
    """One Table 5 release (warm) against the naive Python computation of its level histograms
    (:func:`naive.naive_dpne_histograms`, the levels the release examined), in the same run."""
    common = dict(contribution=10, eta=0.01, seed=0)
    dpne(db, 1.0, 1e-7, max_n=T, **common)  # warm-up
    t = time.perf_counter()
    rel = dpne(db, 1.0, 1e-7, max_n=T, **common)
    dpgpu_s = time.perf_counter() - t
    users: dict = {}
    keys = range(len(db)) if db.users is None else db.users.tolist()
    for user, row in zip(keys, db_rows(db)):
        users.setdefault(user, []).append(row)
    released = [set(map(tuple, lvl.tolist())) for lvl in db_ids(rel, db)]
    if len(released) < T:
        released.append(set())  # the level that came out empty was counted too
    t = time.perf_counter()
    naive_dpne_histograms(users, released, common["contribution"])
    naive_s = time.perf_counter() - t
    return {"levels": len(released), "dpgpu_s": round(dpgpu_s, 3),
            "naive_python_s": round(naive_s, 2), "speedup": round(naive_s / dpgpu_s, 1)}


def main() -> None:
    """Run and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    add_out_argument(ap)
    add_jobs_argument(ap)
    args = ap.parse_args()
    require(SPMF)
    runs = args.runs
    jobs = use_jobs(args.jobs, get_backend(None).name)  # dpne() runs on the default backend
    full = dpgpu.load(dpgpu.demo_path())
    holders = {}
    for n in range(1, T + 1):
        grams, users = gram_user_counts(full, n)
        holders.update(zip(map(tuple, grams.tolist()), users.tolist()))

    def one(task: tuple[str, str, int]) -> tuple[list, float, dict | None]:
        method, policy, seed = task
        t = time.perf_counter()
        c, released = _release(full, method, policy, seed)
        secs = time.perf_counter() - t
        cover = ({K: kanonymity_coverage(released, holders, K) for K in KS} if seed == 0
                 else None)
        return c, secs, cover

    tasks = [(method, policy, seed) for method, policy in ROWS for seed in range(runs)]
    done = dict(zip(tasks, run_repetitions(one, tasks, jobs)))
    table = {}
    for method, policy in ROWS:
        rows = [done[method, policy, seed] for seed in range(runs)]
        counts, times, cover = [r[0] for r in rows], [r[1] for r in rows], rows[0][2]
        mean = np.mean(counts, axis=0)
        table[f"{method}/{policy}"] = {"per_k_mean": mean.tolist(), "total_mean": float(mean.sum()),
                                       "paper": PAPER[method] if policy == "weighted" else None,
                                       "per_run": counts, "seconds_per_run": times,
                                       "kanonymity_coverage": cover}
    def spmf_release():
        return dpne(dpgpu.load(SPMF), 1.0, 1e-7, max_n=5, contribution=10, eta=0.01, seed=0)

    naive = versus_naive(full)
    print(f"versus naive Python: {naive}", flush=True)
    spmf_release()  # warm-up: the table's runs may have compiled in worker processes only
    t = time.perf_counter()
    rs = spmf_release()
    spmf_s = time.perf_counter() - t
    out = {"machine": platform.processor() or platform.machine(), "backend": rs.report["backend"],
           "device": rs.report["device"], "runs": runs, "jobs": jobs, "table5": table,
           "spmf_k5": {"released": rs.counts(), "seconds_end_to_end": spmf_s,
                       "reference_seconds": 314, "speedup": 314 / spmf_s},
           "versus_naive": naive, "calibration": rs.report["calibration"]}
    res = results_dir(args)
    name = "dpne-cupy" if out["backend"] == "cupy" else f"dpne-{out['backend']}-cpu"
    (res / f"{name}.json").write_text(json.dumps(out, indent=2))
    md = ["| method / policy | 1 | 2 | 3 | 4 | 5 | 6 | total | K-anon. cover K=10/100/1000 "
          "| s/run |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name_, row in table.items():
        m = row["per_k_mean"]
        cov = "/".join("n/a" if row["kanonymity_coverage"][K] is None
                       else f"{row['kanonymity_coverage'][K]:.2f}" for K in KS)
        single = name_.startswith("dpsu-single")  # one run per k: a total means nothing
        md.append(f"| {name_} (dpgpu, mean of {runs}) | " + " | ".join(f"{x:.0f}" for x in m)
                  + f" | {'-' if single else f'{sum(m):.0f}'} | {cov} | "
                  f"{np.mean(row['seconds_per_run']):.1f} |")
        if row["paper"]:
            md.append(f"| {name_.split('/')[0]} (paper) | " + " | ".join(map(str, row["paper"]))
                      + f" | {'-' if single else sum(row['paper'])} | | |")
    md += ["", "DPSU-single: one run per k (whole budget each), no total in the paper. "
           "Laplace rows: dpgpu's integer Policy Laplace (lowest grams first; see "
           "dpgpu/mechanisms/dpne/baselines.py); the paper does not say which policy its "
           "baselines used.",
           "MSNBC-SPMF (31,790 sequences) k<=5 end to end (load + release, warm process): "
           f"{spmf_s:.2f} s "
           f"(reference: 314 s, {314 / spmf_s:.0f}x). Backend {out['backend']}, "
           f"{out['machine']}; {jobs} runs at a time (s/run is per run on a shared CPU).",
           "", f"Versus naive Python (one dpne release, k <= {T}, warm, alone): "
           f"{naive['dpgpu_s']} s against {naive['naive_python_s']} s for a plain Python "
           f"loop that computes the same {naive['levels']} level histograms user by user "
           f"(bench/naive.py; no noise): {naive['speedup']}x."]
    (res / f"{name}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
