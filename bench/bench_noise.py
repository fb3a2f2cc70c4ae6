"""Benchmark the privacy core's noise: 1,000,000 draws per sampler and scale.

Prints, per backend, the best of ``--repeat`` timings for discrete Laplace and
discrete Gaussian draws and for the raw ChaCha20 words, and the ratio against
a naive pure-Python sampler (one draw at a time: the same digit tables, words
from the operating system's CSPRNG via ``secrets.randbits`` and ``bisect``),
timed on fewer draws and scaled up.  Timings are never asserted in tests; run this by hand::

    python bench/bench_noise.py [--n 1000000] [--repeat 3] [--backend numpy|cupy]
"""

from __future__ import annotations

import argparse
import bisect
import secrets
import time

from dpgpu.backend import get_backend, gpu_available
from dpgpu.privacy import DiscreteGaussian, DiscreteLaplace, NoiseKey

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="draws per timing")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--naive-n", type=int, default=20_000,
                        help="draws for the pure-Python baseline (scaled to --n)")
    parser.add_argument("--backend", choices=("numpy", "cupy"), action="append",
                        help="backends to time (default: numpy, and cupy when usable)")
    args = parser.parse_args()
    names = args.backend or (["numpy", "cupy"] if gpu_available() else ["numpy"])
    key = NoiseKey.fresh()
    print(f"{args.n:,} draws, best of {args.repeat}; naive baseline: {args.naive_n:,} "
          f"pure-Python draws scaled to {args.n:,}")
    for name in names:
        be = get_backend(name)
        ids = be.xp.arange(args.n, dtype=be.xp.int64)
        print(f"\nbackend {be.name} ({be.device_name()})")
        for n_words in (1, 8):
            t = best_time(lambda: key.words(ids, 0, n_words, backend=be), args.repeat, be)
            print(f"  chacha20 words x{n_words:<2}          {t:8.3f} s"
                  f"  ({args.n * n_words / t / 1e6:7.1f} M words/s)")
        for scale in LAPLACE_SCALES:
            sampler = DiscreteLaplace(scale)
            t = best_time(lambda: sampler.sample(key, ids, tag=0, backend=be), args.repeat, be)
            start = time.perf_counter()
            naive_laplace(sampler, args.naive_n)
            naive = (time.perf_counter() - start) * args.n / args.naive_n
            print(f"  discrete laplace {scale:<8g}   {t:8.3f} s  ({sampler.n_words:2d} words/draw)"
                  f"  naive python {naive:7.1f} s  ratio {naive / t:6.0f}x")
        for sigma in GAUSSIAN_SIGMAS:
            sampler = DiscreteGaussian(sigma)
            t = best_time(lambda: sampler.sample(key, ids, tag=0, backend=be), args.repeat, be)
            print(f"  discrete gaussian {sigma:<8g}  {t:8.3f} s")


if __name__ == "__main__":
    main()
