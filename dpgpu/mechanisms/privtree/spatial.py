"""Private spatial decompositions: PrivTree (SIGMOD'16, Section 3) and the uniform grid UG.

PrivTree splits the domain box of d-dimensional points recursively: a node is
halved along ``k`` dimensions at once (fanout ``beta = 2**k``; ``k = d`` is
the quadtree / octree, a smaller ``k`` cycles over the dimensions,
depth ``t`` halving dimensions ``t k, ..., t k + k - 1`` modulo ``d``), and
a node is split iff its biased noisy count passes the test of :mod:`.core`.
The tree is grown level by level on the array engine: every point carries
the index of its node in the current level, one ``bincount`` gives the
level's counts, one comparison per split dimension sends the points of the
split nodes to their children.

Privacy argument
----------------
Neighbouring datasets differ in one point.  The point lies in one node per
depth, a root-to-leaf path, and changes each of their counts by one; counts
are monotone (a child's points are its parent's).  With half the budget,
``epsilon / 2``, the split test (Corollary 1: ``lambda = (2 beta - 1) /
(beta - 1) / (epsilon / 2)``, ``delta = ceil(lambda ln beta)``, ``theta = 0``;
:mod:`.core` shows it holds with integer noise) makes the tree
``epsilon / 2``-DP (Theorem 3.1); a node made a leaf without a test by a
public rule below only drops a factor from the proof's product.  The point
is in one leaf, so the leaf counts have sensitivity 1 and get discrete
Laplace noise of scale ``2 / epsilon`` (Section 3.4): ``epsilon / 2``-DP.
Inner counts are sums of leaves, range queries read the release only:
post-processing.  The samplers' distance from exact noise is charged as
``sampling_delta`` for at most ``max_nodes`` draws per step.

Public choices that never look at the data: the domain ``bounds`` (and
``outside``, below), the fanout (at most ``2**MAX_SPLIT_DIMS``,
:data:`MAX_SPLIT_DIMS`), ``max_depth`` (nodes at that depth are
leaves without a test, like C1 of Section 4.2), the floating-point grid (a
node is halved at ``mid = lo + (hi - lo) / 2``; one whose ``mid`` is not
strictly inside its box in a dimension it would halve, which happens after
about 53 halvings, is a leaf without a test: a rule on its public box, so
every leaf has a positive width) and ``max_nodes`` (when a level
would take the tree past it, the tree is cut above that level: a function of
the uncapped output, hence post-processing).  When ``bounds`` is not given
the data's bounding box is used; the release is then **not** private: its
report says ``"private": false``, epsilon infinite and delta 1, with a
warning, which is also logged.

A point outside the public ``bounds`` (a point on its edge is inside) is an
input error by default (``outside="error"``, :class:`PointsOutside`), raised
before any budget is charged: it is the data holder's mistake (swapped or
wrong bounds), and the error releases nothing.  ``outside="drop"`` leaves
such points out, ``outside="clip"`` moves each onto the domain's nearest
edge; either maps every point on its own, so neighbouring inputs stay
neighbours (or become equal) and the argument above holds for the points
kept.  Only a warning without a count is logged: the run goes on to a
release, and the report holds only the public choice ``outside``.

UG (the paper's baseline, [41, 48]) counts the points of an ``m**d`` grid,
``m = (n epsilon / 10) ** (2 / (d + 2))``, with discrete Laplace noise of
scale ``1 / epsilon``; ``n`` is taken as public, as in the paper.  Its
domain follows the same rule: without ``bounds`` its report says
``"private": false``.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...backend import get_backend, to_numpy
from ...data.points import check_columns
from ...data.trajectory import OUTSIDE as READER_OUTSIDE
from ...errors import InputError, InvalidParameter
from ...ops import keys as K
from ...privacy import DiscreteLaplace, PrivacyLedger, laplace_scale, sampling_delta, \
    split_budget
from ...privacy.samplers import LAPLACE_TV_BOUND
from ...release import ReleaseWriter
from ...report import Displayed
from ...scale.partitions import LocalPartitions, Partitions, check_engine, engine_run, \
    partition_points
from ...validation import check_choice, check_positive_int, check_positive_real, check_real_array
from .core import SplitTest, level_ids, split_params

log = logging.getLogger("dpgpu")

#: Default public caps.
MAX_NODES = 4_000_000
MAX_DEPTH = 64
#: Most dimensions one split halves: the fanout is at most ``2**MAX_SPLIT_DIMS`` = 1024.
#: Every split makes ``fanout`` boxes, each a row of the release, whatever the data: the
#: root is split on almost any dataset, so ``2**d`` children for 20 columns would be a
#: million leaves (gigabytes) for a handful of points.  The paper's fanouts are 4 and 16
#: (Section 6), and its error grows only slightly with a smaller fanout (Appendix,
#: Figure 8): with more than 10 columns the default halves 10 dimensions a split,
#: cycling over them.
MAX_SPLIT_DIMS = 10
#: What a point outside the public ``bounds`` is: an error (the default), left out (the
#: trajectory reader's choices, ``--outside``), or moved onto the domain's nearest edge.
OUTSIDE = (*READER_OUTSIDE, "clip")


class PointsOutside(InputError):
    """Points lie outside the public ``bounds`` (``outside="error"``).

    Raised before any budget is charged.  The message (for the data holder:
    nothing is released) names ``bounds``, the first such point's index and
    the column it leaves its bounds in, and how many points lie outside; the
    attributes let the command line name the file and line instead.

    Attributes
    ----------
    first : int
        Index (from 0) of the first point outside.
    column : int
        The first dimension in which that point is outside ``[lo, hi]``.
    lo, hi : float
        That dimension's bounds.
    count, n : int
        Points outside, and all points.
    """

    def __init__(self, message: str, *, first: int, column: int, lo: float, hi: float,
                 count: int, n: int) -> None:
        super().__init__(message)
        self.first, self.column, self.lo, self.hi = first, column, lo, hi
        self.count, self.n = count, n


def number(v: float) -> str:
    """``v`` as short as it reads back exactly (``-90``, ``0.1``, ``1e+308``)."""
    short = f"{v:g}"
    return short if float(short) == v else repr(float(v))


def inside_points(pts: np.ndarray, domain: np.ndarray, outside: str,
                  names: Sequence[str]) -> np.ndarray:
    """The points a release over ``domain`` counts, by the rule ``outside`` (:data:`OUTSIDE`).

    Points on the domain's edge are inside.  With ``"clip"`` every point is
    clipped onto ``domain`` (those inside are unchanged); with ``"drop"``
    those outside are left out; either logs a warning without a count when
    some lie outside.

    Parameters
    ----------
    pts : (n, d) float array
        Finite points.
    domain : (d, 2) float array
        The public bounds, ``lo < hi``.
    outside : {"error", "drop", "clip"}
        Checked by the caller.
    names : sequence of str
        The dimensions' names, for the message.

    Raises
    ------
    PointsOutside
        With ``"error"``, when a point lies outside.
    """
    lo, hi = domain[:, 0], domain[:, 1]
    out = (pts < lo) | (pts > hi)
    bad = out.any(axis=1)
    if not bad.any():
        return pts
    if outside == "clip":
        log.warning("privtree: points outside the bounds are moved onto the domain's edge "
                    "(outside='clip')")
        return np.clip(pts, lo, hi)
    if outside == "drop":
        log.warning("privtree: points outside the bounds are left out (outside='drop')")
        return pts[~bad]
    first = int(np.argmax(bad))
    j = int(np.argmax(out[first]))
    count = int(np.count_nonzero(bad))
    raise PointsOutside(
        f"bounds: {count} of {pts.shape[0]} points lie outside them; the first, points[{first}], "
        f"is outside [{number(lo[j])}, {number(hi[j])}] in column {names[j]!r}; fix bounds (a "
        f"(lo, hi) pair per column, in the order {', '.join(names)}), or pass outside='drop' "
        "to leave such points out or outside='clip' to move them onto the domain's edge",
        first=first, column=j, lo=float(lo[j]), hi=float(hi[j]), count=count, n=pts.shape[0])


@dataclass
class SpatialLevel:
    """The nodes of one depth (arrays of the run's namespace).

    ``counts`` are exact and private: only :func:`leaf_noisy_counts` reads them.
    """

    lo: Any
    hi: Any
    ids: Any
    split: Any
    counts: Any


#: The spatial mechanisms whose released counts are integers (AG's are floats: its
#: constrained inference averages noisy counts).
INTEGER_COUNTS = ("privtree-spatial", "uniform-grid")


class SpatialHistogram(Displayed):
    """Boxes with noisy counts, answering range counts under uniformity inside a box.

    The output of the baselines :func:`uniform_grid` (UG) and
    :func:`~.adaptive_grid.adaptive_grid` (AG), and the leaves of a
    :class:`SpatialRelease`.  One with a report is a release: :meth:`save`
    writes it as a release directory laid out as PrivTree's (``report.json``,
    ``leaves.csv``), which ``dpgpu evaluate`` judges and :meth:`load` (or
    :func:`dpgpu.load_release`) reads back; ``.to_pandas()`` and ``.plot()``
    give the frame and the plot of a PrivTree release
    (:mod:`dpgpu.notebook`).  One made by hand, without a report, refuses
    them and a summary (InvalidParameter); its ``repr`` says it has no report.

    Parameters
    ----------
    lo, hi : (L, d) float arrays
        Corners of the boxes: finite, with ``0 < hi - lo < inf`` in every dimension.
    counts : (L,) array
        Noisy counts.
    report : dict, optional
        What a release of these boxes states (:func:`uniform_grid`'s: the
        parameters, ``private`` -- false when the domain was taken from the
        data --, ``epsilon``, ``delta``, the domain and the ledger).
    columns : sequence of str, optional
        Names of the dimensions (default ``x0, x1, ...``), as
        :func:`privtree_spatial` takes them: they name the columns of
        ``leaves.csv``.

    Attributes
    ----------
    report : dict or None
        ``report``.
    columns : list of str
        The dimensions' names.

    Raises
    ------
    InvalidParameter
        Corners of different shapes, a box that is not finite or has no
        width, or bad ``columns``.
    """

    def __init__(self, lo: Any, hi: Any, counts: Any, report: dict | None = None, *,
                 columns: Sequence[str] | None = None):
        self.report = report
        self.lo = np.asarray(lo, dtype=np.float64)
        self.hi = np.asarray(hi, dtype=np.float64)
        self.counts = np.asarray(counts)
        if self.lo.ndim != 2 or self.lo.shape != self.hi.shape or \
                self.counts.shape != self.lo.shape[:1]:
            raise InvalidParameter("lo, hi, counts: need (L, d), (L, d) and (L,) arrays")
        with np.errstate(over="ignore", invalid="ignore"):
            width = self.hi - self.lo
        if not np.all(np.isfinite(width) & (width > 0)):
            raise InvalidParameter("lo, hi: every box needs finite lo < hi with a finite "
                                   "width in every dimension")
        self.columns = _column_names(None, columns, self.lo.shape[1])

    def __repr__(self) -> str:
        if isinstance(self.report, dict):
            return super().__repr__()
        return f"SpatialHistogram(no report, leaves={len(self)})"

    def _repr_html_(self) -> str | None:
        return super()._repr_html_() if isinstance(self.report, dict) else None

    def _sizes(self) -> dict[str, int]:
        return {"leaves": len(self)}

    def _facts(self) -> dict:
        self.check_report("it has no summary")
        return super()._facts()

    def check_report(self, refused: str) -> None:
        """Refuse a histogram without a release report: what it guarantees is unknown.

        Parameters
        ----------
        refused : str
            What is refused, for the message (``"it is not saved"``).

        Raises
        ------
        InvalidParameter
            For a histogram made by hand, or the ``.leaves`` of a PrivTree
            release (whose own methods are to be used).
        """
        if not isinstance(self.report, dict) or not self.report.get("mechanism"):
            raise InvalidParameter("report: this SpatialHistogram has no release report (it "
                                   "was made by hand, or it is the .leaves of a PrivTree "
                                   "release: use that release's own methods), so what it "
                                   f"guarantees is unknown; {refused}")

    def save(self, out_dir: Any, *, force: bool = False) -> Any:
        """Write the release directory: ``report.json`` and ``leaves.csv``.

        ``leaves.csv`` has the columns of a PrivTree release's
        (:meth:`SpatialRelease.save`): ``lo_<column>``, ``hi_<column>`` for
        each of :attr:`columns` and the noisy ``count`` (an integer, or a
        float as ``repr`` writes it, which reads back exactly).  The report
        is :attr:`report` with ``parameters.columns`` set to :attr:`columns`,
        which ``dpgpu evaluate`` and :meth:`load` read.  The directory is
        written atomically (:class:`dpgpu.release.ReleaseWriter`).

        Parameters
        ----------
        out_dir : str or path-like
            The release directory; its folder must exist.
        force : bool
            Replace an existing release directory.

        Returns
        -------
        pathlib.Path
            ``out_dir``.

        Raises
        ------
        InvalidParameter
            A histogram without a report (one made by hand: its privacy is
            unknown), or ``force`` not a bool.
        InputError
            As :meth:`SpatialRelease.save`: an existing ``out_dir`` without
            ``force``, one that may not be replaced, or a folder of
            ``out_dir`` that does not exist.
        """
        self.check_report("it is not saved")
        report = {**self.report,
                  "parameters": {**self.report.get("parameters", {}), "columns": self.columns}}
        with ReleaseWriter(out_dir, force=force) as rel:
            self.write_leaves(rel, self.columns)
            return rel.finish(report)

    @classmethod
    def load(cls, release_dir: Any) -> "SpatialHistogram":
        """Read the leaves of a spatial release directory back (any spatial mechanism).

        Parameters
        ----------
        release_dir : str or path-like
            A directory written by :meth:`save` or :meth:`SpatialRelease.save`
            (or ``dpgpu privtree-spatial``): ``report.json`` naming the
            columns (``parameters.columns``) and the domain, and ``leaves.csv``.

        Returns
        -------
        SpatialHistogram
            The boxes and counts of ``leaves.csv`` (int64 for the mechanisms
            of :data:`INTEGER_COUNTS`, float64 for AG's), with the report
            read back (:func:`dpgpu.release.read_report`) and the columns;
            :meth:`range_count` answers as the saved object did.

        Raises
        ------
        InputError
            Not a release directory, a report without columns or bounds,
            no ``leaves.csv`` or a malformed one (naming the file and line).
        InvalidParameter
            ``release_dir`` is not a str or path-like.
        """
        from ...eval.evaluate import LEAVES, read_leaves, spatial_layout  # noqa: PLC0415
        from ...release import release_path  # noqa: PLC0415 - evaluate imports this module
        from ...report import read_release_report  # noqa: PLC0415

        d = release_path(release_dir, "release_dir")
        report = read_release_report(d)
        if not (d / LEAVES).is_file():
            raise InputError(f"{d}: not a spatial release (no {LEAVES})")
        columns, _ = spatial_layout(report, d)
        lo, hi, counts = read_leaves(d / LEAVES, columns)
        if report.get("mechanism") in INTEGER_COUNTS and np.array_equal(counts, np.round(counts)):
            counts = counts.astype(np.int64)  # saved again, they are written as integers
        try:
            return cls(lo, hi, counts, report, columns=columns)
        except InvalidParameter as exc:
            raise InputError(f"{d / LEAVES}: {exc}") from None

    def write_leaves(self, rel: ReleaseWriter, columns: Sequence[str]) -> None:
        """Write ``leaves.csv`` into a release being written: a row per box.

        Parameters
        ----------
        rel : dpgpu.release.ReleaseWriter
            The release.
        columns : sequence of str
            The dimensions' names, for the header (``lo_<c>``, ``hi_<c>``
            per dimension, then ``count``).
        """
        header = [f"{side}_{c}" for c in columns for side in ("lo", "hi")] + ["count"]
        count = int if np.issubdtype(self.counts.dtype, np.integer) else \
            (lambda n: repr(float(n)))
        rows = ([*(v for j in range(len(columns)) for v in (repr(float(a[j])),
                                                             repr(float(b[j])))), count(n)]
                for a, b, n in zip(self.lo, self.hi, self.counts))
        with open(rel.path("leaves.csv"), "w", encoding="utf-8", newline="\n") as f:
            f.write(",".join(header) + "\n")
            for row in rows:
                f.write(",".join(str(x) for x in row) + "\n")

    def __len__(self) -> int:
        return int(self.counts.shape[0])

    def range_count(self, lo: Any, hi: Any) -> np.ndarray:
        """Estimated points in each query box ``[lo, hi]``.

        Each box contributes ``count * volume(box & query) / volume(box)``, so
        a query that covers every box returns the sum of their counts.

        Parameters
        ----------
        lo, hi : (Q, d) or (d,) array of float
            The queries' lower and upper corners, finite, ``lo <= hi``
            coordinate by coordinate.

        Returns
        -------
        numpy.ndarray of float64
            ``Q`` estimates (one for a single ``(d,)`` query).

        Raises
        ------
        InvalidParameter
            ``lo`` or ``hi`` of another shape than the other or than
            ``(Q, d)``, not finite real numbers, or a query with ``lo > hi``.
        """
        qlo, qhi = (self._corners(v, name) for v, name in ((lo, "lo"), (hi, "hi")))
        if qlo.shape != qhi.shape:
            raise InvalidParameter(f"lo, hi: {qlo.shape[0]} and {qhi.shape[0]} query corners; "
                                   "give one of each per query")
        wrong = np.flatnonzero(np.any(qlo > qhi, axis=1))
        if wrong.size:
            raise InvalidParameter(f"lo, hi: query {wrong[0]} has lo > hi "
                                   f"({qlo[wrong[0]].tolist()} > {qhi[wrong[0]].tolist()})")
        width = self.hi - self.lo
        c = self.counts.astype(np.float64)
        out = np.zeros(qlo.shape[0])
        step = max(1, 2 ** 22 // max(len(self), 1))
        for s in range(0, qlo.shape[0], step):
            frac = np.ones((min(step, qlo.shape[0] - s), len(self)))
            for j in range(self.lo.shape[1]):
                ov = np.minimum(qhi[s:s + step, j, None], self.hi[None, :, j]) - \
                    np.maximum(qlo[s:s + step, j, None], self.lo[None, :, j])
                frac *= np.clip(ov, 0, None) / width[None, :, j]
            out[s:s + step] = frac @ c
        return out

    def _corners(self, values: Any, name: str) -> np.ndarray:
        """Query corners ``values`` as a ``(Q, d)`` array (see :meth:`range_count`)."""
        d = self.lo.shape[1]
        need = f"{name}: expected query corners, a finite ({d},) or (Q, {d}) array"
        corners = _coordinates(values, need)
        if corners.ndim not in (1, 2) or corners.shape[-1] != d:
            raise InvalidParameter(f"{need}, got shape {corners.shape}")
        return corners.reshape(-1, d)


class SpatialRelease(Displayed):
    """The output of :func:`privtree_spatial`.

    Attributes
    ----------
    leaves : SpatialHistogram
        Leaf boxes with noisy counts.
    nodes : list of dict
        Per depth: ``lo``, ``hi``, ``leaf`` flags and noisy ``count`` (sums of leaves).
    columns : list of str
    report : dict
    """

    def __init__(self, leaves: SpatialHistogram, nodes: list[dict], columns: list[str],
                 report: dict):
        self.leaves, self.nodes, self.columns, self.report = leaves, nodes, columns, report

    def _sizes(self) -> dict[str, int]:
        return {"leaves": len(self.leaves)}

    def range_count(self, lo: Any, hi: Any) -> np.ndarray:
        """Range-count estimates from the leaves (:meth:`SpatialHistogram.range_count`).

        Parameters
        ----------
        lo, hi : (Q, d) or (d,) array of float
            The queries' corners.

        Returns
        -------
        numpy.ndarray of float64
            One estimate per query.

        Raises
        ------
        InvalidParameter
            ``lo`` or ``hi`` of another shape than the other or than
            ``(Q, d)``, not finite real numbers, or a query with ``lo > hi``.
        """
        return self.leaves.range_count(lo, hi)

    def save(self, out_dir: Any, *, force: bool = False) -> Any:
        """Write the release directory: report.json, leaves.csv and tree.json.

        Parameters
        ----------
        out_dir : str or path-like
            The release directory; its folder must exist.
        force : bool
            Replace an existing release directory.

        Returns
        -------
        pathlib.Path
            ``out_dir``.

        Raises
        ------
        InputError
            As :meth:`dpgpu.mechanisms.ngram.NGramRelease.save`: an existing
            ``out_dir`` without ``force``, or one that may not be replaced
            (:func:`dpgpu.release.check_release_target`), or a folder of
            ``out_dir`` that does not exist.
        """
        with ReleaseWriter(out_dir, force=force) as rel:
            self.leaves.write_leaves(rel, self.columns)
            rel.write_json("tree.json", {"columns": self.columns,
                                         "fanout": self.report["split_test"]["beta"],
                                         "levels": self.nodes})
            return rel.finish(self.report)


def grow(points: Any, lo: Any, hi: Any, point_node: Any, first_id: int, test: SplitTest, *,
         k: int, max_depth: int, max_nodes: int, backend: Any,
         data: Partitions | None = None) -> list[SpatialLevel]:
    """Grow PrivTrees from the root boxes ``lo, hi`` (one per tree), level by level.

    ``point_node`` gives each point's root; several roots make a forest of
    independent trees (used by the audit).  A node's noise identity is
    ``first_id`` plus its position in its depth (:func:`.core.level_ids`).
    A node is halved at ``mid = lo + (hi - lo) / 2`` (finite for a finite
    width); one that cannot be halved in the dimensions of its depth
    (:func:`halvable`), or at ``max_depth``, is a leaf without a split
    test, so every box has a positive width.
    The points and their current nodes live in the partitions of ``data``
    (:func:`dpgpu.scale.partitions.partition_points`, all in root 0;
    without it, one partition in this process holding ``points`` and
    ``point_node``): each level's node counts are summed over the partitions
    and each partition moves its own points down; every split decision and
    its noise stay here.
    """
    be = get_backend(backend)
    xp = be.xp
    if data is None:
        data = LocalPartitions([(points, point_node.astype(xp.int64))], [None])
    share = (lambda a: a) if isinstance(data, LocalPartitions) else to_numpy
    d = lo.shape[1]
    beta = 2 ** k
    levels: list[SpatialLevel] = []
    total = lo.shape[0]
    for depth in range(max_depth + 1):
        ids = level_ids(lo.shape[0], first_id, xp)
        counts = xp.asarray(data.sum(_node_counts, lo.shape[0]))
        dims = [(depth * k + j) % d for j in range(k)]
        mid = lo + (hi - lo) / 2
        split = xp.zeros(lo.shape[0], dtype=bool)
        if depth < max_depth:
            tested = xp.flatnonzero(halvable(lo, hi, mid, dims))
            split[tested] = test.decide(counts[tested], depth, ids[tested], be)
        n_split = int(split.sum())
        if total + n_split * beta > max_nodes:
            log.warning("privtree: the public cap of %d nodes cuts the tree at depth %d",
                        max_nodes, depth)
            split = xp.zeros(lo.shape[0], dtype=bool)
            n_split = 0
        levels.append(SpatialLevel(lo, hi, ids, split, counts))
        if n_split == 0:
            break
        rows = xp.flatnonzero(split)
        child_start = xp.full(lo.shape[0], -1, dtype=xp.int64)
        child_start[rows] = xp.arange(n_split, dtype=xp.int64) * beta
        code = xp.tile(xp.arange(beta, dtype=xp.int64), n_split)
        clo, chi = xp.repeat(lo[rows], beta, axis=0), xp.repeat(hi[rows], beta, axis=0)
        cmid = xp.repeat(mid[rows], beta, axis=0)
        for j, dim in enumerate(dims):
            upper = ((code >> j) & 1) == 1
            clo[:, dim] = xp.where(upper, cmid[:, dim], clo[:, dim])
            chi[:, dim] = xp.where(upper, chi[:, dim], cmid[:, dim])
        data = data.map(_descend, share(split), share(child_start), share(mid), dims)
        lo, hi = clo, chi
        total += n_split * beta
    return levels


def halvable(lo: Any, hi: Any, mid: Any, dims: list[int]) -> Any:
    """Which boxes have ``lo < mid < hi`` in each of ``dims``: both halves have a positive width.

    Parameters
    ----------
    lo, hi, mid : (n, d) float arrays
        Corners and halving points of the boxes (one namespace).
    dims : list of int
        The dimensions a split at this depth halves.

    Returns
    -------
    (n,) bool array
    """
    xp = K.array_module(lo)
    return xp.all((lo[:, dims] < mid[:, dims]) & (mid[:, dims] < hi[:, dims]), axis=1)


def _node_counts(state: tuple, n_nodes: int) -> np.ndarray:
    """Points of one partition in each node of the current level (host int64)."""
    _, node = state
    return to_numpy(K.array_module(node).bincount(node, minlength=n_nodes))


def _descend(state: tuple, split: Any, child_start: Any, mid: Any, dims: list[int]) -> tuple:
    """One partition's points of the split nodes, each with its child node."""
    pts, node = state
    xp = K.array_module(node)
    split, child_start, mid = xp.asarray(split), xp.asarray(child_start), xp.asarray(mid)
    keep = split[node]
    pts, node = pts[keep], node[keep]
    code = xp.zeros(node.shape[0], dtype=xp.int64)
    for j, dim in enumerate(dims):
        code += (pts[:, dim] >= mid[node, dim]).astype(xp.int64) << j
    return pts, child_start[node] + code


