"""Benchmark: reading each input format at scale, against a naive Python reader in the same run.

One generated corpus (:func:`dpgpu.data.generate.markov_sequences`) is
written in every format dpgpu reads: ``seq``, ``spmf``, ``lines``, a CSV and a
Parquet event log, XES, user-level JSON lines (each sequence one
sentence of words ``w1 .. wK``, a few sentences per user), trajectory
points (item ``k`` a point at a random place in cell ``(k % 10, k // 10)`` of
a 10 x 10 grid over the unit square, rows shuffled, a time column giving
the order) and a column table (a CSV row per sequence: id, items joined by
spaces).  Each file is then
read in a fresh process, once by ``dpgpu.load`` and once by a plain Python
reader (line splits, the ``csv`` and ``json`` modules, ElementTree, Arrow's
``to_pylist``), and the wall time and the process's peak resident memory
are recorded, with the peak of a process that only imported dpgpu taken
off.  A third process reads the file both ways and checks that both give
the same sequences.

Linux only (peak memory is read from ``/proc``).

Usage: ``python bench/bench_readers.py [--tokens 1e6] [--formats seq,csv,...] [--keep DIR]``

Writes ``bench/results/readers-numpy-cpu.{json,md}``.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import re
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from paths import add_out_argument, results_dir

HERE = Path(__file__).resolve().parent
#: File name of each format's corpus.
FILES = {"seq": "corpus.seq", "spmf": "corpus.spmf", "lines": "corpus.txt",
         "csv": "corpus.csv", "parquet": "corpus.parquet", "xes": "corpus.xes",
         "jsonl": "corpus.jsonl", "trajectory": "points.csv", "column": "rows.csv"}
#: What ``dpgpu.load`` is told besides the path (formats that are never detected).
LOAD_OPTIONS = {"trajectory": {"format": "trajectory", "grid": "10x10", "bounds": "0,1,0,1",
                               "repeats": "keep"},
                "column": {"format": "column"}}
#: Sentences per user in the JSON lines corpus.
SENTENCES_PER_USER = 4


# ------------------------------------------------------------------ corpus
def write_corpus(db, folder: Path, formats: list[str]) -> None:
    """Write ``db`` in each of ``formats`` under ``folder``."""
    from dpgpu.data.writers import write  # noqa: PLC0415 - not needed in the child processes

    for fmt in formats:
        if fmt == "jsonl":
            write_jsonl(db, folder / FILES[fmt])
        elif fmt == "trajectory":
            write_points(db, folder / FILES[fmt])
        else:
            write(db, folder / FILES[fmt], fmt)


def write_jsonl(db, path: Path) -> None:
    """One record per user: its sentences (sequences of ``w<label>``) joined by '. '."""
    with open(path, "w", encoding="utf-8") as out:
        for first in range(0, len(db), SENTENCES_PER_USER):
            sentences = [" ".join("w" + label for label in db[i])
                         for i in range(first, min(first + SENTENCES_PER_USER, len(db)))]
            out.write(json.dumps({"author": f"user{first // SENTENCES_PER_USER}",
                                  "content": ". ".join(sentences) + "."}) + "\n")


def write_points(db, path: Path) -> None:
    """A point per event: trip, time (its position), lon, lat in the item's cell; rows shuffled."""
    rng = np.random.default_rng(0)
    lengths = np.diff(db.offsets)
    trip = np.repeat(np.arange(len(db)), lengths)
    time = np.arange(db.items.size) - np.repeat(db.offsets[:-1], lengths)
    lon = (db.items % 10 + rng.uniform(0.01, 0.99, db.items.size)) / 10
    lat = (db.items // 10 + rng.uniform(0.01, 0.99, db.items.size)) / 10
    order = rng.permutation(db.items.size)
    with open(path, "w", encoding="utf-8") as out:
        out.write("trip,time,lon,lat\n")
        out.writelines(f"t{a},{b},{c:.6f},{d:.6f}\n" for a, b, c, d in
                       zip(trip[order].tolist(), time[order].tolist(), lon[order].tolist(),
                           lat[order].tolist()))


def cell_label(item: int) -> str:
    """The cell of the trajectory corpus holding the points of item id ``item``."""
    return f"{item % 10}_{item // 10}"


# ------------------------------------------------------------------ naive readers
def naive_seq(path: str) -> list[tuple]:
    """UCI .seq: skip the header, one line of numbers per sequence."""
    with open(path) as f:
        lines = f.read().split("\n")
    start = lines.index("% Sequences:") + 2
    return [tuple(line.split()) for line in lines[start:] if line.strip()]


def naive_spmf(path: str) -> list[tuple]:
    """SPMF: items of each line, separators -1 and -2 dropped, metadata lines skipped."""
    with open(path) as f:
        return [tuple(t for t in line.split() if t not in ("-1", "-2"))
                for line in f if line.strip() and line.lstrip()[0] not in "#%@"]


def naive_lines(path: str) -> list[tuple]:
    """One sequence per line."""
    with open(path) as f:
        return [tuple(line.split()) for line in f]


def _grouped(rows) -> list[tuple]:
    """Activities of each case in order of first appearance, each case's events by time."""
    cases: dict[str, list] = {}
    for case, activity, stamp in rows:
        cases.setdefault(case, []).append((stamp, activity))
    return [tuple(a for _, a in sorted(events, key=lambda e: e[0])) for events in cases.values()]


def naive_csv(path: str) -> list[tuple]:
    """CSV event log with the csv module; ISO timestamps of one format sort as text."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        c, a, t = (header.index(name) for name in
                   ("case:concept:name", "concept:name", "time:timestamp"))
        return _grouped((row[c], row[a], row[t]) for row in reader)


def naive_parquet(path: str) -> list[tuple]:
    """Parquet event log: the columns as Python lists."""
    import pyarrow.parquet as pq  # noqa: PLC0415 - optional dependency

    table = pq.read_table(path)
    cols = [table.column(name).to_pylist() for name in
            ("case:concept:name", "concept:name", "time:timestamp")]
    return _grouped(zip(*cols))


def naive_xes(path: str) -> list[tuple]:
    """XES with ElementTree: each trace's events' concept:name, by time:timestamp."""
    import xml.etree.ElementTree as ET  # noqa: PLC0415

    out = []
    for trace in ET.parse(path).getroot():
        if not trace.tag.endswith("trace"):
            continue
        events = []
        for event in trace:
            if event.tag.endswith("event"):
                attrs = {a.get("key"): a.get("value") for a in event}
                events.append((attrs.get("time:timestamp"), attrs["concept:name"]))
        out.append(tuple(a for _, a in sorted(events, key=lambda e: e[0])))
    return out


_SENTENCE = re.compile(r"(?<=[.!?])\s+|[\r\n]+")
_WORD = re.compile(r"\w+")


def naive_jsonl(path: str) -> list[tuple]:
    """JSON lines: each record's sentences of words, with json.loads and two regexes."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["content"].lower()
            out.extend(tuple(w) for w in map(_WORD.findall, _SENTENCE.split(text)) if w)
    return out


def naive_trajectory(path: str) -> list[tuple]:
    """Trajectory points with the csv module: each point's cell, each trip's points by time."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        next(reader)
        return _grouped((trip, f"{min(int(float(x) * 10), 9)}_{min(int(float(y) * 10), 9)}",
                         int(t)) for trip, t, x, y in reader)


def naive_column(path: str) -> list[tuple]:
    """A row per sequence with the csv module: the second field's items split on spaces."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        next(reader)
        return [tuple(items.split()) for _, items in reader]


NAIVE = {"seq": naive_seq, "spmf": naive_spmf, "lines": naive_lines, "csv": naive_csv,
         "parquet": naive_parquet, "xes": naive_xes, "jsonl": naive_jsonl,
         "trajectory": naive_trajectory, "column": naive_column}


# ------------------------------------------------------------------ child processes
def child(mode: str, fmt: str, path: str) -> None:
    """Run one measurement in this (fresh) process and print its JSON result."""
    import time  # noqa: PLC0415

    import dpgpu  # noqa: PLC0415

    t0 = time.perf_counter()
    options = LOAD_OPTIONS.get(fmt, {})
    if mode == "dpgpu":
        db = dpgpu.load(path, **options)
        result = {"sequences": len(db), "events": int(db.n_events)}
    elif mode == "naive":
        rows = NAIVE[fmt](path)
        result = {"sequences": len(rows), "events": sum(map(len, rows))}
    elif mode == "check":
        db = dpgpu.load(path, **options)
        mine = [tuple(seq) for seq in db]
        result = {"same": mine == NAIVE[fmt](path)}
    else:  # "import": the baseline
        result = {}
    result["seconds"] = time.perf_counter() - t0
    result["peak_kib"] = peak_kib()
    print(json.dumps(result))


def peak_kib() -> int:
    """This process's peak resident memory in KiB, from Linux's VmHWM.

    Not ``getrusage``'s ``ru_maxrss``: Linux keeps that across ``exec``, so
    a child would report the benchmark process's own size when it forked.
    """
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))


