"""Tables with a whole sequence in one column (dpgpu.data.column): reading, writing, errors, CLI.

Reads are checked against a plain reference (the csv module, ``str.split``
or a loop over the characters) on generated CSV and Parquet tables, and
against the statistics the AMP peptide dataset's README records.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpgpu
from dpgpu import SequenceDB
from dpgpu.cli import main
from dpgpu.data import writers
from dpgpu.errors import InputError, InvalidParameter
from shared_data import dataset, needs

AMP = "amp_peptides/AMPvsUniProt.csv"
#: Tokens of files read as strings: quotes, delimiters, non-ASCII, integers among words,
#: and an integer too long for the integer reader (19 digits).
WORDS = ["a", "b,c", 'q"t', "x;y", "é", "10", "007", "-3", "1234567890123456789", "a|b"]
#: Tokens of files whose items are all integers, some not written as they print (007,
#: -0): tokens="auto" reads a file with one of those as text, every item as written.
INTEGERS = ["0", "7", "007", "-3", "-0", "12", "123456789012345678"]
#: Tokens of files whose items are all integers written as they print: read as numbers.
CANONICAL = ["0", "7", "-3", "12", "123456789012345678"]
#: What may stand between (and around) the tokens of a cell.
SPACES = [" ", "  ", "\t", "\n", " \r\n ", "\u2003"]
_INTEGER = re.compile(r"-?[0-9]{1,18}")
_CANONICAL = re.compile(r"0|-?[1-9][0-9]{0,17}")


def reference(text, sequence, tokens="auto", delimiter=",", case=None, user=None):
    """The rows of a CSV text by the csv module: each row's items, row ids and user ids.

    Items: ``list`` of the non-space characters of the cell (``chars``), else
    ``str.split``; with ``int``, integers written as numbers (with ``auto``
    every item is as written: it reads numbers only when each is written as
    it prints).
    """
    rows = [r for r in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)]
    header = [h.strip() for h in rows[0]]
    body = [r for r in rows[1:] if r]
    if tokens == "chars":
        items = [[c for c in r[header.index(sequence)] if not c.isspace()] for r in body]
    else:
        items = [r[header.index(sequence)].split() for r in body]
    if tokens == "int" and all(_INTEGER.fullmatch(t) for s in items for t in s):
        items = [[str(int(t)) for t in s] for s in items]
    ids = [r[header.index(case)].strip() for r in body] if case else None
    users = [r[header.index(user)].strip() for r in body] if user else None
    return items, ids, users


def sorted_labels(labels):
    """``labels`` sorted as numbers when all are integers, else as strings."""
    try:
        return sorted(labels, key=lambda x: (int(x), x))
    except ValueError:
        return sorted(labels)


def as_lists(db):
    return [list(s) for s in db]


def user_labels(db):
    """Each sequence's user label."""
    return [db.source["user_labels"][u] for u in db.users.tolist()]


def write_csv(path, header, rows, delimiter=",", crlf=False, blank=None):
    """Write a CSV table with the csv module (a blank line after row ``blank``); its text."""
    buf = io.StringIO()
    out = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n")
    out.writerow(header)
    for i, row in enumerate(rows):
        out.writerow(row)
        if i == blank:
            buf.write("\r\n" if crlf else "\n")
    path.write_bytes(buf.getvalue().encode())
    return buf.getvalue()


def _cell(words, gaps, ends):
    """``words`` separated by ``gaps`` (one each), between the ``ends``."""
    inner = "".join(w + g for w, g in zip(words, gaps))
    return ends[0] + inner[:len(inner) - len(gaps[len(words) - 1]) if words else 0] + ends[1]


def cell_strategy(pool):
    return st.builds(_cell, st.lists(st.sampled_from(pool), max_size=5),
                     st.lists(st.sampled_from(SPACES), min_size=5, max_size=5),
                     st.tuples(st.sampled_from(["", " ", "\n"]), st.sampled_from(["", "\t"])))


tables = st.sampled_from([WORDS, INTEGERS, CANONICAL]).flatmap(
    lambda pool: st.lists(st.tuples(cell_strategy(pool), st.sampled_from(["u1", " u1", "u2 ",
                                                                          "u3", "7"])),
                          max_size=10))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=tables, blank=st.integers(0, 10), crlf=st.booleans(),
       delimiter=st.sampled_from([",", ";", "\t", "|"]),
       tokens=st.sampled_from(["auto", "str"]))
