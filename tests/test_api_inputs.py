"""Inputs of the in-memory data API that used to be misread rather than refused."""

import numpy as np
import pytest

import dpgpu
from dpgpu import InputError, InvalidParameter, SequenceDB, Vocabulary
from dpgpu.data.generate import markov_sequences


@pytest.mark.parametrize("labels", [{"apple", "pear", "fig"}, frozenset({"apple", "pear"})])
def test_a_vocabulary_given_as_a_set_is_refused(labels):
    with pytest.raises(InvalidParameter, match=r"^labels: a \w+ has no order.*sorted"):
        Vocabulary(labels)
    with pytest.raises(InvalidParameter, match=r"^vocab: a \w+ has no order"):
        SequenceDB.from_sequences([["apple"]], vocab=labels)
    with pytest.raises(InvalidParameter, match=r"^vocab: a \w+ has no order"):
        SequenceDB([0], [0, 1], labels)


@pytest.mark.parametrize("sequences, where", [
    ([["a"], "home news"], "sequence 1 is 'home news', a string"),
    ([["a"], b"ab"], "sequence 1 is b'ab', a string"),
    ([["a"], {"b", "c"}], "sequence 1 is .*, of type set"),
    ([["a"], {"b": 1}], "sequence 1 is .*, of type dict"),
    ([["a"], 7], "sequence 1 is 7, of type int"),
    ({"s1": ["a"], "s2": ["b"]}, "expected a list of sequences .* got dict"),
    ({("a",), ("b",)}, "expected a list of sequences .* got set"),
    ("ab", "expected a list of sequences .* got str"),
    ([["a"], ["b", ["c", "d"]]], r"sequence 1 holds \['c', 'd'\], a list"),
    ([["a"], ["b", ("c",)]], r"sequence 1 holds \('c',\), a tuple"),
    ([["a"], [{"c": 1}]], "sequence 1 holds {'c': 1}, a dict"),
    ([["a"], [{"c"}]], "sequence 1 holds {'c'}, a set"),
    ([["a", None]], "sequence 0 holds None, which is not an item label"),  # pandas' missing
    ([["a"], ["b", float("nan")]], "sequence 1 holds nan, which is not an item label"),
    ([["a"], [np.float64("inf")]], "sequence 1 holds np.float64\\(inf\\), which is not"),
    ([[True]], "sequence 0 holds True, which is not an item label"),
    ([["a"], [np.bool_(False)]], "sequence 1 holds np.False_, which is not an item label"),
    ([[b"x"]], "sequence 0 holds b'x', which is not an item label"),
])
def test_from_sequences_refuses_what_it_would_misread(sequences, where):
    with pytest.raises(InvalidParameter, match=f"^sequences: {where}"):
        SequenceDB.from_sequences(sequences)


def test_from_sequences_still_takes_numbers_and_strings_as_labels():
    db = SequenceDB.from_sequences([[1, 2.5, "x"], (np.int64(3),), np.array(["y"])])
    assert list(db) == [("1", "2.5", "x"), ("3",), ("y",)]
    # an integral float is the integer's item (it was "1.0", an item apart from 1), as 1 and "1"
    db = SequenceDB.from_sequences([[1.0, 1, "1"], [np.float32(2.0), 2]])
    assert list(db) == [("1", "1", "1"), ("2", "2")] and db.vocab.labels == ["1", "2"]
    with pytest.raises(InvalidParameter, match="^sequences: sequence 0 is 'xy', a string"):
        SequenceDB.from_sequences(["xy"])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_small_integer_index_arrays_pick_rows_of_a_large_database(dtype):
    db = SequenceDB.from_sequences([[str(i % 7)] for i in range(300)])
    idx = np.array([1, 2, 6], dtype=dtype)
    assert list(db[idx]) == [("1",), ("2",), ("6",)]
    assert list(db.select(idx)) == [("1",), ("2",), ("6",)]
    tokens, lengths = db.padded(3, rows=idx)
    assert tokens[:, 0].tolist() == [db.vocab.id_of(x) for x in "126"]
    assert lengths.tolist() == [1, 1, 1]
    if dtype == np.int8:  # negative numbers count from the end
        assert list(db[np.array([-1, -2], dtype=dtype)]) == [(str(299 % 7),), (str(298 % 7),)]


@pytest.mark.parametrize("value", ["no", "False", 1, 0, None])
def test_vocabulary_public_must_be_a_bool(value):
    with pytest.raises(InvalidParameter, match="^public: expected True or False"):
        Vocabulary(["a"], public=value)
    assert Vocabulary(["a"], public=np.bool_(False)).public is False


@pytest.mark.parametrize("value", ["yes", "False", 1, None])
def test_padded_start_must_be_a_bool(value):
    db = SequenceDB.from_sequences([["a", "b"]], vocab=["a", "b"])
    with pytest.raises(InvalidParameter, match="^start: expected True or False"):
        db.padded(2, start=value)
    tokens, _ = db.padded(2, start=np.bool_(True))
    assert tokens.tolist() == [[db.vocab.start_id, 0, 1]]


@pytest.mark.parametrize("seed", [True, None, -1, "1", 1.5, (), (1, -1), (1, "2")])
def test_markov_sequences_checks_its_seed(seed):
    with pytest.raises(InvalidParameter, match="^seed: "):
        markov_sequences(100, seed=seed)


def test_markov_sequences_takes_the_seeds_markov_chunks_gives_it():
    assert np.array_equal(markov_sequences(100, seed=np.int64(2)).items,
                          markov_sequences(100, seed=2).items)
    assert markov_sequences(100, seed=(2, 1)).n_events >= 100
    with pytest.raises(InvalidParameter, match="^seed: "):
        markov_sequences(100, seed=False)


def test_the_constructor_takes_a_list_of_labels_as_vocab():
    db = SequenceDB([0, 1], [0, 2], ["a", "b"])
    assert isinstance(db.vocab, Vocabulary) and db.vocab.public
    assert list(db) == [("a", "b")]
    with pytest.raises(InvalidParameter, match="^vocab: "):
        SequenceDB([0], [0, 1], None)


def test_load_refuses_a_set_as_vocabulary(tmp_path):
    """The file reader's vocabulary goes through public_vocabulary, which listed the set."""
    path = tmp_path / "x.txt"
    path.write_text("a b\nb c\n")
    with pytest.raises(InvalidParameter, match="^vocab: a set has no order"):
        dpgpu.load(path, vocab={"a", "b", "c"})


@pytest.mark.parametrize("text", ["% Sequences:\n\n1 2\n3\n", "1 2\n3\n", "a b\n"])
def test_a_seq_file_without_the_uci_header_is_refused_not_read_as_lines(tmp_path, text):
    """Regression: a .seq file missing its '% Different categories' header was read as lines,
    the header's words becoming items ('%', 'Sequences:') and its blank line a sequence."""
    path = tmp_path / "clicks.seq"
    path.write_text(text)
    with pytest.raises(InputError, match=r"clicks\.seq: named \.seq, but it does not open with "
                                         r"the UCI \.seq header .* such as lines"):
        dpgpu.load(path)
    assert len(dpgpu.load(path, format="lines")) == text.count("\n")


def test_encode_reads_labels_as_from_sequences_does():
    """Regression (review): from_sequences made 1.0 the item '1', but encode (and so
    estimate) looked for '1.0'; None became 'None'."""
    db = SequenceDB.from_sequences([[1.0, 2.0], [3]])
    assert db.vocab.encode([1.0, 2, "3"]).tolist() == [0, 1, 2]
    with pytest.raises(InvalidParameter, match="^labels: None, which is not an item label"):
        db.vocab.encode([None])
