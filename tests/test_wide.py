"""Wide state-sequence CSV files (dpgpu.data.wide): reading, writing, errors, the CLI.

Reads are checked against a plain reference (the csv module, the state
cells picked by hand) on generated tables, and against the state counts the
datasets' READMEs record for the TraMineR files.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpgpu
from dpgpu import SequenceDB
from dpgpu.data.sequencedb import synthetic_like
from dpgpu.data.wide import MISSING
from dpgpu.errors import InputError, InvalidParameter
from dpgpu.release import ReleaseWriter
from shared_data import dataset, param

STATES = ["0", "1", "2", "10", " 3 ", "a b", 'q"t', "x,y", "line\nbreak", "", "NA", "*", "%",
          "NaN", "é"]


def reference(text: str, states: list[str], delimiter: str = ","):
    """Each data row's states, left out where missing, by the csv module and a loop."""
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    header, out = rows[0], []
    for row in rows[1:]:
        if row:
            cells = [row[header.index(s)].strip() for s in states]
            out.append([c for c in cells if c not in MISSING])
    return out


def as_labels(db):
    """Each sequence of ``db`` as a list of labels."""
    bounds = db.offsets.tolist()
    return [list(db.vocab.decode(db.items[lo:hi].tolist()))
            for lo, hi in zip(bounds[:-1], bounds[1:])]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.lists(st.sampled_from(STATES), min_size=4, max_size=4), max_size=12),
       blank=st.integers(0, 12), crlf=st.booleans(), delimiter=st.sampled_from([",", ";", "\t"]))
def test_reads_what_a_plain_csv_loop_reads(tmp_path_factory, rows, blank, crlf, delimiter):
    buf = io.StringIO()
    w = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n")
    w.writerow(["id", "t1", "t2", "t3", "sex"])
    for i, r in enumerate(rows):
        w.writerow([f"p{i}"] + r)
        if i == blank:
            buf.write("\r\n" if crlf else "\n")
    text = buf.getvalue()
    path = tmp_path_factory.mktemp("wide") / "w.csv"
    path.write_bytes(text.encode())
    db = dpgpu.load(path, "wide", states="t1:t3", case="id", delimiter=delimiter)
    assert as_labels(db) == reference(text, ["t1", "t2", "t3"], delimiter)
    assert db.source["cases"] == [f"p{i}" for i in range(len(rows))]
    assert db.source["columns"] == {"states": ["t1", "t2", "t3"], "case": "id"}
    labels = db.vocab.labels
    ints = all(x.lstrip("-").isdigit() for x in labels)
    assert labels == sorted(labels, key=int if ints else None)  # the vocabulary, sorted


