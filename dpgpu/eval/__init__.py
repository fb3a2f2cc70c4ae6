"""Exact (non-private) ground truth and the papers' utility metrics.

Nothing in this package is differentially private: it reads the original
data and computes exact statistics to judge a release.  Its outputs are
diagnostics for the data holder and must never be published as a release.

* :mod:`dpgpu.eval.truth` -- exact counts: occurrences of contiguous
  patterns, subsequence supports, top-k frequent strings and subsequences,
  length distributions, per-user gram counts, range counts in d dimensions.
* :mod:`dpgpu.eval.metrics` -- relative error with a sanity bound, the
  N-gram paper's random count-query protocol, top-k true positive ratio,
  utility loss, precision / recall / F-score, total variation distance,
  K-anonymity coverage, range-count query sets.
* :mod:`dpgpu.eval.evaluate` -- compare a release directory with its
  original (``dpgpu evaluate``).

Importing this package imports neither Numba nor CuPy.
"""

from . import metrics, truth  # noqa: F401

__all__ = ["metrics", "truth"]
