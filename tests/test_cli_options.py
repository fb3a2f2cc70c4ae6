"""Options shared by the mechanism commands: --json, --config, --quiet, --help examples."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from dpgpu import SequenceDB, dpne, ngram, pst
from dpgpu.cli import main
from dpgpu.commands.common import SEEDED_WARNING

SEQUENCES = "a b c\na b\nb c a\na b c d\nc a b\na b\nb c\na c b\n"
POINTS = "x,y\n" + "".join(f"{(i * 37 % 100) / 100},{(i * 61 % 100) / 100}\n" for i in range(60))

#: Each mechanism command: its input (file name, content), its own options and
#: the files its release directory holds.
COMMANDS = {
    "ngram": ("seqs.txt", SEQUENCES, ["--l-max", "4"],
              {"report.json", "ngrams.tsv", "synthetic.txt"}),
    "pst": ("seqs.txt", SEQUENCES, ["--l-top", "4"], {"report.json", "pst.json", "synthetic.txt"}),
    "privtree-spatial": ("points.csv", POINTS, ["--columns", "x,y", "--bounds", "0,1,0,1"],
                         {"report.json", "leaves.csv", "tree.json"}),
    "pfs2": ("seqs.txt", SEQUENCES, ["--threshold", "0.3"], {"report.json", "frequent.tsv"}),
    # one line per user: no --user
    "dpne": ("seqs.txt", SEQUENCES, ["--delta", "1e-6", "--max-n", "3", "--contribution", "5"],
             {"report.json", "ngrams.tsv"}),
}


#: The public item vocabulary of SEQUENCES (one unused item), for the commands that show it.
VOCAB = "a\nb\nc\nd\ne\n"


def data_file(tmp_path, command):
    """Write the tiny input of ``command`` to ``tmp_path``; its path."""
    name, content, _, _ = COMMANDS[command]
    data = tmp_path / name
    data.write_text(content)
    return str(data)


def argv(tmp_path, command, *extra):
    """The command line of ``command`` on its tiny input with its own options, and ``extra``.

    N-gram, PST and PFS² get the public vocabulary (``--vocab``): without it
    their releases are not private.
    """
    vocab = []
    if command in ("ngram", "pst", "pfs2"):
        (tmp_path / "vocab.txt").write_text(VOCAB)
        vocab = ["--vocab", str(tmp_path / "vocab.txt")]
    return [command, data_file(tmp_path, command), *COMMANDS[command][2], *vocab, *extra]


@pytest.mark.parametrize("command", ["ngram", "pst", "pfs2"])
def test_a_vocabulary_from_the_data_makes_the_release_not_private(tmp_path, command):
    out = tmp_path / "rel"
    args = [command, data_file(tmp_path, command), *COMMANDS[command][2], "--epsilon", "1",
            "--seed", "1", "--out", str(out)]
    done = dpgpu(*args)
    assert done.returncode == 0, done.stderr
    assert "warning: the item vocabulary is the set of items that occur in the data" \
        in done.stderr and "--vocab FILE" in done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["private"] is False and report["epsilon"] is None  # JSON null: no infinity
    assert report["vocabulary"]["public"] is False and report["vocabulary"]["size"] == 4
    (tmp_path / "vocab.txt").write_text(VOCAB)
    done = dpgpu(*args, "--force", "--vocab", str(tmp_path / "vocab.txt"))
    assert done.returncode == 0 and "the item vocabulary" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == f"dpgpu: warning: {SEEDED_WARNING}"
    report = json.loads((out / "report.json").read_text())
    assert report["private"] is True and report["epsilon"] == pytest.approx(1.0)
    assert report["vocabulary"]["public"] is True and report["vocabulary"]["size"] == 5
    (tmp_path / "vocab.txt").write_text("a\nb\n")
    done = dpgpu(*args, "--force", "--vocab", str(tmp_path / "vocab.txt"))
    assert done.returncode == 2 and "seqs.txt: item 'c' and 1 more not in the vocabulary" \
        in done.stderr and "Traceback" not in done.stderr


def dpgpu(*args):
    """Run ``python -m dpgpu ARGS`` in a subprocess."""
    return subprocess.run([sys.executable, "-m", "dpgpu", *args], capture_output=True, text=True)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_json_summary(tmp_path, command):
    out = tmp_path / "rel"
    done = dpgpu(*argv(tmp_path, command, "--epsilon", "2", "--seed", "1", "--json",
                       "--out", str(out)))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert set(summary) == {"mechanism", "private", "epsilon", "delta", "out", "files", "seeded"}
    assert summary["epsilon"] == pytest.approx(2.0) and summary["seeded"] is True
    assert summary["private"] is True
    assert summary["out"] == str(out)
    assert set(summary["files"]) == COMMANDS[command][3] | {"diagnostics.json"}
    assert all((out / f).is_file() for f in summary["files"])
    report = json.loads((out / "report.json").read_text())
    assert summary["mechanism"] == report["mechanism"] and summary["delta"] == report["delta"]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_summaries_show_no_timings(tmp_path, command):
    """Regression (privacy review F5): the --json summary held the run's timings and PST's
    summary line its build time, on stdout; timings grow with the data, so they go to
    diagnostics.json only (the input's reading time too)."""
    out = tmp_path / "rel"
    done = dpgpu(*argv(tmp_path, command, "--epsilon", "2", "--seed", "1", "--out", str(out)))
    assert done.returncode == 0, done.stderr
    assert not re.search(r"\d s\b|_s\b|timing", done.stdout.replace(str(out), "")), done.stdout
    done = dpgpu(*argv(tmp_path, command, "--epsilon", "2", "--seed", "1", "--json", "--force",
                       "--out", str(out)))
    assert "timings" not in json.loads(done.stdout)
    assert not re.search(r"_s\b", done.stdout.replace(json.dumps(str(out)), ""))
    timings = json.loads((out / "diagnostics.json").read_text())["timings"]
    assert timings["load_s"] >= 0 and "total_s" in timings


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_config_file_and_command_line_override(tmp_path, command):
    out = tmp_path / "rel"
    config = tmp_path / "run.toml"
    config.write_text(f'epsilon = 1.0\nseed = 1\nout = "{out}"\njson = true\n')
    done = dpgpu(*argv(tmp_path, command, "--config", str(config), "--epsilon", "3"))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["epsilon"] == pytest.approx(3.0) and summary["seeded"] is True
    assert summary["out"] == str(out)


@pytest.mark.parametrize("key", ["l-max", "l_max"])
def test_config_sets_mechanism_options(tmp_path, capsys, key):
    config = tmp_path / "run.toml"
    config.write_text(f'epsilon = 1.0\n{key} = 3\nno-synthetic = true\nvariant = "uniform"\n')
    out = tmp_path / "rel"
    assert main(["ngram", data_file(tmp_path, "ngram"), "--config", str(config),
                 "--out", str(out)]) == 0
    parameters = json.loads((out / "report.json").read_text())["parameters"]
    assert parameters["l_max"] == 3 and parameters["variant"] == "uniform"
    assert not (out / "synthetic.txt").exists()
    capsys.readouterr()


@pytest.mark.parametrize("text, words", [
    ("epsilon = 1.0\nbogus-option = 2\n", ["'bogus-option'"]),
    ("epsilon = 1.0\nl-max = 2.5\n", ["l-max", "2.5"]),
    ("epsilon = 1.0\nvariant = \"fast\"\n", ["variant", "'fast'"]),
    ("epsilon = 1.0\nforce = \"yes\"\n", ["force"]),
    ("epsilon = [1.0\n", ["TOML"]),
    (b"\xff\xfe=1\n", ["not UTF-8 text (byte 1)"]),
    ("epsilon = 1.0\n".encode("utf-16"), ["not UTF-8", "UTF-16"]),  # PowerShell's > writes it
    ("epsilon = 1.0\nl-max = 5\nl_max = 6\n", ["'l-max'", "'l_max'", "--l-max", "keep one"]),
])
def test_bad_config_exit_2_one_line(tmp_path, text, words):
    config = tmp_path / "run.toml"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text)
    done = dpgpu(*argv(tmp_path, "ngram", "--config", str(config), "--out",
                       str(tmp_path / "rel")))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert str(config) in lines[0] and all(w in lines[0] for w in words), lines[0]
    assert not (tmp_path / "rel").exists()


