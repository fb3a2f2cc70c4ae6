"""Messy CSV and JSON-lines input: a quote never closed, ragged rows, blank and odd user ids,
a delimiter to find.

Each case was once read without a word: the rest of a file taken into one
field, extra fields dropped, anonymous records merged into one user, ``true``
taken for a user ``'True'``.  Now each is an error naming the file, the line
and the column or field, or (``1.0``, ``;``) read as meant.
"""

from __future__ import annotations

import csv
import json

import pytest

import dpgpu
from dpgpu import InputError
from dpgpu.cli import main
from dpgpu.data.reading import csv_reader

#: The formats read through :func:`dpgpu.data.reading.csv_reader`, with their options, for
#: a table whose columns are ``case`` and ``activity``.
CSV_READERS = {
    "csv": {},
    "column": {"sequence": "activity", "case": "case"},
    "wide": {"states": ["activity"], "case": "case"},
    "text-csv": {"user": "case", "text": "activity"},
}


def load_error(tmp_path, body: str, file_name: str = "in.csv", **options) -> str:
    """The one-line InputError that loading a file of ``body`` raises, less the file's name
    that it starts with."""
    path = tmp_path / file_name
    path.write_bytes(body.encode())
    with pytest.raises(InputError) as info:
        dpgpu.load(path, **options)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message.removeprefix(f"{path}: ")


# ------------------------------------------------------------- a quote never closed
@pytest.mark.parametrize("fmt", CSV_READERS)
def test_a_quote_never_closed_is_an_error_on_its_line(tmp_path, fmt):
    text = 'case,activity\nA,"Start\nB,b\nC,c\nD,d\n'
    assert load_error(tmp_path, text, format=fmt, **CSV_READERS[fmt]) == (
        "line 2: malformed CSV (unterminated quoted field: a quote opened here is never "
        "closed)")


