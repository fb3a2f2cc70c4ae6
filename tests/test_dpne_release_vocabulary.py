"""DPNE's release vocabulary: a vocabulary taken from the data never leaks through the release.

Without a public vocabulary, item ids are ranks among all the data's labels,
in an order (numeric when every label is an integer, else text) that one
added user can flip.  The release (DPNE and every DPSU baseline) is
re-encoded into the labels of the released grams alone, in text order
(:func:`dpgpu.mechanisms.dpne.release_of`), so neighbours that release the
same grams give the same object, pickle and ``ngrams.tsv``.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dpgpu import SequenceDB, Vocabulary
from dpgpu.mechanisms.dpne import dpne

#: (method, policy) of DPNE and of every baseline it offers.
RUNS = [("dpne", "weighted"), ("dpsu-all", "weighted"), ("dpsu-even", "weighted"),
        ("dpsu-single", "weighted"), ("dpsu-all", "laplace"), ("dpsu-even", "laplace"),
        ("dpsu-single", "laplace")]
IDS = [f"{m}-{p}" for m, p in RUNS]
SECRET = "zqsecrettoken"


def _run(db, method, policy, seed, **kw):
    extra = dict(eta=1e-6) if method == "dpne" else dict(policy=policy)
    return dpne(db, 1.0, 1e-6, max_n=3, contribution=4, seed=seed, method=method,
                **extra, **kw)


def _neighbours():
    """The review's reproduction: 400 users writing ``9 10 9 10``, and one more user
    holding only a non-integer token (never released)."""
    seqs = [["9", "10", "9", "10"]] * 400
    d = SequenceDB.from_sequences(seqs, users=list(range(400)))
    d2 = SequenceDB.from_sequences(seqs + [["abc"]], users=list(range(401)))
    assert not d.vocab.public and not d2.vocab.public
    assert d.vocab.labels == ["9", "10"] and d2.vocab.labels == ["10", "9", "abc"]
    return d, d2


def _mixed_db(names=False):
    """Frequent tokens (integers and words), and rare tokens of one user each."""
    rng = np.random.default_rng(5)
    common = ["7", "12", "apple", "Zebra", "b c", "x"]
    base = [["7", "12", "apple", "7"], ["Zebra", "b c", "7", "12"], ["12", "apple", "Zebra"]]
    seqs = [base[i % 3] for i in range(600)] + [list(rng.choice(common, 5)) for _ in range(100)]
    seqs += [["12", f"rare{i}", "7"] for i in range(20)] + [[SECRET, "3"]]
    db = SequenceDB.from_sequences(seqs, users=list(range(len(seqs))))
    assert not db.vocab.public and SECRET in db.vocab
    if names:
        vocab = Vocabulary(db.vocab.labels, [f"name of {x}" for x in db.vocab.labels],
                           public=False)
        db = SequenceDB(db.items, db.offsets, vocab, users=db.users)
    return db


def _public_twin(db):
    """``db`` with the same ids in a vocabulary marked public: the same noise identities,
    so the same released grams, decoded without any release vocabulary."""
    return SequenceDB(db.items, db.offsets, Vocabulary(db.vocab.labels, public=True),
                      users=db.users)


@pytest.mark.parametrize("method,policy", RUNS, ids=IDS)
def test_a_non_integer_token_of_one_user_does_not_change_the_release(tmp_path, method,
                                                                    policy):
    d, d2 = _neighbours()
    for seed in range(3):
        r, r2 = _run(d, method, policy, seed), _run(d2, method, policy, seed)
        assert r.grams() == r2.grams() and len(r.grams()) >= 2
        assert len(r.levels) == len(r2.levels)
        for a, b in zip(r.levels, r2.levels):
            assert a.dtype == b.dtype == np.int32 and np.array_equal(a, b)
        assert r.vocab.labels == r2.vocab.labels
        a = r.save(tmp_path / f"d-{seed}") / "ngrams.tsv"
        b = r2.save(tmp_path / f"d2-{seed}") / "ngrams.tsv"
        assert a.read_bytes() == b.read_bytes()
        assert r.report["vocabulary"] == r2.report["vocabulary"] == {"public": False}


@pytest.mark.parametrize("method,policy", RUNS, ids=IDS)
def test_the_release_vocabulary_is_the_released_labels_in_text_order(method, policy):
    db = _mixed_db()
    r = _run(db, method, policy, 2)
    expected = set(_run(_public_twin(db), method, policy, 2).grams())
    assert len(expected) >= 5 and len(r.grams()) == len(expected)
    assert set(r.grams()) == expected
    labels = sorted({x for g in expected for x in g})
    assert r.vocab.labels == labels and r.vocab.size == len(labels)
    assert not r.vocab.public and r.report["vocabulary"] == {"public": False}
    assert not any(x.startswith("rare") for x in labels) and SECRET not in labels
    ids = np.concatenate([lvl.ravel() for lvl in r.levels])
    assert np.array_equal(np.unique(ids), np.arange(len(labels)))      # no gaps
    for k, lvl in enumerate(r.levels, start=1):
        assert lvl.shape[1] == k and lvl.dtype == np.int32
        rows = [tuple(x) for x in lvl.tolist()]
        assert rows == sorted(rows)                     # lexicographic in the new ids


@pytest.mark.parametrize("method,policy", RUNS, ids=IDS)
def test_the_pickle_of_a_release_holds_no_unreleased_token(method, policy):
    db = _mixed_db()
    r = _run(db, method, policy, 1)
    assert sum(r.counts()) >= 5
    blob = pickle.dumps(r)
    assert SECRET.encode() not in blob and b"rare1" not in blob
    back = pickle.loads(blob)
    assert back.grams() == r.grams() and back.vocab.labels == r.vocab.labels


def test_the_release_vocabulary_keeps_the_names_of_the_released_labels():
    db = _mixed_db(names=True)
    r = _run(db, "dpne", "weighted", 3)
    assert sum(r.counts()) >= 5
    assert r.vocab.labels == sorted({x for g in r.grams() for x in g})
    assert r.vocab.names == [f"name of {x}" for x in r.vocab.labels]
    assert not r.vocab.public
    assert not any(SECRET in n or "rare" in n for n in r.vocab.names)


@pytest.mark.parametrize("method,policy", RUNS, ids=IDS)
def test_a_public_vocabulary_is_kept_with_its_ids_and_order(method, policy):
    """Ids of a public vocabulary are public: the release keeps it (not in text order
    here), its ids and the mechanism's id order.  (Unchanged behaviour: this guards it.)"""
    data = _mixed_db()
    n = data.vocab.size                                   # reversed: not in text order
    db = SequenceDB(n - 1 - data.items, data.offsets,
                    Vocabulary(data.vocab.labels[::-1], public=True), users=data.users)
    r = _run(db, method, policy, 2)
    assert sum(r.counts()) >= 5
    assert r.vocab is db.vocab and r.vocab.public
    assert r.report["vocabulary"]["public"] is True
    assert r.report["vocabulary"]["size"] == db.vocab.size
    assert r.vocab.labels != sorted(r.vocab.labels)       # the data's order, not text order
    for lvl in r.levels:
        rows = [tuple(x) for x in lvl.tolist()]
        assert rows == sorted(rows)
    singles = [g[0] for g in r.grams() if len(g) == 1]
    assert singles == sorted(singles, key=db.vocab.labels.index)