def test_reads_what_the_csv_module_and_str_split_read(tmp_path_factory, rows, blank, crlf,
                                                      delimiter, tokens):
    path = tmp_path_factory.mktemp("column") / "t.csv"
    text = write_csv(path, ["id", "label", "path", "who"],
                     [[f" s{i} ", "x", cell, who] for i, (cell, who) in enumerate(rows)],
                     delimiter, crlf, blank)
    db = dpgpu.load(path, "column", sequence="path", case="id", user="who", tokens=tokens,
                    delimiter=delimiter)
    items, ids, users = reference(text, "path", tokens, delimiter, "id", "who")
    assert as_lists(db) == items
    assert db.source["cases"] == ids == [f"s{i}" for i in range(len(rows))]
    assert user_labels(db) == users
    assert db.source["user_labels"] == list(dict.fromkeys(users))  # in order of first appearance
    assert db.source["columns"] == {"sequence": "path", "case": "id", "user": "who"}
    labels = db.vocab.labels
    ints = all(_CANONICAL.fullmatch(x) for x in labels) and tokens == "auto"
    assert db.source["tokens"] == ("int" if ints else "str")
    assert labels == sorted_labels(labels) and not db.vocab.public


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strings=st.lists(st.text(alphabet="ACGT \n\té,\"", max_size=12), max_size=10))
def test_chars_makes_every_character_but_white_space_an_item(tmp_path_factory, strings):
    path = tmp_path_factory.mktemp("chars") / "dna.csv"
    text = write_csv(path, ["sequence"], [[s] for s in strings])
    db = dpgpu.load(path, "column", tokens="chars")
    assert as_lists(db) == reference(text, "sequence", "chars")[0]
    assert db.source["tokens"] == "chars"


@pytest.mark.parametrize("tokens,want,kind", [
    ("auto", [["007", "-3"], [], ["7", "-0", "12"]], "str"),  # 007, -0: text, as written
    ("int", [["7", "-3"], [], ["7", "0", "12"]], "int"),
    ("str", [["007", "-3"], [], ["7", "-0", "12"]], "str"),
])
def test_integer_items_read_as_lines_reads_them(tmp_path, tokens, want, kind):
    path = tmp_path / "t.csv"
    path.write_text('sequence\n007 -3\n""\n7 -0 12\n')
    db = dpgpu.load(path, "column", tokens=tokens)
    assert as_lists(db) == want and db.source["tokens"] == kind
    assert db.vocab.labels == sorted_labels({x for s in want for x in s})


