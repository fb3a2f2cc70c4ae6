"""``dpgpu demo``: the main job on the bundled MSNBC click streams.

Loads the bundled dataset (UCI MSNBC, 989,818 sequences), runs the N-gram
mechanism (epsilon 1, l_max 20, n_max 5) on the chosen backend, writes the
release directory, and compares the synthetic data's top-K frequent patterns
with the original's (the N-gram paper's Table 5 measure).  That comparison
reads the original data: it is a diagnostic for you, not part of the release.
"""

from __future__ import annotations

import argparse
import time

from ..backend import get_backend
from ..data.load import demo_path, load
from ..eval.metrics import true_positive_ratio
from ..eval.truth import top_k_strings
from ..mechanisms.ngram import MAX_N, N_MAX, check_parameters, ngram
from ..release import check_release_target
from .common import add_backend_argument, add_command, nonempty_path

K_VALUES = (20, 40, 60, 80, 100)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``demo`` subcommand."""
    p = add_command(sub, "demo", help="run the main job on the bundled MSNBC data",
                    description=__doc__, example="dpgpu demo --epsilon 0.5 --out demo-release")
    add_backend_argument(p)
    p.add_argument("--epsilon", type=float, default=1.0, help="privacy budget (default 1)")
    p.add_argument("--l-max", type=int, default=20, help="items kept per sequence (default 20)")
    p.add_argument("--n-max", type=int,
                   help=f"longest n-gram, at most {MAX_N} (default {N_MAX}, or --l-max + 1 if "
                        "smaller)")
    p.add_argument("--out", default="demo-release", type=nonempty_path,
                   help="release directory (default ./demo-release)")
    p.add_argument("--force", action="store_true", help="replace an existing release")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the options, load, release, write, compare."""
    be = get_backend(args.backend)
    check_parameters(args.epsilon, args.l_max, args.n_max)  # before the data is read
    check_release_target(args.out, force=args.force)  # before the run, not after it
    t0 = time.perf_counter()
    db = load(demo_path())
    s = db.stats()
    print(f"MSNBC (bundled): {s['sequences']:,} sequences over {s['items']} page categories, "
          f"{s['events']:,} clicks; mean length {s['mean_length']:.2f}, max {s['max_length']:,}")
    print(f"loaded in {time.perf_counter() - t0:.2f} s; backend {be.name} ({be.device_name()})")
    release = ngram(db, args.epsilon, l_max=args.l_max, n_max=args.n_max, backend=be)
    r = release.report
    out = release.save(args.out, force=args.force)
    print(f"N-gram release (epsilon={r['epsilon']:g}, l_max={args.l_max}, "
          f"n_max={r['parameters']['n_max']}): "
          f"tree levels {r['tree']['levels']}, {len(release.synthetic):,} synthetic sequences, "
          f"{r['timings']['total_s']:.1f} s -> {out}/")
    names = db.vocab.names or db.vocab.labels
    k_max = max(K_VALUES)
    synth_top, _ = top_k_strings(release.synthetic, k_max, min_length=2, backend=be)
    print("top-K frequent patterns (length >= 2) the synthetic data finds (Table 5 measure):")
    for label, l_max in (("the original", None), (f"its first {args.l_max} items", args.l_max)):
        true_top, _ = top_k_strings(db, k_max, min_length=2, l_max=l_max, backend=be)
        ratios = "  ".join(f"K={k}: {_percent(true_positive_ratio(true_top[:k], synth_top[:k]))}"
                           for k in K_VALUES)
        print(f"  of {label}: {ratios}")
    print("  most frequent in the synthetic data: "
          + "; ".join(" ".join(names[i] for i in p) for p in synth_top[:3]))
    print("(the top-K comparison reads the original data: a diagnostic, not part of the release)")
    return 0


def _percent(ratio: float | None) -> str:
    """A ratio as a percentage; n/a where there was nothing to find (no pattern of length 2)."""
    return "n/a" if ratio is None else f"{ratio:.0%}"