@pytest.mark.parametrize("ending", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("last", ["", "end"])
def test_the_quote_is_found_past_blank_lines_and_quoted_line_breaks(ending, last):
    # line 4 starts a row whose first field spans lines 4-5; its second opens on line 5
    lines = ["a,b", "1,2", "", '"x', 'y","z', "w"]
    data = (ending.join(lines) + ending + last).encode()
    reader, _ = csv_reader(data, 0, ",")
    with pytest.raises(csv.Error, match="unterminated quoted field"):
        list(reader)
    assert reader.line_num == 5


def test_a_quote_that_runs_past_the_field_size_limit_is_found(tmp_path):
    before = csv.field_size_limit(40)  # the event log reader keeps the csv module's limit
    try:
        rows = "".join(f"c{k},a{k}\n" for k in range(30))
        message = load_error(tmp_path, f'case,activity\nc,a\nA,"Start\n{rows}', format="csv")
        # a long field that is closed stays that error, on its line, whatever comes after
        long = "x" * 50
        other = load_error(tmp_path, f'case,activity\nc,"{long}"\n{rows}d,"open\n',
                           format="csv")
    finally:
        csv.field_size_limit(before)
    assert message == ("line 3: malformed CSV (unterminated quoted field: a quote opened here "
                       "is never closed)")
    assert other.startswith("line 2: malformed CSV (field larger than field limit")


def test_an_unclosed_quote_in_the_header_is_an_error(tmp_path):
    message = load_error(tmp_path, 'author,"content\nann,Hi.\n', format="text-csv")
    assert message.startswith("line 1: malformed CSV (unterminated quoted field")


def test_text_after_a_closing_quote_is_still_read_as_before(tmp_path):
    # the csv module and Arrow both read "a"x"y" as ax"y"; only a quote never closed is refused
    path = tmp_path / "t.csv"
    path.write_text('case,activity\nc,"a"x"y"\nc,b\n')
    db = dpgpu.load(path, format="csv")
    assert [list(s) for s in db] == [['ax"y"', "b"]]


def test_the_cli_exits_2_on_a_quote_never_closed(tmp_path, capsys):
    path = tmp_path / "unterm.csv"
    path.write_text('case,activity\nA,"Start\nB,b\nC,c\nD,d\n')
    status = main(["stats", str(path), "--json"])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.strip().splitlines() == [
        f"dpgpu: error: {path}: line 2: malformed CSV (unterminated quoted field: a quote "
        "opened here is never closed)"]


# ------------------------------------------------------------- text-csv rows and delimiter
def test_text_csv_refuses_a_row_with_more_fields_than_the_header(tmp_path):
    text = "author,content\nu1,Hello, world and more. Another sentence.\nu2,Fine text.\n"
    assert load_error(tmp_path, text, format="text-csv") == (
        "line 2: 3 fields, but the header has 2 (a cell that holds the delimiter ',' must be "
        "quoted)")


def test_text_csv_refuses_a_row_with_fewer_fields_than_the_header(tmp_path):
    text = "author,content,likes\nu1,Hello there.,3\nu2,Fine text.\n"
    assert load_error(tmp_path, text, format="text-csv") == \
        "line 3: 2 fields, but the header has 3"


@pytest.mark.parametrize("delimiter", [";", "\t", "|"])
def test_text_csv_finds_the_delimiter_in_the_header(tmp_path, delimiter):
    path = tmp_path / "t.csv"
    rows = ["author", "content"], ["alice", "Hi there, you."], ["bob", "Fine."]
    path.write_text("\ufeff" + "".join(delimiter.join(row) + "\n" for row in rows))
    db = dpgpu.load(path, format="text-csv")
    assert [list(s) for s in db] == [["hi", "there", "you"], ["fine"]]
    assert db.source["user_labels"] == ["alice", "bob"]


# ------------------------------------------------------------- users
@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_user_is_refused_not_merged(tmp_path, blank):
    csv_text = f'author,content\nalice,"Hi there."\n{blank},"No author here."\n'
    assert load_error(tmp_path, csv_text, format="text-csv") == \
        "line 3: empty user (column 'author')"
    lines = [{"author": "alice", "content": "Hi there."}, {"author": blank, "content": "No."}]
    jsonl = "".join(json.dumps(record) + "\n" for record in lines)
    assert load_error(tmp_path, jsonl, file_name="posts.jsonl") == \
        "line 2: empty user (field 'author')"


def test_a_blank_user_in_parquet_is_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"author": ["a", ""], "content": ["x y", "z"]}), path)
    with pytest.raises(InputError, match=r"t.parquet: row 2: empty user \(column 'author'\)$"):
        dpgpu.load(path, format="text-parquet")


@pytest.mark.parametrize("value, shown", [
    ("true", "true"), ("false", "false"), ("1e400", "Infinity"), ("-Infinity", "-Infinity"),
    ("NaN", "NaN"), ("1.5", "1.5"), ("null", "null"), ("[1]", "list")])
def test_jsonl_users_that_are_no_string_or_whole_number_are_refused(tmp_path, value, shown):
    jsonl = ('{"author": "a", "content": "Hi."}\n'
             f'{{"author": {value}, "content": "Hi there."}}\n')
    assert load_error(tmp_path, jsonl, file_name="odd.jsonl") == (
        f"line 2: 'author' must be a string or a whole number, got {shown}")


def test_jsonl_whole_float_users_are_the_integer_users(tmp_path):
    path = tmp_path / "n.jsonl"
    records = [(1, "Hi."), (1.0, "Bye."), ("1", "So."), (2e3, "Ok."), (2000, "Yes.")]
    path.write_text("".join(json.dumps({"author": u, "content": t}) + "\n" for u, t in records))
    db = dpgpu.load(path)
    # labels are text in files, so "1" is the user 1 too
    assert db.users.tolist() == [0, 0, 0, 1, 1]
    assert db.source["user_labels"] == ["1", "2000"]