def test_a_parquet_table_reads_as_the_same_table_in_csv(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(3)
    paths = [" ".join(rng.choice(WORDS, rng.integers(0, 5))) for _ in range(200)]
    ids = [f"s{i}" for i in range(200)]
    users = [f"u{int(k)}" for k in rng.integers(0, 30, 200)]
    write_csv(tmp_path / "t.csv", ["id", "path", "user"], list(zip(ids, paths, users)))
    pq.write_table(pa.table({"id": ids, "path": pa.array(paths).dictionary_encode(),
                             "user": users, "n": list(range(200))}), tmp_path / "t.parquet")
    options = {"sequence": "path", "case": "id", "user": "user"}
    want = dpgpu.load(tmp_path / "t.csv", "column", **options)
    got = dpgpu.load(tmp_path / "t.parquet", "column", **options)
    assert as_lists(got) == as_lists(want) and got.vocab == want.vocab
    assert got.source["cases"] == ids and user_labels(got) == users
    assert "delimiter" not in got.source
    numbers = dpgpu.load(tmp_path / "t.parquet", "column", sequence="n", case="n")
    assert as_lists(numbers) == [[str(i)] for i in range(200)]


def test_parquet_nulls_and_types(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"sequence": ["a b", None, "", "b"], "id": ["1", "2", None, "4"],
                             "items": [["a"], ["b"], [], ["c"]]}), path)
    assert as_lists(dpgpu.load(path, "column")) == [["a", "b"], [], [], ["b"]]
    with pytest.raises(InputError, match=r"t\.parquet: row 3: empty row id \(column 'id'\)"):
        dpgpu.load(path, "column", case="id")
    with pytest.raises(InputError, match=r"column 'items' has type list<.*>; the sequence "
                                         "column of a column file must hold text"):
        dpgpu.load(path, "column", sequence="items")
    with pytest.raises(InputError, match=r"row 3: row id '2' \(column 'sequence'\) already on "
                                         "row 2"):
        pq.write_table(pa.table({"sequence": ["1", "2", "2"]}), tmp_path / "d.parquet")
        dpgpu.load(tmp_path / "d.parquet", "column", case="sequence")
    (tmp_path / "bad.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match=r"bad\.parquet: not a readable Parquet file"):
        dpgpu.load(tmp_path / "bad.parquet", "column")


@needs(AMP)
def test_the_amp_peptides_read_as_their_readme_says():
    db = dpgpu.load(dataset(AMP), "column", sequence="5200", tokens="chars")
    assert len(db) == 5200 and db.n_events == 171_133
    assert db.vocab.labels == list("ACDEFGHIKLMNPQRSTVWY")
    assert db.lengths.max() == 174 and db.lengths.min() == 7
    assert round(db.n_events / len(db), 3) == 32.910
    strings = ["".join(s) for s in db]
    assert len(strings) - len(set(strings)) == 558  # duplicate strings
    text = dataset(AMP).read_text()
    assert as_lists(db) == reference(text, "5200", "chars")[0]
    labels = dpgpu.load(dataset(AMP), "column", sequence="1", case=None)
    assert Counter(x for s in labels for x in s) == {"1": 2600, "0": 2600}


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("text,options,error,message", [
    ("id,path\n1,a\n", {}, InputError,
     r"t\.csv: no sequence column found; choose one with --sequence \(columns: id, path\)"),
    ("id,path\n1,a\n", {"sequence": "seq"}, InputError,
     r"t\.csv: no column 'seq' for --sequence \(columns: id, path\)"),
    ("id,path\n1,a\n", {"sequence": "path", "case": "pid"}, InputError,
     r"no column 'pid' for --case \(columns: id, path\)"),
    ("id,path\n1,a\n", {"sequence": "path", "user": "who"}, InputError,
     r"no column 'who' for --user \(columns: id, path\)"),
    ("sequence\na\n", {"tokens": "words"}, InvalidParameter,
     "tokens: must be one of auto, int, str, chars, got 'words'"),
    ("sequence\na\n", {"sequence": ""}, InvalidParameter, "sequence: expected a column name"),
    ("sequence\na\n", {"case": 3}, InvalidParameter, "case: expected a column name, got 3"),
    ("sequence\na\n", {"delimiter": ",,"}, InvalidParameter, "delimiter: expected one character"),
    ("sequence\na\n", {"states": "a"}, InvalidParameter,
     r"states: not an option of the 'column' format \(it takes: sequence, tokens, case, user, "
     r"delimiter\)"),
    ("sequence\n1 2\n\n3 x\n", {"tokens": "int"}, InputError,
     r"t\.csv: line 4: column 'sequence': 'x' is not an integer \(tokens int\)"),
    ('id,label,sequence\n1,a,x\n2,"b\nc"\n', {}, InputError,
     r"t\.csv: line 3: 2 fields: no field for the sequence column 'sequence' \(field 3 of "
     r"the header's 3\)"),
    ("sequence,id\nx,1\ny\n", {"case": "id"}, InputError,
     r"line 3: 1 fields: no field for the case column 'id' \(field 2 of the header's 2\)"),
    ("sequence,id\nx,1\n\ny,2,z\n", {}, InputError,
     r"t\.csv: line 4: 3 fields, but the header has 2 \(a cell that holds the delimiter ',' "
     r"must be quoted\)"),
    ("id,sequence\n1,a\n\n 1 ,b\n", {"case": "id"}, InputError,
     r"t\.csv: line 4: row id '1' \(column 'id'\) already on line 2; each row is one "
     "sequence"),
    ('id,sequence\n"a\nb",a\n ,b\n', {"case": "id"}, InputError,
     r"t\.csv: line 4: empty row id \(column 'id'\)"),
    ("u,sequence\nx,a\n\t,b\n", {"user": "u"}, InputError,
     r"t\.csv: line 3: empty user \(column 'u'\)"),
    ("\n\nsequence\na\n", {}, InputError, r"t\.csv: line 1: no header row \(a column file"),
    (b"sequence\n\xff\n", {}, InputError, r"t\.csv: line 2: not UTF-8 text"),
])
def test_bad_input_names_file_line_and_option(tmp_path, text, options, error, message):
    path = tmp_path / "t.csv"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    with pytest.raises(error, match=message):
        dpgpu.load(path, "column", **options)


def test_rows_may_lack_fields_of_columns_not_read(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("5200,1,UniProt,AMP\nGLW SK, 1\nKKV,0,x\n\nAC\n")
    db = dpgpu.load(path, "column", sequence="5200", tokens="chars")
    assert as_lists(db) == [list("GLWSK"), list("KKV"), list("AC")]
    with pytest.raises(InputError, match="line 5: 1 fields: no field for the sequence column '1'"):
        dpgpu.load(path, "column", sequence="1")


def test_a_cell_may_be_longer_than_the_csv_modules_field_limit(tmp_path):
    genome = "ACGT" * (csv.field_size_limit() // 2)
    path = tmp_path / "t.csv"
    path.write_text(f"id,sequence\n1,{genome}\n2,AC\n1,T\n")
    db = dpgpu.load(path, "column", tokens="chars")
    assert db.lengths.tolist() == [len(genome), 2, 1]
    with pytest.raises(InputError, match=r"line 4: row id '1' \(column 'id'\) already on line 2"):
        dpgpu.load(path, "column", tokens="chars", case="id")


def test_the_sequence_column_is_found_by_its_name_in_any_case(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("ID; Sequence ;n\n1;a b;2\n")
    db = dpgpu.load(path, "column")
    assert as_lists(db) == [["a", "b"]] and db.source["delimiter"] == ";"
    assert db.source["columns"]["sequence"] == "Sequence"


# ------------------------------------------------------------------ writing
def written(path):
    return path.read_text(encoding="utf-8").splitlines()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=tables, delimiter=st.sampled_from([",", ";", "\t"]))
def test_written_files_read_back_as_the_same_table(tmp_path_factory, rows, delimiter):
    d = tmp_path_factory.mktemp("round")
    write_csv(d / "t.csv", ["pid", "who", "path"],
              [[f"p{i}", who, cell] for i, (cell, who) in enumerate(rows)], delimiter)
    options = {"sequence": "path", "case": "pid", "user": "who", "delimiter": delimiter}
    db = dpgpu.load(d / "t.csv", "column", **options)
    assert db.save(d / "out.txt", format="column") == len(rows)  # the input's delimiter
    db.save(d / "out.csv", format="column")  # a .csv file: commas
    assert written(d / "out.txt")[0] == delimiter.join(["pid", "path", "who"])
    assert written(d / "out.csv")[0] == "pid,path,who"
    for out in ("out.txt", "out.csv"):
        back = dpgpu.load(d / out, "column", **dict(options, delimiter=None))
        assert as_lists(back) == as_lists(db) and back.vocab == db.vocab
        assert back.source["cases"] == db.source["cases"]
        assert user_labels(back) == user_labels(db)


def test_writes_the_input_shape_and_only_the_columns_read(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text('id,len,path,n\na,3,"x y",1\nb,0,,2\nc,1,"q""r  s",3\n')
    db = dpgpu.load(path, "column", sequence="path", case="id")
    db.save(tmp_path / "out.csv", format="column")
    assert written(tmp_path / "out.csv") == ["id,path", "a,x y", "b,", 'c,"q""r s"']
    lone = dpgpu.load(path, "column", sequence="path")
    lone.save(tmp_path / "lone.tsv", format="column")  # an empty cell alone on its row is quoted
    assert written(tmp_path / "lone.tsv") == ["path", "x y", '""', '"q""r s"']
    assert as_lists(dpgpu.load(tmp_path / "lone.tsv", "column", sequence="path")) == \
        as_lists(lone)


@needs(AMP)
def test_characters_are_written_back_together(tmp_path):
    db = dpgpu.load(dataset(AMP), "column", sequence="5200", tokens="chars")
    db.save(tmp_path / "amp.csv", format="column")
    lines = written(tmp_path / "amp.csv")
    assert lines[0] == "5200" and lines[1] == "GLWSKIKEVGKEAAKAAAKAAGKAALGAVSEAV"
    back = dpgpu.load(tmp_path / "amp.csv", "column", sequence="5200", tokens="chars")
    assert as_lists(back) == as_lists(db)
    db.save(tmp_path / "amp.txt", format="lines")  # read a character at a time: so is lines
    assert (tmp_path / "amp.txt").read_text().splitlines()[1:] == lines[2:]


def test_other_formats_write_an_id_and_a_sequence_column(tmp_path):
    db = SequenceDB.from_sequences([["a", "b"], [], ["b"]], users=np.array([1, 0, 1]))
    db.save(tmp_path / "out.csv", format="column")
    assert written(tmp_path / "out.csv") == ["id,sequence,user", "case-1,a b,1", "case-2,,0",
                                             "case-3,b,1"]
    back = dpgpu.load(tmp_path / "out.csv", "column", case="id", user="user")
    assert as_lists(back) == [["a", "b"], [], ["b"]] and user_labels(back) == ["1", "0", "1"]


@pytest.mark.parametrize("sequences,source,why", [
    ([["a b", "c"]], {}, "item 'a b' contains white space, which separates the items of a "
                         "column file"),
    ([[""]], {}, "item '' is empty, and a column file cannot hold it"),
    ([["G", "GC"]], {"format": "column", "tokens": "chars"}, "item 'GC' is not one character "
                                                             "other than white space"),
])
def test_labels_a_cell_cannot_hold_are_refused(tmp_path, sequences, source, why):
    db = SequenceDB.from_sequences(sequences)
    db.source.update(source)
    with pytest.raises(InvalidParameter, match=f"cannot write .*out.csv as column: {why}"):
        db.save(tmp_path / "out.csv", format="column")
    assert list(tmp_path.iterdir()) == []


def test_written_in_parts_as_written_whole(tmp_path):
    db = SequenceDB.from_sequences([["1", "2"], [], ["3"]] * 50)
    parts = [db.select(np.arange(i, i + 30)) for i in range(0, 150, 30)]
    for part in parts:
        part.source = {}
    assert writers.write_parts(parts, tmp_path / "parts.csv", "column") == (150, db.n_events)
    db.save(tmp_path / "whole.csv", format="column")
    assert (tmp_path / "parts.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()


# ------------------------------------------------------------------ CLI
def clicks(tmp_path, n=400):
    """A table of click paths with a session id and a covariate; its path."""
    rng = np.random.default_rng(7)
    pages = ["home", "news", "sports", "weather"]
    rows = [[f"s{i}", str(int(rng.integers(0, 2))),
             " ".join(rng.choice(pages, int(rng.integers(0, 6))))] for i in range(n)]
    return tmp_path / "clicks.csv", write_csv(tmp_path / "clicks.csv",
                                               ["session_id", "flag", "path"], rows)


def test_cli_ngram_then_evaluate_a_column_file(tmp_path, capsys):
    data, text = clicks(tmp_path)
    (tmp_path / "vocab.txt").write_text("home\nnews\nsports\nweather\n")
    read = ["--format", "column", "--sequence", "path", "--case", "session_id"]
    assert main(["ngram", str(data), *read, "--vocab", str(tmp_path / "vocab.txt"),
                 "--epsilon", "1", "--seed", "1", "--l-max", "3", "--out",
                 str(tmp_path / "rel"), "-q"]) == 0
    synthetic = next((tmp_path / "rel").glob("synthetic.*"))
    assert written(synthetic)[0] == "session_id,path"
    assert main(["evaluate", "--release", str(tmp_path / "rel"), "--original", str(data), *read,
                 "--json"]) == 0
    result = json.loads((tmp_path / "rel" / "evaluation.json").read_text())
    assert result["original"]["sequences"] == 400
    assert "count-queries" in result["tasks"], result["tasks"].keys()
    capsys.readouterr()


def test_cli_stats_convert_and_errors(tmp_path, capsys):
    data, text = clicks(tmp_path, 50)
    assert main(["convert", str(data), str(tmp_path / "out.csv"), "--format", "column",
                 "--sequence", "path", "--to", "column"]) == 0
    assert "wrote 50 sequences" in capsys.readouterr().out
    assert written(tmp_path / "out.csv")[1:] == [r[2] or '""' for r in
                                                 csv.reader(io.StringIO(text))][1:]
    assert main(["stats", str(data), "--format", "column"]) == 2
    err = capsys.readouterr().err
    assert "no sequence column found; choose one with --sequence (columns: session_id, flag, " \
           "path)" in err and "Traceback" not in err
    assert main(["stats", "--help"]) == 0
    assert "--sequence COLUMN" in capsys.readouterr().out


def test_read_on_dask_workers_as_locally(tmp_path, dask_client):
    from dpgpu.scale.loading import load_distributed  # noqa: PLC0415 - needs dask

    data, _ = clicks(tmp_path, 120)
    options = {"format": "column", "sequence": "path", "case": "session_id"}
    got = load_distributed(data, dask_client, partitions=3, **options).collect()
    want = dpgpu.load(data, **options)
    assert as_lists(got) == as_lists(want) and got.vocab == want.vocab
    assert got.source["format"] == "column"
