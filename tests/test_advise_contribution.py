"""dpgpu advise: a private suggestion for DPNE's per-user contribution bound Delta."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.cli import main
from dpgpu.commands.advise import advise, distinct_grams_per_user

WORDS = [f"w{i}" for i in range(300)]
# 1000 users with 5 (60 %), 20 (33 %) and 200 (7 %) distinct words: 85 and 90 % of the
# users are covered at 20, 95 % only at 200.
SIZES = [5] * 600 + [20] * 330 + [200] * 70


def user_db(sizes=SIZES) -> SequenceDB:
    """Each user: two texts, the second repeating a part of the first (distinct count kept)."""
    seqs, users = [], []
    for u, d in enumerate(sizes):
        words = WORDS[u % 90:u % 90 + d]
        seqs += [words, words[:d // 2 + 1] * 2]
        users += [u, u]
    return SequenceDB.from_sequences(seqs, vocab=WORDS, users=np.array(users) * 7 + 3)


def brute_force(db: SequenceDB, n: int) -> list[int]:
    grams: dict[int, set] = {}
    for s in range(len(db)):
        items = db.items[db.offsets[s]:db.offsets[s + 1]].tolist()
        held = grams.setdefault(int(db.users[s]), set())
        held.update(tuple(items[i:i + n]) for i in range(len(items) - n + 1))
    return [len(grams[u]) for u in sorted(grams)]


@pytest.mark.parametrize("n", [1, 2, 3, 30])
def test_distinct_grams_per_user_against_brute_force(n):
    rng = np.random.default_rng(n)
    seqs = [list(rng.choice(["a", "b", "c", "d"], size=rng.integers(0, 8))) for _ in range(60)]
    db = SequenceDB.from_sequences(seqs, vocab=list("abcd"), users=rng.integers(0, 15, 60) * 3)
    assert distinct_grams_per_user(db, n).tolist() == brute_force(db, n)
    assert distinct_grams_per_user(user_db(), 1).tolist() == SIZES


def test_one_users_count_depends_on_that_user_alone():
    # the sensitivity argument: removing a user removes one value, the others stay
    db = user_db(SIZES[:50])
    keep = db.users != db.users[0]
    rows = np.flatnonzero(keep)
    without = SequenceDB.from_sequences([db.vocab.decode(db.items[db.offsets[r]:db.offsets[r + 1]])
                                         for r in rows], vocab=WORDS, users=db.users[rows])
    assert distinct_grams_per_user(without, 2).tolist() == \
        distinct_grams_per_user(db, 2)[1:].tolist()


@pytest.mark.parametrize("seed", [5, 6])
def test_suggestion_is_near_the_quantiles_of_per_user_counts(seed):
    part = advise(user_db(), 40.0, seed=seed)["contribution"]  # little noise
    assert part["unit"] == "one user" and part["gram_length"] == 1
    for coverage in ("85%", "90%"):
        assert 20 <= part["suggested"][coverage] <= 24, part  # bins are about 19 % wide
    assert 200 <= part["suggested"]["95%"] <= 240, part
    # epsilon 1 on 1000 users: 85 and 90 % still land in the bin of 20 (a margin of 30
    # users); 95 % (a margin of 20 users) between the two populations
    part = advise(user_db(), 2.0, seed=seed)["contribution"]
    assert 20 <= part["suggested"]["85%"] <= part["suggested"]["90%"] <= 24, part
    assert 20 <= part["suggested"]["95%"] <= 240, part


def test_the_spend_is_stated_and_recorded():
    out = advise(user_db(), 2.0, contribution_share=0.25, seed=1)
    steps = out["ledger"]["steps"]
    assert [s["name"] for s in steps[2:]] == ["advise: noisy number of users",
                                             "advise: noisy histogram of distinct 1-grams per user"]
    assert [s["epsilon"] for s in steps] == pytest.approx([0.75, 0.75, 0.25, 0.25])
    assert out["budget"] == pytest.approx({"l_max": 1.5, "contribution": 0.5})
    assert out["contribution"]["epsilon"] == pytest.approx(0.5)
    assert out["epsilon"] == pytest.approx(2.0) and out["ledger"]["spent"]["epsilon"] <= 2.0
    assert all(s["sampling_delta"] > 0 for s in steps)


def test_no_users_no_contribution_and_all_the_budget_on_l_max():
    db = SequenceDB.from_sequences([["a", "b"]] * 20, vocab=["a", "b"])
    out = advise(db, 1.0, seed=1)
    assert out["contribution"] is None and out["budget"] == {"l_max": 1.0, "contribution": 0.0}
    assert len(out["ledger"]["steps"]) == 2


def test_reproducible_and_gram_length():
    db = user_db(SIZES[::10])
    a = advise(db, 1.0, gram_length=2, contribution_upper=64, seed=3)
    assert a == advise(db, 1.0, gram_length=2, contribution_upper=64, seed=3)
    assert a["contribution"]["gram_length"] == 2
    assert all(1 <= d <= 64 for d in a["contribution"]["suggested"].values())


@pytest.mark.parametrize("share", [0, 1, -0.5, float("nan")])
def test_invalid_share_fails_on_the_parameter_alone(share):
    db = SequenceDB.from_sequences([["a"]] * 5, vocab=["a"])  # no users: still an error
    with pytest.raises(InvalidParameter, match="contribution_share"):
        advise(db, 1.0, contribution_share=share)


def test_cli_on_user_level_text(tmp_path, capsys):
    posts = tmp_path / "posts.jsonl"
    posts.write_text("".join(json.dumps({"author": f"u{u}", "content": " ".join(
        WORDS[u % 40:u % 40 + d])}) + "\n" for u, d in enumerate(SIZES[::2])))
    assert main(["advise", str(posts), "--epsilon", "20", "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert 20 <= out["contribution"]["suggested"]["90%"] <= 24
    assert len(out["ledger"]["steps"]) == 4
    assert main(["advise", str(posts), "--epsilon", "1", "--contribution-share", "0.2"]) == 0
    text = capsys.readouterr().out
    assert "dpne --contribution" in text and "epsilon 0.2 spent, DP for one user" in text
