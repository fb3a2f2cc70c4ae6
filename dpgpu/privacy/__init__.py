"""The privacy core: keyed randomness, integer noise, calibration, the budget ledger.

Every random draw dpgpu makes for a release comes from here:

* :mod:`~dpgpu.privacy.rng` -- ChaCha20 keyed by a per-release
  :class:`NoiseKey`, counters derived from what is noised (identity + tag);
* :mod:`~dpgpu.privacy.samplers` -- fixed-work discrete Laplace, discrete
  Gaussian and Bernoulli samplers with an accounted distance from exact;
* :mod:`~dpgpu.privacy.calibration` -- Laplace scales, the analytic
  Gaussian, DPSU thresholds (DPNE Theorem 2.1);
* :mod:`~dpgpu.privacy.ledger` -- one :class:`PrivacyLedger` per run,
  charged before each output exists.

The statistical audit harness lives in :mod:`dpgpu.audit`.
"""

from .calibration import (analytic_gaussian_sigma, discrete_gaussian_delta,
                          discrete_gaussian_sigma, dpsu_gaussian, dpsu_threshold,
                          gaussian_delta, integer_threshold, laplace_scale, laplace_scales,
                          sampling_delta, split_gaussian_sigma)
from .ledger import PrivacyLedger, Step, split_budget
from .rng import NoiseKey
from .samplers import (LAPLACE_TV_BOUND, Bernoulli, DiscreteGaussian, DiscreteLaplace,
                       sample_discrete_gaussian, sample_discrete_laplace)

__all__ = [
    "NoiseKey",
    "DiscreteLaplace", "DiscreteGaussian", "Bernoulli", "LAPLACE_TV_BOUND",
    "sample_discrete_laplace", "sample_discrete_gaussian",
    "laplace_scale", "laplace_scales", "gaussian_delta", "analytic_gaussian_sigma",
    "discrete_gaussian_delta",
    "discrete_gaussian_sigma",
    "dpsu_threshold", "dpsu_gaussian", "split_gaussian_sigma", "integer_threshold",
    "sampling_delta",
    "PrivacyLedger", "Step", "split_budget",
]
