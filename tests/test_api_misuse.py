"""Regressions from an API user sweep: misuse gets dpgpu's own errors, never a silent wrong result.

Covers :meth:`SequenceDB.save`'s choice of format and its users warning, the
arguments of the SequenceDB and Vocabulary methods, :class:`DistributedDB`
used as if it were local, and ``report.json`` file names that lead out of a
release directory.
"""

from __future__ import annotations

import json
import logging
import pickle

import numpy as np
import pytest

import dpgpu
from dpgpu.data.sequencedb import SequenceDB
from dpgpu.data.vocabulary import Vocabulary
from dpgpu.errors import InputError, InvalidParameter, UnknownLabel
from dpgpu.scale.loading import DistributedDB


@pytest.fixture
def db():
    return SequenceDB.from_sequences([["a", "b"], ["b"], ["a", "a", "b"]])


# ------------------------------------------------------------- save: the format
@pytest.mark.parametrize("name, fmt", [("out.csv", "csv"), ("out.parquet", "parquet"),
                                       ("out.xes", "xes"), ("out.xes.gz", "xes"),
                                       ("out.spmf", "spmf"), ("out.txt", "lines")])
def test_save_writes_the_format_the_extension_names(db, tmp_path, name, fmt):
    db.save(tmp_path / name)
    back = dpgpu.load(tmp_path / name)
    assert back.source["format"] == fmt
    assert back.lengths.tolist() == db.lengths.tolist()


