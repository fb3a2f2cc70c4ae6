"""Array-based ground truth of the evaluation against plain-Python brute force.

Covers the paths that large data takes: gram keys that need dense ranks
(``gram_user_counts``), DPNE coverage computed on arrays, the vectorized
pattern matrix of ``pattern_counts`` / ``subsequence_supports``, and the token
memo of ``parse_gram``.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from dpgpu import SequenceDB, Vocabulary
from dpgpu.errors import InputError, InvalidParameter
from dpgpu.eval import evaluate as E
from dpgpu.eval import truth as T
from dpgpu.release import encode_gram, vocabulary_fingerprint

LABELS = ["a", "b", "c", "y", "z"]  # "y" and "z" are in the vocabulary, never in the data


def _random_db(rng, *, users=True, alphabet=3, n_seq=12, max_len=40):
    """Sequences cut from three base strings, so that long grams repeat across users."""
    bases = rng.integers(0, alphabet, size=(3, max_len + 10))
    seqs = []
    for _ in range(n_seq):
        length = int(rng.integers(0, max_len + 1))
        start = int(rng.integers(0, 10))
        seqs.append([LABELS[x] for x in bases[rng.integers(0, 3), start:start + length]])
    owners = rng.integers(0, 5, size=n_seq).tolist() if users else None
    return SequenceDB.from_sequences(seqs, vocab=LABELS, users=owners), seqs, owners


def _brute_holders(seqs, owners, n):
    """{gram of labels' ids: number of distinct owners} by walking every window."""
    held: dict[tuple[int, ...], set] = {}
    for i, s in enumerate(seqs):
        ids = [LABELS.index(x) for x in s]
        for j in range(len(ids) - n + 1):
            held.setdefault(tuple(ids[j:j + n]), set()).add(i if owners is None else owners[i])
    return {g: len(o) for g, o in held.items()}


# ------------------------------------------------------------ gram_user_counts
# With 5 labels the packed keys have radix 6: 6**23 times 5 owners fits int64;
# at n = 24 the keys times the owners do not (a final ranking); from n = 25 on
# a digit would overflow on the way (a ranking in the middle too).
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n, rankings", [(1, 0), (2, 0), (5, 0), (23, None), (24, 1), (25, 2),
                                         (29, 2), (35, 2)])
def test_gram_user_counts_long_grams_brute(monkeypatch, seed, n, rankings):
    rng = np.random.default_rng(seed)
    db, seqs, owners = _random_db(rng, users=seed % 2 == 0)
    expected = _brute_holders(seqs, owners, n)
    calls = []
    rank = T._dense_ranks
    monkeypatch.setattr(T, "_dense_ranks", lambda keys: calls.append(1) or rank(keys))
    grams, holders = T.gram_user_counts(db, n)
    if expected and rankings is not None:                # the path meant is the path taken
        assert len(calls) == rankings
    assert grams.dtype == np.int32 and holders.dtype == np.int64 and grams.shape[1] == n
    got = [tuple(g) for g in grams.tolist()]
    assert got == sorted(expected)                       # distinct, lexicographic
    assert dict(zip(got, holders.tolist())) == expected


@pytest.mark.parametrize("n", [3, 30])
def test_gram_user_counts_by_sequence_brute(n):
    db, seqs, _ = _random_db(np.random.default_rng(11))
    grams, holders = T.gram_user_counts(db, n, by="sequence")
    assert dict(zip(map(tuple, grams.tolist()), holders.tolist())) == \
        _brute_holders(seqs, None, n)


def test_gram_user_counts_nothing_long_enough():
    db = SequenceDB.from_sequences([["a", "b"], [], ["c"]], vocab=LABELS, users=[0, 1, 0])
    grams, holders = T.gram_user_counts(db, 3)
    assert grams.shape == (0, 3) and holders.shape == (0,)


# --------------------------------------------------------------- DPNE coverage
def _release(tmp_path, db, grams: list[tuple[int, ...]], parameters=None):
    d = tmp_path / "rel"
    d.mkdir()
    report = {"mechanism": "dpne", "parameters": parameters or {}, "epsilon": 1.0, "delta": 1e-6,
              "ledger": [], "backend": "numpy", "seeded": True, "files": ["ngrams.tsv"],
              "vocabulary": {"size": db.vocab.size, "sha256": vocabulary_fingerprint(db.vocab)}}
    (d / "report.json").write_text(json.dumps(report))
    rows = [f"{len(g)}\t{encode_gram(db.vocab.decode(g))}" for g in grams]
    (d / "ngrams.tsv").write_text("k\tgram\n" + "".join(r + "\n" for r in rows))
    return d


def _brute_coverage(seqs, owners, released, ks, max_n=None):
    """The coverage task's numbers, by sets and dicts of tuples."""
    rows, all_held = {}, {}
    lengths = sorted({len(g) for g in released} | set(range(1, (max_n or 0) + 1))) or [1]
    for n in lengths:
        held = _brute_holders(seqs, owners, n)
        all_held.update(held)
        mine = [g for g in released if len(g) == n]
        rows[str(n)] = {
            "released": len(mine),
            "spurious_fraction": sum(g not in held for g in mine) / len(mine) if mine else 0.0,
            "coverage": {str(K): _share([g for g, c in held.items() if c >= K], set(mine))
                         for K in ks},
            "eligible": {str(K): sum(c >= K for c in held.values()) for K in ks}}
    return {"count_by": "distinct users" if owners is not None else "distinct sequences",
            "released": len(released), "by_k": rows,
            "spurious_fraction": (sum(g not in all_held for g in released) / len(released)
                                  if released else 0.0),
            "coverage": {str(K): _share([g for g, c in all_held.items() if c >= K],
                                        set(released)) for K in ks},
            "note": "coverage over gram lengths " + ", ".join(map(str, lengths))}


