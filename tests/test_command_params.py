"""Parameters of ``calibrate`` and ``demo``: refused by name, with exit status 2, up front."""

from __future__ import annotations

import pytest

from dpgpu import InvalidParameter
from dpgpu.cli import main
from dpgpu.commands import demo as demo_command
from dpgpu.mechanisms.dpne import MAX_CONTRIBUTION
from dpgpu.privacy.calibration import MAX_ITEMS, analytic_gaussian_sigma, dpsu_gaussian, \
    dpsu_threshold


def one_line_error(capsys, argv, message):
    """``dpgpu ARGV`` exits with 2 and the one-line error ``message``, nothing on stdout."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"dpgpu: error: {message}\n", err


# ------------------------------------------------------------------ calibrate dpsu
@pytest.mark.parametrize("max_items", [MAX_ITEMS + 1, 10**8, 10**9, 2**63 - 1, 2**63])
def test_calibrate_dpsu_refuses_max_items_above_dpnes_bound(capsys, max_items):
    """Regression: 1e8 took 3.2 GB, 1e9 ran out of memory ('try fewer sequences'), 2**63 and
    2**63 - 1 gave a ValueError traceback (an empty arange)."""
    one_line_error(capsys, ["calibrate", "dpsu", "--epsilon", "1", "--delta", "1e-5",
                            "--max-items", str(max_items)],
                   f"max_items: must be an integer in [1, {MAX_ITEMS}], got {max_items}")
    with pytest.raises(InvalidParameter, match=r"^max_items: must be an integer in \[1, 10000\]"):
        dpsu_threshold(1.0, 1e-5, max_items)
    with pytest.raises(InvalidParameter, match=r"^max_items: must be an integer in \[1, 10000\]"):
        dpsu_gaussian(1.0, 1e-5, max_items)


def test_calibrate_dpsu_bound_is_dpnes_contribution_bound_and_is_accepted():
    assert MAX_ITEMS == MAX_CONTRIBUTION  # DPSU's Delta_0 is a user's DPNE contribution
    sigma = analytic_gaussian_sigma(1.0, 5e-6)
    assert dpsu_gaussian(1.0, 1e-5, MAX_ITEMS) == (sigma, dpsu_threshold(sigma, 5e-6, MAX_ITEMS))
    with pytest.raises(InvalidParameter, match="max_items"):
        dpsu_threshold(sigma, 5e-6, MAX_ITEMS + 1)


# ------------------------------------------------------------------ calibrate laplace
def test_calibrate_laplace_names_the_sensitivity_past_the_samplers_limit(capsys):
    """Regression: 'epsilon: too small; a noise scale of 1e+308 ...' for --epsilon 1."""
    for epsilon, sensitivity, most in [("1", "1e308", "4503599627370496"),
                                       ("1", "4503599627370497", "4503599627370496"),
                                       ("0.5", "1e300", "2251799813685248"),
                                       ("1e-9", "1073741824", "4503599")]:
        scale = float(sensitivity) / float(epsilon)
        one_line_error(capsys, ["calibrate", "laplace", "--epsilon", epsilon, "--sensitivity",
                                sensitivity],
                       f"--sensitivity: {float(sensitivity):g} makes the noise scale "
                       f"{scale:.3g} (over a budget of {float(epsilon):.3g}) pass the samplers' "
                       f"limit of 2**52; at this epsilon --sensitivity can be at most {most}: "
                       "lower --sensitivity or raise epsilon")
    # the limit itself is taken; an epsilon past it even at sensitivity 1 is named
    assert main(["calibrate", "laplace", "--epsilon", "1", "--sensitivity",
                 "4503599627370496"]) == 0
    assert capsys.readouterr().out == "scale 4503599627370496.0\n"
    assert main(["calibrate", "laplace", "--epsilon", "1e-300", "--sensitivity", "1e308"]) == 2
    assert capsys.readouterr().err.startswith("dpgpu: error: epsilon: too small; ")


# ------------------------------------------------------------------ demo
@pytest.fixture
def no_loading(monkeypatch):
    """Fail where demo reads the bundled data: its options are checked before."""
    def load(path):
        raise AssertionError("demo read the data")

    monkeypatch.setattr(demo_command, "load", load)


@pytest.mark.parametrize("argv, message", [
    (["--epsilon", "nan"], "epsilon: must be finite and > 0, got nan"),
    (["--epsilon", "0"], "epsilon: must be finite and > 0, got 0.0"),
    (["--l-max", "0"], "l_max: must be an integer at least 1, got 0"),
    (["--n-max", "100"], "n_max: must be an integer in [1, 64], got 100"),
    (["--n-max", "0"], "n_max: must be an integer in [1, 64], got 0"),
    (["--l-max", str(2 ** 63)], f"l_max: {2 ** 63} makes the noise scale 4.61e+19 (over a "
     "budget of 0.2) pass the samplers' limit of 2**52; at this epsilon l_max can be at most "
     "900719925474099: lower l_max or raise epsilon"),
])
def test_demo_checks_its_options_before_loading(tmp_path, capsys, no_loading, argv, message):
    """Regression: the bundled MSNBC data (989,818 sequences) was loaded and summarised on
    stdout before these were refused."""
    one_line_error(capsys, ["demo", "--backend", "numpy", "--out", str(tmp_path / "r"), *argv],
                   message)
    assert list(tmp_path.iterdir()) == []
