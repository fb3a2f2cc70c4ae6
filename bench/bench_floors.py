"""Hot operations against their hardware floors, and the MSNBC release time.

For counting all n-grams, n = 1..5, of a generated corpus (default 1e8
tokens; ``dpgpu.data.generate.markov_sequences``) with
:class:`dpgpu.ops.grams.GramEngine`, reports per level

* the measured time (after a warm-up on a small corpus, with a device
  synchronize; the padded blocks are built and copied to the device first
  and their time reported apart),
* the **bandwidth floor**: the bytes no algorithm can avoid moving -- the
  int32 tokens read once (4 B per token) and each distinct gram written once
  with its count (4n + 8 B) -- divided by the device-to-device copy bandwidth
  measured in the same run,
* the **operations floor**: one multiply-add per token to form the key,
  divided by the nominal INT32 rate (multiprocessors x clock x 64 lanes on a
  GPU; cores x clock x 8 on the CPU, an AVX2 estimate),

and the ratio of measured time to the larger floor, and, for scale, the time of
the naive Python ``Counter`` loop (:mod:`naive`) on the corpus's first
``--naive-tokens`` tokens scaled up to the whole corpus.  It then times all
levels at once (:meth:`GramEngine.count_levels`: the longest level counted
from the windows, the shorter ones derived from it), against the summed
per-level floors and against the floor of the joint job (tokens read once,
every level's grams written once).  On a GPU it also
reports, from a separate pass with CUDA events around each launch, the
device time of dpgpu's own kernels (``cuda.launch``: counting, read-out
and unpacking), their number and the work items they covered (windows,
padding included, plus 32 lanes per read-out chunk and one per distinct
gram unpacked): the rest of a level's time is host work, CuPy's library
calls (allocation, the cumulative sum of the read-out, the sort of the hash
path) and gaps between launches, which tells whether a level is bound by
the kernels or by what surrounds them.  And it times every level once more
on the sort path (``sort_s``: packed keys, ``unique``, no counting kernel).
It also times the whole N-gram release (epsilon 1, l_max 20, n_max 5) on
the bundled MSNBC file on this backend and, once, on NumPy for the ratio.  Results, with the device
name and versions: ``bench/results/floors-<backend>-<device>.{json,md}``.

Usage: ``python bench/bench_floors.py [--backend cupy] [--tokens 1e8] [--out DIR]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

import dpgpu
from dpgpu.backend import cuda, get_backend
from dpgpu.data.generate import markov_sequences
from dpgpu.mechanisms.ngram import ngram
from dpgpu.ops.grams import GramEngine
from naive import naive_seconds
from paths import add_out_argument, results_dir



def seconds(fn, be, repeat: int = 1) -> float:
    """Best wall time of ``repeat`` calls of ``fn``, device work included."""
    best = float("inf")
    for _ in range(repeat):
        be.synchronize()
        t0 = time.perf_counter()
        fn()
        be.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def copy_bandwidth(be) -> float:
    """Bytes per second of a large array copy (bytes read plus bytes written)."""
    xp = be.xp
    n = 2 ** 28 if be.is_gpu else 2 ** 26
    src = xp.ones(n, dtype=xp.int64)
    dst = xp.empty_like(src)
    t = seconds(lambda: xp.copyto(dst, src), be, repeat=5)
    return 2 * src.nbytes / t


def peak_int_ops(be) -> float:
    """Nominal INT32 multiply-adds per second (see the module docstring)."""
    if be.is_gpu:
        rt = be.xp.cuda.runtime
        props = rt.getDeviceProperties(be.xp.cuda.Device().id)
        sms = props["multiProcessorCount"]
        try:
            clock_khz = rt.deviceGetAttribute(rt.cudaDevAttrClockRate, be.xp.cuda.Device().id)
        except AttributeError:  # attribute enum not exposed: property field
            clock_khz = props["clockRate"]
        return sms * clock_khz * 1e3 * 64
    return (os.cpu_count() or 1) * 3e9 * 8


class KernelTimer:
    """Device time of every ``cuda.launch`` made inside the ``with`` block (GPU only).

    Wraps :func:`dpgpu.backend.cuda.launch` so that CUDA events are recorded
    just before and after each launch; ``seconds`` sums their intervals.
    """

    def __init__(self, be):
        self.cp, self.events, self.items = be.xp, [], 0

    def __enter__(self) -> "KernelTimer":
        self._launch = cuda.launch

        def timed_launch(kernel, n_items, args, **options):
            start, end = self.cp.cuda.Event(), self.cp.cuda.Event()
            start.record()
            self._launch(kernel, n_items, args, **options)
            end.record()
            self.events.append((start, end))
            self.items += n_items

        cuda.launch = timed_launch
        return self

    def __exit__(self, *exc) -> None:
        cuda.launch = self._launch
        self.cp.cuda.Device().synchronize()

    @property
    def seconds(self) -> float:
        return sum(self.cp.cuda.get_elapsed_time(s, e) for s, e in self.events) / 1e3


def count_levels(db, be, n_max: int, bandwidth: float, peak: float,
                 repeat: int = 1) -> tuple[list[dict], float]:
    """Time each level's count and compare it with its floors.

    The padded blocks are built (and, on a GPU, copied to the device) first
    and timed apart: the floors are about counting data already in memory.
    Returns the level rows and the seconds the blocks took.
    """
    engine = GramEngine(db, None, backend=be)
    t_blocks = seconds(lambda: engine.blocks, be)
    print(f"padded blocks built in {t_blocks:.3f} s", flush=True)
    rows = []
    for n in range(1, n_max + 1):
        out = {}
        t = seconds(lambda: out.setdefault("r", engine.count(n)), be, repeat)
        distinct = int(out["r"][1].shape[0])
        floor_bytes = 4 * db.n_events + (4 * n + 8) * distinct
        t_bw, t_ops = floor_bytes / bandwidth, db.n_events / peak
        rows.append({"n": n, "distinct": distinct, "seconds": round(t, 5),
                     "bandwidth_floor_s": round(t_bw, 6), "ops_floor_s": round(t_ops, 6),
                     "x_floor": round(t / max(t_bw, t_ops), 1)})
        if be.is_gpu:
            with KernelTimer(be) as timer:
                engine.count(n)
            rows[-1].update(kernel_s=round(timer.seconds, 5), launches=len(timer.events),
                            work_items=timer.items)
        print(rows[-1], flush=True)
    return rows, t_blocks


def count_all_levels(db, be, n_max: int, bandwidth: float, rows: list[dict],
                     repeat: int = 1) -> dict:
    """Time :meth:`GramEngine.count_levels` and compare it with both floors.

    Each level's result is checked against the per-level count's size
    first.  ``x_summed_floors`` uses the per-level floors of ``rows`` (each
    level reads the tokens); ``x_joint_floor`` the joint job's floor.
    """
    engine = GramEngine(db, None, backend=be)
    engine.blocks  # noqa: B018 - built before timing, as for the levels
    out = {}
    t = seconds(lambda: out.setdefault("r", engine.count_levels(n_max)), be, repeat)
    assert [int(c.shape[0]) for _, c in out["r"]] == [r["distinct"] for r in rows]
    summed = sum(max(r["bandwidth_floor_s"], r["ops_floor_s"]) for r in rows)
    joint = (4 * db.n_events + sum((4 * r["n"] + 8) * r["distinct"] for r in rows)) / bandwidth
    result = {"seconds": round(t, 5), "joint_floor_s": round(joint, 6),
              "x_summed_floors": round(t / summed, 1), "x_joint_floor": round(t / joint, 1)}
    if be.is_gpu:
        with KernelTimer(be) as timer:
            engine.count_levels(n_max)
        result.update(kernel_s=round(timer.seconds, 5), launches=len(timer.events))
    print({"count_levels": result}, flush=True)
    return result


@contextlib.contextmanager
def sort_path():
    """Make :meth:`GramEngine.count` skip its dense and hash kernels: the sort path."""
    counting = GramEngine._count_gpu
    GramEngine._count_gpu = lambda self, n: None
    try:
        yield
    finally:
        GramEngine._count_gpu = counting


def sort_levels(db, be, rows: list[dict]) -> None:
    """Add to each level row the time of the sort path (``sort_s``), levels in order.

    The alternative to the counting kernels: the valid windows' packed keys,
    ``unique`` (a radix sort on a GPU) and a merge.  Each level's result is
    checked against the kernels' first.
    """
    engine = GramEngine(db, None, backend=be)
    engine.blocks  # noqa: B018 - built before timing, as for the kernels
    with sort_path():
        for row in rows:
            n, out = row["n"], {}
            row["sort_s"] = round(seconds(lambda: out.setdefault("r", engine.count(n)), be), 5)
            row["sort_distinct"] = int(out["r"][1].shape[0])
            print({"n": n, "sort_s": row["sort_s"]}, flush=True)


def release_seconds(db, be, repeat: int) -> float:
    """Best time of the full default N-gram release on ``db``."""
    return seconds(lambda: ngram(db, 1.0, seed=1, backend=be), be, repeat)


def device_facts(be) -> dict:
    facts = {"backend": be.name, "device": be.device_name(), "machine": platform.machine(),
             "python": platform.python_version(), "numpy": np.__version__,
             "dpgpu": dpgpu.__version__, "cpu_count": os.cpu_count()}
    if be.is_gpu:
        cp = be.xp
        facts.update(cupy=cp.__version__, cuda_runtime=cp.cuda.runtime.runtimeGetVersion(),
                     cuda_driver=cp.cuda.runtime.driverGetVersion())
    return facts


def write(result: dict, folder: Path) -> Path:
    """Write the JSON and a markdown table into ``folder``; return the JSON path."""
    stem = f"floors-{result['backend']}-{result['device'].replace(' ', '_')}"
    path = folder / f"{stem}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# Hot-op floors on {result['device']} ({result['backend']}), {result['date']}",
             "", f"Corpus: {result['tokens']:,} tokens, {result['sequences']:,} sequences "
             f"(markov_sequences, seed 1). Copy bandwidth measured: "
             f"{result['bandwidth_GBps']:.0f} GB/s; nominal INT32 rate "
             f"{result['peak_int_ops'] / 1e12:.3g} Tops/s.", "",
             "| n | distinct grams | time (s) | bandwidth floor (s) | ops floor (s) | x floor "
             "| own kernels (s) | launches | work items | sort path (s) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['n']} | {r['distinct']:,} | {r['seconds']} | {r['bandwidth_floor_s']} | "
              f"{r['ops_floor_s']} | {r['x_floor']} | {r.get('kernel_s', '-')} | "
              f"{r.get('launches', '-')} | "
              f"{format(r['work_items'], ',') if 'work_items' in r else '-'} | "
              f"{r.get('sort_s', '-')} |"
              for r in result["levels"]]
    joint = result["count_levels"]
    lines += ["", f"All levels, one by one: {result['count_total_s']} s, "
              f"{result['count_x_floor']}x the summed floors.  All levels at once "
              f"(`count_levels`): {joint['seconds']} s, {joint['x_summed_floors']}x the summed "
              f"floors and {joint['x_joint_floor']}x the joint job's floor "
              f"({joint['joint_floor_s']} s: tokens read once, every level written once)"
              + (f"; own kernels {joint['kernel_s']} s in {joint['launches']} launches"
                 if "kernel_s" in joint else "")
              + f".  Building the padded blocks on the device (host to "
              f"device copy included) took {result['blocks_s']} s more, once.", "",
              f"Naive Python (a `Counter` loop over every window, bench/naive.py) on the "
              f"first {result['naive_tokens']:,} tokens, scaled to the corpus: "
              f"{result['naive_python_s']} s, {result['naive_x']}x the one-by-one levels' "
              f"time.", "",
              f"Full N-gram release on MSNBC (989,818 sequences; epsilon 1, l_max 20, "
              f"n_max 5): {result['msnbc_release_s']} s on {result['backend']}, "
              f"{result['msnbc_release_numpy_s']} s on numpy in the same run "
              f"({result['msnbc_speedup']}x).", "",
              "Versions: " + ", ".join(f"{k} {result[k]}" for k in
                                      ("python", "numpy", "cupy", "cuda_runtime", "dpgpu")
                                      if k in result)]
    (folder / f"{stem}.md").write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    """Measure and write."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None)
    ap.add_argument("--tokens", type=float, default=1e8)
    ap.add_argument("--n-max", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--naive-tokens", type=float, default=1e6,
                    help="tokens the naive Python loop counts, its time scaled to --tokens")
    add_out_argument(ap)
    args = ap.parse_args()
    be = get_backend(args.backend)
    result = {"benchmark": "hot-op floors", **device_facts(be),
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    bandwidth, peak = copy_bandwidth(be), peak_int_ops(be)
    result.update(bandwidth_GBps=round(bandwidth / 1e9, 1), peak_int_ops=peak)
    print(f"{result['device']}: copy bandwidth {bandwidth / 1e9:.0f} GB/s", flush=True)

    count_levels(markov_sequences(2_000_000, seed=2), be, args.n_max, bandwidth, peak)  # warm-up
    db = markov_sequences(int(args.tokens), seed=1)
    levels, t_blocks = count_levels(db, be, args.n_max, bandwidth, peak, args.repeat)
    result["count_levels"] = count_all_levels(db, be, args.n_max, bandwidth, levels, args.repeat)
    if be.is_gpu:
        sort_levels(db, be, levels)
    total = sum(r["seconds"] for r in levels)
    floor = sum(max(r["bandwidth_floor_s"], r["ops_floor_s"]) for r in levels)
    result.update(tokens=db.n_events, sequences=len(db), levels=levels,
                  blocks_s=round(t_blocks, 4),
                  count_total_s=round(total, 4), count_x_floor=round(total / floor, 1))
    naive_s = naive_seconds(db, args.n_max, None, sample_tokens=int(args.naive_tokens))
    result.update(naive_tokens=int(args.naive_tokens), naive_python_s=round(naive_s, 1),
                  naive_x=round(naive_s / total, 1))
    del db

    msnbc = dpgpu.load(dpgpu.demo_path())
    release_seconds(msnbc, be, 1)  # warm-up
    result["msnbc_release_s"] = round(release_seconds(msnbc, be, args.repeat), 3)
    result["msnbc_release_numpy_s"] = round(release_seconds(msnbc, get_backend("numpy"), 1), 3)
    result["msnbc_speedup"] = round(result["msnbc_release_numpy_s"]
                                    / result["msnbc_release_s"], 1)
    print(json.dumps(result, indent=2))
    print(f"written to {write(result, results_dir(args))}")


if __name__ == "__main__":
    main()
