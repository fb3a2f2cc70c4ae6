"""User-level text readers: JSON lines, text CSV/Parquet, the tokenizer, detection, errors."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

import dpgpu
from dpgpu import InputError, InvalidParameter
from dpgpu.data.users import tokenize


def _seqs(db):
    return [list(s) for s in db]


def test_tokenize_sentences_words_lowercase():
    text = "Hello, World! It's a well-known fact.\nNew line here?  Yes"
    assert tokenize(text) == [["hello", "world"], ["it's", "a", "well-known", "fact"],
                              ["new", "line", "here"], ["yes"]]
    assert tokenize("A b. C", lowercase=False) == [["A", "b"], ["C"]]
    assert tokenize(" ... !! ") == []


def test_jsonl_one_sequence_per_sentence_same_user(tmp_path):
    p = tmp_path / "posts.jsonl"
    p.write_text('{"author": "ann", "content": "The cat sat. The cat ran."}\n'
                 '\n'
                 '{"author": "bob", "content": "the cat"}\n'
                 '{"author": "ann", "content": "Dogs bark"}\n')
    db = dpgpu.load(p)
    assert db.source["format"] == "jsonl"
    assert _seqs(db) == [["the", "cat", "sat"], ["the", "cat", "ran"], ["the", "cat"],
                         ["dogs", "bark"]]
    assert db.users.dtype == np.int32 and db.users.tolist() == [0, 0, 1, 0]
    assert db.source["user_labels"] == ["ann", "bob"]


def test_jsonl_detected_from_content_gzip_and_numeric_fields(tmp_path):
    p = tmp_path / "data.gz"
    p.write_bytes(gzip.compress(b'{"u": 7, "t": "1 2 3"}\n{"u": 8, "t": "2 3"}\n'))
    db = dpgpu.load(p, user="u", text="t", lowercase=False)
    assert db.source["format"] == "jsonl"
    assert _seqs(db) == [["1", "2", "3"], ["2", "3"]] and db.users.tolist() == [0, 1]
    assert db.vocab.labels == ["1", "2", "3"]


@pytest.mark.parametrize("body, message", [
    ('{"author": "a", "content": "x"}\n{"author": "b", "content": \n', r"line 2: not valid JSON"),
    ('{"author": "a", "content": "x"}\n[1, 2]\n', r"line 2: expected a JSON object"),
    ('{"author": "a", "content": "x"}\n\n{"content": "y"}\n', r"line 3: no field 'author'"),
    ('{"author": "a"}\n', r"line 1: no field 'content'"),
    ('{"author": "a", "content": 5}\n', r"line 1: 'content' must be a string"),
    ('{"author": null, "content": "x"}\n',
     r"line 1: 'author' must be a string or a whole number, got null"),
    ('{"author": "a", "content": "..."}\n', r"no words"),
])
def test_jsonl_errors_name_file_and_line(tmp_path, body, message):
    p = tmp_path / "bad.jsonl"
    p.write_text(body)
    with pytest.raises(InputError, match=message) as exc:
        dpgpu.load(p)
    assert "bad.jsonl" in str(exc.value)


def test_text_csv_quoted_multiline_and_options(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('id;who;body\n1;ann;"Hi there. Bye"\n2;bob;"one\ntwo"\n')
    db = dpgpu.load(p, format="text-csv", user="who", text="body", delimiter=";")
    assert _seqs(db) == [["hi", "there"], ["bye"], ["one"], ["two"]]
    assert db.users.tolist() == [0, 0, 1, 1] and db.source["format"] == "text-csv"


@pytest.mark.parametrize("typed", ["\\t", "tab", "\t"])
def test_text_csv_tab_delimiter_as_typed_in_a_shell(tmp_path, typed):
    p = tmp_path / "t.tsv"
    p.write_text("who\tbody\nann\tHi there\nbob\tone, two\n")
    db = dpgpu.load(p, format="text-csv", user="who", text="body", delimiter=typed)
    assert _seqs(db) == [["hi", "there"], ["one", "two"]]


def test_text_csv_errors(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("author,content\nann,hello\nbob\n")
    with pytest.raises(InputError, match=r"t.csv: line 3: 1 fields"):
        dpgpu.load(p, format="text-csv")
    with pytest.raises(InputError, match=r"t.csv: no column 'text'"):
        dpgpu.load(p, format="text-csv", text="text")
    with pytest.raises(InvalidParameter, match="tokens"):
        dpgpu.load(p, format="text-csv", tokens="int")
    with pytest.raises(InvalidParameter, match="lowercase"):
        dpgpu.load(p, format="text-csv", lowercase="yes")


def test_text_parquet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    p = tmp_path / "t.parquet"
    pq.write_table(pa.table({"author": ["x", "y", "x"], "content": ["A b. C", "b", "c a"]}), p)
    db = dpgpu.load(p, format="text-parquet")
    assert _seqs(db) == [["a", "b"], ["c"], ["b"], ["c", "a"]]
    assert db.users.tolist() == [0, 0, 1, 0]
    with pytest.raises(InputError, match="no column 'body'"):
        dpgpu.load(p, format="text-parquet", text="body")


def test_dpne_runs_on_user_text(tmp_path):
    from dpgpu.mechanisms.dpne import dpne
    p = tmp_path / "u.jsonl"
    p.write_text("".join(f'{{"author": "u{i}", "content": "the cat sat. a dog ran"}}\n'
                         for i in range(300)))
    r = dpne(dpgpu.load(p), 2.0, 1e-6, max_n=3, contribution=4, seed=0)
    assert ("the", "cat", "sat") in set(r.grams())
    assert ("sat", "a") not in set(r.grams())          # n-grams do not cross sentences
