"""Bad values given to the data API: a dpgpu error naming the parameter, never a raw one."""

from __future__ import annotations

import numpy as np
import pytest

import dpgpu
from dpgpu import InputError, InvalidParameter, SequenceDB, Vocabulary

SEQS = [["a", "b"], [], ["c"], ["a", "a", "c"], ["b", "c", "a", "b"], ["c", "c"]]
USERS = [3, 1, 3, 0, 2, 1]


@pytest.fixture
def db():
    return SequenceDB.from_sequences(SEQS, vocab=["a", "b", "c"], users=USERS)


# ------------------------------------------------------------------ indexing
SLICES = [slice(0, 2), slice(None), slice(-2, None), slice(None, -1), slice(None, None, -1),
          slice(4, 0, -2), slice(1, None, 2), slice(-100, 100), slice(5, 1), slice(7, 9)]


@pytest.mark.parametrize("picked", SLICES, ids=str)
def test_a_slice_is_the_database_of_those_sequences(db, picked):
    part = db[picked]
    rows = list(range(len(SEQS)))[picked]
    assert isinstance(part, SequenceDB)
    assert list(part) == [tuple(SEQS[i]) for i in rows]
    assert part.vocab == db.vocab
    assert part.users.tolist() == [USERS[i] for i in rows]


def test_an_integer_index_out_of_range_is_an_index_error(db):
    assert db[-1] == ("c", "c") and db[0] == ("a", "b")
    for i in (len(SEQS), -len(SEQS) - 1, 10 ** 30):
        with pytest.raises(IndexError, match=f"sequence {i} is out of range"):
            db[i]


@pytest.mark.parametrize("index", [slice(0, 1.5), slice(None, None, 0), 1.0, "a"], ids=repr)
def test_a_bad_index_is_refused_by_name(db, index):
    with pytest.raises(InvalidParameter, match="index"):
        db[index]


# ------------------------------------------------------------------- padding
def test_a_width_past_the_longest_sequence_cuts_nothing(db):
    tokens, lengths = db.padded(4, end="all", start=True)
    for l_max in (10 ** 12, 2 ** 63):
        wide, wide_lengths = db.padded(l_max, end="all", start=True)
        assert np.array_equal(wide, tokens) and np.array_equal(wide_lengths, lengths)
        assert list(db.truncate(l_max)) == list(db)


@pytest.mark.parametrize("l_max", [0, -3, 2.5, True, "4"], ids=repr)
def test_a_bad_width_is_refused_by_name(db, l_max):
    with pytest.raises(InvalidParameter, match="l_max"):
        db.padded(l_max)


def test_a_tensor_that_does_not_fit_in_memory_names_l_max_and_its_size(db, monkeypatch):
    def no_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate")

    monkeypatch.setattr(np, "full", no_memory)
    with pytest.raises(InvalidParameter, match=r"l_max: the padded tensor of 6 x 4 int32 "
                                               r"\(8.94e-08 GiB.*does not fit in memory"):
        db.padded(100, backend="numpy")  # host memory


# --------------------------------------------------------------- vocabulary
def test_repeated_vocabulary_labels_are_refused_by_name():
    with pytest.raises(InvalidParameter, match=r"labels: 'a' is listed more than once "
                                               r"\(ids 0 and 2\)"):
        Vocabulary(["a", "b", "a"])
    with pytest.raises(InvalidParameter, match=r"vocab: 'a' is listed more than once"):
        SequenceDB.from_sequences([["a"]], vocab=["a", "a"])
    with pytest.raises(InvalidParameter, match="labels: pass a sequence of labels"):
        Vocabulary("abc")  # not three labels "a", "b", "c"


def test_lookups_name_the_label_and_the_id():
    vocab = Vocabulary(["a", "b"])
    with pytest.raises(KeyError, match="'zz' is neither an item"):
        vocab.id_of("zz")
    with pytest.raises(InvalidParameter, match=r"ids: 7 is not an id of this vocabulary of "
                                               r"size 2: ids are 0 \.\. 3"):
        vocab.decode([0, 7])
    with pytest.raises(InvalidParameter, match="ids: expected integer ids, got 1.0"):
        vocab.decode([1.0])  # was read as id 1
    with pytest.raises(InvalidParameter, match="ident: -1 is not an id"):
        vocab.label_of(-1)
    assert vocab.decode([1, 2, 3]) == ("b", "&", "$")


# -------------------------------------------------------------------- users
def test_users_are_labels_numbered_in_order_of_first_appearance():
    db = SequenceDB.from_sequences(SEQS, users=["u", "v", "u", 7, "w", "v"])
    assert db.users.tolist() == [0, 1, 0, 2, 3, 1]
    assert db.source["user_labels"] == ["u", "v", 7, "w"]
    assert db[3:].users.tolist() == [2, 3, 1] and db[3:].source == db.source
    big = SequenceDB.from_sequences([["a"]] * 3, users=[2 ** 40, 2 ** 40 + 1, 2 ** 40])
    assert big.users.tolist() == [0, 1, 0] and big.source["user_labels"] == [2 ** 40, 2 ** 40 + 1]


