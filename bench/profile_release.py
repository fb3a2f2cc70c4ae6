"""Time and profile each mechanism's release on the bundled MSNBC data.

For every mechanism (N-gram, PST, PFS2, DPNE on MSNBC; PrivTree spatial on
1e6 generated points) runs one warm-up release, then one timed release under
``cProfile``, on the chosen backend, and prints the wall time and the
functions with the most own time -- where a GPU run still spends host time.
Results: ``bench/results/profile-<backend>-<device>.md``.

Usage: ``python bench/profile_release.py [--backend cupy] [--only ngram pst]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import numpy as np

import dpgpu
from dpgpu.backend import get_backend
from paths import add_out_argument, results_dir



def releases(db, points, be) -> dict:
    """Each mechanism's default release, as a function of a seed."""
    return {
        "ngram": lambda s: dpgpu.ngram(db, 1.0, seed=s, backend=be),
        "pst": lambda s: dpgpu.pst(db, 1.0, seed=s, backend=be),
        "pfs2": lambda s: dpgpu.pfs2(db, 1.0, 0.01, seed=s, backend=be),
        "dpne": lambda s: dpgpu.dpne(db, 1.0, 1e-7, max_n=6, contribution=10, seed=s,
                                     backend=be),
        "privtree_spatial": lambda s: dpgpu.privtree_spatial(points, 1.0, seed=s, backend=be,
                                                             bounds=[[0, 1], [0, 1]]),
    }


def profile(fn, be, top: int) -> tuple[float, str]:
    """Wall seconds of one call under cProfile, and the top of its profile."""
    prof = cProfile.Profile()
    be.synchronize()
    t0 = time.perf_counter()
    prof.enable()
    fn()
    be.synchronize()
    prof.disable()
    seconds = time.perf_counter() - t0
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(top)
    body = text.getvalue()
    return seconds, body[body.find("ncalls"):]


def main() -> None:
    """Profile and write."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default=None)
    ap.add_argument("--only", nargs="+", help="mechanisms to profile (default: all)")
    ap.add_argument("--top", type=int, default=12)
    add_out_argument(ap)
    args = ap.parse_args()
    be = get_backend(args.backend)
    db = dpgpu.load(dpgpu.demo_path())
    rng = np.random.default_rng(0)
    points = np.concatenate([rng.normal(0.4, 0.02, (500_000, 2)), rng.random((500_000, 2))])
    points = np.clip(points, 0, 1)
    lines = [f"# Release profiles on {be.device_name()} ({be.name})", "",
             "MSNBC (989,818 sequences) for the sequence mechanisms; 1e6 points for spatial. "
             "One warm-up release, then one profiled (cProfile adds some overhead).", ""]
    for name, fn in releases(db, points, be).items():
        if args.only and name not in args.only:
            continue
        fn(1)
        seconds, body = profile(lambda: fn(2), be, args.top)
        print(f"== {name}: {seconds:.3f} s\n{body}", flush=True)
        lines += [f"## {name}: {seconds:.3f} s", "", "```", body.rstrip(), "```", ""]
    out = results_dir(args) / f"profile-{be.name}-{be.device_name().replace(' ', '_')}.md"
    out.write_text("\n".join(lines) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
