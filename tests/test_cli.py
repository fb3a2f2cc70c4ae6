"""The command line: exit statuses, one-line errors, nothing written on failure."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys

import pytest

from dpgpu.cli import OOM_OPTIONS, main, oom_hint
from dpgpu.commands.common import SEEDED_WARNING

SEQ = ("% Different categories found in input file:\n\nfront news tech\n\n\n"
       "% Sequences:\n\n1 1 \n3 2 \n2 \n")


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_info(capsys):
    status, out, _ = run(capsys, "info", "--backend", "numpy", "--json")
    facts = json.loads(out)
    assert status == 0 and facts["backend"] == "numpy" and facts["device"] == "cpu"


def test_unusable_cupy_is_an_error_not_a_fallback(capsys, monkeypatch):
    import dpgpu.backend as B

    monkeypatch.setattr(B, "gpu_available", lambda: False)
    monkeypatch.setattr(B, "_cupy_module", lambda: None)
    B._make.cache_clear()
    status, _, err = run(capsys, "info", "--backend", "cupy")
    assert status == 2 and "cupy" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("error,says", [(MemoryError, "out of memory; try"),
                                         (type("OutOfMemoryError", (Exception,), {}),
                                          "out of GPU memory")])
def test_out_of_memory_is_one_line_naming_the_options_that_size_the_work(capsys, monkeypatch,
                                                                         tmp_path, error, says):
    import dpgpu.commands.stats as stats

    def fail(*args, **kwargs):
        raise error("no room")

    monkeypatch.setattr(stats, "run", fail)
    p = tmp_path / "x.seq"
    p.write_text(SEQ)
    status, _, err = run(capsys, "stats", str(p))
    assert status == 1 and says in err and err.rstrip().endswith(" fewer sequences")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", sorted(OOM_OPTIONS))
def test_the_out_of_memory_hint_names_options_the_command_has(capsys, command):
    """Regression: evaluate's hint named --l-max, --l-top and --n-synthetic, which it lacks."""
    assert main([command, "--help"]) == 0
    help_text = capsys.readouterr().out
    named = re.findall(r"--[a-z][a-z-]*", oom_hint(command))
    assert named and all(option in help_text for option in named), named


def test_stats(tmp_path, capsys):
    p = tmp_path / "x.seq"
    p.write_text(SEQ)
    status, out, _ = run(capsys, "stats", str(p), "--json")
    s = json.loads(out)
    assert status == 0 and s["sequences"] == 3 and s["events"] == 5 and s["format"] == "seq"
    assert s["users"] is None
    status, out, _ = run(capsys, "stats", str(p))  # the table says it in words, not "None"
    assert status == 0 and "users                none named (each sequence counts as its own " \
        "user)" in out


def test_stats_names_the_most_frequent_items_as_the_file_does(tmp_path, capsys):
    p = tmp_path / "x.seq"
    p.write_text(SEQ)
    status, out, _ = run(capsys, "stats", str(p))
    assert status == 0 and "most frequent        1 front (2), 2 news (2), 3 tech (1)" in out
    q = tmp_path / "x.spmf"
    q.write_text("@CONVERTED_FROM_TEXT\n@ITEM=0=apple\n@ITEM=1=1\n0 -1 1 -1 0 -1 -2\n1 -1 2 -1 -2\n")
    status, out, _ = run(capsys, "stats", str(q))
    assert status == 0 and "most frequent        0 apple (2), 1 (2), 2 (1)" in out


def test_convert_round_trip(tmp_path, capsys):
    p = tmp_path / "x.seq"
    p.write_text(SEQ)
    status, out, _ = run(capsys, "convert", str(p), str(tmp_path / "y.txt"), "--to", "spmf")
    assert status == 0 and (tmp_path / "y.txt").read_text() == "1 -1 1 -1 -2\n3 -1 2 -1 -2\n2 -1 -2\n"
    status, _, err = run(capsys, "convert", str(p), str(tmp_path / "y.txt"), "--to", "spmf")
    assert status == 2 and "already exists" in err


