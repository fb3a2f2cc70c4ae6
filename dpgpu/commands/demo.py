"""``dpgpu demo``: the main job on the bundled MSNBC click streams.

Loads the bundled dataset (UCI MSNBC, 989,818 sequences), summarises it and
counts all contiguous n-grams (n <= 5, first 20 items of each sequence) on
the chosen backend, with timings.  The counts shown are exact: they describe
the input and are not a private release.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ..backend import get_backend, to_numpy
from ..data.load import demo_path, load
from ..ops.grams import GramEngine
from .common import add_backend_argument


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    p = sub.add_parser("demo", help="run the main job on the bundled MSNBC data",
                       description=__doc__)
    add_backend_argument(p)
    p.add_argument("--n-max", type=int, default=5, help="longest n-gram (default 5)")
    p.add_argument("--l-max", type=int, default=20, help="items kept per sequence (default 20)")
    p.add_argument("--top", type=int, default=5, help="n-grams shown per n (default 5)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, summarise, count."""
    be = get_backend(args.backend)
    t0 = time.perf_counter()
    db = load(demo_path())
    t_load = time.perf_counter() - t0
    s = db.stats()
    print(f"MSNBC (bundled): {s['sequences']:,} sequences over {s['items']} page categories, "
          f"{s['events']:,} clicks; mean length {s['mean_length']:.2f}, max {s['max_length']:,}")
    print(f"loaded in {t_load:.2f} s; backend {be.name} ({be.device_name()})")
    t0 = time.perf_counter()
    engine = GramEngine(db, args.l_max, backend=be)
    names = db.vocab.names or db.vocab.labels
    for n in range(1, args.n_max + 1):
        grams, counts = engine.count(n)
        grams, counts = to_numpy(grams), to_numpy(counts)
        top = np.argsort(-counts, kind="stable")[:args.top]
        shown = "; ".join(" ".join(names[i] for i in grams[j]) + f" ({counts[j]:,})" for j in top)
        print(f"  {n}-grams: {grams.shape[0]:>7,} distinct   top: {shown}")
    be.synchronize()
    print(f"counted all n-grams n <= {args.n_max} (l_max = {args.l_max}) in "
          f"{time.perf_counter() - t0:.2f} s")
    print("(exact counts of the input, not a private release)")
    return 0