def calibrate(epsilon: float, fanout: int):
    """Budgets and noise of a spatial release: half of ``epsilon`` for the tree (Corollary 1,
    one path per point), half for the leaf counts (sensitivity 1).

    Returns
    -------
    eps_tree, eps_count : float
    params : SplitParams
    count_scale : float
        Discrete Laplace scale of a leaf count, rounded up.
    """
    eps_tree, eps_count = split_budget(epsilon, [1, 1])
    return eps_tree, eps_count, split_params(eps_tree, fanout), laplace_scale(eps_count)


def leaf_noisy_counts(levels: list[SpatialLevel], key: Any, scale: float, backend: Any):
    """Noisy counts of every level's leaves: a list of (leaf rows, noisy counts), host arrays."""
    sampler = DiscreteLaplace(scale)
    xp = get_backend(backend).xp
    out = []
    for depth, lvl in enumerate(levels):
        rows = xp.flatnonzero(~lvl.split)
        noise = sampler.sample(key, lvl.ids[rows], tag=depth % 2 ** 32, backend=backend) \
            if rows.size else xp.zeros(0, dtype=xp.int64)
        out.append((to_numpy(rows), to_numpy(lvl.counts[rows] + noise)))
    return out


def grid_edges(domain: np.ndarray, m: int):
    """The grid lines of ``m`` equal cells a side over ``domain``, as a function.

    Parameters
    ----------
    domain : (d, 2) array of float
        Lower and upper bound of each dimension.
    m : int
        Cells a side.

    Returns
    -------
    callable
        ``edge(x)``: the coordinates of grid line ``x`` (counted in cells from
        the lower bound, fractions allowed, shaped ``(..., d)``); line ``m`` is
        the upper bound itself, so the last boxes end exactly on the domain.
    """
    width = (domain[:, 1] - domain[:, 0]) / m
    return lambda x: np.where(x >= m, domain[:, 1], domain[:, 0] + x * width)


