"""NGramRelease.estimate: the Markov chain of the released n-gram counts, against the definition."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from dpgpu import InvalidParameter, SequenceDB, Vocabulary
from dpgpu.mechanisms.ngram import NGramRelease, ngram
from dpgpu.mechanisms.ngram.synthesis import model_level
from dpgpu.ops.lookup import GramIndex

LABELS = ["a", "b", "c", "d"]  # "d" is in the vocabulary but in no gram of the hand-made model

# A hand-made model (gram -> count); "&" is the end marker.  "cac" and "acc" have no
# 2-prefix "ac" in the model: the chain must skip a context the model does not hold.
HAND = {
    ("a",): 10.0, ("b",): 8.0, ("c",): 5.0,
    ("a", "b"): 6.0, ("b", "c"): 4.0, ("c", "a"): 3.0, ("c", "c"): 1.0, ("b", "&"): 2.0,
    ("a", "b", "c"): 3.0, ("b", "c", "a"): 2.0, ("c", "a", "c"): 1.0, ("a", "c", "c"): 1.0,
}


def hand_release() -> NGramRelease:
    vocab = Vocabulary(LABELS)
    n_symbols = vocab.size + 2
    model = []
    for n in range(1, 4):
        rows = [(g, c) for g, c in HAND.items() if len(g) == n]
        grams = np.array([vocab.encode_string(list(g)) if "&" not in g else
                          np.array([vocab.id_of(x) if x != "&" else vocab.end_id for x in g])
                          for g, _ in rows], dtype=np.int32)
        model.append(model_level(grams, np.array([c for _, c in rows]), n_symbols))
    return NGramRelease([], model, None, {}, vocab)


def model_table(release: NGramRelease) -> dict[tuple[str, ...], float]:
    """The release's model as ``labels -> count`` (read from its arrays, not via estimate)."""
    return {release.vocab.decode(g): float(c)
            for lvl in release.model for g, c in zip(lvl.grams.tolist(), lvl.count.tolist())}


def brute_conditional(table: dict, s: tuple[str, ...]) -> float:
    """P(s[-1] | the longest proper context s[start:-1], start >= 1, that the model holds
    with its extension and a positive count); 0 when there is none."""
    for start in range(1, len(s) - 1):
        joint, context = table.get(s[start:]), table.get(s[start:-1])
        if joint is not None and context:
            return joint / context
    return 0.0


def brute_estimate(table: dict, labels) -> float:
    """The definition: the string's own count when the model holds it, else the prefix's
    estimate times the conditional probability of the last symbol."""
    s = tuple(labels)
    if s in table:
        return table[s]
    if len(s) == 1:
        return 0.0
    return brute_estimate(table, s[:-1]) * brute_conditional(table, s)


@pytest.mark.parametrize("labels, want", [
    (["a"], 10.0),
    (["d"], 0.0),                       # in the vocabulary, not in the model
    (["a", "b"], 6.0),
    (["a", "b", "c"], 3.0),             # the model's own count
    (["a", "b", "c", "a"], 3.0 * 2 / 4),  # longer than the model: abc * P(a | bc)
    (["a", "b", "c", "a", "b"], 1.5 * 6 / 10),  # cab unknown: falls back to P(b | a)
    (["a", "b", "&"], 6.0 * 2 / 8),     # ab& unknown: ab * P(& | b)
    (["c", "b"], 0.0),                  # no context of length >= 1 holds cb
    (["b", "a", "b"], 0.0),             # zero stays zero
    (["c", "a", "c", "c"], 1.0 * 1 / 5),  # acc is held but its context ac is not: P(c | c)
    (["a", "d", "a"], 0.0),
])
def test_hand_made_model(labels, want):
    assert hand_release().estimate(labels) == pytest.approx(want, rel=1e-12, abs=0.0)


def test_unknown_labels_and_misplaced_end_are_refused():
    release = hand_release()
    with pytest.raises(InvalidParameter, match="labels"):
        release.estimate(["a", "zz"])
    with pytest.raises(InvalidParameter, match="labels"):
        release.estimate(["a", "&", "b"])
    with pytest.raises(InvalidParameter, match="labels"):
        release.estimate([])