def test_config_with_a_byte_order_mark_is_read(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_bytes("\ufeffepsilon = 1.0\nl-max = 3\n".encode("utf-8"))
    out = tmp_path / "rel"
    assert main(["ngram", data_file(tmp_path, "ngram"), "--config", str(config),
                 "--out", str(out), "-q"]) == 0
    assert json.loads((out / "report.json").read_text())["parameters"]["l_max"] == 3


def test_options_are_not_abbreviated(tmp_path, capsys):
    """Regression: ``pst --to csv`` was read as ``--tokens csv`` (argparse's abbreviations)."""
    status = main(argv(tmp_path, "pst", "--epsilon", "1", "--out", str(tmp_path / "r"),
                       "--to", "csv"))
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "unrecognized arguments: --to csv" in err[0]
    assert main(argv(tmp_path, "ngram", "--eps", "1", "--out", str(tmp_path / "r"))) == 2
    assert "--epsilon" in capsys.readouterr().err and not (tmp_path / "r").exists()


def test_missing_config_file_and_missing_required_option(tmp_path, capsys):
    assert main(argv(tmp_path, "ngram", "--config", str(tmp_path / "nope.toml"))) == 2
    assert main(argv(tmp_path, "ngram", "--out", str(tmp_path / "rel"))) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "nope.toml" in err[0] and "--epsilon" in err[1]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_quiet_prints_nothing(tmp_path, capsys, command):
    out = tmp_path / "rel"
    assert main(argv(tmp_path, command, "--epsilon", "2", "--seed", "1", "--quiet",
                     "--out", str(out))) == 0
    assert capsys.readouterr().out == "" and (out / "report.json").exists()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_summary_line(tmp_path, capsys, command):
    out = tmp_path / "rel"
    assert main(argv(tmp_path, command, "--epsilon", "2", "--seed", "1", "--out", str(out))) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and "epsilon=2" in lines[0] and str(out) in lines[0]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_has_an_example(capsys, command):
    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    assert "example:\n  dpgpu " + command in text
    for option in ("--epsilon", "--seed", "--backend", "--out", "--force", "--quiet", "--json",
                   "--config"):
        assert option in text, option


def test_counted_stages_draw_a_bar(capsys):
    from dpgpu.commands.common import Progress
    from dpgpu.progress import Step

    with Progress("ngram", show=True) as progress:
        progress(Step("level 2: 289 nodes", 2, 5))
    err = capsys.readouterr().err
    assert "ngram:  40%|" in err and "| 2/5 [" in err and err.rstrip("\r\x1b[K").endswith(
        "level 2: 289 nodes")


def test_mechanisms_report_counted_stages_as_plain_strings():
    from dpgpu.progress import Step

    seen: list = []
    db = SequenceDB.from_sequences([["a", "b", "c"], ["b", "c"], ["a"]] * 30)
    ngram(db, 1.0, l_max=4, n_max=3, seed=1, progress=seen.append)
    levels = [m for m in seen if isinstance(m, Step) and m.startswith("level")]
    assert [(m.done, m.total) for m in levels] == [(k, 3) for k in range(1, len(levels) + 1)]
    assert all(isinstance(m, str) for m in seen)  # progress=print keeps working
    for release in (lambda: pst(db, 1.0, l_top=4, seed=1, progress=seen.append),
                    lambda: dpne(db, 4.0, 1e-5, max_n=3, contribution=2, seed=1,
                                 progress=seen.append)):
        seen.clear()
        release()
        steps = [m for m in seen if isinstance(m, Step)]
        assert steps and [m.done for m in steps] == list(range(1, len(steps) + 1))
        assert all(m.done <= m.total for m in steps)


def test_progress_draws_in_place_and_erases_or_logs(capsys, caplog):
    from dpgpu.commands.common import Progress

    with Progress("pfs2", show=True) as progress:
        progress("level 1")
        progress("level 2")
    err = capsys.readouterr().err
    assert err.count("\r\x1b[K") == 3 and "pfs2: level 2 [" in err and err.endswith("\r\x1b[K")
    with caplog.at_level("INFO", logger="dpgpu"), Progress("pfs2", show=False) as progress:
        progress("level 1")
    assert capsys.readouterr().err == "" and "pfs2: level 1" in caplog.text


def test_option_values_may_start_with_a_minus_sign(tmp_path, capsys):
    # argparse alone reads "-180,180,-90,90" as an option: "expected one argument"
    points = tmp_path / "p.csv"
    points.write_text("x,y\n" + "-10,20\n30,-40\n-50,-5\n" * 10)
    out = tmp_path / "tree"
    assert main(["privtree-spatial", str(points), "--epsilon", "1", "--columns", "x,y",
                 "--bounds", "-180,180,-90,90", "--seed", "1", "-q", "--out", str(out)]) == 0
    tree = json.loads((out / "report.json").read_text())
    assert tree["domain"]["bounds"] == [[-180.0, 180.0], [-90.0, 90.0]]
    out2 = tmp_path / "tree2"  # with "=", as argparse allows
    assert main(["privtree-spatial", str(points), "--epsilon", "1", "--columns", "x,y",
                 "--bounds=-180,180,-90,90", "--seed", "1", "-q", "--out", str(out2)]) == 0
    assert main(["calibrate", "gaussian", "--epsilon", "1", "--delta", "-1e-6"]) == 2
    assert "delta: must be finite and > 0" in capsys.readouterr().err


def test_scheduler_without_the_dask_engine_is_refused(tmp_path, capsys):
    data = tmp_path / "seqs.txt"
    data.write_text(SEQUENCES)
    assert main(["ngram", str(data), "--epsilon", "1", "--out", str(tmp_path / "r"),
                 "--scheduler", "tcp://127.0.0.1:8786"]) == 2
    assert "--scheduler: only with --engine dask" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("where", ["before", "after"])
def test_verbose_before_or_after_the_command_logs_the_backend_once(tmp_path, where):
    """-v is taken on either side of the command's name; the backend line comes once,
    without a doubled prefix."""
    data = data_file(tmp_path, "ngram")
    opts = ["--epsilon", "1", "--seed", "1", "--out", str(tmp_path / "rel"), "--l-max", "4"]
    argv = (["-v", "ngram", str(data)] + opts if where == "before"
            else ["ngram", str(data)] + opts + ["-v"])
    run = subprocess.run([sys.executable, "-m", "dpgpu", *argv], capture_output=True, text=True,
                         env={**os.environ, "DPGPU_BACKEND": "numpy"})
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    assert "dpgpu: ngram: reading the input" in lines
    assert [line for line in lines if "backend" in line] == \
        ["dpgpu: backend: numpy (chosen by DPGPU_BACKEND)"]


@pytest.mark.parametrize("kind", ["gaussian", "laplace", "dpsu"])
def test_calibrate_kinds_have_an_example_that_runs(capsys, kind):
    assert main(["calibrate", kind, "--help"]) == 0
    example = capsys.readouterr().out.strip().splitlines()[-1].split()
    assert example[:3] == ["dpgpu", "calibrate", kind]
    assert main(example[1:]) == 0 and capsys.readouterr().out