def grid_cells(x: np.ndarray, t: np.ndarray, edge: Any, last: Any) -> np.ndarray:
    """The grid cell of each coordinate, by the same edges the release reports.

    Parameters
    ----------
    x : array of float
        Coordinates, each inside the domain of its grid.
    t : array of float
        The same in cell widths from the grid's origin: the first guess.
    edge : callable
        ``edge(k)``: the lower edge of cell ``k`` (element-wise, shaped as
        ``x``), the very expression the released boxes are built from.
    last : int or array of int
        The last cell index (``cells - 1``), element-wise or for all.

    Returns
    -------
    array of int64
        ``k`` with ``edge(k) <= x < edge(k + 1)`` (the last cell also keeps its
        upper edge), so that a point on a cell edge is counted in the box that
        contains it, whatever the rounding of a division would say.
    """
    k = np.clip(np.floor(t), 0, last).astype(np.int64)
    k -= (k > 0) & (x < edge(k))
    return k + ((k < last) & (x >= edge(k + 1)))


def check_fanout(fanout: int | None, d: int) -> int:
    """The fanout of a tree over ``d`` dimensions: ``2**k``, ``1 <= k <= min(d, MAX_SPLIT_DIMS)``.

    Parameters
    ----------
    fanout : int or None
        Children per split; None for the default, ``2**min(d, MAX_SPLIT_DIMS)``.
    d : int
        Number of dimensions (columns), at least 1.

    Returns
    -------
    int

    Raises
    ------
    InvalidParameter
        Naming ``fanout`` (and the columns that bound it), when it is not such
        a power of two.
    """
    most = 2 ** min(d, MAX_SPLIT_DIMS)
    if fanout is None:
        return most
    fanout = check_positive_int(fanout, "fanout", minimum=2)
    if fanout & (fanout - 1) or fanout > most:
        raise InvalidParameter(
            f"fanout: must be a power of two from 2 to {most} (2**min(d, {MAX_SPLIT_DIMS}) for "
            f"d = {d} columns: every split makes fanout boxes), got {fanout}")
    return fanout