def measure(mode: str, fmt: str, path: Path) -> dict:
    """Run :func:`child` in a fresh interpreter."""
    out = subprocess.run([sys.executable, __file__, "--child", mode, fmt, str(path)],
                         check=True, capture_output=True, text=True, cwd=HERE)
    return json.loads(out.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ main
def main() -> None:
    """Generate, measure, write."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=float, default=1e6)
    ap.add_argument("--formats", default=",".join(FILES))
    ap.add_argument("--keep", type=Path, default=None,
                    help="write the corpus files here and keep them (default: a temporary folder)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    add_out_argument(ap)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    formats = [f for f in args.formats.split(",") if f]
    unknown = set(formats) - set(FILES)
    if unknown:
        ap.error(f"--formats: unknown {sorted(unknown)}; choose from {','.join(FILES)}")
    from dpgpu.data.generate import markov_sequences  # noqa: PLC0415

    db = markov_sequences(int(args.tokens), seed=1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        write_corpus(db, folder, formats)
        base = measure("import", "", Path())
        rows = []
        for fmt in formats:
            path = folder / FILES[fmt]
            mine, naive = measure("dpgpu", fmt, path), measure("naive", fmt, path)
            same = measure("check", fmt, path)["same"]
            size = path.stat().st_size
            row = {"format": fmt, "file_mb": round(size / 1e6, 1), "events": mine["events"],
                   "sequences": mine["sequences"], "same_as_naive": same,
                   "dpgpu_s": round(mine["seconds"], 3), "naive_s": round(naive["seconds"], 3),
                   "speedup": round(naive["seconds"] / mine["seconds"], 1),
                   "dpgpu_mb_per_s": round(size / 1e6 / mine["seconds"], 1),
                   "dpgpu_peak_mib": _above(mine, base), "naive_peak_mib": _above(naive, base)}
            row["dpgpu_bytes_per_event"] = round(row["dpgpu_peak_mib"] * 2 ** 20 / row["events"], 1)
            rows.append(row)
            print(row, flush=True)
    write_results(rows, int(args.tokens), base, results_dir(args))


def _above(run: dict, base: dict) -> float:
    """MiB of peak resident memory a run took beyond the import-only baseline."""
    return round(max(run["peak_kib"] - base["peak_kib"], 0) / 1024, 1)


def write_results(rows: list[dict], tokens: int, base: dict, folder: Path) -> None:
    """``readers-numpy-cpu.{json,md}`` in ``folder``."""
    import dpgpu  # noqa: PLC0415

    meta = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
            "python": platform.python_version(), "numpy": np.__version__,
            "dpgpu": dpgpu.__version__, "tokens": tokens,
            "import_peak_mib": round(base["peak_kib"] / 1024, 1)}
    (folder / "readers-numpy-cpu.json").write_text(json.dumps({**meta, "rows": rows}, indent=1)
                                                    + "\n")
    lines = [f"# Reading each format ({tokens:.0e} generated events)", "",
             f"{meta['date']}, {meta['machine']}, Python {meta['python']}, NumPy "
             f"{meta['numpy']}. Each read runs in a fresh process; peak = the process's "
             f"peak resident memory less that of a process that only imported dpgpu "
             f"({meta['import_peak_mib']} MiB). Naive = plain Python (line splits, csv, json, "
             "ElementTree, Arrow to_pylist); both readers' sequences are checked equal. "
             "Trajectory: the points of every event, 10 x 10 grid, repeats kept.", "",
             "| format | file MB | dpgpu s | MB/s | peak MiB | B/event | naive s | naive peak MiB "
             "| speedup | same |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['format']} | {r['file_mb']} | {r['dpgpu_s']} | {r['dpgpu_mb_per_s']} "
                     f"| {r['dpgpu_peak_mib']} | {r['dpgpu_bytes_per_event']} | {r['naive_s']} "
                     f"| {r['naive_peak_mib']} | {r['speedup']}x | {r['same_as_naive']} |")
    (folder / "readers-numpy-cpu.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
