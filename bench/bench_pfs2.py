"""PFS^2 vs N-gram + exact miner (the comparison of PFS^2 Fig. 2), and support-counting speed.

For each dataset and relative threshold: F-score and median relative error
of the released frequent sequences against the exact ones, averaged over
``--runs`` runs at ``--epsilon``; N-gram's synthetic database
(``dpgpu.ngram(db, epsilon).synthetic``) is mined with the exact miner at
the same absolute threshold (relative to the original ``|D|``, as the paper
does).  Then the support-counting hot loop on the CPU backend is timed
against a pure-Python subsequence check on the same candidates and data.

Usage::

    python bench/bench_pfs2.py [--runs 5] [--datasets msnbc bms1] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import dpgpu
from dpgpu.backend import get_backend
from dpgpu.eval.metrics import precision_recall_fscore, support_relative_errors
from dpgpu.eval.truth import _dedupe, frequent_subsequences, subsequence_supports, \
    support_threshold
from dpgpu.mechanisms.pfs2.shrink import is_subsequence
from dpgpu.mechanisms.pfs2.support import supports

DATASETS = {
    "msnbc": ("/work/shared/datasets/msnbc/msnbc990928.seq.gz", (0.005, 0.01, 0.015, 0.02, 0.025)),
    "bms1": ("/work/shared/datasets/bms1/BMS1_spmf.txt.gz", (0.004, 0.006, 0.008, 0.01, 0.012)),
}


def score(db, true_p, true_s, patterns, noisy):
    """F-score and median relative error of one release."""
    _, _, f = precision_recall_fscore(true_p, patterns)
    truth = dict(zip(true_p, true_s.tolist()))
    missing = [p for p in patterns if p not in truth]
    if missing:
        truth.update(zip(missing, subsequence_supports(db, missing).tolist()))
    re = support_relative_errors(dict(zip(patterns, noisy)), truth)
    return f, float(np.median(re)) if re.size else float("nan")


def speed(db, patterns, sample=20_000):
    """Seconds of the Numba support loop and of pure Python on the same data and candidates."""
    sub = db.select(np.arange(min(sample, len(db))))
    rows = [sub.sequence_ids(i).tolist() for i in range(len(sub))]
    be = get_backend("numpy")
    w = np.ones(len(sub), dtype=np.int64)
    supports(sub, w, patterns, be)  # compile
    t = time.perf_counter()
    fast = supports(sub, w, patterns, be)
    t_fast = time.perf_counter() - t
    t = time.perf_counter()
    slow = [sum(is_subsequence(p, r) for r in rows) for p in patterns]
    t_slow = time.perf_counter() - t
    assert fast.tolist() == slow
    return {"sequences": len(sub), "candidates": len(patterns), "numba_s": t_fast,
            "python_s": t_slow, "speedup": t_slow / t_fast}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--thresholds", nargs="+", type=float, help="override the thresholds")
    ap.add_argument("--no-ngram", action="store_true", help="skip the N-gram baseline")
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args()
    results = {"epsilon": args.epsilon, "runs": args.runs, "datasets": {}}
    for name in args.datasets:
        path, thresholds = DATASETS[name]
        db = dpgpu.load(path)
        uniq, _ = _dedupe(db)
        entry = results["datasets"][name] = {"sequences": len(db), "items": db.vocab.size,
                                             "thresholds": {}}
        synth = []
        if not args.no_ngram:
            for r in range(args.runs):
                t = time.perf_counter()
                synth.append(dpgpu.ngram(db, args.epsilon, seed=1000 + r).synthetic)
                print(f"{name}: ngram run {r} {time.perf_counter() - t:.1f}s", flush=True)
        for theta in args.thresholds or thresholds:
            min_sup = support_threshold(theta, len(db))
            true_p, true_s = frequent_subsequences(db, min_sup)
            row = {"true_frequent": len(true_p), "pfs2": [], "ngram": []}
            for r in range(args.runs):
                t = time.perf_counter()
                rel = dpgpu.pfs2(db, args.epsilon, theta, seed=r)
                f, re = score(db, true_p, true_s, rel.patterns, rel.supports.tolist())
                row["pfs2"].append({"f": f, "re": re, "released": len(rel.patterns),
                                    "L_f": rel.report["pre_mining"]["L_f"],
                                    "l_max": rel.report["pre_mining"]["l_max"],
                                    "seconds": time.perf_counter() - t})
                if synth:
                    p, s = frequent_subsequences(synth[r], min_sup)
                    f, re = score(db, true_p, true_s, p, s.tolist())
                    row["ngram"].append({"f": f, "re": re, "released": len(p)})
            for mech in ("pfs2", "ngram"):
                if row[mech]:
                    row[f"{mech}_mean"] = {k: float(np.mean([x[k] for x in row[mech]]))
                                           for k in ("f", "re", "released")}
            entry["thresholds"][str(theta)] = row
            print(f"{name} theta={theta}: {json.dumps({k: v for k, v in row.items() if k.endswith('mean')})}",
                  flush=True)
        pats = frequent_subsequences(db, support_threshold(max(thresholds), len(db)))[0]
        entry["support_speed"] = speed(uniq, sorted(pats))
        print(f"{name} speed: {entry['support_speed']}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tag = "-".join(args.datasets)
    (out / f"pfs2-{tag}.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
