"""Benchmark: loading MSNBC and counting its n-grams, against naive Python in the same run.

Measures, on the full MSNBC file (989,818 sequences):

* load: ``dpgpu.load`` (vectorized parse) vs. a plain Python line-by-line parse;
* grams: all contiguous n-grams, n = 1..5, of each sequence's first 20 items,
  with :meth:`dpgpu.ops.grams.GramEngine.count_levels` (level 5 counted, the shorter
  levels derived from it) vs. a ``collections.Counter`` loop.

Both sides produce the same result (checked), ratios are printed and written
with absolute times, backend and device to ``bench/results/``.  On a GPU run
it with ``--backend cupy`` (device times include a synchronize).

Usage: ``python bench/bench_grams.py [--backend numpy|cupy] [--data FILE] [--repeat K]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import dpgpu
from dpgpu.backend import get_backend, to_numpy
from dpgpu.ops.grams import GramEngine
from naive import naive_grams
from paths import add_out_argument, results_dir



def naive_load(path: Path) -> list[list[int]]:
    """Parse a UCI .seq file (gzip or plain) line by line in plain Python."""
    with (gzip.open if path.suffix == ".gz" else open)(path, "rt") as f:
        lines = f.read().splitlines()
    start = lines.index("% Sequences:") + 2
    return [[int(t) for t in line.split()] for line in lines[start:] if line.strip()]


def best_of(fn, repeat: int, sync=lambda: None):
    """Smallest wall time of ``repeat`` calls, and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best, result


def main() -> None:
    """Run the benchmark and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None)
    ap.add_argument("--data", type=Path, default=dpgpu.demo_path())
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-max", type=int, default=5)
    ap.add_argument("--l-max", type=int, default=20)
    add_out_argument(ap)
    args = ap.parse_args()
    be = get_backend(args.backend)

    t_naive_load, rows = best_of(lambda: naive_load(args.data), 1)
    t_load, db = best_of(lambda: dpgpu.load(args.data), args.repeat)

    def engine_counts():
        return GramEngine(db, args.l_max, backend=be).count_levels(args.n_max)

    t_naive_grams, naive = best_of(lambda: naive_grams(rows, args.n_max, args.l_max), 1)
    engine_counts()  # warm-up (CuPy kernel compilation, caches)
    t_grams, ours = best_of(engine_counts, args.repeat, be.synchronize)
    labels = [int(x) for x in db.vocab.labels]
    for n, ((grams, counts), expect) in enumerate(zip(ours, naive), start=1):
        got = {tuple(labels[i] for i in g): c for g, c in
               zip(to_numpy(grams).tolist(), to_numpy(counts).tolist())}
        assert got == dict(expect), f"{n}-gram counts differ from the naive baseline"

    result = {
        "benchmark": "msnbc load + n-gram counting",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "data": str(args.data), "sequences": len(db), "n_max": args.n_max, "l_max": args.l_max,
        "backend": be.name, "device": be.device_name(), "machine": platform.machine(),
        "processor": platform.processor(), "python": platform.python_version(),
        "dpgpu": dpgpu.__version__,
        "load_s": round(t_load, 4), "naive_load_s": round(t_naive_load, 4),
        "load_speedup": round(t_naive_load / t_load, 1),
        "grams_s": round(t_grams, 4), "naive_grams_s": round(t_naive_grams, 4),
        "grams_speedup": round(t_naive_grams / t_grams, 1),
    }
    print(json.dumps(result, indent=2))
    out = results_dir(args) / f"grams-{be.name}-{be.device_name().replace(' ', '_')}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
