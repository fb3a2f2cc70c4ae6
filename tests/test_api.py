"""The Python API's arguments: bad ones are refused by name, documented ones work."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dpgpu
from dpgpu import InvalidParameter, SequenceDB, Vocabulary
from dpgpu.mechanisms.dpne import DPNERelease
from dpgpu.mechanisms.ngram import NGramRelease
from dpgpu.mechanisms.pfs2 import PFS2Release
from dpgpu.mechanisms.privtree.pst import PSTRelease

# integer labels, as users write them: from_sequences turns them into strings
SEQS = [[1, 2, 3], [2, 3], [1, 2, 3, 1], [3, 1, 2]] * 10
MECHANISMS = {"ngram": lambda db: dpgpu.ngram(db, 5.0, l_max=5, seed=1, synthetic=False),
              "pst": lambda db: dpgpu.pst(db, 5.0, l_top=5, seed=1, synthetic=False)}


@pytest.fixture(scope="module", params=sorted(MECHANISMS))
def release(request):
    return MECHANISMS[request.param](SequenceDB.from_sequences(SEQS, vocab=["1", "2", "3"]))


@pytest.fixture
def db():
    return SequenceDB.from_sequences([["a", "b", "c"], ["b"], ["c", "a"]], vocab=["a", "b", "c"])


# ----------------------------------------------------------------------- top_k
@pytest.mark.parametrize("min_length", [0, -1, 1.5, True])
def test_top_k_refuses_a_bad_min_length(release, min_length):
    with pytest.raises(InvalidParameter, match="min_length"):
        release.top_k(3, min_length=min_length)


def test_top_k_min_length_defaults_are_documented():
    assert inspect.signature(NGramRelease.top_k).parameters["min_length"].default == 2
    assert inspect.signature(PSTRelease.top_k).parameters["min_length"].default == 1
    assert "Default 2" in NGramRelease.top_k.__doc__ and "6.2.2" in NGramRelease.top_k.__doc__
    assert "Default 1" in PSTRelease.top_k.__doc__


# -------------------------------------------------------------------- estimate
def test_estimate_reads_integer_labels_as_strings(release):
    assert release.estimate([1, 2]) == release.estimate(["1", "2"]) > 0


@pytest.mark.parametrize("labels, match", [
    ("12", "labels: pass a sequence of labels"),       # not split into "1", "2"
    (12, "labels: pass a sequence of labels"),
    (["1", "z"], "labels: 'z' is not in the vocabulary"),
    ([], "labels: the string holds no item"),
    (["&"], "labels: the string holds no item"),  # N-gram said 0.0, PST about |D|
    ({"1", "2"}, "labels: expected the string's labels in order .* got a set"),  # hash order
    ({"1": 0, "2": 0}, "labels: expected the string's labels in order .* got a dict"),
    (["1", "&", "2"], "labels: the end marker '&' may only end the string"),
    (["$"], "labels: '\\$' is not in the vocabulary"),  # PST crashed with an IndexError
])
def test_estimate_refuses_bad_labels_by_name(release, labels, match):
    with pytest.raises(InvalidParameter, match=match):
        release.estimate(labels)


@pytest.mark.parametrize("mechanism", [
    lambda db: dpgpu.ngram(db, 10.0, l_max=1, n_max=1, seed=1, synthetic=False),
    lambda db: dpgpu.pst(db, 10.0, l_top=2, max_nodes=100, seed=1, synthetic=False),
], ids=["ngram", "pst"])
def test_an_item_labelled_like_the_end_marker_wins_in_both_releases(mechanism):
    # "&" is an item that never occurs: its estimate is about 0, not the 50 sequences' ends
    db = SequenceDB.from_sequences([["a"]] * 50, vocab=["a", "&"])
    release = mechanism(db)
    assert release.estimate(["&"]) < 10
    assert release.estimate(["a"]) > 40


def test_estimate_of_a_string_ending_with_the_marker(release):
    assert release.estimate(["1", "&"]) >= 0.0  # the end marker is reachable without such item


# ------------------------------------------------------------------ Vocabulary
def test_vocabulary_encode_checks_every_label():
    vocab = Vocabulary(["1", "2"])
    assert vocab.encode([2, "1", "&", "$"]).tolist() == [1, 0, 2, 3]
    assert vocab.encode([2], markers=()).tolist() == [1]
    with pytest.raises(InvalidParameter, match="labels: '&' is not in the vocabulary"):
        vocab.encode(["&"], markers=())
    with pytest.raises(InvalidParameter, match="seq: '3' is not in the vocabulary"):
        vocab.encode([3], name="seq")
    with pytest.raises(InvalidParameter, match="labels: pass a sequence"):
        vocab.encode("12")


@pytest.mark.parametrize("label", ["z", "&"])
def test_from_sequences_names_a_label_missing_from_vocab(label):
    with pytest.raises(InvalidParameter, match=f"vocab: '{label}' is not in the vocabulary"):
        SequenceDB.from_sequences([["a", label]], vocab=["a"])


# ------------------------------------------------------------- SequenceDB rows
@pytest.mark.parametrize("end", ["none", "bogus", 1, 0, None, "True"])
def test_padded_refuses_an_unknown_end(db, end):
    with pytest.raises(InvalidParameter, match="end: must be False, True, 'uncut' or 'all'"):
        db.padded(2, end=end)


def test_padded_end_modes(db):
    end_id = db.vocab.end_id
    none, _ = db.padded(2, end=False)
    uncut, lengths = db.padded(2, end=True)
    assert np.array_equal(uncut, db.padded(2, end="uncut")[0])
    assert uncut.tolist() == [[0, 1, -1], [1, end_id, -1], [2, 0, end_id]]  # the cut one: none
    assert lengths.tolist() == [2, 2, 3]
    assert none.tolist() == [[0, 1], [1, -1], [2, 0]]
    every, _ = db.padded(2, end="all")
    assert every.tolist() == [[0, 1, end_id], [1, end_id, -1], [2, 0, end_id]]


def test_padded_with_no_rows(db):
    tokens, lengths = db.padded(2, rows=[])
    assert tokens.shape[0] == 0 and lengths.shape == (0,)


def test_select_with_no_rows_is_an_empty_database(db):
    assert len(db.select([])) == 0


@pytest.mark.parametrize("index, match", [
    ([5000], "index: sequence 5000 is out of range for a database of 3 sequences"),
    ([-4], "index: sequence -4 is out of range"),
    ("abc", "index: expected sequence numbers"),
    ([1.5], "index: expected sequence numbers"),
    ([[0], [1, 2]], "index: expected sequence numbers"),
    ([True, False], "index: a boolean mask needs one entry per sequence \\(3\\)"),
])
def test_select_refuses_a_bad_index_by_name(db, index, match):
    with pytest.raises(InvalidParameter, match=match):
        db.select(index)


def test_padded_refuses_bad_rows_by_name(db):
    with pytest.raises(InvalidParameter, match="rows: sequence 3 is out of range"):
        db.padded(2, rows=[0, 3])


def test_select_keeps_integers_negatives_and_masks(db):
    assert list(db.select([2, -3, 2])) == [("c", "a"), ("a", "b", "c"), ("c", "a")]
    assert list(db.select(np.array([False, True, True]))) == [("b",), ("c", "a")]
    assert list(db.select(1)) == [("b",)]


def test_sequence_ids_counts_negative_numbers_from_the_end(db):
    assert db.sequence_ids(-1).tolist() == [2, 0]
    with pytest.raises(IndexError):
        db.sequence_ids(3)


# ------------------------------------------------------------------------ load
@pytest.mark.parametrize("path", [[["a", "b"]], 123, b"data.txt"])
def test_load_names_a_path_of_the_wrong_type(path):
    with pytest.raises(InvalidParameter, match="path: expected a file path.*from_sequences"):
        dpgpu.load(path)


# -------------------------------------------------------------------- docstrings
DOCUMENTED = [
    (NGramRelease.estimate, "Parameters Returns Raises"),
    (NGramRelease.top_k, "Parameters Returns Raises"),
    (NGramRelease.save, "Parameters Returns Raises"),
    (PSTRelease.estimate, "Parameters Returns Raises"),
    (PSTRelease.top_k, "Parameters Returns Raises"),
    (PSTRelease.save, "Parameters Returns Raises"),
    (PFS2Release.save, "Parameters Returns Raises"),
    (DPNERelease.save, "Parameters Returns Raises"),
    (SequenceDB.select, "Parameters Returns Raises"),
    (SequenceDB.truncate, "Parameters Returns Raises"),
    (SequenceDB.sequence_ids, "Parameters Returns Raises"),
    (SequenceDB.padded, "Parameters Returns Raises"),
    (SequenceDB.from_sequences, "Parameters Returns Raises"),
    (SequenceDB.stats, "Returns"),
    (Vocabulary.id_of, "Parameters Returns Raises"),
    (Vocabulary.label_of, "Parameters Returns Raises"),
    (Vocabulary.encode, "Parameters Returns Raises"),
    (Vocabulary.encode_string, "Parameters Returns Raises"),
    (Vocabulary.decode, "Parameters Returns Raises"),
]


@pytest.mark.parametrize("method, sections", DOCUMENTED, ids=lambda m: getattr(m, "__qualname__",
                                                                             None))
def test_public_methods_have_numpydoc_sections(method, sections):
    doc = inspect.getdoc(method)
    for section in sections.split():
        assert f"\n{section}\n{'-' * len(section)}\n" in doc, f"{method.__qualname__}: {section}"


@pytest.mark.parametrize("cls", [NGramRelease, PSTRelease, PFS2Release, DPNERelease])
def test_save_documents_the_release_path_and_the_input_error(cls):
    doc = inspect.getdoc(cls.save)
    assert "pathlib.Path" in doc and "InputError" in doc and "force" in doc