BAD_INPUTS = {
    "non_numeric.seq": (SEQ + "1 two 3\n").encode(),
    "truncated.seq.gz": gzip.compress(SEQ.encode() * 100)[:150],
    "empty.txt": b"",
    "garbage.bin": bytes(range(256)) * 8,
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_malformed_input_exit_2_one_line_nothing_written(tmp_path, capsys, name):
    p = tmp_path / name
    p.write_bytes(BAD_INPUTS[name])
    out = tmp_path / "out.txt"
    status, _, err = run(capsys, "convert", str(p), str(out))
    assert status == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpgpu: error: ") and name in lines[0]
    assert "Traceback" not in err
    assert not out.exists() and sorted(x.name for x in tmp_path.iterdir()) == [name]


def test_unknown_format_and_bad_option(tmp_path, capsys):
    p = tmp_path / "x.txt"
    p.write_text("1 2\n")
    status, _, err = run(capsys, "stats", str(p), "--format", "fasta")
    assert status == 2 and "invalid choice" in err and len(err.strip().splitlines()) == 1
    status, _, err = run(capsys, "stats", str(p), "--case", "id")
    assert status == 2 and "case" in err and len(err.strip().splitlines()) == 1
    status, _, err = run(capsys, "demo", "--l-max", "nan")
    assert status == 2


@pytest.mark.parametrize("value", ["0", "-3"])
def test_demo_rejects_bad_lengths(capsys, tmp_path, value):
    status, _, err = run(capsys, "demo", "--l-max", value, "--out", str(tmp_path / "demo"))
    assert status == 2 and "l_max" in err


def test_demo_runs_on_the_bundled_data(capsys, tmp_path):
    out = tmp_path / "demo"
    status, text, err = run(capsys, "demo", "--n-max", "3", "--backend", "numpy", "--out",
                            str(out))
    assert status == 0, err
    assert "989,818 sequences over 17 page categories" in text
    assert "top-K frequent patterns" in text and "K=100:" in text and "first 20 items" in text
    report = json.loads((out / "report.json").read_text())
    assert report["mechanism"] == "ngram" and report["parameters"]["n_max"] == 3
    assert (out / "synthetic.seq.gz").exists()  # compressed as the bundled input
    status, _, err = run(capsys, "demo", "--out", str(out))
    assert status == 2 and "already exists" in err


def test_demo_with_one_item_per_sequence_has_no_pattern_to_compare(capsys, tmp_path):
    """At l_max 1 the truncated original holds no pattern of length 2: n/a, not a crash."""
    status, text, err = run(capsys, "demo", "--l-max", "1", "--backend", "numpy", "--out",
                            str(tmp_path / "demo"))
    assert status == 0, err
    line = next(t for t in text.splitlines() if "its first 1 items" in t)
    assert line.count("n/a") == 5  # K = 20 .. 100
    # the default n_max is lowered to l_max + 1 and said as it is (it said n_max=5)
    assert "N-gram release (epsilon=1, l_max=1, n_max=2)" in text


@pytest.mark.parametrize("argv", [["convert", "{data}", ""], ["generate", "", "--tokens", "10"],
                                  ["demo", "--out", ""], ["report", ""],
                                  ["report", "{release}", "--html", ""],
                                  ["evaluate", "{data}", "--release", ""],
                                  ["evaluate", "{data}", "--release", "{release}", "--plot", ""]])
def test_empty_paths_are_refused_by_the_option_name(capsys, tmp_path, argv):
    data = tmp_path / "d.seq"
    data.write_text("1 2\n")
    release = tmp_path / "release"
    release.mkdir()
    argv = [a.format(data=data, release=release) for a in argv]
    status, _, err = run(capsys, *argv)
    assert status == 2 and "empty path" in err and len(err.strip().splitlines()) <= 2, err
    assert set(tmp_path.iterdir()) == {data, release}  # nothing written


def test_a_dash_reads_the_data_from_standard_input(tmp_path):
    """``-`` named a file called ``-`` ("no such file"); it is standard input, as in most tools."""
    done = subprocess.run([sys.executable, "-m", "dpgpu", "stats", "-"], input="a b\nb c b\n",
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^sequences +2$", done.stdout, re.M), done.stdout
    assert re.search(r"^most frequent +b \(3\), a \(1\), c \(1\)$", done.stdout, re.M)


@pytest.mark.parametrize("command", ["convert {data} -", "generate - --tokens 10"])
def test_a_dash_output_is_refused_not_written_as_a_file_named_dash(capsys, tmp_path, monkeypatch,
                                                                   command):
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "d.txt"
    data.write_text("a b\n")
    status, _, err = run(capsys, *command.format(data=data).split())
    assert status == 2 and "not to standard output" in err, err
    assert list(tmp_path.iterdir()) == [data]


def test_python_m_dpgpu_and_lazy_imports():
    code = ("import sys, dpgpu; assert 'cupy' not in sys.modules and 'numba' not in sys.modules; "
            "print('ok')")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "ok"
    done = subprocess.run([sys.executable, "-m", "dpgpu", "--version"], capture_output=True,
                          text=True, check=True)
    assert done.stdout.startswith("dpgpu ")


def test_every_subcommand_has_help(capsys):
    import argparse

    from dpgpu.cli import COMMAND_MODULES, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert len(sub.choices) == len(COMMAND_MODULES)
    for command in sub.choices:
        status = main([command, "--help"])
        out = capsys.readouterr().out
        assert status == 0 and f"usage: dpgpu {command}" in out and "example:" in out, command


@pytest.mark.parametrize("argv, says", [
    (["ngram", "missing.txt", "--epsilon", "1", "--epsilon", "2"],
     "--epsilon: given more than once; give it once"),
    (["ngram", "missing.txt", "--epsilon=1", "--out", "a", "--epsilon=1"],
     "--epsilon: given more than once"),
    (["ngram", "missing.txt", "--epsilon", "1", "--out", "a", "--out", "b"],
     "--out: given more than once"),
    (["dpne", "missing.txt", "--epsilon", "1", "--lowercase", "--no-lowercase"],
     "--lowercase and --no-lowercase: both given; give one")])
def test_an_option_of_one_value_given_twice_is_refused(capsys, argv, says):
    """Regression: `--epsilon 1 --epsilon 2` released at epsilon 2, silently (argparse keeps
    the last), where a config file with two keys for one option is an error."""
    status, _, err = run(capsys, *argv, "--delta", "1e-6") if argv[0] == "dpne" else \
        run(capsys, *argv)
    assert status == 2 and says in err and "missing.txt" not in err, err


def test_options_that_collect_or_count_may_repeat(tmp_path, capsys):
    data = tmp_path / "d.txt"
    data.write_text("a b\nb c\n" * 20)
    status, out, err = run(capsys, "-v", "stats", str(data), "-v", "--json", "--json")
    assert status == 0 and json.loads(out)["sequences"] == 40, err


def test_a_seeded_private_release_warns_that_it_is_not_for_publication(tmp_path, capsys,
                                                                       caplog):
    """A seed makes the noise reproducible: two releases with one seed of data differing in
    one sequence differed by exactly that sequence's grams, in releases marked private."""
    data, vocab = tmp_path / "d.txt", tmp_path / "vocab.txt"
    data.write_text("a b\nb c\n" * 20)
    vocab.write_text("a\nb\nc\n")
    base = ["ngram", str(data), "--vocab", str(vocab), "--epsilon", "1", "-q"]
    assert run(capsys, *base, "--out", str(tmp_path / "seeded"), "--seed", "3")[0] == 0
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == [SEEDED_WARNING] and "publish only" in SEEDED_WARNING
    caplog.clear()
    assert run(capsys, *base, "--out", str(tmp_path / "fresh"))[0] == 0
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
