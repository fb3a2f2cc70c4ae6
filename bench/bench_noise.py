"""Benchmark the privacy core's noise: 1,000,000 draws per sampler and scale.

Prints, per backend, the best of ``--repeat`` timings for discrete Laplace and
discrete Gaussian draws and for the raw ChaCha20 words, and the ratio against
a naive pure-Python sampler (one draw at a time: the same digit tables, words
from the operating system's CSPRNG via ``secrets.randbits`` and ``bisect``),
timed on fewer draws and scaled up, and writes them to
``noise-<backends>.{json,md}``.  Timings are never asserted in tests; run this by hand::

    python bench/bench_noise.py [--n 1000000] [--repeat 3] [--backend numpy|cupy] [--out DIR]
"""

from __future__ import annotations

import argparse
import bisect
import json
import platform
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import dpgpu
from dpgpu.backend import get_backend, gpu_available
from dpgpu.privacy import DiscreteGaussian, DiscreteLaplace, NoiseKey
from paths import add_out_argument, results_dir

LAPLACE_SCALES = (0.5, 2.0, 50.0, 1e4, 1e9)
GAUSSIAN_SIGMAS = (0.5, 50.0, 1e4)


def best_time(fn, repeat: int, backend) -> float:
    """Best wall time of ``fn()`` over ``repeat`` runs after one warm-up run."""
    fn()
    backend.synchronize()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        backend.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def naive_laplace(sampler: DiscreteLaplace, n: int) -> list[int]:
    """One draw at a time in pure Python (same tables, no vectorisation)."""
    blocks = [(shift, [int(t) for t in table.thresholds], table.pad)
              for shift, table in sampler._blocks]
    out = []
    for _ in range(n):
        g = [0, 0]
        for side in (0, 1):
            for shift, thresholds, pad in blocks:
                g[side] += (bisect.bisect_right(thresholds, secrets.randbits(64)) - pad) << shift
        out.append(g[0] - g[1])
    return out


def time_backend(be, key: NoiseKey, n: int, repeat: int, naive_n: int) -> list[dict]:
    """One row per timing on backend ``be``: ChaCha20 words, discrete Laplace (with the naive
    sampler's time scaled to ``n`` draws), discrete Gaussian."""
    ids = be.xp.arange(n, dtype=be.xp.int64)
    rows = []
    for n_words in (1, 8):
        t = best_time(lambda: key.words(ids, 0, n_words, backend=be), repeat, be)
        rows.append({"what": f"chacha20 words x{n_words}", "seconds": t,
                     "m_words_per_s": round(n * n_words / t / 1e6, 1)})
    for scale in LAPLACE_SCALES:
        sampler = DiscreteLaplace(scale)
        t = best_time(lambda: sampler.sample(key, ids, tag=0, backend=be), repeat, be)
        start = time.perf_counter()
        naive_laplace(sampler, naive_n)
        naive = (time.perf_counter() - start) * n / naive_n
        rows.append({"what": f"discrete laplace {scale:g}", "seconds": t,
                     "words_per_draw": sampler.n_words, "naive_python_s": round(naive, 2),
                     "speedup": round(naive / t)})
    for sigma in GAUSSIAN_SIGMAS:
        sampler = DiscreteGaussian(sigma)
        t = best_time(lambda: sampler.sample(key, ids, tag=0, backend=be), repeat, be)
        rows.append({"what": f"discrete gaussian {sigma:g}", "seconds": t})
    for row in rows:
        row["seconds"] = round(row["seconds"], 4)
        print("  " + "  ".join(f"{k} {v}" for k, v in row.items()), flush=True)
    return rows


def main() -> None:
    """Time every backend asked for and write ``noise-<backends>.{json,md}``."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="draws per timing")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--naive-n", type=int, default=20_000,
                        help="draws for the pure-Python baseline (scaled to --n)")
    parser.add_argument("--backend", choices=("numpy", "cupy"), action="append",
                        help="backends to time (default: numpy, and cupy when usable)")
    add_out_argument(parser)
    args = parser.parse_args()
    names = args.backend or (["numpy", "cupy"] if gpu_available() else ["numpy"])
    key = NoiseKey.fresh()
    result = {"benchmark": "noise", "draws": args.n, "repeat": args.repeat,
              "naive_draws": args.naive_n, "processor": platform.processor() or platform.machine(),
              "python": platform.python_version(), "numpy": np.__version__,
              "dpgpu": dpgpu.__version__,
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "backends": {}}
    print(f"{args.n:,} draws, best of {args.repeat}; naive baseline: {args.naive_n:,} "
          f"pure-Python draws scaled to {args.n:,}")
    for name in names:
        be = get_backend(name)
        print(f"\nbackend {be.name} ({be.device_name()})")
        result["backends"][be.name] = {"device": be.device_name(),
                                       "rows": time_backend(be, key, args.n, args.repeat,
                                                            args.naive_n)}
    write(result, results_dir(args))


def write(result: dict, folder: Path) -> None:
    """``noise-<backends>.json`` and its Markdown table in ``folder``."""
    stem = folder / ("noise-" + "-".join(result["backends"]))
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# Noise samplers, {result['draws']:,} draws, best of {result['repeat']}", "",
             f"{result['date']}, {result['processor']}, Python {result['python']}, NumPy "
             f"{result['numpy']}. Naive: one draw at a time in pure Python with the same digit "
             f"tables and words from `secrets.randbits`, timed on {result['naive_draws']:,} "
             "draws and scaled.", "",
             "| backend (device) | what | seconds | M words/s | words/draw | naive Python s "
             "| speedup |", "|---|---|---:|---:|---:|---:|---:|"]
    for name, entry in result["backends"].items():
        lines += [f"| {name} ({entry['device']}) | {r['what']} | {r['seconds']} | "
                  f"{r.get('m_words_per_s', '')} | {r.get('words_per_draw', '')} | "
                  f"{r.get('naive_python_s', '')} | "
                  f"{str(r['speedup']) + 'x' if 'speedup' in r else ''} |" for r in entry["rows"]]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"written to {stem}.json and .md")


if __name__ == "__main__":
    main()
