"""Scaling curves: time and peak memory against dataset size, with a fitted exponent.

For generated datasets (``dpgpu.data.generate.markov_sequences``: a
variable-order Markov chain over a Zipf alphabet of 100 items, mean length 8;
``markov_chunks`` in chunks of 1e8 above that size)
of 1e6 .. ``--max-tokens`` items, measures

* counting all n-grams n <= 5 of each sequence's first 20 items
  (``GramEngine``), and
* the whole release of each mechanism up to ``--release-max-tokens``
  (:data:`RELEASES`: N-gram, PST, PFS², DPNE with each sequence its own user),

and fits ``time ~ tokens**b`` on a log-log scale (b near 1: linear).  At the
smallest size the naive Python ``Counter`` loop runs too, for the ratio.
Spatial PrivTree works on points, not sequences; its time is in
``bench_privtree.py``.  Results: ``bench/results/scaling-<backend>.{json,md,png}``.

Usage: ``python bench/bench_scaling.py [--max-tokens 1e8] [--release-max-tokens 3e7]
[--mechanisms ngram,pst,pfs2,dpne] [--backend numpy|cupy] [--tag NAME]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import dpgpu
from dpgpu import SequenceDB
from dpgpu.backend import get_backend
from dpgpu.data.generate import markov_chunks, markov_sequences
from dpgpu.ops.grams import GramEngine
from naive import naive_seconds
from paths import add_out_argument, results_dir


#: The releases measured, each with the parameters its paper's MSNBC runs use.
RELEASES = {
    "ngram": lambda db, be: dpgpu.ngram(db, 1.0, l_max=20, n_max=5, seed=1, backend=be),
    "pst": lambda db, be: dpgpu.pst(db, 1.0, l_top=20, seed=1, backend=be),
    "pfs2": lambda db, be: dpgpu.pfs2(db, 1.0, 0.01, seed=1, backend=be),
    "dpne": lambda db, be: dpgpu.dpne(db, 1.0, 1e-7, max_n=5, seed=1, backend=be),
}
RELEASE_PARAMETERS = ("epsilon 1, seed 1; N-gram l_max 20, n_max 5; PST l_top 20; PFS² threshold "
                      "0.01; DPNE delta 1e-7, max_n 5")
#: How the tables and plots name them.
NAMES = {"ngram": "N-gram", "pst": "PST", "pfs2": "PFS²", "dpne": "DPNE"}


def timed(fn, be):
    """(seconds, peak bytes) of one call.

    Peak bytes are the host bytes traced plus, on a GPU, what CuPy's memory
    pool grew to (the pool keeps what it allocated, so its total is the peak).
    """
    pool = be.xp.get_default_memory_pool() if be.is_gpu else None
    if pool is not None:
        pool.free_all_blocks()
    tracemalloc.start()
    t0 = time.perf_counter()
    fn()
    be.synchronize()
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1] + (pool.total_bytes() if pool is not None else 0)
    tracemalloc.stop()
    return seconds, peak


#: Corpora above this size are generated in chunks of it, in parallel.
CHUNK = 100_000_000


def corpus(size: int, seed: int) -> SequenceDB:
    """The dataset ``markov_chunks(size, seed=seed, chunk_tokens=CHUNK)`` as one database:
    ``markov_sequences(size, seed=seed)`` up to :data:`CHUNK` tokens, above it chunks
    generated in worker processes (the generator is serial NumPy; 1e9 tokens take
    minutes in one process)."""
    parts = list(markov_chunks(size, seed=seed, chunk_tokens=CHUNK, jobs=os.cpu_count() or 1))
    if len(parts) == 1:
        return parts[0]
    shifts = np.cumsum([0] + [part.items.size for part in parts[:-1]])
    offsets = np.concatenate([[0]] + [part.offsets[1:] + shift
                                      for part, shift in zip(parts, shifts)])
    return SequenceDB(np.concatenate([part.items for part in parts]), offsets, parts[0].vocab,
                      source=parts[0].source)


def main() -> None:
    """Measure, fit, write."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None)
    ap.add_argument("--max-tokens", type=float, default=1e8)
    ap.add_argument("--release-max-tokens", type=float, default=3e7,
                    help="largest size for the mechanisms' releases")
    ap.add_argument("--mechanisms", default=",".join(RELEASES),
                    help=f"releases to time (default {','.join(RELEASES)})")
    ap.add_argument("--tag", default="",
                    help="suffix of the results' name (scaling-<backend>-<tag>), so that a run "
                         "of some mechanisms or sizes keeps the recorded ones")
    add_out_argument(ap)
    args = ap.parse_args()
    be = get_backend(args.backend)
    mechanisms = [m for m in args.mechanisms.split(",") if m]
    unknown = set(mechanisms) - set(RELEASES)
    if unknown:
        ap.error(f"--mechanisms: unknown {sorted(unknown)}; choose from {','.join(RELEASES)}")
    sizes = [int(s) for s in (1e6, 3e6, 1e7, 3e7, 1e8, 3e8, 1e9) if s <= args.max_tokens]
    warm = markov_sequences(20_000, seed=0)  # compile and cache everything once
    for name in mechanisms:
        RELEASES[name](warm, be)
    rows = []
    for size in sizes:
        db = corpus(size, seed=size)
        count_s, count_mem = timed(lambda: [GramEngine(db, 20, backend=be).count(n)
                                            for n in range(1, 6)], be)
        row = {"tokens": db.n_events, "sequences": len(db), "count_s": round(count_s, 3),
               "count_peak_mib": round(count_mem / 2 ** 20, 1)}
        for name in mechanisms if size <= args.release_max_tokens else []:
            rel_s, rel_mem = timed(lambda: RELEASES[name](db, be), be)
            row.update({f"{name}_s": round(rel_s, 3),
                        f"{name}_peak_mib": round(rel_mem / 2 ** 20, 1)})
        if size == sizes[0]:
            row["naive_count_s"] = round(naive_seconds(db), 3)
            row["count_speedup"] = round(row["naive_count_s"] / count_s, 1)
        print(row, flush=True)
        rows.append(row)

    def exponent(key):
        pts = [(r["tokens"], r[key]) for r in rows if key in r]
        if len(pts) < 2:
            return None
        x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
        return round(float(np.polyfit(x, y, 1)[0]), 3)

    out = {"benchmark": "scaling", "backend": be.name, "device": be.device_name(),
           "machine": platform.machine(), "processor": platform.processor() or platform.machine(),
           "python": platform.python_version(), "dpgpu": dpgpu.__version__,
           "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "workload": "markov_sequences(n, seed=n, n_items=100, max_order=3, zipf=1.1, "
                       f"mean_length=8); above {CHUNK:.0e} tokens, markov_chunks(n, seed=n, "
                       f"chunk_tokens={CHUNK:.0e})",
           "mechanisms": mechanisms, "rows": rows,
           "fitted_exponent": {"count": exponent("count_s"),
                               **{name: exponent(f"{name}_s") for name in mechanisms}}}
    path = results_dir(args) / f"scaling-{be.name}{'-' + args.tag if args.tag else ''}.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    fits = ", ".join(f"{NAMES[m]} release {out['fitted_exponent'][m]}" for m in mechanisms)
    lines = [f"# Scaling ({be.name}, {be.device_name()}, {out['processor']})\n",
             f"Workload: {out['workload']}. Releases: {RELEASE_PARAMETERS}. Fitted exponent of "
             f"time vs tokens: counting {out['fitted_exponent']['count']}"
             f"{', ' + fits if fits else ''} (1 = linear).\n",
             "| tokens | sequences | count n<=5 (s) | peak MiB | "
             + " | ".join(f"{NAMES[m]} (s) | peak MiB" for m in mechanisms) + " |",
             "|---:|---:|---:|---:|" + "---:|---:|" * len(mechanisms)]
    lines += [f"| {r['tokens']:,} | {r['sequences']:,} | {r['count_s']} | {r['count_peak_mib']} | "
              + " | ".join(f"{r.get(m + '_s', '-')} | {r.get(m + '_peak_mib', '-')}"
                           for m in mechanisms) + " |" for r in rows]
    first = rows[0]
    lines.append(f"\nNaive Python Counter at {first['tokens']:,} tokens: "
                 f"{first['naive_count_s']} s ({first['count_speedup']}x slower than dpgpu).\n")
    path.with_suffix(".md").write_text("\n".join(lines))
    _plot(out, path.with_suffix(".png"))
    print(f"written to {path} (.md, .png)")


def _plot(out: dict, path: Path) -> None:
    import matplotlib  # noqa: PLC0415 - optional dependency (extra "plot")

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6, 4))
    for key, label in [("count", "count n<=5")] + [(m, f"{NAMES[m]} release")
                                                   for m in out["mechanisms"]]:
        pts = [(r["tokens"], r[f"{key}_s"]) for r in out["rows"] if f"{key}_s" in r]
        ax.loglog([p[0] for p in pts], [p[1] for p in pts], "o-",
                  label=f"{label} (exponent {out['fitted_exponent'][key]})")
    ax.set(xlabel="tokens", ylabel="seconds", title=f"dpgpu scaling ({out['backend']})")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
