"""Exact ground truth (dpgpu.eval.truth): hand-computed values and brute force."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpgpu import SequenceDB, Vocabulary
from dpgpu.errors import InvalidParameter
from dpgpu.eval import truth as T
from shared_data import dataset, needs

# The tiny dataset used by the hand-computed tests (ids a=0, b=1, c=2):
#   s1 = a b c a b,  s2 = a c b,  s3 = b a,  s4 = c
D = [["a", "b", "c", "a", "b"], ["a", "c", "b"], ["b", "a"], ["c"]]
A, B, C = 0, 1, 2


@pytest.fixture(scope="module")
def db():
    return SequenceDB.from_sequences(D, vocab=["a", "b", "c"])


def test_import_loads_neither_numba_nor_cupy():
    code = ("import sys, dpgpu, dpgpu.eval, dpgpu.eval.evaluate, dpgpu.commands.evaluate; "
            "bad = [m for m in ('numba', 'cupy', 'matplotlib') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# ------------------------------------------------------------- hand-computed
def test_pattern_counts_by_hand(db):
    end, start = db.vocab.end_id, db.vocab.start_id
    queries = [(A, B), (B,), (A,), (C,), (B, A), (C, A, B), (A, B, end), (start, A), (B, end),
               (A, C, B), (C, C), (A, B, C, A, B, A), (end,), (A, B)]
    # a b: s1 twice; b: 2+1+1; a: 2+1+1; c: 1+1+1; b a: s3; c a b: s1; a b &: s1 ends so;
    # $ a: s1, s2 start with a; b &: s1, s2 end with b; a c b: s2; c c: none; too long: 0;
    # &: one per sequence; duplicates answered alike.
    expected = [2, 4, 4, 3, 1, 1, 1, 2, 2, 1, 0, 0, 4, 2]
    assert T.pattern_counts(db, queries).tolist() == expected


def test_pattern_counts_with_l_max(db):
    # first 2 items: s1 = a b (cut, no end marker), s2 = a c (cut), s3 = b a &, s4 = c &
    assert T.pattern_counts(db, [(A, B), (A, db.vocab.end_id), (C,)], l_max=2).tolist() == [1, 1, 2]


def test_subsequence_supports_by_hand(db):
    pats = [(A, B), (B, A), (A, A), (C, B), (A, C, B), (B, C, A), (C,), (A, B, A, B), (B, B),
            (C, C), (A, A, A)]
    # a..b: s1, s2; b..a: s1, s3; a..a: s1; c..b: s1, s2; a..c..b: s1, s2; b..c..a: s1;
    # c: s1, s2, s4; a b a b: s1; b..b: s1; c..c: none; a a a: none
    assert T.subsequence_supports(db, pats).tolist() == [2, 2, 1, 2, 2, 1, 3, 1, 1, 0, 0]


def test_subsequence_supports_weights_and_order(db):
    pats = [(C, B), (A,), (C, B)]
    w = np.array([10, 100, 1000, 10000])
    # c..b in s1, s2 -> 110; a in s1, s2, s3 -> 1110
    assert T.subsequence_supports(db, pats, weights=w).tolist() == [110, 1110, 110]


def test_top_k_strings_by_hand(db):
    # 2-grams: ab 2; ac, ba, bc, ca, cb 1.  3-grams all 1.  Ties: shorter, then ids.
    pats, counts = T.top_k_strings(db, 3, min_length=2)
    assert pats == [(A, B), (A, C), (B, A)] and counts.tolist() == [2, 1, 1]
    pats, counts = T.top_k_strings(db, 2)
    assert pats == [(A,), (B,)] and counts.tolist() == [4, 4]


def test_top_k_subsequences_by_hand(db):
    # supports 2: ab, ac, ba, cb and acb (only s1 and s2 have 3 items; s2's one 3-subsequence)
    pats, sup = T.top_k_subsequences(db, 5, min_length=2)
    assert pats == [(A, B), (A, C), (B, A), (C, B), (A, C, B)] and sup.tolist() == [2] * 5


def test_frequent_subsequences_by_hand(db):
    pats, sup = T.frequent_subsequences(db, 2)
    got = dict(zip(pats, sup.tolist()))
    assert got == {(A,): 3, (B,): 3, (C,): 3, (A, B): 2, (A, C): 2, (B, A): 2, (C, B): 2,
                   (A, C, B): 2}
    pats, _ = T.frequent_subsequences(db, 2, min_length=2, max_length=2)
    assert set(pats) == {(A, B), (A, C), (B, A), (C, B)}


def test_support_threshold():
    assert T.support_threshold(0.5, 4) == 2
    assert T.support_threshold(0.3, 10) == 3      # 0.3 * 10 is 3.0000000000000004
    assert T.support_threshold(0.25, 10) == 3
    assert T.support_threshold(1e-9, 10) == 1


def test_length_distribution(db):
    assert T.length_distribution(db).tolist() == [0, 1, 1, 1, 0, 1]
    assert T.length_distribution(db, l_max=2).tolist() == [0, 1, 3]


def test_gram_user_counts_by_hand():
    db = SequenceDB.from_sequences(D, vocab=["a", "b", "c"], users=[0, 0, 1, 2])
    grams, holders = T.gram_user_counts(db, 1)
    assert grams.tolist() == [[A], [B], [C]] and holders.tolist() == [2, 2, 2]
    grams, holders = T.gram_user_counts(db, 2)
    got = dict(zip(map(tuple, grams.tolist()), holders.tolist()))
    # user 0 holds ab, bc, ca (s1) and ac, cb (s2); user 1 holds ba
    assert got == {(A, B): 1, (B, C): 1, (C, A): 1, (A, C): 1, (C, B): 1, (B, A): 1}
    grams, holders = T.gram_user_counts(db, 1, by="sequence")
    assert holders.tolist() == [3, 3, 3]
    assert T.gram_user_counts(db, 6)[0].shape == (0, 6)


def test_parse_gram_with_spaces_in_labels():
    v = Vocabulary(["Create Fine", "Create", "Send"])
    assert T.parse_gram("Create Fine Send", v) == (0, 2)   # longest label first
    assert T.parse_gram("Create Send &", v) == (1, 2, v.end_id)
    assert T.parse_gram("Fine Send", v) is None
    assert T.encode_pattern(v, ["Send", "Create"]) == (2, 1)
    assert T.decode_pattern(v, (0, 2, v.end_id)) == "Create Fine Send &"


def test_decode_pattern_errors_name_pattern():
    v = Vocabulary(["a", "b"])
    assert T.decode_pattern(v, np.array([1, v.end_id])) == "b &"
    assert T.decode_pattern(v, [v.start_id, 0]) == "$ a"
    for bad, says in [([0, 9], "pattern: 9 is not an id of this vocabulary of size 2"),
                      ([-1], "pattern: -1 is not an id"),
                      (["a"], "pattern: expected integer ids, got 'a'"),
                      ([0.0], "pattern: expected integer ids, got 0.0"),
                      ([True], "pattern: expected integer ids, got True"),
                      ("ab", "pattern: expected a sequence of integer ids, got 'ab'"),
                      (3, "pattern: expected a sequence of integer ids, got 3"),
                      (None, "pattern: expected a sequence of integer ids, got None")]:
        with pytest.raises(InvalidParameter) as info:
            T.decode_pattern(v, bad)
        assert str(info.value).startswith(says) and "ids:" not in str(info.value)


@pytest.mark.parametrize("points, boxes, name, says", [
    (["0.5", "1.5"], [(0, 1)], "points", "real numbers"),          # NumPy would read 0.5, 1.5
    ([(0.5, 0.5)], [("0", "0", "1", "1")], "boxes", "real numbers"),
    ([(0.5, 0.5)], [(0, 0, "1", 1)], "boxes", "real numbers"),      # one string among numbers
    ([True, False], [(0, 1)], "points", "real numbers"),
    ([0.5], [(0, None)], "boxes", "real numbers"),
    ([0.5], [(0, float("nan"))], "boxes", "NaN"),
    ([float("nan")], [(0, 1)], "points", "NaN"),
    ([(0.5, 0.5), (1.0,)], [(0, 0, 1, 1)], "points", "array of real numbers"),  # ragged
])
def test_range_counts_refuses_what_is_not_a_number(points, boxes, name, says):
    with pytest.raises(InvalidParameter, match=f"^{name}: .*{says}"):
        T.range_counts(points, boxes)


def test_range_counts_takes_integers_and_infinite_sides():
    inf = float("inf")
    assert T.range_counts([1, 2, 3], [(-inf, inf), (2, inf), (-inf, 2)]).tolist() == [3, 2, 1]
    assert T.range_counts(np.array([[1, 1], [5, 5]], dtype=np.int64),
                          [(0, 0, 2, 2), (0, 0, inf, inf)]).tolist() == [1, 2]


def test_range_counts_by_hand():
    pts = [(0.5, 0.5), (1.5, 0.5), (1.5, 1.5), (2.5, 2.5)]
    boxes = [(1, 0, 2, 2), (0, 0, 3, 3), (0.5, 0.5, 1.5, 1.5), (3, 3, 4, 4)]
    # half-open boxes: the second (1.5, .5) is on the open side of box 3
    assert T.range_counts(pts, boxes).tolist() == [2, 4, 1, 0]


def test_bad_patterns(db):
    with pytest.raises(InvalidParameter):
        T.pattern_counts(db, [()])
    with pytest.raises(InvalidParameter):
        T.subsequence_supports(db, [(db.vocab.end_id,)])
    with pytest.raises(InvalidParameter):
        T.top_k_strings(db, 0)


# --------------------------------------------------------------- brute force
ALPHA = 4
seqs = st.lists(st.lists(st.integers(0, ALPHA - 1), max_size=8), max_size=8)
pattern = st.lists(st.integers(0, ALPHA - 1), min_size=1, max_size=4)
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _db(sequences, users=None):
    return SequenceDB.from_sequences([[str(x) for x in s] for s in sequences],
                                     vocab=[str(i) for i in range(ALPHA)], users=users)


def _occurrences(s, p):
    return sum(1 for i in range(len(s) - len(p) + 1) if tuple(s[i:i + len(p)]) == tuple(p))


def _contains(s, p):
    it = iter(s)
    return all(any(x == y for y in it) for x in p)


def _ranked(freq, k, min_length):
    items = [(p, c) for p, c in freq.items() if len(p) >= min_length and c > 0]
    items.sort(key=lambda pc: (-pc[1], len(pc[0]), pc[0]))
    return items[:k]


@SETTINGS
@given(seqs, st.lists(st.lists(st.integers(0, ALPHA + 1), min_size=1, max_size=5), max_size=12))
def test_pattern_counts_brute(sequences, queries):
    db = _db(sequences)
    end, start = ALPHA, ALPHA + 1
    marked = [[start] + s + [end] for s in sequences]
    expected = [sum(_occurrences(s, q) for s in marked) for q in queries]
    assert T.pattern_counts(db, queries).tolist() == expected


@SETTINGS
@given(seqs, st.lists(pattern, max_size=12), st.none() | st.integers(1, 6))
def test_subsequence_supports_brute(sequences, pats, l_max):
    db = _db(sequences)
    cut = [s if l_max is None else s[:l_max] for s in sequences]
    expected = [sum(_contains(s, p) for s in cut) for p in pats]
    assert T.subsequence_supports(db, pats, l_max=l_max).tolist() == expected


@SETTINGS
@given(seqs, st.integers(1, 12), st.integers(1, 3))
def test_top_k_strings_brute(sequences, k, min_length):
    freq = Counter(tuple(s[i:j]) for s in sequences
                   for i in range(len(s)) for j in range(i + 1, len(s) + 1))
    pats, counts = T.top_k_strings(_db(sequences), k, min_length=min_length)
    assert list(zip(pats, counts.tolist())) == _ranked(freq, k, min_length)


def _all_subsequences(s):
    out = set()
    for r in range(1, len(s) + 1):
        out.update(tuple(s[i] for i in idx) for idx in itertools.combinations(range(len(s)), r))
    return out


@SETTINGS
@given(seqs, st.integers(1, 12), st.integers(1, 3))
def test_top_k_subsequences_brute(sequences, k, min_length):
    sup = Counter(p for s in sequences for p in _all_subsequences(s))
    pats, got = T.top_k_subsequences(_db(sequences), k, min_length=min_length)
    assert list(zip(pats, got.tolist())) == _ranked(sup, k, min_length)


@SETTINGS
@given(seqs, st.integers(1, 4), st.none() | st.integers(1, 4))
def test_frequent_subsequences_brute(sequences, min_support, max_length):
    sup = Counter(p for s in sequences for p in _all_subsequences(s))
    expected = {p: c for p, c in sup.items()
                if c >= min_support and (max_length is None or len(p) <= max_length)}
    pats, got = T.frequent_subsequences(_db(sequences), min_support, max_length=max_length)
    assert dict(zip(pats, got.tolist())) == expected


@SETTINGS
@given(seqs.flatmap(lambda ss: st.tuples(st.just(ss), st.lists(st.integers(0, 3),
                                                                min_size=len(ss),
                                                                max_size=len(ss)))),
       st.integers(1, 4))
def test_gram_user_counts_brute(data, n):
    sequences, users = data
    holders: dict[tuple, set] = {}
    for s, u in zip(sequences, users):
        for i in range(len(s) - n + 1):
            holders.setdefault(tuple(s[i:i + n]), set()).add(u)
    grams, got = T.gram_user_counts(_db(sequences, users=users), n)
    assert dict(zip(map(tuple, grams.tolist()), got.tolist())) == \
        {g: len(u) for g, u in holders.items()}
    assert [tuple(g) for g in grams.tolist()] == sorted(holders)


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), max_size=30),
       st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(0, 7),
                          st.integers(0, 7)), min_size=1, max_size=10))
def test_range_counts_brute(points, boxes):
    expected = [sum(1 for x, y in points if x0 <= x < x1 and y0 <= y < y1)
                for x0, y0, x1, y1 in boxes]
    assert T.range_counts(np.array(points, dtype=float).reshape(-1, 2), boxes).tolist() == expected


# ------------------------------------------------------------------ real data
MSNBC = dataset("msnbc/msnbc990928.seq.gz")


@pytest.mark.slow
@needs("msnbc/msnbc990928.seq.gz")
def test_msnbc_sample_against_brute_force():
    import dpgpu

    full = dpgpu.load(MSNBC)
    db = full.select(np.arange(0, len(full), 50))          # ~20k sequences
    seqs = [list(db.vocab.encode(s)) for s in db]
    rng = np.random.default_rng(0)
    pats = [tuple(rng.integers(0, 17, size=rng.integers(1, 5)).tolist()) for _ in range(60)]
    assert T.subsequence_supports(db, pats).tolist() == \
        [sum(_contains(s, p) for s in seqs) for p in pats]
    assert T.pattern_counts(db, pats).tolist() == \
        [sum(_occurrences(s, p) for s in seqs) for p in pats]
    top, sup = T.top_k_subsequences(db, 30, min_length=2)
    assert T.subsequence_supports(db, top).tolist() == sup.tolist()
    ms = int(sup[-1])
    freq, fsup = T.frequent_subsequences(db, ms, min_length=2)
    assert set(top) <= set(freq) and int(fsup.min()) >= ms


@SETTINGS
@given(seqs, st.lists(st.integers(1, 5), min_size=8, max_size=8))
def test_occurring_pairs_brute(sequences, weights):
    """Each ordered pair a sequence holds as a subsequence (``a a``: twice), once per sequence,
    with its weight: what level 2 of the exact miner starts from."""
    from dpgpu.eval.subseq_numba import occurring_pairs

    db = _db(sequences)
    w = np.array(weights[:len(sequences)], dtype=np.int64)
    keys, held = occurring_pairs(db.items, db.offsets, w, ALPHA)
    got = sorted(zip(keys.tolist(), held.tolist()))
    want = sorted((a * ALPHA + b, int(w[i])) for i, s in enumerate(sequences)
                  for a in range(ALPHA) for b in range(ALPHA) if _contains(s, (a, b)))
    assert got == want
