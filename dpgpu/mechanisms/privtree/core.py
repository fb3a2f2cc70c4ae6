"""The PrivTree split test on an integer grid (Zhang, Xiao, Xie, SIGMOD'16, Section 3).

A node ``v`` at depth ``depth(v)`` with a monotone integer score ``c(v)``
(point count, or the PST score of Eq. 13) is split iff

    b(v) + Z > theta,   b(v) = max(theta - delta, c(v) - depth(v) * delta),   (Eq. 8)

with ``Z`` discrete Laplace of scale ``lambda`` (``P[Z = k] ∝ exp(-|k| / lambda)``)
drawn from the keyed samplers at the node's identity.  ``theta = 0``.

Why integer noise keeps Theorem 3.1
-----------------------------------
The proof of Theorem 3.1 uses two facts about the noise.  (a) Lemma 3.1:
``rho(x) = ln P[x + Z > theta] / P[x - 1 + Z > theta]`` is at most ``1/lambda``
for ``x < theta + 1`` and at most ``exp((theta + 1 - x) / lambda) / lambda``
above.  For discrete Laplace and integers ``x, theta`` (``q = exp(-1/lambda)``):
``P[Z > t] = q**(t+1) / (1 + q)`` for ``t >= 0``, so ``rho(x) = 1/lambda``
exactly for ``x <= theta + 1``; for ``u = x - theta >= 2``,
``rho = ln((1 + q - q**u) / (1 + q - q**(u-1))) <= q**(u-1) (1 - q) <= q**(u-1) / lambda``,
which is the bound of Lemma 3.1.  (b) The leaf term:
``P[Z <= t] >= q P[Z <= t + 1]`` (``P[k + 1] >= q P[k]``), i.e. ``>= -1/lambda``.
With an integer score, integer ``theta`` and an **integer** ``delta``, the
biased scores of neighbouring datasets are integers obeying Eq. 10 and
Eq. 11, and the sum in the proof is at most
``(1/lambda) (2 e**gamma - 1) / (e**gamma - 1)`` with ``gamma = delta / lambda``.
That bound decreases in ``gamma``, so rounding ``delta = lambda ln(beta)`` **up**
to an integer keeps Corollary 1: ``lambda = (2 beta - 1) / (beta - 1) * s / epsilon``
gives ``epsilon``-DP when one individual changes the scores of at most ``s``
root-to-leaf paths by one each (``s = 1`` for points; ``s = l_top`` for
sequences, Theorem 4.1).  The clamp (``max(theta - delta, ...)``) is what
makes Eq. 10 hold; without it every low node on the path costs ``1/lambda``.

Noise identities: a node's noise is keyed by a tag (its depth) and its
position in its depth's list of nodes (plus a base that tells the trees of an
audit's batches apart, :func:`level_ids`).  That list is the children of the
split nodes of the depth above, in their order, so it is fixed by released
decisions only and is the same on NumPy, CuPy and Dask; positions are
distinct, so no two nodes of a depth share a draw (path hashes, used before,
could collide).  A caller may test only some nodes of a depth (the others
being leaves by a public rule, such as a box too narrow to halve): each
tested node still draws at its own position, so the draws do not depend on
which nodes are tested.
"""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...ops import keys as K
from ...privacy import DiscreteLaplace, laplace_scale
from ...validation import check_positive_int, check_positive_real

#: The split threshold (Section 3.4: theta = 0).
THETA = 0


@dataclass(frozen=True)
class SplitParams:
    """Public parameters of the split test.

    Attributes
    ----------
    epsilon : float
        Budget of the tree.
    beta : int
        Fanout.
    sensitivity : int
        Root-to-leaf paths one individual can move (1 per point, ``l_top`` per sequence).
    lam : float
        Noise scale ``(2 beta - 1) / (beta - 1) * sensitivity / epsilon`` (Corollary 1).
    delta_exact : float
        The paper's ``lam * ln(beta)``.
    delta : int
        The least integer at or above the exact ``lambda ln(beta)``, taken
        past the float ``delta_exact``'s rounding error: the decay on the
        integer grid (module doc).
    theta : int
        Split threshold, 0.
    """

    epsilon: float
    beta: int
    sensitivity: int
    lam: float
    delta_exact: float
    delta: int
    theta: int = THETA

    def to_dict(self) -> dict[str, Any]:
        """The public parameters, JSON-ready."""
        return {"epsilon": self.epsilon, "beta": self.beta, "sensitivity": self.sensitivity,
                "lambda": self.lam, "delta_paper": self.delta_exact, "delta": self.delta,
                "theta": self.theta}


