"""AG, the adaptive grid of Qardaji, Yang and Li (ICDE 2013), PrivTree's spatial baseline [41].

Qardaji et al. publish two-dimensional points as a two-level grid whose
second level adapts to the first level's noisy counts:

1. Level 1 lays an ``m1 x m1`` grid over the public domain, with
   ``m1 = max(10, ceil(ceil(sqrt(n epsilon / c)) / 4))`` and ``c = 10``, and
   releases every cell's count with discrete Laplace noise at
   ``alpha epsilon`` (scale ``1 / (alpha epsilon)``), ``alpha = 1/2``.
2. Level 2 cuts each level-1 cell, whose noisy count is ``N'``, into
   ``m2 x m2`` equal sub-cells, ``m2 = ceil(sqrt(N' (1 - alpha) epsilon / c2))``
   with ``c2 = c / 2`` (at least 1: a cell with ``m2 = 1`` is not cut but still
   gets a level-2 count), and releases every sub-cell's count with noise at
   ``(1 - alpha) epsilon``.  The denser a cell looks, the finer it is cut.
3. Constrained inference makes the two levels agree.  For a level-1 cell
   with noisy count ``v`` and sub-cell counts ``u_1 .. u_{m2^2}`` (sum ``S``),
   the best linear combination of the two estimates of the cell's total,
   weighted by the inverse of their variances, is
   ``v' = (alpha^2 m2^2 v + (1 - alpha)^2 S) / (alpha^2 m2^2 + (1 - alpha)^2)``;
   each sub-cell then gets an equal share of the correction,
   ``u_i' = u_i + (v' - S) / m2^2``, so the sub-cells sum to ``v'``.

The release is the level-2 cells (the leaves) with the counts ``u_i'``:
floats, not integers (a :class:`~.spatial.SpatialHistogram` reads its counts
as floats, so nothing downstream needs integers).  Like UG, AG takes the
dataset size ``n`` as public (it sets ``m1`` and the cap below), and takes its
domain from ``bounds``; without ``bounds`` the data's bounding box is used and
the report says ``"private": false`` (:func:`~.spatial.uniform_grid`'s rule).

Privacy argument
----------------
Neighbouring datasets differ in one point.  Level 1's cells partition the
domain, so the point changes one level-1 count by one: sensitivity 1, and
discrete Laplace noise of scale ``1 / (alpha epsilon)`` makes level 1
``alpha epsilon``-DP.  Given level 1's noisy counts, ``m2`` of every cell is
fixed (a function of released values: post-processing), and the sub-cells
partition the domain again, so level 2 is a histogram of sensitivity 1 at
``(1 - alpha) epsilon``.  Sequential (adaptive) composition makes the pair
``epsilon``-DP; constrained inference and the leaf boxes read the noisy
counts only (post-processing).  A point outside ``bounds`` follows
``outside`` exactly as in :func:`~.spatial.privtree_spatial`.

Noise and accounting.  Each level draws its noise once, as one array, from
the keyed counter RNG with its own ledger step's key: level 1 for the
identities ``0 .. m1^2 - 1`` (row-major cells); level 2 for
``cell * m2_max^2 + sub`` (``sub`` the row-major sub-cell index, below
``m2^2 <= m2_max^2``), so every draw has its own identity and the number of
level-2 draws, ``sum m2^2``, is fixed by released values only.  Both steps
are charged before the points are counted, each with the samplers' sampling
delta (:func:`~dpgpu.privacy.sampling_delta`) for a *public* upper bound of
its draws: ``m1^2`` for level 1, and ``m1^2 m2_max^2`` for level 2, where
``m2_max`` is ``m2`` at ``N' = n``.  To make that bound hold, ``N'`` is
clipped to ``[0, n]`` before ``m2`` is computed (no cell holds more than
``n`` points; a post-processing rule that changes Qardaji et al.'s ``m2``
only where the noise exceeds ``n`` minus the cell's count).  A bound that
depends on level 1's output could not be charged before the data are read,
and a refusal from it would depend on the data.  The per-draw distance is the
sampler's own ``tv_per_draw`` (UG uses the looser bound
:data:`~dpgpu.privacy.samplers.LAPLACE_TV_BOUND` for all scales), which keeps
the worst-case bound usable up to ``n epsilon`` of about ``2e7`` for epsilon
up to 2 (``6e6`` at epsilon 10); past the run's allowance (``1e-6``) the
ledger refuses with an InvalidParameter, before anything is counted.  A domain too narrow for the finest public grid
(``m1 m2_max`` cells a side) is refused first as well, so that no box of a
release can have zero width whatever the noise.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...backend import get_backend, to_numpy
from ...errors import InvalidParameter
from ...privacy import DiscreteLaplace, PrivacyLedger, laplace_scale, sampling_delta, \
    split_budget
from ...validation import check_choice, check_positive_int, check_positive_real
# private helpers of .spatial, shared on purpose so that AG validates and reports like UG
from .spatial import OUTSIDE, SpatialHistogram, _column_names, _domain, _points, _privacy, \
    grid_cells, grid_edges, inside_points

#: Qardaji et al.'s constants: the budget share of level 1, and ``c`` (``c2 = c / 2``).
ALPHA = 0.5
C = 10.0
C2 = C / 2


def level1_size(n: int, epsilon: float) -> int:
    """``m1 = max(10, ceil(ceil(sqrt(n epsilon / c)) / 4))``, the level-1 cells a side.

    Parameters
    ----------
    n : int
        The public dataset size.
    epsilon : float
        The whole budget.

    Returns
    -------
    int

    Raises
    ------
    InvalidParameter
        When ``n epsilon`` is too large for a float.
    """
    try:
        root = math.sqrt(n * epsilon / C)
    except OverflowError:
        root = math.inf
    if not math.isfinite(root):
        raise InvalidParameter(f"n, epsilon: n * epsilon = {n} * {epsilon} is too large for "
                               "the grid")
    return max(10, math.ceil(math.ceil(root) / 4))


def level2_sizes(noisy: Any, n: int, epsilon: float) -> np.ndarray:
    """``m2 = ceil(sqrt(N' (1 - alpha) epsilon / c2))``, at least 1, per level-1 cell.

    Parameters
    ----------
    noisy : array of int or float
        Level-1 noisy counts ``N'``; each is clipped to ``[0, n]`` first.
    n : int
        The public dataset size (the cap, see the module doc).
    epsilon : float
        The whole budget.

    Returns
    -------
    numpy.ndarray of int64
        Monotone in ``N'``, so :func:`level2_cap` bounds every value.
    """
    x = np.clip(np.asarray(noisy, dtype=np.float64), 0, float(n))
    return np.maximum(1, np.ceil(np.sqrt(x * ((1 - ALPHA) * epsilon / C2)))).astype(np.int64)


def level2_cap(n: int, epsilon: float) -> int:
    """``m2_max``: :func:`level2_sizes` at ``N' = n`` (the same float operations), a Python int.

    Call it after :func:`level1_size`, which refuses an ``n epsilon`` too large for a float.
    """
    return max(1, math.ceil(math.sqrt(float(n) * ((1 - ALPHA) * epsilon / C2))))


def constrained_inference(v: Any, m2: Any, u: Any) -> tuple[np.ndarray, np.ndarray]:
    """Make each level-1 cell's sub-cells agree with it (Qardaji et al.'s inference).

    Parameters
    ----------
    v : (K,) array
        Level-1 noisy counts.
    m2 : (K,) int array
        Sub-cells a side of each level-1 cell.
    u : (sum m2**2,) array
        Level-2 noisy counts, cell after cell (each cell's ``m2**2`` together).

    Returns
    -------
    v_new : (K,) float64 array
        ``(alpha^2 m2^2 v + (1 - alpha)^2 S) / (alpha^2 m2^2 + (1 - alpha)^2)``,
        ``S`` the cell's sum of ``u``.
    u_new : (sum m2**2,) float64 array
        ``u + (v_new - S) / m2^2`` (each cell's entries sum to its ``v_new``).
    """
    v = np.asarray(v, dtype=np.float64)
    size = np.asarray(m2, dtype=np.int64) ** 2
    cell = np.repeat(np.arange(v.shape[0]), size)
    s = np.bincount(cell, weights=np.asarray(u, dtype=np.float64), minlength=v.shape[0])
    a2, b2 = ALPHA ** 2 * size, (1 - ALPHA) ** 2
    v_new = (a2 * v + b2 * s) / (a2 + b2)
    return v_new, np.asarray(u, dtype=np.float64) + ((v_new - s) / size)[cell]


def adaptive_grid(points: Any, epsilon: float, *, n: int, bounds: Any = None,
                  seed: int | None = None, backend: Any = None,
                  outside: str = "error", columns: Sequence[str] | None = None
                  ) -> SpatialHistogram:
    """AG: a two-level adaptive grid of two-dimensional points (module doc).

    Parameters
    ----------
    points : (n, 2) array of float
        One point per individual; other dimensions are refused.
    epsilon : float
        Privacy budget: ``alpha epsilon`` for level 1, the rest for level 2.
    n : int
        The dataset size, taken as public (as in the paper's baseline and in
        :func:`~.spatial.uniform_grid`).
    bounds : (2, 2) array, optional
        Public domain.  Default: the data's bounding box, which makes the
        release **not** private: its report says ``"private": false``,
        epsilon infinite and delta 1, with a warning, which is also logged.
    seed : int, optional
        Reproducible noise (recorded as seeded).
    backend : str or Backend, optional
        Where the noise is drawn.
    outside : {"error", "drop", "clip"}
        A point outside ``bounds``, as in :func:`~.spatial.privtree_spatial`.
    columns : sequence of str, optional
        Names of the two dimensions, as in :func:`~.spatial.uniform_grid`
        (default: a DataFrame's column names, else ``x0, x1``).

    Returns
    -------
    SpatialHistogram
        The leaves (level-2 cells, cell after level-1 cell in row-major
        order) with their float counts after constrained inference, and a
        ``report``: mechanism ``"adaptive-grid"``, the parameters (``m1``,
        ``alpha``, ``c``, ``c2`` and the public cap ``m2_max``), ``private``,
        ``epsilon``, ``delta``, the domain, the ledger, ``seeded``,
        ``backend``, ``device`` and the number of leaves.  ``.save(path)``
        writes it as a release directory
        (:meth:`~.spatial.SpatialHistogram.save`).

    Raises
    ------
    InvalidParameter
        A bad parameter, named: points not of dimension 2, ``epsilon`` not
        finite and positive, ``n`` not a positive integer, bad ``bounds`` or
        ``outside``, a domain too narrow for the grid, or ``n epsilon`` so large
        that the samplers' accounted delta passes the run's allowance.
    PointsOutside
        With ``outside="error"``, a point outside ``bounds``.
    """
    pts = _points(points)
    if pts.shape[1] != 2:
        raise InvalidParameter(f"points: AG (adaptive_grid) is defined for two-dimensional "
                               f"points; got {pts.shape[1]} columns (d = {pts.shape[1]})")
    epsilon = check_positive_real(epsilon, "epsilon")
    n = check_positive_int(n, "n")
    outside = check_choice(outside, "outside", OUTSIDE)
    names = _column_names(points, columns, 2)
    dom, from_data = _domain(pts, bounds)
    pts = inside_points(pts, dom, outside, names)  # before anything is charged
    m1 = level1_size(n, epsilon)
    m2_max = level2_cap(n, epsilon)
    width = (dom[:, 1] - dom[:, 0]) / m1
    if not np.all(width / m2_max > 16 * np.spacing(np.abs(dom).max(axis=1))):
        raise InvalidParameter(f"bounds: too narrow for AG's finest grid at n={n}, "
                               f"epsilon={epsilon:g} ({m1 * m2_max} cells a side, finer than "
                               "floating point resolves there); widen the bounds or lower n")
    eps1, eps2 = split_budget(epsilon, [ALPHA, 1 - ALPHA])
    noise1, noise2 = DiscreteLaplace(laplace_scale(eps1)), DiscreteLaplace(laplace_scale(eps2))
    ledger = PrivacyLedger(epsilon, max_sampling_delta=1e-6, seed=seed)
    step1 = ledger.charge("ag: level-1 counts", eps1,
                          sampling_delta=sampling_delta(noise1.tv_per_draw, m1 ** 2, eps1),
                          hint="n")
    step2 = ledger.charge("ag: level-2 counts", eps2,
                          sampling_delta=sampling_delta(noise2.tv_per_draw,
                                                        m1 ** 2 * m2_max ** 2, eps2), hint="n")
    be = get_backend(backend)
    xp = be.xp
    # level 1: each point's cell (row, column) and position inside it, in cell widths
    t = (pts - dom[:, 0]) / width
    edge = grid_edges(dom, m1)
    ij = grid_cells(pts, t, edge, m1 - 1)
    cell = ij[:, 0] * m1 + ij[:, 1]
    v = np.bincount(cell, minlength=m1 * m1) + to_numpy(noise1.sample(
        step1.key, xp.arange(m1 * m1, dtype=xp.int64), tag=0, backend=be))
    # level 2: m2 from the released v only; leaves cell after cell, sub-cells row-major
    m2 = level2_sizes(v, n, epsilon)
    size = m2 ** 2
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    leaf_cell = np.repeat(np.arange(m1 * m1), size)
    sub = np.arange(int(size.sum())) - start[leaf_cell]
    ab = np.stack([sub // m2[leaf_cell], sub % m2[leaf_cell]], axis=1)
    pm2 = m2[cell, None]
    pab = grid_cells(pts, (t - ij) * pm2, lambda a: edge(ij + a / pm2), pm2 - 1)
    leaf = start[cell] + pab[:, 0] * m2[cell] + pab[:, 1]
    ids = xp.asarray(leaf_cell * m2_max ** 2 + sub)
    u = np.bincount(leaf, minlength=leaf_cell.shape[0]) + to_numpy(noise2.sample(
        step2.key, ids, tag=0, backend=be))
    _, counts = constrained_inference(v, m2, u)
    corner = np.stack(np.divmod(leaf_cell, m1), axis=1)
    lm2 = m2[leaf_cell, None]
    lo, hi = edge(corner + ab / lm2), edge(corner + (ab + 1) / lm2)
    report = {"mechanism": "adaptive-grid",
              "paper": "Qardaji, Yang, Li: Differentially private grids for geospatial data "
                       "(ICDE 2013), the adaptive grid AG",
              "parameters": {"epsilon": epsilon, "n": n, "m1": m1, "alpha": ALPHA, "c": C,
                             "c2": C2, "m2_max": m2_max, "outside": outside},
              **_privacy(ledger, dom, from_data),
              "count_noise": {"level1": {"epsilon": eps1, "scale": noise1.scale},
                              "level2": {"epsilon": eps2, "scale": noise2.scale}},
              "backend": be.name, "device": be.device_name(),
              "leaves": int(leaf_cell.shape[0])}
    return SpatialHistogram(lo, hi, counts, report, columns=names)