def check_bounds(bounds: Any, d: int) -> np.ndarray:
    """``bounds`` as a ``(d, 2)`` float array: ``lo < hi``, ``hi - lo`` finite, per dimension.

    Parameters
    ----------
    bounds : array-like
        ``d`` pairs ``(lo, hi)``, flat or nested.
    d : int
        Number of dimensions.

    Returns
    -------
    numpy.ndarray of float64, shape (d, 2)

    Raises
    ------
    InvalidParameter
        Naming ``bounds``: not ``d`` pairs of numbers, a bound that is not
        finite, ``lo >= hi``, or a width ``hi - lo`` above the largest float.
    """
    try:
        b = np.asarray(bounds, dtype=np.float64).reshape(d, 2)
    except (TypeError, ValueError):
        raise InvalidParameter(f"bounds: expected {d} (lo, hi) pairs, got {bounds!r}") from None
    with np.errstate(over="ignore", invalid="ignore"):
        width = b[:, 1] - b[:, 0]
    if not (np.all(np.isfinite(b)) and np.all(b[:, 0] < b[:, 1])):
        raise InvalidParameter("bounds: need finite lo < hi in every dimension")
    if not np.all(np.isfinite(width)):
        raise InvalidParameter(f"bounds: the width hi - lo must be finite (at most "
                               f"{np.finfo(np.float64).max:g}) in every dimension")
    return b


