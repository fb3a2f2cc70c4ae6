"""PrivTree's split test: Corollary 1 parameters, the clamp, Lemma 3.1 on the integer grid,
and the split probability against its closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgpu import InvalidParameter
from dpgpu.mechanisms.privtree.core import (SplitTest, biased_scores, level_ids, split_params,
                                            split_probability)
from dpgpu.privacy import NoiseKey


def test_corollary_1_and_theorem_4_1_parameters():
    p = split_params(0.5, 4)  # quadtree, half of epsilon = 1
    assert p.lam == pytest.approx(7 / 3 / 0.5)
    assert p.delta_exact == pytest.approx(p.lam * math.log(4))
    assert p.delta == math.ceil(p.delta_exact) and p.theta == 0
    q = split_params(0.1 / 18, 18, 20)  # MSNBC PST: beta = |I| + 1, lambda scaled by l_top
    assert q.lam == pytest.approx(35 / 17 * 20 / (0.1 / 18))
    assert q.delta == math.ceil(q.lam * math.log(18))


@pytest.mark.parametrize("kwargs", [{"epsilon": float("nan")}, {"epsilon": 0},
                                    {"epsilon": -1.0}, {"beta": 1}, {"sensitivity": 0}])
def test_invalid_parameters(kwargs):
    args = {"epsilon": 1.0, "beta": 4, **kwargs}
    with pytest.raises(InvalidParameter, match=next(iter(kwargs))):
        split_params(**args)


def test_delta_is_at_least_lambda_ln_beta_where_the_float_product_rounds_down(monkeypatch):
    """lambda = 1.4426950408889636: lambda * log(2) is 1.0 in floats, 1 + 5.6e-17 exactly."""
    from decimal import Decimal, getcontext  # noqa: PLC0415

    from dpgpu.mechanisms.privtree import core  # noqa: PLC0415

    getcontext().prec = 60
    lam = 1.4426950408889636
    assert lam * math.log(2) == 1.0 and Decimal(lam) * Decimal(2).ln() > 1
    monkeypatch.setattr(core, "laplace_scale", lambda *args, **kwargs: lam)
    assert split_params(1.0, 2).delta == 2


def test_biased_score_clamp():
    p = split_params(1.0, 4)  # delta = ceil(7/3 ln 4) = 4
    assert p.delta == 4
    c = np.array([0, 5, 9, 100])
    assert biased_scores(c, 2, p).tolist() == [-4, -3, 1, 92]
    assert biased_scores(c, 2, p, clamp=False).tolist() == [-8, -3, 1, 92]
    assert biased_scores(c, 0, p).tolist() == [0, 5, 9, 100]


@pytest.mark.parametrize("lam", [0.4, 1.0, 2.5, 40.0])
def test_lemma_3_1_holds_for_discrete_laplace(lam):
    """rho(x) = ln P[x + Z > 0] / P[x - 1 + Z > 0] <= rho_top(x) on integers (core doc)."""
    p = split_params(1.0, 4)
    p = type(p)(p.epsilon, p.beta, 1, lam, lam * math.log(4), math.ceil(lam * math.log(4)))
    x = np.arange(-60, 200)
    rho = np.log(split_probability(x, p) / split_probability(x - 1, p))
    top = np.where(x < 1, 1 / lam, np.exp((1 - x) / lam) / lam)
    assert np.all(rho <= top * (1 + 1e-9) + 1e-15)


def test_theorem_3_1_bound_on_worst_paths():
    """Exact privacy loss of every split path with counts C+1 vs C stays within epsilon."""
    for beta in (2, 4, 18):
        for eps in (0.3, 1.0, 3.0):
            p = split_params(eps, beta)
            for c in range(0, 60, 3):
                b1 = np.array([biased_scores(np.array([c + 1]), i, p)[0] for i in range(40)])
                b0 = np.array([biased_scores(np.array([c]), i, p)[0] for i in range(40)])
                loss = np.cumsum(np.log(split_probability(b1, p) / split_probability(b0, p)))
                assert loss.max() <= eps * (1 + 1e-9)


@pytest.mark.parametrize("b", [-4, -1, 0, 1, 3, 9])
def test_split_probability_matches_closed_form(b):
    p = split_params(1.0, 4)
    n = 200_000
    test = SplitTest(p, NoiseKey.from_seed(17))
    ids = level_ids(n, 123, np)
    # score c at depth 0 has b = c (no clamp at the root when c >= -delta)
    got = test.decide(np.full(n, b), 0, ids, "numpy").mean()
    want = float(split_probability(np.array([b]), p)[0])
    assert abs(got - want) < 5 * math.sqrt(want * (1 - want) / n)
    assert test.draws == n


def test_delta_gives_split_probability_one_over_2_beta():
    """Section 3.4: a node at theta - delta splits with probability <= 1 / (2 beta)."""
    for beta in (2, 4, 16):
        p = split_params(0.7, beta)
        assert split_probability(np.array([-p.delta]), p)[0] <= 1 / (2 * beta) + 1e-12


def test_level_identities_are_positions_plus_a_base():
    ids = level_ids(5, 2 ** 40, np)
    assert ids.dtype == np.uint64 and ids.tolist() == [2 ** 40 + i for i in range(5)]
