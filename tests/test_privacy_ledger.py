"""The budget ledger: charge before release, refuse overspending, compose, serialise."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from dpgpu.errors import BudgetExceeded, InvalidParameter
from dpgpu.privacy import DiscreteLaplace, PrivacyLedger, split_budget


def test_sequential_steps_add_up_and_serialise():
    ledger = PrivacyLedger(1.0, 1e-6, seed=5)
    ledger.charge("level 1", 0.25)
    ledger.charge("level 2", 0.25, 5e-7, sampling_delta=1e-15)
    assert ledger.spent_epsilon == 0.5
    assert ledger.remaining_epsilon == 0.5
    assert ledger.remaining_delta == pytest.approx(5e-7)
    report = ledger.to_dict()
    json.dumps(report)
    assert report["seeded"] is True
    assert [s["name"] for s in report["steps"]] == ["level 1", "level 2"]
    assert report["steps"][1] == {"index": 1, "name": "level 2", "epsilon": 0.25,
                                  "delta": 5e-7, "sampling_delta": 1e-15,
                                  "composition": "sequential"}
    assert report["spent"] == {"epsilon": 0.5, "delta": 5e-7, "sampling_delta": 1e-15}


def test_overspend_raises_and_records_nothing():
    ledger = PrivacyLedger(1.0)
    ledger.charge("a", 0.75)
    with pytest.raises(BudgetExceeded, match="nothing was released") as info:
        ledger.charge("b", 0.5)
    assert info.value.exit_status == 3
    assert ledger.spent_epsilon == 0.75 and len(ledger.steps()) == 1
    with pytest.raises(BudgetExceeded):
        ledger.charge("c", 0.1, 1e-9)              # a pure run has no delta to give
    ledger.charge("d", 0.25)                       # exactly the rest is fine
    assert ledger.remaining_epsilon == 0.0


def test_sampling_delta_has_its_own_allowance():
    ledger = PrivacyLedger(1.0, max_sampling_delta=1e-12)
    ledger.charge("a", 0.5, sampling_delta=6e-13)
    with pytest.raises(BudgetExceeded, match="sampling_delta"):
        ledger.charge("b", 0.1, sampling_delta=6e-13)


def test_accounting_is_exact_in_rationals():
    # 0.1 + 0.2 exceeds 0.3 in the floats' exact binary values: refused, never rounded away.
    ledger = PrivacyLedger(0.3)
    ledger.charge("a", 0.1)
    with pytest.raises(BudgetExceeded):
        ledger.charge("b", 0.2)
    # split_budget gives parts whose exact sum fits.
    parts = split_budget(1.0, [0.025, 0.025, 0.05, 0.45, 0.45])
    ledger = PrivacyLedger(1.0)
    for i, eps in enumerate(parts):
        ledger.charge(f"part {i}", eps)
    assert ledger.spent_epsilon == pytest.approx(1.0)


def test_parallel_composition_charges_the_maximum():
    ledger = PrivacyLedger(1.0, 1e-5)
    step = ledger.charge_parallel("disjoint subtrees", [(0.5, 0.0), (0.75, 1e-6), (0.25, 0.0)])
    assert (step.epsilon, step.delta) == (0.75, 1e-6)
    assert ledger.spent_epsilon == 0.75
    entry = ledger.steps()[0]
    assert entry["composition"] == "parallel" and len(entry["parts"]) == 3
    with pytest.raises(BudgetExceeded):
        ledger.charge_parallel("too much", [(0.5, 0.0)])


def test_each_step_has_its_own_key_even_with_a_seed_and_the_same_name():
    ledger = PrivacyLedger(1.0, seed=1)
    a = ledger.charge("counts", 0.5)
    b = ledger.charge("counts", 0.5)
    ids = np.arange(100)
    noise = DiscreteLaplace(2.0)
    assert not np.array_equal(noise.sample(a.key, ids, tag=0, backend="numpy"),
                              noise.sample(b.key, ids, tag=0, backend="numpy"))
    # ... and the same seed reproduces the run
    again = PrivacyLedger(1.0, seed=1).charge("counts", 0.5)
    np.testing.assert_array_equal(noise.sample(a.key, ids, tag=0, backend="numpy"),
                                  noise.sample(again.key, ids, tag=0, backend="numpy"))


def test_unseeded_ledger_is_fresh():
    a, b = PrivacyLedger(1.0), PrivacyLedger(1.0)
    assert not a.seeded and a.to_dict()["seeded"] is False
    ids = np.arange(50)
    noise = DiscreteLaplace(10.0)
    assert not np.array_equal(noise.sample(a.charge("x", 1).key, ids, tag=0, backend="numpy"),
                              noise.sample(b.charge("x", 1).key, ids, tag=0, backend="numpy"))


@pytest.mark.parametrize("parts", [[], [(0.1,)], [0.5], "ab", [(0.1, float("nan"))]])
def test_parallel_parts_are_validated(parts):
    with pytest.raises(InvalidParameter):
        PrivacyLedger(1.0).charge_parallel("x", parts)


def test_zero_cost_step_and_empty_name_are_refused():
    with pytest.raises(InvalidParameter, match="epsilon"):
        PrivacyLedger(1.0).charge("free", 0.0, 0.0)
    with pytest.raises(InvalidParameter, match="name"):
        PrivacyLedger(1.0).charge("", 0.5)


def test_sampling_within_delta_keeps_the_release_total_at_most_delta():
    """Regression: DPNE's --delta was a cap on the mechanism only; the samplers' allowance
    (1e-9) came on top, so --delta 1e-20 released at a total delta of 2.47e-12."""
    ledger = PrivacyLedger(2.0, 1e-6, sampling_within_delta=True)
    assert ledger.max_sampling_delta == 1e-9                    # min(1e-9, delta / 100)
    assert Fraction(ledger.mechanism_delta) + Fraction(ledger.max_sampling_delta) <= Fraction(1e-6)
    ledger.charge("all", 2.0, ledger.mechanism_delta, sampling_delta=1e-9)
    assert Fraction(ledger.mechanism_delta) + Fraction(1e-9) <= Fraction(1e-6)
    assert ledger.spent_delta <= 1e-6 and ledger.remaining_delta == 0.0
    budget = ledger.to_dict()["budget"]
    assert budget["sampling_within_delta"] is True and budget["delta"] == 1e-6
    small = PrivacyLedger(2.0, 1e-20, sampling_within_delta=True)
    assert small.max_sampling_delta == pytest.approx(1e-22)     # delta / 100
    with pytest.raises(InvalidParameter, match=r"^delta: 1e-20 is too small for the samplers: "
                                               r"'all' needs sampling_delta=2\.47e-12.* needs "
                                               r"delta >= 2\.4[78]e-10; raise delta"):
        small.charge("all", 2.0, small.mechanism_delta, sampling_delta=2.47e-12)
    assert small.steps() == []
    with pytest.raises(InvalidParameter, match="delta"):       # no room for the allowance
        PrivacyLedger(1.0, 0.0, sampling_within_delta=True)
    # past the 1e-9 cap no delta makes room: that is epsilon's (or the draws') fault
    with pytest.raises(InvalidParameter, match=r"^epsilon: step 'all' needs sampling_delta=2e-09"):
        PrivacyLedger(2.0, 0.5, sampling_within_delta=True).charge("all", 1.0, 0.1,
                                                                   sampling_delta=2e-9)


def test_samplers_message_names_the_callers_options():
    """Regression: PFS2 was told to lower 'contribution, l_max, l_top', options it lacks."""
    ledger = PrivacyLedger(14.0, max_sampling_delta=1e-6)
    with pytest.raises(InvalidParameter, match=r"lower epsilon \(or that number, set by "
                                               r"max_candidates\)") as info:
        ledger.charge("pruning", 6.3, sampling_delta=1.2e-6, hint="max_candidates")
    assert "l_top" not in str(info.value) and ledger.steps() == []
    with pytest.raises(InvalidParameter, match=r"lower epsilon; nothing was released"):
        ledger.charge_parallel("pruning", [(6.3, 0.0)], sampling_delta=1.2e-6)
    # the same check, before any step, on a public bound of all of a run's steps
    ledger.check_sampling("all steps", 6.3, 1e-6, hint="max_candidates")
    with pytest.raises(InvalidParameter, match="'all steps' needs sampling_delta=1.1e-06"):
        ledger.check_sampling("all steps", 6.3, 1.1e-6, hint="max_candidates")
    assert ledger.steps() == [] and ledger.spent_epsilon == 0