#: Why a release whose domain is the data's bounding box is not private.
DATA_DOMAIN_WARNING = ("the domain is the data's bounding box: the release reveals it and is "
                       "NOT differentially private; pass bounds")


def _domain(pts: np.ndarray, bounds: Any) -> tuple[np.ndarray, bool]:
    """The public domain ``(d, 2)`` and whether it was taken from the data (logged)."""
    d = pts.shape[1]
    if bounds is not None:
        return check_bounds(bounds, d), False
    log.warning("privtree: %s", DATA_DOMAIN_WARNING)
    if pts.shape[0] == 0:
        return np.tile([0.0, 1.0], (d, 1)), True
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    # a flat dimension gets the width max(1, |lo|) (above lo, or below it at the float limit)
    flat, span = hi <= lo, np.maximum(1.0, np.abs(lo))
    with np.errstate(over="ignore"):
        up, down, width = lo + span, lo - span, hi - lo
    lo = np.where(flat & ~np.isfinite(up), down, lo)
    hi = np.where(flat & np.isfinite(up), up, hi)
    if not np.all(np.isfinite(width)):
        raise InvalidParameter("bounds: the data's bounding box is wider than the largest "
                               "float; pass bounds")
    return np.column_stack([lo, hi]), True


def _points(points: Any) -> np.ndarray:
    """``points`` as a finite ``(n, d)`` float64 array, or an InvalidParameter naming them."""
    need = "points: expected a finite (n, d) array of coordinates"
    pts = _coordinates(points, need)
    if pts.ndim != 2 or pts.shape[1] < 1:
        raise InvalidParameter(need)
    return pts


