"""DPNE schedules and rules, the DPSU baselines (candidate sets), Policy Laplace (contractivity)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB
from dpgpu.cli import main
from dpgpu.mechanisms.dpne import dpne, sigma_schedule
from dpgpu.mechanisms.dpne.baselines import laplace_threshold
from dpgpu.mechanisms.dpne.histogram import bounded_histogram, bounded_pairs, unique_int
from dpgpu.mechanisms.dpne.policy import water_fill
from dpgpu.privacy import NoiseKey


def _db(n_users=600, seed=3):
    rng = np.random.default_rng(seed)
    base = [list("abcde"), list("bcda"), list("dabc"), list("eab")]
    seqs = [base[i % 4] for i in range(n_users)] + \
        [list(rng.choice(list("abcdefgh"), 6)) for _ in range(100)]
    return SequenceDB.from_sequences(seqs, vocab=list("abcdefgh"))


def _true_grams(db, max_n):
    out = set()
    for s in db:
        for n in range(1, max_n + 1):
            out.update(tuple(s[i:i + n]) for i in range(len(s) - n + 1))
    return out


def test_geometric_schedule():
    s = sigma_schedule(4.0, 5, "geometric", 0.5)
    assert np.allclose([s[k + 1] / s[k] for k in range(4)], 0.5)
    assert np.isclose(sum(x ** -2 for x in s), 4.0 ** -2)
    e = sigma_schedule(4.0, 5, "equal", 1.0)
    assert np.allclose(e, 4.0 * np.sqrt(5))
    assert np.allclose(sigma_schedule(4.0, 5, "geometric", 1.0), e)


def test_single_side_rule_prefix_closed():
    db = _db()
    r = dpne(db, 4.0, 1e-6, max_n=4, contribution=8, rule="single", seed=1)
    grams = set(r.grams())
    for g in grams:
        if len(g) > 1:
            assert g[:-1] in grams and (g[-1],) in grams        # V_k = S_{k-1} x S_1
    assert ("a", "b", "c", "d") in grams


@pytest.mark.parametrize("method", ["dpsu-all", "dpsu-even", "dpsu-single"])
@pytest.mark.parametrize("policy", ["weighted", "laplace"])
def test_baselines_release_only_held_grams(method, policy):
    db = _db()
    r = dpne(db, 8.0, 1e-6, max_n=4, contribution=6, method=method, policy=policy, seed=2)
    grams = r.grams()
    assert grams and set(grams) <= _true_grams(db, 4)           # no spurious grams
    assert len(set(grams)) == len(grams)
    if method == "dpsu-single":
        assert r.counts()[:3] == [0, 0, 0]
    assert r.report["method"] == method and r.report["ledger"]["spent"]["epsilon"] == 8.0


def test_dpne_downward_closed_baselines_need_not_be():
    db = _db()
    r = dpne(db, 8.0, 1e-6, max_n=4, contribution=6, method="dpsu-single", seed=0)
    four = [g for g in r.grams() if len(g) == 4]
    assert four and not any(g[:1] in set(r.grams()) for g in four)   # only 4-grams
    d = set(dpne(db, 8.0, 1e-6, max_n=4, contribution=6, seed=0).grams())
    assert all(g[i:j] in d for g in d for i, j in itertools.combinations(range(len(g) + 1), 2))


def test_invalid_method_policy():
    db = _db(40)
    with pytest.raises(InvalidParameter, match="method"):
        dpne(db, 1.0, 1e-6, method="dpsu")
    with pytest.raises(InvalidParameter, match="policy"):
        dpne(db, 1.0, 1e-6, policy="laplace")
    with pytest.raises(InvalidParameter, match="alpha"):
        dpne(db, 1.0, 1e-6, method="dpsu-all", alpha=float("nan"))


def _unit_steps(starts, grams, n, budget, cutoff, h=None):
    h = np.zeros(n, np.int64) if h is None else h.copy()
    for a in range(len(starts) - 1):
        mine = grams[starts[a]:starts[a + 1]]
        for _ in range(budget):
            low = [g for g in mine if h[g] < cutoff]
            if not low:
                break
            h[min(low, key=lambda g: (h[g], g))] += 1
    return h


def test_water_fill_equals_unit_steps_and_is_contractive():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n, users = int(rng.integers(1, 8)), int(rng.integers(1, 6))
        sets = [np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
                for _ in range(users)]
        starts = np.cumsum([0] + [len(s) for s in sets])
        grams = np.concatenate(sets)
        budget, cutoff = int(rng.integers(1, 12)), int(rng.integers(1, 20))
        h = water_fill(starts, grams, n, budget, cutoff)
        assert np.array_equal(h, _unit_steps(starts, grams, n, budget, cutoff))
        # inserting one user anywhere moves the final histogram by <= budget in L1
        extra = np.sort(rng.choice(n, int(rng.integers(1, n + 1)), replace=False))
        at = int(rng.integers(0, users + 1))
        sets2 = sets[:at] + [extra] + sets[at:]
        h2 = water_fill(np.cumsum([0] + [len(s) for s in sets2]), np.concatenate(sets2), n,
                        budget, cutoff)
        assert np.abs(h2 - h).sum() <= budget


def test_laplace_threshold_covers_lone_grams():
    scale, delta = 64.0, 1e-6
    thr = laplace_threshold(scale, delta, 5)
    p = np.exp(-1 / scale)
    for t in range(1, 6):
        c = thr - -(-64 // t)
        assert (1 - p ** (c + 1) / (1 + p)) ** t >= 1 - delta


def test_bounded_pairs_packed_matches_bruteforce():
    rng = np.random.default_rng(1)
    users = rng.integers(0, 30, 4000)
    grams = rng.integers(0, 2 ** 40, 4000) * (rng.integers(0, 2, 4000) + 1)
    u, g, t = bounded_pairs(users, grams, 5, NoiseKey.from_seed(0), 0)
    held = {}
    for a, b in zip(users.tolist(), grams.tolist()):
        held.setdefault(a, set()).add(b)
    for a, s in held.items():
        mine = set(g[u == a].tolist())
        assert mine <= s and len(mine) == min(5, len(s)) and set(t[u == a]) == {len(s)}
    k, w = bounded_histogram(users, grams, 5, NoiseKey.from_seed(0), 0)
    assert np.array_equal(k, unique_int(g)) and w.sum() > 0


def test_unique_int_inverse():
    a = np.array([5, -1, 5, 3, 3, 9])
    v, inv = unique_int(a, return_inverse=True)
    assert v.tolist() == [-1, 3, 5, 9] and np.array_equal(v[inv], a)


def test_cli_method(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("\n".join(" ".join(s) for s in _db(200)) + "\n")
    assert main(["dpne", str(path), "--epsilon", "4", "--delta", "1e-6", "--max-n", "3",
                 "--contribution", "5", "--seed", "1", "--method", "dpsu-even", "--policy",
                 "laplace", "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "ngrams.tsv").is_file()
