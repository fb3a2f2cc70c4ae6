"""dpgpu advise: a quantile past --l-upper / --contribution-upper is reported as capped.

Regression: the cap itself was printed (and returned) as covering the share, e.g. "100 covers
85%" on data whose every sequence has 200 items.  The decision uses the noisy histogram and
the noisy total only (values above the cap fall in no bin; the total counts them).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpgpu import SequenceDB
from dpgpu.cli import main
from dpgpu.commands import advise as advise_module
from dpgpu.commands.advise import advise, quantile
from dpgpu.mechanisms.dpne import MAX_CONTRIBUTION

ALL = {"85%": True, "90%": True, "95%": True}
NONE = {"85%": False, "90%": False, "95%": False}
WORDS = [f"w{i}" for i in range(40)]


@pytest.fixture
def long_seqs(tmp_path):
    """5000 sequences of 200 items: none is covered by any length up to 100."""
    path = tmp_path / "len200.txt"
    path.write_text(("1 " * 200 + "\n") * 5000)
    return str(path)


def posts(tmp_path, sizes):
    """JSON lines, one post per user with ``sizes[u]`` distinct words."""
    path = tmp_path / "posts.jsonl"
    path.write_text("".join(json.dumps({"author": f"u{u}", "content": " ".join(
        WORDS[u % 20:u % 20 + d])}) + "\n" for u, d in enumerate(sizes)))
    return str(path)


def test_quantile_flags_a_share_the_histogram_does_not_reach():
    hist = np.array([0, 50, 30, 0])                # noisy bins 0 .. 3, noisy total 100
    assert quantile(hist, 100, 0.80) == (2, False)
    assert quantile(hist, 100, 0.85) == (3, True)  # 80 of 100 up to the cap
    assert quantile(np.array([0, 3, -2]), 1000, 0.5) == (2, True)


def test_a_share_reached_before_negative_noise_is_not_capped():
    """Regression (review): the running total crosses the share at length 1 and falls back
    below it (a negative noisy count later): reached, not capped."""
    assert quantile(np.array([0, 90, 5, -10] + [0] * 97), 100, 0.9) == (1, False)


@pytest.mark.parametrize("seed", [1, 2])
def test_200_items_past_l_upper_100_text(capsys, long_seqs, seed):
    assert main(["advise", long_seqs, "--epsilon", "1", "--seed", str(seed)]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert ">100 covers 85%, >100 covers 90%, >100 covers 95% of the sequences" in line, line
    assert "raise it" in line and "--l-upper" in line
    assert " 100 covers" not in line


def test_200_items_past_l_upper_100_json(capsys, long_seqs):
    assert main(["advise", long_seqs, "--epsilon", "1", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["l_max_capped"] == ALL
    assert out["l_max"] == {"85%": 100, "90%": 100, "95%": 100}  # the cap: a lower bound


def test_well_under_the_cap_gives_numbers(tmp_path, capsys):
    # lengths 1 (x50), 2 (x30), 5 (x20): 85, 90 and 95 % covered at 5, far below 100
    data = tmp_path / "d.txt"
    data.write_text("a\n" * 50 + "a b\n" * 30 + "a a a a a\n" * 20)
    assert main(["advise", str(data), "--epsilon", "20", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["l_max"] == {"85%": 5, "90%": 5, "95%": 5} and out["l_max_capped"] == NONE
    assert main(["advise", str(data), "--epsilon", "20", "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert "5 covers 85%, 5 covers 90%, 5 covers 95% of the sequences" in text
    assert ">" not in text and "raise" not in text


def test_a_share_just_past_the_cap_is_capped_the_others_not():
    # lengths 2 (x900), 30 (x100): 85 and 90 % covered at 2, 95 % only at 30 > l_upper 10
    db = SequenceDB.from_sequences([["a"] * 2] * 900 + [["a"] * 30] * 100, vocab=["a"])
    out = advise(db, 20.0, l_upper=10, seed=1)
    assert out["l_max"] == {"85%": 2, "90%": 2, "95%": 10}
    assert out["l_max_capped"] == {"85%": False, "90%": False, "95%": True}


def test_contribution_past_the_upper_bound(tmp_path, capsys):
    path = posts(tmp_path, [5 + u % 7 for u in range(2000)])  # every user >= 5 words
    argv = ["advise", path, "--epsilon", "20", "--contribution-upper", "3", "--seed", "1"]
    assert main(argv) == 0
    line = [s for s in capsys.readouterr().out.splitlines() if "dpne --contribution" in s][0]
    assert ">3 covers 85%, >3 covers 90%, >3 covers 95% of the users" in line, line
    assert "--contribution-upper, raise it" in line
    assert main([*argv, "--json"]) == 0
    part = json.loads(capsys.readouterr().out)["contribution"]
    assert part["capped"] == ALL and part["suggested"] == {"85%": 3, "90%": 3, "95%": 3}
    assert part["upper"] == 3


def test_contribution_under_the_upper_bound_is_not_capped(tmp_path, capsys):
    path = posts(tmp_path, [5] * 2000)
    assert main(["advise", path, "--epsilon", "20", "--contribution-upper", "64", "--seed", "1",
                 "--json"]) == 0
    part = json.loads(capsys.readouterr().out)["contribution"]
    assert part["capped"] == NONE and part["suggested"] == {"85%": 5, "90%": 5, "95%": 5}


def test_at_the_largest_upper_the_hint_does_not_say_raise(tmp_path, capsys, monkeypatch):
    """--contribution-upper at dpne's largest --contribution: nothing to raise."""
    real = advise_module.advise

    def at_the_top(*args, **kw):
        out = real(*args, **kw)
        out["contribution"].update(upper=MAX_CONTRIBUTION, capped=ALL,
                                   suggested=dict.fromkeys(ALL, MAX_CONTRIBUTION))
        return out

    monkeypatch.setattr(advise_module, "advise", at_the_top)
    assert main(["advise", posts(tmp_path, [5] * 50), "--epsilon", "1", "--seed", "1"]) == 0
    line = [s for s in capsys.readouterr().out.splitlines() if "dpne --contribution" in s][0]
    assert f">{MAX_CONTRIBUTION} covers 95% of the users" in line
    assert "raise" not in line and "the largest dpne --contribution (10,000)" in line, line