def _column_names(points: Any, columns: Sequence[str] | None, d: int) -> list[str]:
    """The names of ``d`` dimensions: ``columns`` checked
    (:func:`~dpgpu.data.points.check_columns`), else a DataFrame's column names, else
    ``x0, x1, ...``."""
    if columns is None and hasattr(points, "columns"):  # a DataFrame names its columns
        columns = [str(c) for c in points.columns]
    return [f"x{j}" for j in range(d)] if columns is None else check_columns(columns, d)


def _coordinates(values: Any, need: str) -> np.ndarray:
    """``values`` as a finite float64 array (:func:`~dpgpu.validation.check_real_array`);
    InvalidParameter ``need`` (and why) otherwise."""
    try:
        array = check_real_array(values, "values")
    except InvalidParameter:
        raise InvalidParameter(f"{need} (real numbers, every row of the same length)") from None
    if not np.all(np.isfinite(array)):
        raise InvalidParameter(f"{need} (NaN and infinity are not coordinates)")
    return array


@engine_run()
def privtree_spatial(points: Any, epsilon: float, *, bounds: Any = None,
                     columns: Sequence[str] | None = None, fanout: int | None = None,
                     seed: int | None = None, backend: Any = None, max_depth: int = MAX_DEPTH,
                     max_nodes: int = MAX_NODES, outside: str = "error", engine: str = "local",
                     client: Any = None) -> SpatialRelease:
    """Release a PrivTree spatial decomposition with noisy leaf counts (Section 3).

    Parameters
    ----------
    points : (n, d) array of float
        One point per individual.
    epsilon : float
        Privacy budget; half for the tree, half for the leaf counts.
    bounds : (d, 2) array, optional
        Public domain, ``(lo, hi)`` per dimension, ``hi - lo`` finite; a point
        on its edge is inside, one outside follows ``outside``.  Default: the
        data's bounding box (not private: the report says ``"private": false``,
        epsilon infinite, delta 1, and a warning is logged).
    columns : sequence of str, optional
        Names of the dimensions (default: a DataFrame's column names, else
        ``x0, x1, ...``): ``d`` distinct
        non-empty strings without a comma, a double quote or a line break
        (``leaves.csv`` names its columns after them; a string is refused,
        not split into characters).
    fanout : int, optional
        ``2**k`` with ``1 <= k <= min(d, MAX_SPLIT_DIMS)`` (default
        ``2**min(d, MAX_SPLIT_DIMS)``: at most 1024 children a split).
    seed : int, optional
        Reproducible noise (recorded as seeded).
    backend : str or Backend, optional
    max_depth, max_nodes : int
        Public caps (module doc).
    outside : {"error", "drop", "clip"}
        A point outside ``bounds``: an error (:class:`PointsOutside`, raised
        before any budget is charged), left out, or clipped onto the domain's
        edge.  A warning without a count is logged when points are left out
        or clipped; the report records only this choice.
    engine : {"local", "dask"}
        ``"dask"`` counts the points of each level's nodes over Dask
        partitions of the points (:mod:`dpgpu.scale.partitions`); the split
        decisions and all noise stay here, so the release is the same.
    client : dask.distributed.Client or str, optional
        With ``engine="dask"``: a client, or a scheduler's address; default: a
        local cluster of two workers.  One the run opens is closed when it ends.

    Returns
    -------
    SpatialRelease

    Raises
    ------
    InvalidParameter
        A bad parameter, named; without ``bounds``, also when the data's
        bounding box is wider than the largest float.
    PointsOutside
        An :class:`~dpgpu.errors.InputError` naming ``bounds``: with
        ``outside="error"``, a point lies outside ``bounds``.
    """
    pts = _points(points)
    d = pts.shape[1]
    epsilon = check_positive_real(epsilon, "epsilon")
    fanout = check_fanout(fanout, d)
    k = fanout.bit_length() - 1
    max_depth = check_positive_int(max_depth, "max_depth")
    max_nodes = check_positive_int(max_nodes, "max_nodes")
    outside = check_choice(outside, "outside", OUTSIDE)
    engine = check_engine(engine, client=client)
    names = _column_names(points, columns, d)
    dom, from_data = _domain(pts, bounds)
    pts = inside_points(pts, dom, outside, names)  # before anything is charged
    be = get_backend(backend)
    xp = be.xp
    t0 = time.perf_counter()
    eps_tree, eps_count, params, count_scale = calibrate(epsilon, fanout)
    ledger = PrivacyLedger(epsilon, max_sampling_delta=1e-6, seed=seed)
    tree_step = ledger.charge("privtree: tree structure", eps_tree,
                              sampling_delta=sampling_delta(LAPLACE_TV_BOUND, max_nodes, eps_tree),
                              hint="max_nodes")
    count_step = ledger.charge("privtree: leaf counts", eps_count,
                               sampling_delta=sampling_delta(LAPLACE_TV_BOUND, max_nodes,
                                                             eps_count), hint="max_nodes")
    test = SplitTest(params, tree_step.key)
    levels = grow(None, xp.asarray(dom[None, :, 0]), xp.asarray(dom[None, :, 1]), None,
                  0, test, k=k, max_depth=max_depth,
                  max_nodes=max_nodes, backend=be,
                  data=partition_points(pts, engine, client, backend=be.name))
    tree_s = time.perf_counter() - t0
    noisy = leaf_noisy_counts(levels, count_step.key, count_scale, be)
    nodes, leaf_lo, leaf_hi, leaf_c = _summaries(levels, noisy, fanout)
    leaves = SpatialHistogram(np.concatenate(leaf_lo), np.concatenate(leaf_hi),
                              np.concatenate(leaf_c), columns=names)
    report = {
        "mechanism": "privtree-spatial",
        "paper": "Zhang, Xiao, Xie: PrivTree: A Differentially Private Algorithm for "
                 "Hierarchical Decompositions (SIGMOD 2016), Section 3",
        "parameters": {"epsilon": epsilon, "fanout": fanout, "max_depth": max_depth,
                       "max_nodes": max_nodes, "outside": outside, "columns": names},
        **_privacy(ledger, dom, from_data),
        "split_test": params.to_dict(),
        "count_noise": {"epsilon": eps_count, "scale": count_scale},
        "backend": be.name, "device": be.device_name(), "engine": engine,
        "tree": {"nodes_per_depth": [int(lvl.lo.shape[0]) for lvl in levels],
                 "leaves": len(leaves), "split_tests": test.draws},
        "timings": {"tree_s": round(tree_s, 4),
                    "total_s": round(time.perf_counter() - t0, 4)},
    }
    return SpatialRelease(leaves, nodes, names, report)