def test_states_by_list_and_by_names_pick_those_columns_in_that_order(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("id,a,b,c\n1,x,y,z\n2,y,,x\n")
    assert as_labels(dpgpu.load(path, "wide", states="c,a")) == [["z", "x"], ["x", "y"]]
    assert as_labels(dpgpu.load(path, "wide", states=["b", "a"])) == [["y", "x"], ["y"]]
    assert as_labels(dpgpu.load(path, "wide", states="b")) == [["y"], []]
    assert as_labels(dpgpu.load(path, "wide", states=" a : b ")) == [["x", "y"], ["y"]]


@pytest.mark.parametrize("relative,states,n,length,counts", [
    param("biofam/biofam.csv", "15:30", 2000, 16,
          {"0": 16056, "1": 5888, "6": 4838, "3": 3244, "2": 1466, "7": 322, "5": 167, "4": 19}),
    param("mvad/mvad.csv", "Jul.93:Jun.99", 712, 72,
          {"employment": 22937, "FE": 8331, "HE": 5980, "training": 5272,
           "joblessness": 4399, "school": 4345}),
    param("actcal/actcal.csv", "jan00:dec00", 2000, 12,
          {"A": 10055, "D": 7640, "B": 3949, "C": 2356}),
])
def test_the_traminer_datasets_read_as_their_readmes_say(relative, states, n, length, counts):
    db = dpgpu.load(dataset(relative), "wide", states=states)
    assert len(db) == n and set(db.lengths.tolist()) == {length}
    got = Counter(db.vocab.labels[i] for i in db.items.tolist())
    assert got == counts


def test_write_and_read_back(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text('pid,s1,s2,s3,w\nA,x,"y,z",,0.5\nB,,,,1\nC,"q""r",x,x,2\n')
    db = dpgpu.load(path, "wide", states="s1:s3", case="pid")
    out = tmp_path / "out.csv"
    db.save(out, format="wide")
    assert out.read_text().splitlines() == ["pid,s1,s2,s3", 'A,x,"y,z",', "B,,,",
                                            'C,"q""r",x,x']
    again = dpgpu.load(out, "wide", states="s1:s3", case="pid")
    assert as_labels(again) == as_labels(db) and again.source["cases"] == ["A", "B", "C"]


def test_other_formats_write_as_wide_with_numbered_columns(tmp_path):
    db = SequenceDB.from_sequences([["a", "b"], [], ["b", "b", "a"]], vocab=["a", "b"])
    out = tmp_path / "out.tsv"
    db.save(out, format="wide")
    assert out.read_text().splitlines() == ["id\t1\t2\t3", "case-1\ta\tb\t", "case-2\t\t\t",
                                            "case-3\tb\tb\ta"]


@pytest.mark.parametrize("sequences,users,why", [
    ([["a", "NA"]], None, "item 'NA' reads back as a missing state"),
    ([["a", "b "]], None, "item 'b ' has white space at an end"),
    ([["a"], ["a"]], [0, 1], "user-level data has users"),
])
def test_what_wide_cannot_hold_is_refused(tmp_path, sequences, users, why):
    db = SequenceDB.from_sequences(sequences, vocab=sorted({x for s in sequences for x in s}))
    if users is not None:
        db = SequenceDB(db.items, db.offsets, db.vocab, users=np.array(users))
    with pytest.raises(InvalidParameter, match=why):
        db.save(tmp_path / "out.csv", format="wide")
    assert not (tmp_path / "out.csv").exists()


def test_synthetic_data_is_written_wide_unless_a_sequence_is_too_long(tmp_path, caplog):
    path = tmp_path / "w.csv"
    path.write_text("id,t1,t2\n" + "".join(f"{i},a,b\n" for i in range(50)))
    db = dpgpu.load(path, "wide", states="t1:t2", vocab=["a", "b"])
    dpgpu.ngram(db, 5.0, l_max=2, seed=1).save(tmp_path / "r1")
    assert (tmp_path / "r1" / "synthetic.csv").read_text().splitlines()[0] == "id,t1,t2"
    too_long = synthetic_like(db, np.array([0, 1, 0], dtype=np.int32), [3])
    with ReleaseWriter(tmp_path / "r2") as rel:
        assert rel.write_synthetic(too_long) == ("synthetic.txt", "spmf")
        assert as_labels(dpgpu.load(rel.path("synthetic.txt"), vocab=["a", "b"])) == \
            [["a", "b", "a"]]
    assert "wide cannot hold it (a sequence of 3 items is longer than the 2 state columns" \
        in caplog.text


@pytest.mark.parametrize("text,options,error,message", [
    ("id,a\n1,x\n", {}, InvalidParameter, "states: the wide format needs the state columns"),
    ("id,a\n1,x\n", {"states": "a:zz"}, InputError,
     r"no column 'zz' for --states \(columns: id, a\)"),
    ("id,a,b\n1,x,y\n", {"states": "b:a"}, InvalidParameter, "'a' comes before 'b' in the header of .*w.csv \\(name the range"),
    ("id,a\n1,x\n", {"states": 3}, InvalidParameter, "states: expected column names"),
    ("id,a\n1,x\n", {"states": "a", "case": "pid"}, InputError, "no column 'pid' for --case"),
    ('id,a\n1,"x\ny"\n2,x,z\n', {"states": "a"}, InputError,
     "line 4: 3 fields, but the header has 2"),
    ('id,a\n1,x\n2,"x\ny",z\n', {"states": "a"}, InputError, "line 3: 3 fields"),  # where it starts
    ("id,a\n1,x\n\n1,y\n", {"states": "a", "case": "id"}, InputError,
     "line 4: row id '1' \\(column 'id'\\) already on line 2"),
    ("id,a\n ,x\n", {"states": "a", "case": "id"}, InputError, "line 2: empty row id"),
    ("\n\nid,a\n", {"states": "a"}, InputError, "line 1: no header row"),
])
def test_bad_input_names_file_line_and_option(tmp_path, text, options, error, message):
    path = tmp_path / "w.csv"
    path.write_text(text)
    with pytest.raises(error, match=message):
        dpgpu.load(path, "wide", **options)


def test_cli_reads_wide_files_and_reports_errors_without_a_traceback(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("id,t1,t2,t3\n1,a,b,a\n2,b,,NA\n")
    ok = subprocess.run([sys.executable, "-m", "dpgpu", "convert", str(path),
                         str(tmp_path / "out.txt"), "--format", "wide", "--states", "t1:t3",
                         "--to", "lines"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "out.txt").read_text() == "a b a\nb\n"
    bad = subprocess.run([sys.executable, "-m", "dpgpu", "stats", str(path), "--format", "wide",
                          "--states", "t1:t9"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert f"{path}: no column 't9' for --states" in bad.stderr


def test_a_wide_file_read_as_an_event_log_points_to_the_wide_format(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("pid,t1,t2\n1,a,b\n")
    with pytest.raises(InputError, match="no case column found; choose one with --case "
                       r"\(columns: pid, t1, t2\); a file with a row per sequence and a column "
                       "per time point reads with --format wide --states FIRST:LAST"):
        dpgpu.load(path, "csv")
