"""DPNE benchmark: MSNBC Table 5 settings (5 runs) and the MSNBC-SPMF timing.

Writes ``bench/results/dpne-<backend>-cpu.json`` and ``.md``.  The paper's
Table 5 (Delta_0 = 10, epsilon = 1, delta = 1e-7, eta = 0.01, k <= 6) used the
full UCI MSNBC file (989,818 users, paper Table 1); each sequence is a user.
"""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

import numpy as np

import dpgpu
from dpgpu.mechanisms.dpne import dpne

PAPER = [17, 254, 1273, 1954, 2221, 2020]
SPMF = "/work/shared/datasets/msnbc_spmf/MSNBC.txt.gz"


def main(runs: int = 5) -> None:
    """Run and write the results."""
    full = dpgpu.load(dpgpu.demo_path())
    counts, times = [], []
    for seed in range(runs):
        t = time.perf_counter()
        r = dpne(full, 1.0, 1e-7, max_n=6, contribution=10, eta=0.01, seed=seed)
        times.append(time.perf_counter() - t)
        counts.append(r.counts() + [0] * (6 - len(r.counts())))
    mean = np.mean(counts, axis=0)
    t = time.perf_counter()
    spmf = dpgpu.load(SPMF)
    rs = dpne(spmf, 1.0, 1e-7, max_n=5, contribution=10, eta=0.01, seed=0)
    spmf_s = time.perf_counter() - t
    out = {"machine": platform.processor() or platform.machine(), "backend": r.report["backend"],
           "device": r.report["device"],
           "table5": {"runs": runs, "per_k_mean": mean.tolist(), "total_mean": float(mean.sum()),
                      "paper": PAPER, "ratio": (mean / PAPER).tolist(),
                      "per_run": counts, "seconds_per_run": times},
           "spmf_k5": {"released": rs.counts(), "seconds_end_to_end": spmf_s,
                       "reference_seconds": 314},
           "calibration": r.report["calibration"]}
    res = Path(__file__).parent / "results"
    res.mkdir(exist_ok=True)
    name = f"dpne-{out['backend']}-cpu"
    (res / f"{name}.json").write_text(json.dumps(out, indent=2))
    md = ["| k | 1 | 2 | 3 | 4 | 5 | 6 | total |", "|---|---|---|---|---|---|---|---|",
          "| DPNE (dpgpu, mean of %d) | %s | %.0f |" % (runs, " | ".join(f"{x:.0f}" for x in mean),
                                                      mean.sum()),
          "| DPNE (paper) | %s | %d |" % (" | ".join(map(str, PAPER)), sum(PAPER)),
          "", f"Full MSNBC: {np.mean(times):.1f} s per run; MSNBC-SPMF k<=5 end to end "
          f"(load + release): {spmf_s:.2f} s (reference: 314 s). Backend {out['backend']}, "
          f"{out['machine']}."]
    (res / f"{name}.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
