"""dpgpu advise: a private truncation-length suggestion."""

from __future__ import annotations

import json

import pytest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.cli import main
from dpgpu.commands.advise import advise

# 100 sequences: lengths 1 (x50), 2 (x30), 5 (x15), 9 (x5): cover 85 % at 5, 90 % at 5, 95 % at 5
SEQS = [["a"]] * 50 + [["a", "b"]] * 30 + [["a"] * 5] * 15 + [["b"] * 9] * 5


def test_large_epsilon_gives_the_exact_quantiles():
    db = SequenceDB.from_sequences(SEQS, vocab=["a", "b"])
    out = advise(db, 20.0, l_upper=20, seed=1)  # noise of scale 0.1: a +-1 would not matter
    assert out["l_max"] == {"85%": 5, "90%": 5, "95%": 5}
    assert out["epsilon"] == 20.0 and out["seeded"] is True
    assert [s["epsilon"] for s in out["ledger"]["steps"]] == [10.0, 10.0]


def test_seeded_is_reproducible_and_lengths_in_range():
    db = SequenceDB.from_sequences(SEQS, vocab=["a", "b"])
    a = advise(db, 0.5, l_upper=12, seed=7)
    assert a == advise(db, 0.5, l_upper=12, seed=7)
    assert all(1 <= v <= 12 for v in a["l_max"].values())


@pytest.mark.parametrize("eps", [0, -1, float("nan"), float("inf")])
def test_invalid_epsilon(eps):
    db = SequenceDB.from_sequences(SEQS, vocab=["a", "b"])
    with pytest.raises(InvalidParameter, match="epsilon"):
        advise(db, eps)


def test_cli(tmp_path, capsys):
    data = tmp_path / "d.txt"
    data.write_text("\n".join(" ".join(s) for s in SEQS) + "\n")
    assert main(["advise", str(data), "--epsilon", "20", "--seed", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["l_max"]["85%"] == 5
    assert main(["advise", str(data), "--epsilon", "nan"]) == 2


def test_an_l_upper_too_large_for_the_samplers_is_named():
    db = SequenceDB.from_sequences([["a", "b"], ["b"]], vocab=["a", "b"])
    with pytest.raises(InvalidParameter, match=r"set by l_upper\); nothing was released"):
        advise(db, 1.0, l_upper=10**9)


def test_empty_sequences_are_covered_by_any_length():
    """Regression: empty sequences were counted in the total but not in the length histogram,
    so a data set of 60 % empty sequences got l_upper (20) as every suggestion."""
    db = SequenceDB.from_sequences([[]] * 150 + SEQS, vocab=["a", "b"])
    out = advise(db, 20.0, l_upper=20, seed=1)
    # cumulative share: length 0: 60 %, 1: 80 %, 2: 92 %, 5: 98 %
    assert out["l_max"] == {"85%": 2, "90%": 2, "95%": 5}