def _privacy(ledger: PrivacyLedger, domain: np.ndarray, from_data: bool) -> dict[str, Any]:
    """A spatial release's report entries on its privacy: the domain, and not private
    (epsilon infinite, delta 1, a warning) when the domain was taken from the data."""
    entries = {"private": not from_data,
               "domain": {"bounds": domain.tolist(), "from_data": from_data},
               "epsilon": math.inf if from_data else ledger.spent_epsilon,
               "delta": 1.0 if from_data else ledger.spent_delta,
               "ledger": ledger.to_dict(), "seeded": ledger.seeded}
    if from_data:
        entries["warning"] = DATA_DOMAIN_WARNING
    return entries


def _summaries(levels: list[SpatialLevel], noisy: list, beta: int):
    """Per-depth node summaries (noisy counts: leaves', inner sums) and the leaf arrays."""
    sums = [np.zeros(lvl.lo.shape[0], dtype=np.int64) for lvl in levels]
    for s, (rows, c) in zip(sums, noisy):
        s[rows] = c
    for depth in range(len(levels) - 2, -1, -1):
        inner = np.flatnonzero(to_numpy(levels[depth].split))
        sums[depth][inner] = sums[depth + 1].reshape(-1, beta).sum(axis=1)
    nodes, lo, hi, cnt = [], [], [], []
    for lvl, s, (rows, c) in zip(levels, sums, noisy):
        lvl_lo, lvl_hi = to_numpy(lvl.lo), to_numpy(lvl.hi)
        nodes.append({"lo": lvl_lo.tolist(), "hi": lvl_hi.tolist(),
                      "leaf": (~to_numpy(lvl.split)).tolist(), "count": s.tolist()})
        lo.append(lvl_lo[rows])
        hi.append(lvl_hi[rows])
        cnt.append(c)
    return nodes, lo, hi, cnt


