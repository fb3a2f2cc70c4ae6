"""Benchmark: every mechanism on MSNBC with the Dask engine, against the local run.

The input is read by the workers (:func:`dpgpu.load_distributed`, from an
uncompressed copy of the file, which they split at line ends) and each
release is compared with the local one for the same seed: they must be
equal, file for file.  Measured, with a local cluster of ``--workers``
single-threaded worker processes:

* loading: a plain Python line parse, ``dpgpu.load`` and ``load_distributed``;
* each mechanism's release (N-gram, PST, PFS², DPNE), local and on Dask,
  after one warm-up of each (Numba compilation, worker imports).

On one small machine Dask adds scheduling and data movement to the same
work, so the ratios measure its overhead, not a speed-up; the point of the
engine is data that one machine cannot hold.  Results go to
``bench/results/dask-<backend>-cpu.{json,md}``.

Usage: ``python bench/bench_dask.py [--data FILE] [--workers 2] [--partitions P]``
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import platform
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import dpgpu
from bench_grams import naive_load
from dpgpu.scale.dask import close, connect
from paths import add_out_argument, results_dir


#: The releases compared: (name, function of (db, **engine) -> release, what must be equal).
RELEASES = [
    ("ngram", lambda db, **kw: dpgpu.ngram(db, 1.0, l_max=20, n_max=5, seed=11, **kw),
     lambda r: (r.ngrams(), list(r.synthetic))),
    ("pst", lambda db, **kw: dpgpu.pst(db, 1.0, l_top=20, seed=11, synthetic=False, **kw),
     lambda r: r.nodes()),
    ("pfs2", lambda db, **kw: dpgpu.pfs2(db, 1.0, 0.01, seed=11, **kw),
     lambda r: (r.patterns, r.supports.tolist())),
    ("dpne", lambda db, **kw: dpgpu.dpne(db, 1.0, 1e-7, max_n=5, contribution=10, seed=11,
                                         **kw),
     lambda r: [g.tolist() for g in r.levels]),
]


def cpu_name() -> str:
    """The CPU's model name (Linux), else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def timed(fn):
    """Wall time of one call, and its result."""
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def main() -> None:
    """Run the benchmark and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=dpgpu.demo_path())
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=None)
    add_out_argument(ap)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="dpgpu-bench-dask-"))
    try:
        plain = tmp / args.data.name.removesuffix(".gz")
        with gzip.open(args.data) if args.data.suffix == ".gz" else open(args.data, "rb") as f, \
                open(plain, "wb") as out:
            shutil.copyfileobj(f, out)
        t_start, client = timed(lambda: connect(n_workers=args.workers, quiet=True))
        try:
            rows = run(args, plain, client, t_start)
        finally:
            logging.getLogger("distributed").setLevel(logging.ERROR)  # shutdown chatter
            close(client)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    write(rows, results_dir(args))


def run(args: argparse.Namespace, plain: Path, client, t_start: float) -> dict:
    """Time loading and the releases; check every Dask release against the local one."""
    t_naive, _ = timed(lambda: naive_load(plain))
    t_local, db = timed(lambda: dpgpu.load(plain))
    t_dask, held = timed(lambda: dpgpu.load_distributed(plain, client,
                                                        partitions=args.partitions))
    result = {
        "benchmark": "every mechanism on MSNBC, local vs Dask engine",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "data": str(args.data), "sequences": len(db), "items": int(db.items.size),
        "workers": args.workers, "partitions": len(held.states), "backend": "numpy",
        "cores": len(os.sched_getaffinity(0)), "processor": cpu_name(),
        "python": platform.python_version(), "numpy": np.__version__,
        "dpgpu": dpgpu.__version__, "cluster_start_s": round(t_start, 3),
        "load": {"naive_s": round(t_naive, 3), "local_s": round(t_local, 3),
                 "dask_s": round(t_dask, 3)},
        "releases": {},
    }
    for name, release, view in RELEASES:
        release(db), release(held, engine="dask")  # warm-up
        t_l, local = timed(lambda: release(db))
        t_d, remote = timed(lambda: release(held, engine="dask"))
        assert view(remote) == view(local), f"{name}: the Dask release differs from the local one"
        result["releases"][name] = {"local_s": round(t_l, 3), "dask_s": round(t_d, 3),
                                    "equal": True}
        print(f"{name}: local {t_l:.2f} s, dask {t_d:.2f} s (equal)", flush=True)
    return result


def write(result: dict, folder: Path) -> None:
    """``dask-numpy-cpu.{json,md}`` in ``folder``."""
    stem = folder / "dask-numpy-cpu"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    load = result["load"]
    lines = [
        f"# Dask engine vs local on MSNBC ({result['date']})", "",
        f"{result['sequences']:,} sequences, {result['items']:,} items; a local cluster of "
        f"{result['workers']} single-threaded workers on a {result['cores']}-core CPU "
        f"({result['processor']}), numpy backend, {result['partitions']} "
        f"partitions; cluster start {result['cluster_start_s']} s (not counted below).", "",
        "| step | local (s) | Dask (s) | Dask / local |", "|---|---|---|---|",
        f"| load (naive Python parse: {load['naive_s']} s) | {load['local_s']} | "
        f"{load['dask_s']} | {load['dask_s'] / load['local_s']:.2f} |",
    ]
    for name, r in result["releases"].items():
        lines.append(f"| {name} release | {r['local_s']} | {r['dask_s']} | "
                     f"{r['dask_s'] / r['local_s']:.2f} |")
    lines += ["", "Every Dask release equals the local one for the same seed (checked). "
              "The workers read the uncompressed file themselves; the client holds only "
              "labels, counts and the noise."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
