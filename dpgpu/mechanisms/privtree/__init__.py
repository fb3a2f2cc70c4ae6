"""PrivTree: hierarchical decompositions without a height limit (Zhang, Xiao, Xie, SIGMOD'16).

* :mod:`.core` -- the biased-score split test (Eq. 8, Corollary 1) with
  integer noise, and why Theorem 3.1 still holds on the integer grid;
* :mod:`.spatial` -- private spatial decompositions of d-dimensional points
  (Section 3) with noisy leaf counts, and the uniform-grid baseline UG;
* :mod:`.adaptive_grid` -- the adaptive-grid baseline AG (Qardaji et al., ICDE 2013);
* :mod:`.pst` -- the private prediction suffix tree (Section 4);
* :mod:`.sampling` -- count queries (Eq. 12), top-k strings and synthetic
  sequences from a released PST.

Each module's docstring carries its privacy argument.
"""

from .adaptive_grid import adaptive_grid
from .core import SplitParams, split_params, split_probability
from .pst import PSTRelease, pst
from .spatial import SpatialHistogram, SpatialRelease, privtree_spatial, uniform_grid

__all__ = ["pst", "PSTRelease", "privtree_spatial", "SpatialRelease", "SpatialHistogram",
           "uniform_grid", "adaptive_grid", "split_params", "split_probability", "SplitParams"]
