"""The audit harness passes correct mechanisms and rejects broken ones."""

from __future__ import annotations

import numpy as np
import pytest

from dpgpu.audit import AuditResult, audit, threshold_events
from dpgpu.errors import InvalidParameter
from dpgpu.privacy import Bernoulli, DiscreteGaussian, DiscreteLaplace, NoiseKey, \
    discrete_gaussian_delta, laplace_scale

TRIALS = 200_000
EVENTS = threshold_events(range(-3, 5))


def laplace_count(epsilon_used: float, scale_factor: float = 1.0):
    """Release a count with discrete Laplace noise, all trials at once (identity = trial)."""
    sampler = DiscreteLaplace(laplace_scale(epsilon_used) * scale_factor)

    def mechanism(count, seed, trials):
        return count + sampler.sample(NoiseKey.from_seed(seed), np.arange(trials), tag=0,
                                      backend="numpy")

    return mechanism


def test_correct_discrete_laplace_count_passes():
    result = audit(laplace_count(1.0), 0, 1, EVENTS, epsilon=1.0, trials=TRIALS, seed=1,
                   batch=True)
    assert isinstance(result, AuditResult)
    assert result.passed, result.summary()
    assert 0.9 < result.epsilon_lower_bound <= 1.0      # tight, and below the claim
    assert "PASSED" in str(result)


def test_release_claiming_epsilon_1_but_using_1_5_is_rejected():
    result = audit(laplace_count(1.5), 0, 1, EVENTS, epsilon=1.0, trials=TRIALS, seed=2,
                   batch=True)
    assert not result.passed
    assert result.epsilon_lower_bound > 1.3
    assert "FAILED" in result.summary()


def test_noise_scale_times_0_7_is_rejected():
    result = audit(laplace_count(1.0, scale_factor=0.7), 0, 1, EVENTS, epsilon=1.0,
                   trials=TRIALS, seed=3, batch=True)
    assert not result.passed, result.summary()


def test_one_call_per_trial_with_predicates():
    sampler = DiscreteLaplace(1.0)

    def mechanism(count, seed):
        return int(count + sampler.sample(NoiseKey.from_seed(seed), np.arange(1), tag=0,
                                          backend="numpy")[0])

    events = [lambda out: out >= 1, lambda out: out <= 0]
    first = audit(mechanism, 0, 1, events, epsilon=1.0, trials=2000, seed=4)
    assert first.passed and first.counts.shape == (2, 2)
    again = audit(mechanism, 0, 1, events, epsilon=1.0, trials=2000, seed=4)
    np.testing.assert_array_equal(first.counts, again.counts)   # seeded audits reproduce


def leaky_count(leak_probability: float):
    """A noisy count that, with some probability, publishes the exact count."""
    noise = DiscreteLaplace(1.0)
    leak = Bernoulli(leak_probability)

    def mechanism(count, seed, trials):
        key, ids = NoiseKey.from_seed(seed), np.arange(trials)
        noisy = count + noise.sample(key, ids, tag=0, backend="numpy")
        return np.where(leak.sample(key, ids, tag=1, backend="numpy"), 1000 + count, noisy)

    return mechanism


def test_delta_is_audited_too():
    events = threshold_events([1000.5, 0.5])
    honest = audit(leaky_count(0.02), 0, 1, events, epsilon=1.0, delta=0.03, trials=TRIALS,
                   seed=5, batch=True)
    assert honest.passed, honest.summary()
    cheat = audit(leaky_count(0.02), 0, 1, events, epsilon=1.0, delta=0.01, trials=TRIALS,
                  seed=6, batch=True)
    assert not cheat.passed
    assert cheat.delta_lower_bound > 0.01
    assert cheat.worst_direction == "d1/d0"


def test_vector_outputs_with_index():
    events = threshold_events([0.5], index=1)
    batch = np.array([[5, 0], [5, 1], [5, 2]])
    np.testing.assert_array_equal(events(batch), [[False, True], [True, False], [True, False]])
    np.testing.assert_array_equal(events(np.array([9, 1])), [True, False])


def test_batch_shape_is_checked():
    from dpgpu.errors import InvalidParameter  # noqa: PLC0415

    with pytest.raises(InvalidParameter, match="events"):
        audit(lambda d, seed, n: np.zeros(n - 1), 0, 1, EVENTS, epsilon=1.0, trials=10,
              batch=True)


@pytest.mark.slow
def test_discrete_gaussian_count_large_audit():
    """(epsilon, delta) audit of a discrete-Gaussian count with 2M trials per side."""
    sigma, epsilon = 2.0, 1.0
    delta = discrete_gaussian_delta(sigma, epsilon)

    def gaussian_count(s):
        sampler = DiscreteGaussian(s)
        return lambda count, seed, n: count + sampler.sample(
            NoiseKey.from_seed(seed), np.arange(n), tag=0, backend="numpy")

    events = threshold_events(range(-6, 8))
    ok = audit(gaussian_count(sigma), 0, 1, events, epsilon, delta, trials=2_000_000, seed=7,
               batch=True)
    assert ok.passed, ok.summary()
    broken = audit(gaussian_count(sigma * 0.7), 0, 1, events, epsilon, delta,
                   trials=2_000_000, seed=8, batch=True)
    assert not broken.passed, broken.summary()


@pytest.mark.parametrize("thresholds", [[], [0.5, float("nan")], [[1, 2]], ["a"], [[1], [2, 3]]])
def test_threshold_events_refuse_what_is_not_a_list_of_numbers(thresholds):
    """Regression: ['a'] and ragged lists raised NumPy's ValueError."""
    with pytest.raises(InvalidParameter, match="^thresholds: expected a non-empty list of "
                                               "finite numbers"):
        threshold_events(thresholds)