def _walk(rng: random.Random, length: int) -> list[str]:
    """A mostly cyclic walk over a, b, c (so long strings keep positive estimates)."""
    s = [rng.choice("abc")]
    for _ in range(length - 1):
        s.append("abc"[("abc".index(s[-1]) + (1 if rng.random() < 0.85 else 2)) % 3])
    return s


def _db(seed: int) -> SequenceDB:
    rng = random.Random(seed)
    return SequenceDB.from_sequences([_walk(rng, rng.randint(1, 9)) for _ in range(400)],
                                     vocab=LABELS)


@pytest.mark.parametrize("variant", ["baseline", "adaptive", "no-approx"])
def test_matches_the_definition_on_a_release(variant):
    release = ngram(_db(1), 2.0, l_max=6, n_max=3, variant=variant, seed=2, synthetic=False)
    table = model_table(release)
    longest = len(release.model)
    rng = random.Random(3)
    positive_beyond_model = 0
    for length in list(range(1, longest + 8)) * 12:
        labels = _walk(rng, length) if rng.random() < 0.7 else \
            [rng.choice(LABELS) for _ in range(length)]
        if rng.random() < 0.3:
            labels.append("&")
        want = brute_estimate(table, labels)
        assert release.estimate(labels) == pytest.approx(want, rel=1e-12, abs=0.0)
        positive_beyond_model += want > 0 and len(labels) > longest
    assert positive_beyond_model > 10  # the chain was exercised, not only zeros


def test_on_the_papers_toy_example():
    toy = SequenceDB.from_sequences(
        [["I2", "I3", "I1"], ["I2", "I3"], ["I3", "I2"], ["I2", "I3", "I1"], ["I3", "I2", "I1"],
         ["I2", "I3", "I1", "I2", "I3"], ["I3", "I2"], ["I3", "I1", "I2", "I3"]],
        vocab=["I1", "I2", "I3"])
    release = ngram(toy, 1.0, l_max=5, n_max=2, variant="baseline", synthetic=False)
    table = model_table(release)
    for labels in (["I2", "I3", "I1", "I2", "I3", "I1", "&"], ["I3", "I1", "I2"], ["I1", "I1"]):
        assert release.estimate(labels) == pytest.approx(brute_estimate(table, labels),
                                                         rel=1e-12, abs=0.0)


class _FindSpy:
    """Counts GramIndex.find calls and the gram rows they look up."""

    def __init__(self, monkeypatch):
        self.calls = self.rows = 0
        original = GramIndex.find

        def find(index, queries):
            self.calls += 1
            self.rows += int(np.asarray(queries).shape[0])
            return original(index, queries)

        monkeypatch.setattr(GramIndex, "find", find)


def test_long_queries_take_a_linear_number_of_lookups(monkeypatch):
    rng = random.Random(4)  # cycles of 30 items: a long cyclic query keeps a positive estimate
    db = SequenceDB.from_sequences(
        [["abc"[(k + i) % 3] for i in range(30)] for k in (rng.randrange(3) for _ in range(300))],
        vocab=LABELS)
    release = ngram(db, 4.0, l_max=30, n_max=3, variant="baseline", synthetic=False)
    table = model_table(release)
    longest = len(release.model)
    labels = ["abc"[i % 3] for i in range(2000)]
    spy = _FindSpy(monkeypatch)
    got = release.estimate(labels)
    # batched: at most one lookup call per gram length, one row per window of each length
    assert spy.calls <= longest
    assert spy.rows <= longest * len(labels)
    calls, rows = spy.calls, spy.rows
    release.estimate(labels[:1000])
    assert spy.rows - rows <= longest * 1000 and spy.calls - calls <= longest
    # the last step of the chain, checked from the definition
    prefix = release.estimate(labels[:-1])
    assert prefix > 0 and math.isfinite(got)
    assert got == pytest.approx(prefix * brute_conditional(table, tuple(labels)), rel=1e-12,
                                abs=0.0)
    assert 0 < got < prefix  # sequences end in the data: the chain loses weight at each step