def test_save_of_seq_data_to_a_csv_name_writes_an_event_log(db, tmp_path):
    db.save(tmp_path / "in.seq")
    seq = dpgpu.load(tmp_path / "in.seq")
    assert seq.source["format"] == "seq"
    seq.save(tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text().startswith("case:concept:name,")
    assert dpgpu.load(tmp_path / "out.csv").source["format"] == "csv"


def test_save_without_a_known_extension_keeps_the_datas_format(db, tmp_path):
    db.save(tmp_path / "in.seq")
    dpgpu.load(tmp_path / "in.seq").save(tmp_path / "out.data")
    assert dpgpu.load(tmp_path / "out.data").source["format"] == "seq"
    db.save(tmp_path / "plain")  # from memory: lines
    assert dpgpu.load(tmp_path / "plain").source["format"] == "lines"


def test_save_to_a_csv_name_keeps_a_column_database_a_column_file(db, tmp_path):
    column = SequenceDB(db.items, db.offsets, db.vocab, source={"format": "column"})
    column.save(tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text().splitlines()[0] == "id,sequence"


def test_save_takes_a_text_format_for_a_txt_name(db, tmp_path):
    db.save(tmp_path / "out.txt", "spmf")
    assert dpgpu.load(tmp_path / "out.txt").source["format"] == "spmf"


@pytest.mark.parametrize("name, fmt", [("out.parquet", "csv"), ("out.csv", "lines"),
                                       ("out.seq", "xes")])
def test_save_refuses_a_format_the_extension_contradicts(db, tmp_path, name, fmt):
    with pytest.raises(InvalidParameter, match=rf"^format: {fmt} does not match the extension"):
        db.save(tmp_path / name, fmt)
    assert not (tmp_path / name).exists()


def test_save_refuses_an_extension_naming_a_format_it_cannot_write(db, tmp_path):
    with pytest.raises(InvalidParameter, match=r"^path: .*\.jsonl names the jsonl format"):
        db.save(tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("path", [None, 3])
def test_save_names_a_path_of_the_wrong_type(db, path):
    with pytest.raises(InvalidParameter, match="^path: expected a file name"):
        db.save(path)


# ------------------------------------------------------------- save: the users
@pytest.fixture
def user_db():
    return SequenceDB.from_sequences([["a", "b"], ["b"], ["a"]], users=["u", "v", "u"])


@pytest.mark.parametrize("fmt", ["lines", "seq", "spmf", "xes"])
def test_save_warns_when_the_format_drops_the_users(user_db, tmp_path, caplog, fmt):
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        user_db.save(tmp_path / "out", fmt)
    dropped = [r.getMessage() for r in caplog.records if "users" in r.getMessage()]
    assert len(dropped) == 1 and f"the {fmt} format has no user column" in dropped[0]


@pytest.mark.parametrize("fmt", ["csv", "column"])
def test_save_does_not_warn_where_the_users_are_written(user_db, tmp_path, caplog, fmt):
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        user_db.save(tmp_path / "out.csv", fmt)
    assert not [r for r in caplog.records if "users" in r.getMessage()]
    assert "u" in (tmp_path / "out.csv").read_text().split()[-1].split(",")


def test_save_without_users_does_not_warn_of_them(db, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        db.save(tmp_path / "out.txt")
    assert not [r for r in caplog.records if "users" in r.getMessage()]


# ------------------------------------------------------------ arguments refused
def test_sequence_db_refuses_a_source_that_is_not_a_dict():
    with pytest.raises(InvalidParameter, match="^source: expected a dict"):
        SequenceDB([0, 1], [0, 1, 2], ["a", "b"], source="x")
    assert SequenceDB([0, 1], [0, 1, 2], ["a", "b"], source={"path": "p"}).source == {"path": "p"}


@pytest.mark.parametrize("path", [None, 3, ["dir"]])
def test_load_release_names_a_path_of_the_wrong_type(path):
    with pytest.raises(InvalidParameter, match="^path: expected the path of a release"):
        dpgpu.load_release(path)


@pytest.mark.parametrize("label", [["a"], {"a": 1}, 0, None])
def test_vocabulary_membership_of_a_non_string_is_false(label):
    vocab = Vocabulary(["a", "0"])
    assert (label in vocab) is False
    assert "a" in vocab and "0" in vocab


def test_id_of_an_unknown_label_is_dpgpus_error_and_a_key_error():
    vocab = Vocabulary(["a"])
    with pytest.raises(UnknownLabel, match="^label: 'z' is neither an item") as info:
        vocab.id_of("z")
    assert isinstance(info.value, InvalidParameter) and isinstance(info.value, KeyError)
    with pytest.raises(UnknownLabel):
        vocab.id_of(["a"])  # unhashable: not a label either
    assert vocab.id_of("a") == 0 and vocab.id_of("&") == vocab.end_id


@pytest.mark.parametrize("items, why", [(np.array([7]), "shape"),
                                        (np.array([0.0, 1.0, 1.0, 0.0, 0.0, 1.0]), "dtype"),
                                        ([0, 1, 1, 0, 0, 1], "a list")])
def test_padded_refuses_items_that_are_not_the_databases(db, items, why):
    with pytest.raises(InvalidParameter, match=r"^items: .*shape \(6,\)"):
        db.padded(3, items=items)


def test_padded_with_the_items_given_equals_padded_without(db):
    tokens, lengths = db.padded(3, items=db.items.astype(np.int64))
    expected, expected_lengths = db.padded(3)
    assert tokens.tolist() == expected.tolist() == [[0, 1, -1], [1, -1, -1], [0, 0, 1]]
    assert lengths.tolist() == expected_lengths.tolist()


@pytest.mark.parametrize("index", [[True, 1], [0, False], (1, True, 0)])
def test_an_index_mixing_booleans_and_numbers_is_refused(db, index):
    with pytest.raises(InvalidParameter, match="^index: .*mixes booleans with numbers"):
        db[index]
    with pytest.raises(InvalidParameter, match="mixes booleans"):
        db.select(index)


def test_masks_and_numbers_still_pick_sequences(db):
    assert list(db[[True, False, True]]) == [("a", "b"), ("a", "a", "b")]
    assert list(db[np.array([False, True, False])]) == [("b",)]
    assert list(db[[2, 0]]) == [("a", "a", "b"), ("a", "b")]


# ---------------------------------------------------------------- DistributedDB
@pytest.fixture
def held(db):
    """A DistributedDB as load_distributed returns it, without starting a cluster."""
    return DistributedDB(None, [object(), object()], [2, 1], db.vocab,
                         {"path": "/data/x.txt", "format": "lines"}, False)


def test_distributed_db_is_not_indexed_here(held):
    with pytest.raises(InvalidParameter, match=r"^index: .*call \.collect\(\)"):
        held[0]


def test_distributed_db_is_not_pickled(held):
    with pytest.raises(InvalidParameter, match=r"cannot be pickled.*\.collect\(\)"):
        pickle.dumps(held)


def test_distributed_db_repr_shows_what_a_sequence_db_repr_shows(held, db):
    assert repr(held) == ("DistributedDB(3 sequences, 2 items, in 2 partitions on Dask workers, "
                          "from /data/x.txt)")
    assert repr(db).startswith("SequenceDB(3 sequences, 2 items,")


# ------------------------------------------------------------ release file names
def _release(tmp_path, **fields):
    """A minimal release directory whose report.json has ``fields``."""
    (tmp_path / "report.json").write_text(json.dumps({"mechanism": "ngram", "epsilon": 1.0,
                                                      **fields}))
    return tmp_path


@pytest.mark.parametrize("key, value", [
    ("files", ["/etc/passwd"]), ("files", ["report.json", "../x"]), ("files", ["sub/x"]),
    ("files", [".."]), ("files", "report.json"), ("files", [3]),
    ("synthetic_file", "/dev/zero"), ("synthetic_file", "../x"), ("synthetic_file", ".."),
    ("synthetic_file", "a\\b"), ("synthetic_file", ""), ("synthetic_file", ["x"]),
])
def test_load_release_refuses_report_file_names_outside_the_directory(tmp_path, key, value):
    with pytest.raises(InputError, match=rf"report\.json: {key}: expected .* inside the release"):
        dpgpu.load_release(_release(tmp_path, **{key: value}))


def test_load_release_reads_the_files_a_report_names_inside(tmp_path):
    release = dpgpu.load_release(_release(tmp_path, files=["report.json", "gone.tsv"],
                                          synthetic_file=None))
    assert release.files == ["report.json"]
    with pytest.raises(InputError, match="holds no synthetic dataset"):
        release.synthetic()


def test_a_user_column_not_asked_for_is_pointed_out(tmp_path, caplog):
    """Regression: user-level data saved as CSV (a 'user' column) read back without users,
    silently: DPNE then bounded each sequence, not each user."""
    db = SequenceDB.from_sequences([["a", "b"], ["b"], ["c", "a"]], users=["u", "v", "u"])
    db.save(tmp_path / "y.csv", "csv")
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        assert dpgpu.load(tmp_path / "y.csv").users is None
    assert "y.csv: column 'user' is not read as the users" in caplog.text
    assert "pass --user user for user-level data" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        back = dpgpu.load(tmp_path / "y.csv", user="user")
    assert back.users.tolist() == [0, 1, 0] and "not read as the users" not in caplog.text


def test_save_of_spmf_data_to_a_txt_name_keeps_spmf_and_its_names(tmp_path):
    """Regression (review): SPMF files are often named .txt; save("out.txt") wrote lines and
    lost the @ITEM names."""
    path = tmp_path / "k.txt"
    path.write_text("@CONVERTED_FROM_TEXT\n@ITEM=1=apple\n@ITEM=2=pear\n1 -1 2 -1 -2\n2 -1 -2\n")
    db = dpgpu.load(path)
    db.save(tmp_path / "out.txt")
    text = (tmp_path / "out.txt").read_text()
    assert text.startswith("@CONVERTED_FROM_TEXT\n@ITEM=1=apple\n@ITEM=2=pear\n")
    assert list(dpgpu.load(tmp_path / "out.txt")) == list(db)
    db.save(tmp_path / "lines.txt", "lines")  # asked for: lines
    assert (tmp_path / "lines.txt").read_text() == "1 2\n2\n"


def test_a_user_column_read_as_the_cases_is_not_pointed_out(tmp_path, caplog):
    """Regression (review): with --case user each case already is a user, yet the warning
    said to pass --user user."""
    (tmp_path / "u.csv").write_text("user,activity\nu1,a\nu1,b\nu2,a\n")
    with caplog.at_level(logging.WARNING, logger="dpgpu"):
        db = dpgpu.load(tmp_path / "u.csv", case="user")
    assert len(db) == 2 and "not read as the users" not in caplog.text