def uniform_grid(points: Any, epsilon: float, *, n: int, bounds: Any = None,
                 seed: int | None = None, backend: Any = None,
                 outside: str = "error", columns: Sequence[str] | None = None
                 ) -> SpatialHistogram:
    """UG: noisy counts of an ``m**d`` grid, ``m = (n epsilon / 10) ** (2 / (d + 2))``.

    Parameters
    ----------
    points : (n, d) array of float
    epsilon : float
    n : int
        The dataset size, taken as public (as in the paper's baseline).
    bounds : (d, 2) array, optional
        Public domain.  Default: the data's bounding box, which makes the
        grid **not** private: its report says ``"private": false``, epsilon
        infinite and delta 1, with a warning, which is also logged.
    seed : int, optional
    backend : str or Backend, optional
    outside : {"error", "drop", "clip"}
        A point outside ``bounds``, as in :func:`privtree_spatial`.
    columns : sequence of str, optional
        Names of the dimensions, as in :func:`privtree_spatial` (default: a
        DataFrame's column names, else ``x0, x1, ...``): the histogram's
        ``columns``, which :meth:`SpatialHistogram.save` writes.

    Returns
    -------
    SpatialHistogram
        The grid cells with noisy counts (scale ``1 / epsilon``), and a
        ``report``: mechanism ``"uniform-grid"``, the parameters (``m`` the
        cells per dimension), ``private``, ``epsilon``, ``delta``, the
        domain, the ledger, ``seeded``, ``backend`` and ``device``.
        ``.save(path)`` writes it as a release directory.

    Raises
    ------
    InvalidParameter
        A bad parameter, named.
    PointsOutside
        With ``outside="error"``, a point outside ``bounds``.
    """
    pts = _points(points)
    d = pts.shape[1]
    epsilon = check_positive_real(epsilon, "epsilon")
    n = check_positive_int(n, "n")
    outside = check_choice(outside, "outside", OUTSIDE)
    names = _column_names(points, columns, d)
    dom, from_data = _domain(pts, bounds)
    pts = inside_points(pts, dom, outside, names)
    m = max(1, int(round((n * epsilon / 10) ** (2 / (d + 2)))))
    ledger = PrivacyLedger(epsilon, max_sampling_delta=1e-6, seed=seed)
    step = ledger.charge("ug: grid counts", epsilon,
                         sampling_delta=sampling_delta(LAPLACE_TV_BOUND, m ** d, epsilon))
    be = get_backend(backend)
    width = (dom[:, 1] - dom[:, 0]) / m
    edge = grid_edges(dom, m)
    cell = grid_cells(pts, (pts - dom[:, 0]) / width, edge, m - 1)
    flat = np.ravel_multi_index(tuple(cell.T), (m,) * d) if pts.size else \
        np.zeros(0, dtype=np.int64)
    counts = np.bincount(flat, minlength=m ** d)
    noise = to_numpy(DiscreteLaplace(laplace_scale(epsilon)).sample(
        step.key, be.xp.arange(m ** d, dtype=be.xp.int64), tag=0, backend=be))
    grid = np.stack(np.unravel_index(np.arange(m ** d), (m,) * d), axis=1)
    lo, hi = edge(grid), edge(grid + 1)
    report = {"mechanism": "uniform-grid",
              "parameters": {"epsilon": epsilon, "n": n, "m": m, "outside": outside},
              **_privacy(ledger, dom, from_data),
              "backend": be.name, "device": be.device_name()}
    return SpatialHistogram(lo, hi, counts + noise, report, columns=names)

