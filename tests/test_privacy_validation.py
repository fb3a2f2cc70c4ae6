"""Every public parameter of the privacy core rejects NaN, infinities, negatives and zero."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import dpgpu
import dpgpu.cli as cli
from dpgpu.audit import audit, threshold_events
from dpgpu.errors import InvalidParameter
from dpgpu.privacy import Bernoulli, DiscreteGaussian, DiscreteLaplace, NoiseKey, PrivacyLedger, \
    analytic_gaussian_sigma, discrete_gaussian_delta, discrete_gaussian_sigma, dpsu_gaussian, \
    dpsu_threshold, gaussian_delta, integer_threshold, laplace_scale, sample_discrete_gaussian, \
    sample_discrete_laplace, sampling_delta, split_budget, split_gaussian_sigma

NAN, INF = float("nan"), float("inf")


def _mech(d, seed):
    return d


# (parameter name, call with the value under test, whether 0 is a meaningful value)
CASES = [
    ("scale", lambda v: DiscreteLaplace(v), False),
    ("scale", lambda v: sample_discrete_laplace(v, 3, seed=1), False),
    ("size", lambda v: sample_discrete_laplace(1.0, v, seed=1), False),
    ("size", lambda v: sample_discrete_laplace(1.0, (2, v), seed=1), False),
    ("seed", lambda v: sample_discrete_laplace(1.0, 3, seed=v), True),
    ("sigma", lambda v: DiscreteGaussian(v), False),
    ("sigma", lambda v: sample_discrete_gaussian(v, 3, seed=1), False),
    ("size", lambda v: sample_discrete_gaussian(1.0, v, seed=1), False),
    ("seed", lambda v: sample_discrete_gaussian(1.0, 3, seed=v), True),
    ("p", lambda v: Bernoulli(v), False),
    ("seed", lambda v: NoiseKey.from_seed(v), True),
    ("tag", lambda v: NoiseKey.from_seed(1).words(np.arange(2), v, 1, backend="numpy"), True),
    ("n_words", lambda v: NoiseKey.from_seed(1).words(np.arange(2), 0, v, backend="numpy"),
     False),
    ("epsilon", lambda v: laplace_scale(v), False),
    ("sensitivity", lambda v: laplace_scale(1.0, v), False),
    ("sigma", lambda v: gaussian_delta(v, 1.0), False),
    ("epsilon", lambda v: gaussian_delta(1.0, v), False),
    ("sensitivity", lambda v: gaussian_delta(1.0, 1.0, v), False),
    ("epsilon", lambda v: analytic_gaussian_sigma(v, 1e-5), False),
    ("delta", lambda v: analytic_gaussian_sigma(1.0, v), False),
    ("sensitivity", lambda v: analytic_gaussian_sigma(1.0, 1e-5, v), False),
    ("sigma", lambda v: discrete_gaussian_delta(v, 1.0), False),
    ("epsilon", lambda v: discrete_gaussian_delta(1.0, v), False),
    ("sensitivity", lambda v: discrete_gaussian_delta(1.0, 1.0, v), False),
    ("epsilon", lambda v: discrete_gaussian_sigma(v, 1e-5), False),
    ("delta", lambda v: discrete_gaussian_sigma(1.0, v), False),
    ("sensitivity", lambda v: discrete_gaussian_sigma(1.0, 1e-5, v), False),
    ("sigma", lambda v: dpsu_threshold(v, 1e-5, 3), False),
    ("delta", lambda v: dpsu_threshold(1.0, v, 3), False),
    ("max_items", lambda v: dpsu_threshold(1.0, 1e-5, v), False),
    ("epsilon", lambda v: dpsu_gaussian(v, 1e-5, 3), False),
    ("delta", lambda v: dpsu_gaussian(1.0, v, 3), False),
    ("max_items", lambda v: dpsu_gaussian(1.0, 1e-5, v), False),
    ("sigma", lambda v: split_gaussian_sigma(v, [1, 2]), False),
    ("weights", lambda v: split_gaussian_sigma(1.0, [1, v]), False),
    ("rho", lambda v: integer_threshold(v), True),
    ("tv_per_draw", lambda v: sampling_delta(v, 10, 1.0), True),
    ("n_draws", lambda v: sampling_delta(1e-17, v, 1.0), True),
    ("epsilon", lambda v: sampling_delta(1e-17, 10, v), True),
    ("epsilon", lambda v: PrivacyLedger(v), False),
    ("delta", lambda v: PrivacyLedger(1.0, v), True),
    ("seed", lambda v: PrivacyLedger(1.0, seed=v), True),
    ("max_sampling_delta", lambda v: PrivacyLedger(1.0, max_sampling_delta=v), True),
    ("epsilon", lambda v: PrivacyLedger(1.0).charge("s", v, 1e-9 if v == 0 else 0.0), True),
    ("delta", lambda v: PrivacyLedger(1.0, 0.5).charge("s", 0.5, v), True),
    ("sampling_delta", lambda v: PrivacyLedger(1.0).charge("s", 0.5, sampling_delta=v), True),
    ("epsilon", lambda v: PrivacyLedger(1.0).charge_parallel("s", [(0.5, 0.0), (v, 0.0)]), True),
    ("total", lambda v: split_budget(v, [1, 2]), False),
    ("weights", lambda v: split_budget(1.0, [1, v]), False),
    ("epsilon", lambda v: audit(_mech, 0, 1, [lambda o: o > 0], v, trials=10), False),
    ("delta", lambda v: audit(_mech, 0, 1, [lambda o: o > 0], 1.0, v, trials=10), True),
    ("trials", lambda v: audit(_mech, 0, 1, [lambda o: o > 0], 1.0, trials=v), False),
    ("alpha", lambda v: audit(_mech, 0, 1, [lambda o: o > 0], 1.0, trials=10, alpha=v), False),
    ("seed", lambda v: audit(_mech, 0, 1, [lambda o: o > 0], 1.0, trials=10, seed=v), True),
    ("thresholds", lambda v: threshold_events([0, v]), True),
]
BAD = [NAN, INF, -INF, -1, -0.5]


@pytest.mark.parametrize("name, call, zero_ok", CASES, ids=[f"{c[0]}-{i}" for i, c in
                                                           enumerate(CASES)])
def test_bad_values_raise_invalid_parameter_naming_the_parameter(name, call, zero_ok):
    if name in ("rho", "thresholds"):       # any finite number is meaningful here
        bad = [NAN, INF, -INF]
    else:
        bad = BAD + ([] if zero_ok else [0, 0.0]) + [True, "1"]
        bad += [] if name == "seed" else [None]      # seed=None means a fresh key
    for value in bad:
        with pytest.raises(InvalidParameter, match=name):
            call(value)


@pytest.mark.parametrize("name, call", [
    ("p", lambda: Bernoulli(1.0)), ("delta", lambda: analytic_gaussian_sigma(1.0, 1.0)),
    ("delta", lambda: PrivacyLedger(1.0, 1.0)), ("alpha", lambda: audit(
        _mech, 0, 1, [lambda o: o > 0], 1.0, trials=10, alpha=1.0)),
    ("scale", lambda: DiscreteLaplace(2.0 ** 53)), ("sigma", lambda: DiscreteGaussian(2.0 ** 18)),
    ("tag", lambda: NoiseKey.from_seed(1).words(np.arange(2), 2 ** 32, 1, backend="numpy")),
    ("backend", lambda: sample_discrete_laplace(1.0, 3, backend="tpu")),
])
def test_upper_limits(name, call):
    with pytest.raises(InvalidParameter, match=name):
        call()


# --- the calibrate subcommand ---------------------------------------------------------

@pytest.fixture
def run_cli(monkeypatch, capsys):
    """Run ``dpgpu.cli.main`` in-process with the calibrate command registered."""
    if "calibrate" not in cli.COMMAND_MODULES:
        monkeypatch.setattr(cli, "COMMAND_MODULES", cli.COMMAND_MODULES + ("calibrate",))

    def run(*argv):
        try:
            status = cli.main(list(argv))
        except SystemExit as exc:        # argparse usage errors
            status = exc.code
        out, err = capsys.readouterr()
        return status, out, err

    return run


def test_calibrate_prints_values(run_cli):
    status, out, _ = run_cli("calibrate", "gaussian", "--epsilon", "1", "--delta", "1e-5")
    assert status == 0 and out.startswith("sigma 3.7306")
    status, out, _ = run_cli("calibrate", "laplace", "--epsilon", "0.5", "--sensitivity", "3")
    assert status == 0 and out.strip() == "scale 6.0"
    status, out, _ = run_cli("calibrate", "dpsu", "--epsilon", "1", "--delta", "2e-5",
                             "--max-items", "3", "--json")
    result = json.loads(out)
    assert status == 0 and math.isclose(result["rho"], 17.380345, abs_tol=2e-6)
    assert result["sigma"] == analytic_gaussian_sigma(1.0, 1e-5)


@pytest.mark.parametrize("argv, name", [
    (["gaussian", "--epsilon", "{}", "--delta", "1e-5"], "epsilon"),
    (["gaussian", "--epsilon", "1", "--delta", "{}"], "delta"),
    (["gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "{}"], "sensitivity"),
    (["laplace", "--epsilon", "{}"], "epsilon"),
    (["laplace", "--epsilon", "1", "--sensitivity", "{}"], "sensitivity"),
    (["dpsu", "--epsilon", "{}", "--delta", "1e-5", "--max-items", "3"], "epsilon"),
    (["dpsu", "--epsilon", "1", "--delta", "{}", "--max-items", "3"], "delta"),
])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1"])
def test_calibrate_bad_values_exit_2_with_one_line(run_cli, argv, name, value):
    status, out, err = run_cli("calibrate", *[a.format(value) for a in argv])
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and name in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["0", "-3"])
def test_calibrate_bad_max_items(run_cli, value):
    status, _, err = run_cli("calibrate", "dpsu", "--epsilon", "1", "--delta", "1e-5",
                             "--max-items", value)
    assert status == 2 and err.count("\n") == 1 and "max_items" in err


def test_importing_the_privacy_core_loads_neither_numba_nor_cupy():
    code = ("import sys, dpgpu, dpgpu.privacy, dpgpu.audit, dpgpu.commands.calibrate; "
            "print(sorted(m for m in ('numba', 'cupy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("call", [
    lambda db: dpgpu.ngram(db, 10 ** 400),
    lambda db: dpgpu.ngram(db, 1.0, n_max=65),
    lambda db: dpgpu.pfs2(db, 1.0, 0.1, l_upper=10 ** 9),
    lambda db: dpgpu.pfs2(db, 1.0, 0.1, budget_split={1: 1, 2: 1, 3: 1, 4: 1, 5: 1}),
    lambda db: dpgpu.dpne(db, 1.0, 1e-6, contribution=10 ** 7),
    lambda db: dpgpu.dpne(db, 1.0, 1e-6, max_n=10 ** 12),
    lambda db: dpgpu.pst(db, 1.0, max_length=10 ** 12),
    lambda db: dpgpu.pst(db, 1.0, n_synthetic=10 ** 12),
])
def test_huge_or_odd_parameters_are_refused_up_front(call):
    """From a review: OverflowError, hours of work or a MemoryError before any check."""
    db = dpgpu.SequenceDB.from_sequences([["a", "b"]] * 5, vocab=["a", "b"])
    with pytest.raises(dpgpu.InvalidParameter):
        call(db)
