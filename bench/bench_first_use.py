"""First use on a fresh GPU machine: how long the first release waits for kernel compiling.

CuPy compiles each kernel (dpgpu's own in ``kernels/`` and CuPy's element-wise
and reduction kernels, one per dtype combination) with NVRTC the first time a
process on the machine needs it, and keeps the result in its kernel cache
(``~/.cupy/kernel_cache``, or ``CUPY_CACHE_DIR``).  A fresh cloud container
starts with an empty cache, so its first release of each mechanism pays for
the compiling.

For each mechanism, each case runs in a fresh Python process on the bundled
MSNBC data (spatial PrivTree on 1e6 generated points) and times ``import
dpgpu``, the first release (seed 1) and a second one (seed 2, same process):

* ``cold``: an empty kernel cache;
* ``cold-pch``: an empty cache with ``CUPY_NVRTC_USE_PCH=1`` (NVRTC's
  precompiled headers, CUDA 12.8 or later);
* ``warm``: the cache the ``cold`` case filled, as a second run of a program
  on the same machine sees it.

The baseline is the same first release on the NumPy backend in a fresh
process.  The number of kernels a case compiled is the number of binaries it
added to the cache.  Results: ``bench/results/first-use-cupy-<device>.{json,md}``.

Usage: ``python bench/bench_first_use.py [--only ngram pst]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from paths import add_out_argument, results_dir

MECHANISMS = ("ngram", "pst", "pfs2", "dpne", "privtree_spatial")

#: The child: one mechanism's two releases in a fresh process; prints one JSON line.
CHILD = """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import dpgpu
from dpgpu.backend import get_backend
be = get_backend(sys.argv[2])
be.synchronize()
t_import = time.perf_counter() - t0
name = sys.argv[1]
if name == "privtree_spatial":
    rng = np.random.default_rng(0)
    data = np.clip(np.concatenate([rng.normal(0.4, 0.02, (500_000, 2)),
                                   rng.random((500_000, 2))]), 0, 1)
    run = lambda s: dpgpu.privtree_spatial(data, 1.0, seed=s, backend=be, bounds=[[0, 1], [0, 1]])
else:
    data = dpgpu.load(dpgpu.demo_path())
    run = {"ngram": lambda s: dpgpu.ngram(data, 1.0, seed=s, backend=be),
           "pst": lambda s: dpgpu.pst(data, 1.0, seed=s, backend=be),
           "pfs2": lambda s: dpgpu.pfs2(data, 1.0, 0.01, seed=s, backend=be),
           "dpne": lambda s: dpgpu.dpne(data, 1.0, 1e-7, max_n=6, contribution=10, seed=s,
                                        backend=be)}[name]
times = []
for seed in (1, 2):
    t0 = time.perf_counter()
    run(seed)
    be.synchronize()
    times.append(time.perf_counter() - t0)
print(json.dumps({"import_s": t_import, "first_s": times[0], "second_s": times[1]}))
"""


def cached_binaries(folder: Path) -> int:
    """Kernel binaries in a CuPy cache folder (its files other than saved sources)."""
    return sum(1 for p in folder.rglob("*") if p.is_file() and p.suffix != ".cu")


def child(name: str, backend: str, env: dict) -> dict:
    """Run one mechanism's releases in a fresh process; its timings, rounded."""
    out = subprocess.run([sys.executable, "-c", CHILD, name, backend], env=env, check=True,
                         capture_output=True, text=True, timeout=600)
    timings = json.loads(out.stdout.strip().splitlines()[-1])
    return {k: round(v, 3) for k, v in timings.items()}


def measure(name: str, scratch: Path) -> dict:
    """The three GPU cases and the NumPy baseline of one mechanism."""
    base = {k: v for k, v in os.environ.items() if k not in ("CUPY_NVRTC_USE_PCH",)}
    row = {"mechanism": name, "numpy": child(name, "numpy", base)}
    for case, pch, cache in (("cold", False, "plain"), ("cold-pch", True, "pch"),
                             ("warm", False, "plain")):
        folder = scratch / f"{name}-{cache}"
        before = cached_binaries(folder) if folder.exists() else 0
        env = dict(base, CUPY_CACHE_DIR=str(folder), CUPY_CACHE_SAVE_CUDA_SOURCE="1")
        if pch:
            env["CUPY_NVRTC_USE_PCH"] = "1"
        row[case] = child(name, "cupy", env)
        row[case]["compiled"] = cached_binaries(folder) - before
        print(name, case, row[case], flush=True)
    row["kernels"] = kernel_names(scratch / f"{name}-plain")
    return row


def kernel_names(folder: Path) -> list[str]:
    """The kernels whose sources CuPy saved in a cache folder (``CUPY_CACHE_SAVE_CUDA_SOURCE``)."""
    names = set()
    for source in folder.rglob("*.cu"):
        names.update(re.findall(r"__global__\s+void\s+(\w+)", source.read_text(errors="replace")))
    return sorted(names)


def write(result: dict, folder: Path) -> Path:
    """The JSON and a markdown table in ``folder``; return the JSON path."""
    stem = f"first-use-cupy-{result['device'].replace(' ', '_')}"
    path = folder / f"{stem}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# First use on a fresh machine: {result['device']}, {result['date']}", "",
             "Each case a fresh process; times in seconds; `compiled` = kernels NVRTC "
             "compiled (binaries added to the CuPy kernel cache). `first` is the first "
             "release (seed 1), `second` another (seed 2) in the same process.", "",
             "| mechanism | numpy first | cold first | cold second | compiled | "
             "cold-pch first | compiled | warm first | warm second | import (cold) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["rows"]:
        lines.append(f"| {r['mechanism']} | {r['numpy']['first_s']} | {r['cold']['first_s']} | "
                     f"{r['cold']['second_s']} | {r['cold']['compiled']} | "
                     f"{r['cold-pch']['first_s']} | {r['cold-pch']['compiled']} | "
                     f"{r['warm']['first_s']} | {r['warm']['second_s']} | "
                     f"{r['cold']['import_s']} |")
    lines += ["", "Kernels compiled on first use (the `cold` case):", ""]
    lines += [f"- {r['mechanism']}: " + ", ".join(f"`{k}`" for k in r["kernels"])
              for r in result["rows"]]
    lines += ["", "Versions: " + ", ".join(f"{k} {result[k]}" for k in
                                           ("python", "numpy", "cupy", "cuda_runtime", "dpgpu"))]
    (folder / f"{stem}.md").write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    """Measure every mechanism and write the results."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=MECHANISMS, help="mechanisms (default: all)")
    add_out_argument(ap)
    args = ap.parse_args()
    import platform  # noqa: PLC0415

    import cupy  # noqa: PLC0415 - this benchmark needs a GPU
    import numpy  # noqa: PLC0415

    import dpgpu  # noqa: PLC0415
    from dpgpu.backend import get_backend  # noqa: PLC0415

    be = get_backend("cupy")
    result = {"benchmark": "first use", "device": be.device_name(),
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "python": platform.python_version(), "numpy": numpy.__version__,
              "cupy": cupy.__version__, "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
              "dpgpu": dpgpu.__version__}
    result["rows"] = []
    with tempfile.TemporaryDirectory(prefix="dpgpu-first-use-") as scratch:
        for name in args.only or MECHANISMS:  # written after each, so a cut run keeps its rows
            result["rows"].append(measure(name, Path(scratch)))
            path = write(result, results_dir(args))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
