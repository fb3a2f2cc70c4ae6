"""``dpgpu convert``: the output format from --to or the output's extension."""

from __future__ import annotations

import pytest

import dpgpu
from dpgpu.cli import main

LOG = "case,activity,time,resource\nc1,a b,5,r1\nc1,c,3,r2\nc2,c,1,r1\n"


def convert(capsys, *argv):
    status = main(["convert", *map(str, argv)])
    return status, capsys.readouterr().err


@pytest.mark.parametrize("name, fmt", [("out.csv", "csv"), ("out.CSV.gz", "csv"),
                                       ("out.tsv", "csv"), ("out.xes.gz", "xes"),
                                       ("out.spmf", "spmf"), ("out.seq", "seq")])
def test_the_output_extension_names_the_format(tmp_path, capsys, name, fmt):
    """From a review: ``convert a.txt a.csv`` wrote a lines file named .csv, which
    ``dpgpu stats a.csv`` then refused, and ``receipt.csv.gz rc.xes.gz`` wrote CSV."""
    data = tmp_path / "in.txt"
    data.write_text("1 2\n3 4 5\n")
    assert convert(capsys, data, tmp_path / name) == (0, "")
    back = dpgpu.load(tmp_path / name)
    assert back.source["format"] == fmt and list(back) == [("1", "2"), ("3", "4", "5")]


def test_event_log_to_xes_by_extension_keeps_sequences_and_case_names(tmp_path, capsys):
    data = tmp_path / "log.csv.gz"
    dpgpu.load(_log(tmp_path)).save(data)
    assert convert(capsys, data, tmp_path / "rc.xes.gz") == (0, "")
    back = dpgpu.load(tmp_path / "rc.xes.gz")
    assert back.source["format"] == "xes" and back.source["cases"] == ["c1", "c2"]
    assert list(back) == [("c", "a b"), ("c",)]


def test_an_extension_naming_nothing_keeps_the_input_format_or_to(tmp_path, capsys):
    data = _log(tmp_path)
    assert convert(capsys, data, tmp_path / "same.dat") == (0, "")
    assert dpgpu.load(tmp_path / "same.dat").source["format"] == "csv"
    assert convert(capsys, data, tmp_path / "out.txt", "--to", "spmf") == (0, "")
    assert dpgpu.load(tmp_path / "out.txt").source["format"] == "spmf"
    assert convert(capsys, data, tmp_path / "out.xes", "--to", "xes") == (0, "")


@pytest.mark.parametrize("name, to, says", [
    ("out.csv", "xes", "--to: xes does not match the extension .csv of "),
    ("out.xes.gz", "lines", "--to: lines does not match the extension .xes of "),
    ("out.jsonl", None, "output: "),
])
def test_a_format_the_extension_contradicts_is_refused(tmp_path, capsys, name, to, says):
    out = tmp_path / name
    status, err = convert(capsys, _log(tmp_path), out, *(["--to", to] if to else []))
    assert status == 2 and err.startswith(f"dpgpu: error: {says}") and str(out) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.csv"]


def test_event_log_conversion_writes_synthetic_times_and_drops_other_columns(tmp_path, capsys):
    """What the --help text says an event-log conversion loses."""
    assert convert(capsys, _log(tmp_path), tmp_path / "out.csv") == (0, "")
    assert (tmp_path / "out.csv").read_text() == "case,activity,time\nc1,c,0\nc1,a b,1\nc2,c,0\n"
    assert main(["convert", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert ".csv (csv), .tsv (csv)" in text and ".jsonl" not in text
    assert "synthetic timestamp instead of its real one" in text
    assert "every other attribute or column of the input" in text


def _log(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text(LOG)
    return path


def test_a_tsv_output_is_tab_separated_and_a_csv_one_comma_separated(tmp_path, capsys):
    lines = tmp_path / "l.txt"
    lines.write_text("1 2 3\n2 3\n")
    assert convert(capsys, str(lines), str(tmp_path / "c.tsv"))[0] == 0
    tsv = (tmp_path / "c.tsv").read_text().splitlines()
    assert tsv[0] == "case:concept:name\tconcept:name\ttime:timestamp" and "," not in tsv[1]
    assert convert(capsys, str(tmp_path / "c.tsv"), str(tmp_path / "c.csv"))[0] == 0
    assert (tmp_path / "c.csv").read_text().splitlines()[0] == \
        "case:concept:name,concept:name,time:timestamp"
    assert [list(s) for s in dpgpu.load(tmp_path / "c.csv")] == [["1", "2", "3"], ["2", "3"]]


def test_wide_and_trajectory_tables_may_be_named_csv(tmp_path, capsys):
    """From a review: ``--to wide`` into ``out.csv`` was refused, yet a wide file is CSV."""
    data = tmp_path / "in.txt"
    data.write_text("a b\nc\n")
    assert convert(capsys, data, tmp_path / "w.csv", "--to", "wide") == (0, "")
    assert list(dpgpu.load(tmp_path / "w.csv", "wide", states="1:2")) == [("a", "b"), ("c",)]
    points = tmp_path / "p.csv"
    points.write_text("trip,x,y\nt1,0.1,0.1\nt1,0.9,0.9\n")
    grid = ["--format", "trajectory", "--grid", "2", "--bounds", "0", "1", "0", "1"]
    assert convert(capsys, points, tmp_path / "t.csv.gz", *grid, "--to", "trajectory") == (0, "")
    back = dpgpu.load(tmp_path / "t.csv.gz", "trajectory", grid=2, bounds="0,1,0,1")
    assert list(back) == [("0_0", "1_1")]
