"""Integer noise samplers with fixed work per draw, vectorised over identities.

Every sampler maps the words that :meth:`NoiseKey.words` gives one identity
(a fixed number of 64-bit words, depending on the parameter only) to one
value through table searches with a fixed number of steps: no rejection
loop, no data- or noise-dependent control flow, no floating point on the
released values.  So the same key and identity give the same value on NumPy
and CuPy and in any batch.

Samplers
--------
:class:`DiscreteLaplace`
    Two-sided geometric ``P(X = k) = (1-q)/(1+q) q**|k|``, ``q = exp(-1/scale)``,
    drawn as the difference of two independent geometrics ``G1 - G2``.  A
    geometric's binary digits are independent (digit ``i`` is 1 with
    probability ``q**(2**i) / (1 + q**(2**i))``), so any block of ``m``
    consecutive digits starting at ``j`` is independent of the others and
    follows a geometric law of ratio ``q**(2**j)`` truncated to ``[0, 2**m)``.
    Each block of at most 8 digits is drawn with one word and a 255-entry CDF
    table; digits above ``K`` are dropped, where ``K`` is the least with
    ``q**(2**K) <= 2**-80``.  Work per draw: ``2 * ceil(K / 8)`` words and
    ``2K`` search steps, ``K = ceil(log2(55.5 * scale))`` (about 20 for scale
    1e4, 58 at the largest scale, 2**52) -- any scale, fixed work.
:class:`DiscreteGaussian`
    ``P(X = k) ∝ exp(-k**2 / (2 sigma**2))``, one word and a CDF table over
    ``[-T, T]`` with ``T = ceil(10.53 sigma)``, whose dropped tail has mass
    below ``2**-80`` times ``max(2, 0.2 sigma)``.  The table holds
    ``2T`` words padded to ``2**b - 1``, so ``sigma <= 2**17`` (then 32 MiB,
    built once per sigma in a few seconds).
:class:`Bernoulli`
    One word compared with ``round(p * 2**64)`` (exact for floats ``p >= 2**-11``).

Distance from exact, and how it is accounted
--------------------------------------------
Each sampler's ``tv_per_draw`` is a rigorous upper bound on the
total-variation distance between one implemented draw (given uniform words)
and the ideal distribution: the exactly computed rounding error of the 64-bit
tables (:func:`~dpgpu.privacy.tables.cdf_table`), the dropped tail, and a
``2**-150`` allowance for the fixed-point weights.  It is about ``1e-17``
per discrete-Laplace draw and below ``1e-13`` per discrete-Gaussian draw for
``sigma <= 1e5`` (:data:`LAPLACE_TV_BOUND` bounds every discrete-Laplace
scale at once).  If a step releasing ``n`` noisy values is
``(epsilon, delta)``-DP with ideal noise, it is
``(epsilon, delta + (1 + e**epsilon) * n * tv_per_draw)``-DP as implemented;
:func:`dpgpu.privacy.calibration.sampling_delta` computes that term and the
ledger charges it (``sampling_delta``) with every step.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from ..backend import Backend, backend_of, get_backend
from ..errors import InvalidParameter
from ..validation import check_positive_int, check_positive_real, check_probability
from .rng import NoiseKey, by_chunks
from .tables import WEIGHT_SLACK, CdfTable, cdf_table, exp_neg_fixed, gaussian_half_weights, \
    geometric_weights, search

#: Largest discrete-Laplace scale (keeps every digit below 2**62).
MAX_LAPLACE_SCALE = 2.0 ** 52
#: Largest discrete-Gaussian sigma (table memory and build time).
MAX_GAUSSIAN_SIGMA = 2.0 ** 17
#: Block width (digits per word) of the geometric sampler.
_BLOCK_BITS = 8
#: The dropped tails have mass below 2**-_TAIL_BITS.
_TAIL_BITS = 80
#: A bound on ``DiscreteLaplace(scale).tv_per_draw`` valid for every scale, for
#: mechanisms that draw at many scales: at most 8 blocks per geometric; each
#: threshold is off by at most 2**-64 (rounding, or the cap at 2**64 - 1), so
#: each of a block's 2**8 outcomes by at most 2**-63, and its TV by 2**(8-64).
LAPLACE_TV_BOUND = 2 * (8 * (2.0 ** (_BLOCK_BITS - 64) + WEIGHT_SLACK) + 2.0 ** -_TAIL_BITS)


class _Sampler:
    """Shared driver: chunks identities, fetches words, applies ``_from_words``."""

    n_words: int
    tv_per_draw: float
    dtype: Any = np.int64

    def sample(self, key: NoiseKey, identities: Any, *, tag: int,
               backend: "str | Backend | None" = None):
        """Draw one value per identity.

        Parameters
        ----------
        key : NoiseKey
            The release's key.
        identities : (M,) integer array
            What is noised (gram keys, node codes, user ids); the value for an
            identity depends on ``(key, tag, identity)`` only.
        tag : int
            Domain tag in ``[0, 2**32)`` of this quantity within the release.
        backend : str, Backend or None
            Where to compute; by default where ``identities`` live.

        Returns
        -------
        (M,) array of the backend's namespace
        """
        return by_chunks(identities, backend, self.dtype, lambda part, be: self._from_words(
            key.words(part, tag, self.n_words, backend=be), be.xp))

    def _from_words(self, words: Any, xp: Any):
        raise NotImplementedError


class DiscreteLaplace(_Sampler):
    """Discrete Laplace noise ``P(X = k) ∝ exp(-|k| / scale)`` (see module doc).

    ``scale = sensitivity / epsilon`` gives ``epsilon``-DP for an integer
    query of that L1 sensitivity (ratio of neighbouring probabilities
    ``<= exp(sensitivity / scale)``), up to ``tv_per_draw``.

    Parameters
    ----------
    scale : float
        Finite, ``> 0`` and ``<= 2**52``.
    """

    def __init__(self, scale: float) -> None:
        self.scale = _check_at_most(check_positive_real(scale, "scale"), MAX_LAPLACE_SCALE,
                                    "scale")
        self._blocks, tv_geometric = _geometric_plan(self.scale)
        self.n_words = 2 * len(self._blocks)
        self.tv_per_draw = 2 * tv_geometric

    def _from_words(self, words: Any, xp: Any):
        half = len(self._blocks)
        return self._geometric(words[:half], xp) - self._geometric(words[half:], xp)

    def _geometric(self, words: Any, xp: Any):
        g = xp.zeros(words.shape[1], dtype=xp.int64)
        for (shift, table), w in zip(self._blocks, words):
            g += (search(table.on(xp), w, xp) - table.pad) << shift
        return g


class DiscreteGaussian(_Sampler):
    """Discrete Gaussian noise ``P(X = k) ∝ exp(-k**2 / (2 sigma**2))`` (see module doc).

    Its privacy for an integer query of L2 sensitivity ``Delta`` is given
    exactly by :func:`dpgpu.privacy.calibration.discrete_gaussian_delta`
    (Canonne, Kamath & Steinke 2020, Theorem 7), up to ``tv_per_draw``;
    calibrate with :func:`~dpgpu.privacy.calibration.discrete_gaussian_sigma`.

    Parameters
    ----------
    sigma : float
        Finite, ``> 0`` and ``<= 2**17``.
    """

    n_words = 1

    def __init__(self, sigma: float) -> None:
        self.sigma = _check_at_most(check_positive_real(sigma, "sigma"), MAX_GAUSSIAN_SIGMA,
                                    "sigma")
        self._table, self._t = _gaussian_plan(self.sigma)
        self.tv_per_draw = self._table.tv

    def _from_words(self, words: Any, xp: Any):
        return search(self._table.on(xp), words[0], xp) - (self._table.pad + self._t)


class Bernoulli(_Sampler):
    """Bernoulli(``p``) bits: ``u < round(p * 2**64)`` for one word ``u``.

    ``tv_per_draw = |round(p * 2**64) / 2**64 - p|``, computed exactly from
    the binary value of ``p``: 0 for every float ``p >= 2**-11`` (then
    ``p * 2**64`` is an integer), at most ``2**-65`` below.

    Parameters
    ----------
    p : float
        Probability in ``(0, 1)``.
    """

    n_words = 1
    dtype = np.bool_

    def __init__(self, p: float) -> None:
        self.p = check_probability(p, "p")
        exact = Fraction(self.p)
        self._threshold = min(round(exact * 2 ** 64), 2 ** 64 - 1)
        self.tv_per_draw = float(abs(Fraction(self._threshold, 2 ** 64) - exact)) * (1 + 2 ** -50)

    def _from_words(self, words: Any, xp: Any):
        return words[0] < xp.uint64(self._threshold)

    def sample_packed(self, key: NoiseKey, identities: Any, *, tag: int,
                      backend: "str | Backend | None" = None):
        """One bit per identity, eight identities to a ChaCha block.

        The bit of identity ``i`` compares its word of
        :meth:`NoiseKey.packed_words` (word ``i % 8`` of identity ``i // 8``)
        with the threshold of :meth:`sample`.  Distinct identities use
        distinct words, so the bits are independent Bernoulli(``p``), at an
        eighth of the ChaCha work when the identities come in ascending runs.
        A tag drawn this way must not also be drawn with :meth:`sample`
        (identity ``8 j`` here and ``j`` there share a word).

        Parameters and return value are those of :meth:`sample`.
        """
        be = backend_of(identities, backend)
        return key.packed_words(identities, tag, backend=be) < be.xp.uint64(self._threshold)


def sample_discrete_laplace(scale: float, size: "int | tuple[int, ...]", *,
                            seed: int | None = None, backend: "str | Backend | None" = None):
    """Draw discrete Laplace noise ``P(X = k) ∝ exp(-|k| / scale)``.

    Parameters
    ----------
    scale : float
        Finite and ``> 0`` (at most ``2**52``).
    size : int or tuple of int
        Output shape.
    seed : int or None
        ``None`` (default) uses a fresh key from :mod:`secrets`; an integer
        makes the draw reproducible (and not secret).
    backend : str, Backend or None
        ``"numpy"``, ``"cupy"`` or None (see :func:`dpgpu.backend.get_backend`).

    Returns
    -------
    int64 array of shape ``size``; element ``i`` (in C order) is the draw for
    identity ``i``, the same on every backend for the same seed.
    """
    return _sample_public(DiscreteLaplace(scale), "discrete_laplace", size, seed, backend)


def sample_discrete_gaussian(sigma: float, size: "int | tuple[int, ...]", *,
                             seed: int | None = None, backend: "str | Backend | None" = None):
    """Draw discrete Gaussian noise ``P(X = k) ∝ exp(-k**2 / (2 sigma**2))``.

    Parameters are as in :func:`sample_discrete_laplace`, with ``sigma``
    finite, ``> 0`` and at most ``2**17``.

    Returns
    -------
    int64 array of shape ``size``.
    """
    return _sample_public(DiscreteGaussian(sigma), "discrete_gaussian", size, seed, backend)


def _sample_public(sampler: _Sampler, name: str, size: Any, seed: int | None,
                   backend: Any):
    shape = (size,) if not isinstance(size, tuple) else size
    if not shape:
        raise InvalidParameter("size: expected a positive integer or a tuple of them, got ()")
    shape = tuple(check_positive_int(s, "size") for s in shape)
    key = NoiseKey.from_seed_or_fresh(seed).derive(f"sample_{name}")
    be = get_backend(backend)
    ids = be.xp.arange(math.prod(shape), dtype=be.xp.int64)
    return sampler.sample(key, ids, tag=0, backend=be).reshape(shape)


def _check_at_most(value: float, limit: float, name: str) -> float:
    if not value <= limit:
        raise InvalidParameter(f"{name}: must be at most {limit:g}, got {value!r}")
    return value


@lru_cache(maxsize=64)
def _geometric_plan(scale: float) -> tuple[tuple[tuple[int, CdfTable], ...], float]:
    """Digit blocks ``(shift, table)`` of a geometric of ratio ``exp(-1/scale)``; its TV bound."""
    inv_scale = 1 / Fraction(scale)
    n_digits = 1
    while Fraction(2 ** n_digits) * inv_scale < _TAIL_BITS * Fraction(math.log(2)) * (1 + 2 ** -40):
        n_digits += 1
    n_blocks = -(-n_digits // _BLOCK_BITS)
    widths = [n_digits // n_blocks + (i < n_digits % n_blocks) for i in range(n_blocks)]
    blocks, tv, shift = [], 0.0, 0
    for width in widths:
        ratio = exp_neg_fixed(2 ** shift * inv_scale)
        table = cdf_table(geometric_weights(ratio, 2 ** width))
        blocks.append((shift, table))
        tv += table.tv
        shift += width
    return tuple(blocks), tv + 2.0 ** -_TAIL_BITS


@lru_cache(maxsize=16)
def _gaussian_plan(sigma: float) -> tuple[CdfTable, int]:
    """The CDF table over ``[-T, T]`` and ``T``; ``table.tv`` includes the dropped tail."""
    t = math.ceil(sigma * math.sqrt(2 * _TAIL_BITS * math.log(2)) * (1 + 2 ** -40))
    half = gaussian_half_weights(sigma, t)
    table = cdf_table(half[:0:-1] + half)
    # P(|X| > T) <= 2 sum_{k>T} exp(-k^2/2s^2) (the normaliser is >= 1); the terms
    # shrink at least geometrically with ratio exp(-(T+1)/s^2).
    s2 = sigma * sigma
    tail = 2 * math.exp(-(t + 1) ** 2 / (2 * s2)) / -math.expm1(-(t + 1) / s2)
    return CdfTable(table.thresholds, table.pad, table.tv + tail * (1 + 2 ** -30)), t