def _share(eligible, released):
    return sum(g in released for g in eligible) / len(eligible) if eligible else None


@pytest.mark.parametrize("seed", range(8))
def test_coverage_matches_brute_force(tmp_path, seed):
    rng = np.random.default_rng(seed)
    db, seqs, owners = _random_db(rng, users=seed % 3 != 0, max_len=12)
    present = [g for n in (1, 2, 3, 5) for g in _brute_holders(seqs, owners, n)]
    picked = [present[i] for i in rng.permutation(len(present))[:len(present) // 2]]
    random = [tuple(rng.integers(0, len(LABELS), size=int(rng.integers(1, 5))).tolist())
              for _ in range(40)]                         # some present, many not (y, z)
    too_long = [tuple([0] * 20)]                          # longer than every sequence
    released = list(dict.fromkeys(picked + random + too_long))
    ks = [1, 2, 3, 5]
    max_n = (None, 4, 7)[seed % 3]  # the release's max_n: lengths it reached with no gram count
    result = E.evaluate_release(db, _release(tmp_path, db, released, {"max_n": max_n}),
                                tasks=["coverage"], coverage_ks=ks, original_name="orig")
    assert result["tasks"]["coverage"] == _brute_coverage(seqs, owners, released, ks, max_n)


def test_coverage_of_an_empty_release(tmp_path):
    """From a review: nothing released showed coverage 1.0 at every K."""
    db, seqs, owners = _random_db(np.random.default_rng(0))
    result = E.evaluate_release(db, _release(tmp_path, db, []), tasks=["coverage"],
                                coverage_ks=[1, 10 ** 6], original_name="orig")
    assert result["tasks"]["coverage"] == _brute_coverage(seqs, owners, [], [1, 10 ** 6])
    assert result["tasks"]["coverage"]["coverage"] == {"1": 0.0, "1000000": None}


@pytest.mark.parametrize("line, message", [("2\ta q", "is not a sequence of labels"),
                                           ("2\ta &", "holds a marker")])
def test_coverage_refuses_unknown_labels_and_markers(tmp_path, line, message):
    db, _, _ = _random_db(np.random.default_rng(0))
    rel = _release(tmp_path, db, [(0,)])
    with open(rel / "ngrams.tsv", "a") as f:
        f.write(line + "\n")
    with pytest.raises(InputError, match=message):
        E.evaluate_release(db, rel, tasks=["coverage"], original_name="orig")


# ------------------------------------------------------------- pattern matrix
def test_pattern_inputs_of_every_kind_brute():
    db, seqs, _ = _random_db(np.random.default_rng(3), users=False, max_len=10)
    rows = np.array([[0, 1], [1, 1]], dtype=np.int32)
    patterns = [(0,), [1, 2], np.array([2, 0, 1], dtype=np.int64), rows[0], rows[1], (0, 0, 0)]
    as_tuples = [tuple(int(x) for x in p) for p in patterns]
    ids = [[LABELS.index(x) for x in s] for s in seqs]
    occurrences = [sum(Counter(tuple(s[i:i + len(p)]) for i in range(len(s) - len(p) + 1))[p]
                       for s in ids) for p in as_tuples]
    assert T.pattern_counts(db, patterns).tolist() == occurrences
    assert T.pattern_counts(db, iter(patterns)).tolist() == occurrences   # any iterable

    def contains(s, p):
        it = iter(s)
        return all(any(x == y for y in it) for x in p)

    supports = [sum(contains(s, p) for s in ids) for p in as_tuples]
    assert T.subsequence_supports(db, patterns).tolist() == supports
    assert T.pattern_counts(db, []).tolist() == []


@pytest.mark.parametrize("patterns, message", [
    ([(0,), (), (9,)], "empty pattern"),                          # the first bad one counts
    ([(0,), (0, 9), ()], r"out of range 0\.\.6 in \(0, 9\)"),
    ([np.array([-1])], r"out of range 0\.\.6 in \(-1,\)")])
def test_pattern_errors_name_the_first_bad_pattern(patterns, message):
    db, _, _ = _random_db(np.random.default_rng(0))
    with pytest.raises(InvalidParameter, match=message):
        T.pattern_counts(db, patterns)


# --------------------------------------------------------------- token memo
def test_parse_gram_memo_reads_what_a_fresh_call_reads():
    v = Vocabulary(["Create Fine", "Create", "Send", "&", "50%"])
    texts = ["Create Send", "%26 &", "Create Fine Send", "Send Create Fine", "Fine Send",
             "50%25 Send", "Create", "Create Fine Create Fine", "Nope", "Send %26"]
    memo: dict = {}
    for text in texts:
        assert T.parse_gram(text, v, memo) == T.parse_gram(text, v), text
    assert T.parse_gram("Create Fine Send", v, memo) == (0, 2)
    assert T.parse_gram("%26 &", v, memo) == (3, v.end_id)
    assert T.parse_gram("Fine Send", v, memo) is None