def test_integer_user_ids_are_kept():
    for users in ([5, 3, 5], np.array([5, 3, 5], dtype=np.int64), [5.0, 3.0, 5.0]):
        db = SequenceDB.from_sequences([["a"]] * 3, users=users)
        assert db.users.tolist() == [5, 3, 5] and "user_labels" not in db.source


@pytest.mark.parametrize("users", [[1.2, 1.7], np.array([1.2, 1.7]), [0.5, 0]], ids=repr)
def test_fractional_users_never_merge(users):
    with pytest.raises(InvalidParameter, match=r"users: [01]\.[257] is not a user label"):
        SequenceDB.from_sequences([["a"], ["a"]], users=users)


@pytest.mark.parametrize("users, match", [
    ([True, False], "users: True is not a user label"),
    ([float("nan"), 1], "users: nan is not a user label"),
    ([None, 1], "users: None is not a user label"),
    ([1, "1"], "users: 1 and '1' are different users that read the same as text"),
    ([1], r"users: one user label per sequence is needed \(2\), got 1"),
    (5, "users: expected one user label per sequence"),
    ("uv", "users: expected one user label per sequence"),
], ids=repr)
def test_bad_users_are_refused_by_name(users, match):
    with pytest.raises(InvalidParameter, match=match):
        SequenceDB.from_sequences([["a"], ["a"]], users=users)


@pytest.mark.parametrize("users", [[1.2, 1.7], [1, 2, 3], [2 ** 40, 0]], ids=repr)
def test_the_constructor_takes_int32_user_ids_only(users):
    with pytest.raises(InvalidParameter, match="users: "):
        SequenceDB(np.zeros(2, dtype=np.int32), [0, 1, 2], Vocabulary(["a"]), users=users)


# ---------------------------------------------------------------------- plot
def test_plot_refuses_an_ax_that_is_not_an_axes():
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    release = dpgpu.ngram(SequenceDB.from_sequences(SEQS * 5, vocab=["a", "b", "c"]), 5.0,
                          l_max=4, seed=1, synthetic=False)
    with pytest.raises(InvalidParameter, match=r"ax: expected a matplotlib Axes .*got int"):
        release.plot(ax=3)


# ------------------------------------------------------------ blank files
@pytest.mark.parametrize("fmt", ["lines", "spmf"])
def test_a_file_of_blank_lines_is_empty_sequences_in_a_line_format(tmp_path, fmt):
    path = tmp_path / "e.txt"
    path.write_bytes(b"\n \n\t\n")
    db = dpgpu.load(path, format=fmt)
    assert len(db) == 3 and list(db) == [()] * 3 and db.vocab.size == 0


def test_a_blank_file_without_a_format_or_of_zero_bytes_is_empty(tmp_path):
    blank, empty = tmp_path / "blank.txt", tmp_path / "empty.txt"
    blank.write_bytes(b"\n\n")
    empty.write_bytes(b"")
    with pytest.raises(InputError, match="empty file .*give the format 'lines'"):
        dpgpu.load(blank)
    for path, fmt in ((empty, "lines"), (blank, "seq"), (blank, "csv")):
        with pytest.raises(InputError, match="empty file"):
            dpgpu.load(path, format=fmt)


@pytest.mark.parametrize("run", [
    lambda db: dpgpu.ngram(db, 1.0, l_max=3, seed=1),
    lambda db: dpgpu.pst(db, 1.0, l_top=3, seed=1),
    lambda db: dpgpu.pfs2(db, 1.0, threshold=0.5, seed=1),
    lambda db: dpgpu.dpne(db, 1.0, 1e-5, seed=1),
], ids=["ngram", "pst", "pfs2", "dpne"])
def test_mechanisms_release_a_database_of_empty_sequences(tmp_path, run):
    path = tmp_path / "e.txt"
    path.write_bytes(b"\n" * 5)
    assert 0 < run(dpgpu.load(path, format="lines", vocab=["a", "b"])).report["epsilon"] <= 1.0


@pytest.mark.parametrize("items, offsets, name", [
    ([0.5, 1.2], [0, 2], "items"),             # fractions were truncated to ids 0 and 1
    ([True, False], [0, 2], "items"),
    ([[0, 1]], [0, 2], "items"),
    ([0, 2 ** 40], [0, 2], "items"),          # wrapped around int32
    ([0, 1], [0.0, 2.5], "offsets"),
    ([0, 1], [0, 3], "offsets"),
    ([0, 1], [1, 2], "offsets"),
    ([0, 7], [0, 2], "items"),
    ([0, -1], [0, 2], "items"),
])
def test_the_constructor_refuses_what_it_would_change_naming_the_argument(items, offsets, name):
    with pytest.raises(InvalidParameter, match=rf"^{name}: "):
        SequenceDB(items, offsets, Vocabulary(["a", "b"]))


def test_the_constructor_takes_integer_arrays_of_any_width():
    db = SequenceDB(np.array([1, 0, 1], dtype=np.uint8), np.array([0, 1, 3], dtype=np.int32),
                    Vocabulary(["a", "b"]))
    assert list(db) == [("b",), ("a", "b")] and db.items.dtype == np.int32
    assert len(SequenceDB([], [0], Vocabulary(["a"]))) == 0