def split_params(epsilon: float, beta: int, sensitivity: int = 1, *,
                 name: str = "sensitivity") -> SplitParams:
    """Corollary 1 / Theorem 4.1 parameters for a tree of fanout ``beta``.

    Parameters
    ----------
    epsilon : float
        Budget of the tree (finite, > 0).
    beta : int
        Fanout, at least 2.
    sensitivity : int
        Paths one individual can touch (``l_top`` for sequences).
    name : str
        The parameter that sets ``sensitivity``, for the messages.

    Returns
    -------
    SplitParams

    Raises
    ------
    InvalidParameter
        A bad parameter, named; a noise scale past the samplers' limit
        (:func:`~dpgpu.privacy.laplace_scale`).
    """
    epsilon = check_positive_real(epsilon, "epsilon")
    beta = check_positive_int(beta, "beta", minimum=2)
    sensitivity = check_positive_int(sensitivity, name)
    # rounded up: never below Corollary 1
    lam = laplace_scale(epsilon, sensitivity, name=name,
                        factor=Fraction(2 * beta - 1, beta - 1))
    exact = lam * math.log(beta)
    # delta >= lam ln(beta) exactly: log and product are each within an ulp or so, so the
    # ceiling is taken of a bound above the float (a product just below an integer that the
    # exact value passes would otherwise give a delta one too small)
    return SplitParams(epsilon, beta, sensitivity, lam, exact,
                       max(1, math.ceil(exact * (1 + 2 ** -50))))


def biased_scores(scores: Any, depth: int, params: SplitParams, *, clamp: bool = True):
    """``b(v) = max(theta - delta, c(v) - depth * delta)`` (Eq. 8), int64, same namespace."""
    xp = K.array_module(scores)
    b = scores.astype(xp.int64) - int(depth) * params.delta
    return xp.maximum(b, params.theta - params.delta) if clamp else b


def split_probability(biased: Any, params: SplitParams) -> np.ndarray:
    """Closed form of ``P[b + Z > theta]`` for integer biased scores ``b``."""
    t = params.theta - np.asarray(biased, dtype=np.int64)
    q = math.exp(-1 / params.lam)
    with np.errstate(over="ignore"):
        upper = np.exp(-(np.maximum(t, 0) + 1) / params.lam) / (1 + q)
        lower = 1 - np.exp(np.minimum(t, 0) / params.lam) / (1 + q)
    return np.where(t >= 0, upper, lower)


class SplitTest:
    """Draws split decisions for whole levels at once.

    Parameters
    ----------
    params : SplitParams
    key : NoiseKey
        The tree step's key.
    clamp : bool
        Apply Eq. 8's clamp (always, outside tests of the audit).
    """

    def __init__(self, params: SplitParams, key: Any, *, clamp: bool = True):
        self.params, self.key, self.clamp = params, key, clamp
        self.sampler = DiscreteLaplace(params.lam)
        self.draws = 0

    def decide(self, scores: Any, depth: int, identities: Any, backend: Any):
        """Boolean split mask of the tested nodes of a level.

        Parameters
        ----------
        scores : (n,) int array
            The tested nodes' scores.
        depth : int
            Their depth (the noise tag).
        identities : (n,) uint64 array
            Their noise identities (:func:`level_ids`, or a subset of them),
            in the namespace of ``scores``.
        backend : str or Backend

        Returns
        -------
        (n,) bool array
        """
        self.draws += int(scores.shape[0])
        if scores.shape[0] == 0:
            return scores.astype(bool)
        noise = self.sampler.sample(self.key, identities, tag=depth % 2 ** 32, backend=backend)
        return biased_scores(scores, depth, self.params, clamp=self.clamp) + noise \
            > self.params.theta


def level_ids(n_nodes: int, first_id: int, xp: Any):
    """Noise identities of the ``n_nodes`` nodes of one depth: ``first_id`` plus their positions."""
    return xp.arange(n_nodes, dtype=xp.uint64) + np.uint64(first_id)
