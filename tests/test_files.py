"""Files in and out: ``--force`` replaces only what dpgpu writes, inputs are never
touched, a pipe is read whole, and a UTF-8 byte-order mark is dropped."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dpgpu
from dpgpu.cli import main
from dpgpu.data.io import atomic_output, check_output
from dpgpu.data.points import read_points
from dpgpu.errors import InputError
from dpgpu.release import ReleaseWriter

#: 2,000 sequences, about 12 KB: more than a read buffer, less than a pipe's buffer.
LINES = "".join(f"{i % 7 + 1} {i % 5 + 1} {i % 3 + 1}\n" for i in range(2000))
SEQ = ("% Different categories found in input file:\n\nfront news tech\n\n\n"
       "% Sequences:\n\n1 1 \n3 2 \n2 \n")
BOM = b"\xef\xbb\xbf"


def run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def ngram(capsys, data, out, *extra):
    return run(capsys, "ngram", str(data), "--epsilon", "1", "--seed", "1", "--backend", "numpy",
               "-q", "--out", str(out), *extra)


def one_line_error(status, err, *words):
    """The run failed with status 2 and a one-line error holding every one of ``words``."""
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("dpgpu: error: "), err
    assert all(w in lines[0] for w in words), (words, lines[0])


def snapshot(root):
    """Everything under ``root``, hidden names included: contents, link targets, kinds."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            p = os.path.join(folder, name)
            key = os.path.relpath(p, root)
            if os.path.islink(p):
                found[key] = ("link", os.readlink(p))
            elif os.path.isdir(p):
                found[key] = "dir"
            elif os.path.isfile(p):
                with open(p, "rb") as f:
                    found[key] = f.read()
            else:
                found[key] = "special"
    return found


@pytest.fixture
def data(tmp_path):
    p = tmp_path / "in.txt"
    p.write_text(LINES)
    return p


# ------------------------------------------------------------------ --force and --out


def test_force_refuses_a_folder_that_holds_the_input(tmp_path, capsys):
    (tmp_path / "proj" / "data").mkdir(parents=True)
    clicks = tmp_path / "proj" / "data" / "clicks.txt"
    clicks.write_text(LINES)
    (tmp_path / "proj" / "NOTES.md").write_text("notes\n")
    before = snapshot(tmp_path)
    status, _, err = ngram(capsys, clicks, tmp_path / "proj", "--force")
    one_line_error(status, err, "proj", "holds the input", str(clicks))
    assert snapshot(tmp_path) == before


def test_force_refuses_the_input_itself(tmp_path, capsys, data):
    before = snapshot(tmp_path)
    status, _, err = ngram(capsys, data, data, "--force")
    one_line_error(status, err, str(data), "is the input")
    assert snapshot(tmp_path) == before


def test_convert_refuses_to_overwrite_its_input(tmp_path, capsys, data):
    before = snapshot(tmp_path)
    status, _, err = run(capsys, "convert", str(data), str(data), "--to", "spmf", "--force")
    one_line_error(status, err, str(data), "is the input")
    assert snapshot(tmp_path) == before


def test_report_html_may_not_replace_the_report_it_reads(tmp_path, capsys, data):
    assert ngram(capsys, data, tmp_path / "rel")[0] == 0
    report = tmp_path / "rel" / "report.json"
    before = report.read_bytes()
    status, _, err = run(capsys, "report", str(tmp_path / "rel"), "--html", str(report),
                         "--force")
    one_line_error(status, err, "the page summarises the release")
    assert report.read_bytes() == before


def test_demo_checks_out_before_loading(tmp_path, capsys, monkeypatch):
    import dpgpu.commands.demo as demo

    monkeypatch.setattr(demo, "load", lambda path: pytest.fail("loaded before --out was checked"))
    (tmp_path / "taken").mkdir()
    status, _, err = run(capsys, "demo", "--backend", "numpy", "--out", str(tmp_path / "taken"),
                         "--force")
    one_line_error(status, err, "taken", "not a dpgpu release")


def _make(tmp_path, kind):
    """An existing output path that is not a release: a folder, a file, a link or a FIFO."""
    target = tmp_path / "target"
    if kind == "folder":
        target.mkdir()
        (target / "notes.md").write_text("notes\n")
    elif kind == "file":
        target.write_text("a file\n")
    elif kind == "link":
        (tmp_path / "linked.txt").write_text("keep me\n")
        target.symlink_to(tmp_path / "linked.txt")
    else:
        os.mkfifo(target)
    return target


@pytest.mark.parametrize("kind,says", [("folder", "not a dpgpu release (it holds no report.json)"),
                                       ("file", "is a file, not a release directory"),
                                       ("link", "is a symbolic link"),
                                       ("fifo", "is a FIFO or socket")])
def test_force_replaces_only_a_release(tmp_path, capsys, data, kind, says):
    target = _make(tmp_path, kind)
    before = snapshot(tmp_path)
    status, _, err = ngram(capsys, data, target, "--force")
    one_line_error(status, err, str(target), says)
    assert snapshot(tmp_path) == before  # nothing replaced, removed or left behind


@pytest.mark.parametrize("kind,says", [("folder", "is a directory, not a regular file"),
                                       ("link", "is a symbolic link"),
                                       ("fifo", "is a FIFO or socket")])
@pytest.mark.parametrize("force", [True, False])
def test_single_file_output_replaces_only_a_regular_file(tmp_path, capsys, data, kind, says,
                                                        force):
    target = _make(tmp_path, kind)
    before = snapshot(tmp_path)
    status, _, err = run(capsys, "convert", str(data), str(target), *["--force"] * force)
    one_line_error(status, err, str(target), says)
    assert "Traceback" not in err and snapshot(tmp_path) == before


def test_force_replaces_a_release_and_leaves_nothing_else(tmp_path, capsys, data):
    out = tmp_path / "rel"
    assert ngram(capsys, data, out)[0] == 0
    (out / "report.json").write_text('{"old": true}\n')
    status, _, err = ngram(capsys, data, out, "--force")
    assert status == 0, err
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "rel"]
    assert json.loads((out / "report.json").read_text())["mechanism"] == "ngram"


def test_a_release_that_cannot_be_removed_is_reported(tmp_path, monkeypatch):
    out = tmp_path / "rel"
    with ReleaseWriter(out) as rel:
        rel.finish({"run": 1})

    def fail(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    with ReleaseWriter(out, force=True) as rel:
        monkeypatch.setattr("dpgpu.release.shutil.rmtree", fail)
        with pytest.raises(InputError, match="could not be removed .*remove it by hand"):
            rel.finish({"run": 2})
    assert json.loads((out / "report.json").read_text())["run"] == 2  # the new one is in place


@pytest.mark.parametrize("out", [".", ".."])
def test_out_dot_and_dot_dot_are_refused_clearly(tmp_path, capsys, monkeypatch, data, out):
    release = tmp_path / "rel"
    assert ngram(capsys, data, release)[0] == 0
    monkeypatch.chdir(release)
    before = snapshot(tmp_path)
    status, _, err = ngram(capsys, data, out, "--force")
    one_line_error(status, err, f"{out}: is or holds the current folder")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("out,args,says", [
    ("rel", (), "already exists (use --force"),
    ("missing/rel", (), "does not exist"),
    (".", ("--force",), "holds the input"),
])
def test_out_is_checked_before_the_input_is_read(tmp_path, capsys, monkeypatch, data, out,
                                                 args, says):
    reads = []
    monkeypatch.setattr("dpgpu.commands.common.load", lambda *a, **k: reads.append(a))
    for release in (tmp_path, tmp_path / "rel"):  # both look like releases
        release.mkdir(exist_ok=True)
        (release / "report.json").write_text("{}\n")
    out = tmp_path / out
    status, _, err = ngram(capsys, data, out, *args)
    one_line_error(status, err, str(out), says)
    assert reads == []


def test_check_output_knows_the_inputs(tmp_path):
    p = tmp_path / "in.txt"
    p.write_text("1 2\n")
    os.link(p, tmp_path / "hard.txt")
    for target in (p, tmp_path / "hard.txt"):
        with pytest.raises(InputError, match="is the input"):
            check_output(target, force=True, inputs=[p])
    with pytest.raises(InputError, match="is the input"), \
            atomic_output(tmp_path / "hard.txt", force=True, inputs=[p]) as f:
        f.write("lost\n")
    assert p.read_text() == "1 2\n" and sorted(os.listdir(tmp_path)) == ["hard.txt", "in.txt"]
    assert check_output(tmp_path / "new.txt", inputs=[p]) == tmp_path / "new.txt"
    assert check_output(p, force=True, inputs=[tmp_path / "other.txt"]) == p
    (tmp_path / "report.json").write_text("{}\n")  # tmp_path looks like a release, but holds p
    with pytest.raises(InputError, match="holds the input"):
        ReleaseWriter(tmp_path, force=True, inputs=[p])
    assert sorted(os.listdir(tmp_path)) == ["hard.txt", "in.txt", "report.json"]


# ------------------------------------------------------------------ pipes and devices


@contextlib.contextmanager
def pipe(data):
    """A path to a real pipe that holds ``data`` (which must fit in the pipe's buffer)."""
    r, w = os.pipe()
    try:
        os.write(w, data)
        os.close(w)
        yield f"/dev/fd/{r}"
    finally:
        os.close(r)


@pytest.mark.parametrize("compress", [False, True])
def test_a_pipe_is_read_whole(compress):
    raw = LINES.encode()
    with pipe(gzip.compress(raw) if compress else raw) as path:
        db = dpgpu.load(path)
    assert len(db) == 2000 and db.source["format"] == "lines"
    assert list(db)[:3] == [("1", "1", "1"), ("2", "2", "2"), ("3", "3", "3")]


def test_cli_reads_all_of_stdin():
    done = subprocess.run([sys.executable, "-m", "dpgpu", "stats", "/dev/stdin", "--json"],
                          input=LINES.encode(), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sequences"] == 2000


def test_parquet_through_a_pipe(tmp_path):
    pytest.importorskip("pyarrow")
    seq, p = tmp_path / "x.seq", tmp_path / "x.parquet"
    seq.write_text(SEQ)
    dpgpu.load(seq).save(p, format="parquet")
    with pipe(p.read_bytes()) as path:
        db = dpgpu.load(path)
    assert db.source["format"] == "parquet" and list(db) == list(dpgpu.load(p))


def test_text_parquet_is_not_read_from_a_pipe():
    with pipe(b"PAR1") as path, pytest.raises(InputError, match="not a regular file"):
        dpgpu.load(path, format="text-parquet")


def test_a_device_is_refused():
    with pytest.raises(InputError, match="/dev/null: is a device"):
        dpgpu.load("/dev/null")


# ------------------------------------------------------------------ byte-order mark


@pytest.mark.parametrize("name,text,fmt", [
    ("x.seq", SEQ, "seq"),
    ("x.txt", "1 2 3\n4 5\n", "lines"),
    ("x.txt", "a b\nc\n", "lines"),
    ("x.spmf", "1 -1 2 -1 -2\n3 -1 -2\n", "spmf"),
    ("x.jsonl", '{"author": "a", "content": "Hello there. Bye now."}\n', "jsonl"),
    ("x.csv", "case,activity,timestamp\n1,a,1\n1,b,2\n2,c,1\n", "csv"),
])
@pytest.mark.parametrize("compress", [False, True])
def test_a_byte_order_mark_is_dropped(tmp_path, name, text, fmt, compress):
    raw = text.encode()
    plain, marked = tmp_path / name, tmp_path / f"bom-{name}"
    plain.write_bytes(raw)
    marked.write_bytes(gzip.compress(BOM + raw) if compress else BOM + raw)
    db, expected = dpgpu.load(marked), dpgpu.load(plain)
    assert db.source["format"] == expected.source["format"] == fmt
    assert list(db) == list(expected) and db.vocab.labels == expected.vocab.labels
    assert not any("\ufeff" in label for label in db.vocab.labels)


def test_points_with_a_byte_order_mark(tmp_path):
    p = tmp_path / "p.csv"
    p.write_bytes(BOM + b"x,y\n0.1,0.2\n0.3,0.4\n")
    assert np.array_equal(read_points(p, "x,y"), [[0.1, 0.2], [0.3, 0.4]])


@pytest.mark.parametrize("signum", [15, 1])  # SIGTERM (kill, timeout, docker stop), SIGHUP
def test_a_terminated_command_leaves_no_partial_output(tmp_path, signum):
    """Regression: SIGTERM killed the process without unwinding, leaving the staging file."""
    import signal
    import time

    out = tmp_path / "big.txt"
    proc = subprocess.Popen([sys.executable, "-m", "dpgpu", "generate", "--tokens", "1e9",
                             "--jobs", "1", "--quiet", str(out)], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".big.txt.*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.glob(".big.txt.*")), "the staging file never appeared"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum
    assert err.strip() == f"dpgpu: terminated by signal {signum}"
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # this process's is untouched


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder where no file can be made: one without write permission, or for root, who
    may write there anyway, a system folder that refuses new files."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    for candidate in (folder, "/sys", "/proc"):
        try:
            (Path(candidate) / "dpgpu-probe").touch(exist_ok=False)
        except OSError:
            yield Path(candidate)
            break
        (Path(candidate) / "dpgpu-probe").unlink()
    else:
        pytest.skip("every candidate folder takes new files here")
    folder.chmod(0o755)


def test_a_folder_that_takes_no_files_is_refused_before_the_input_is_read(
        capsys, monkeypatch, data, read_only_folder):
    """Regression: an output in a read-only folder (a read-only mount, no write permission)
    was refused only when written, after the whole release."""
    reads = []
    monkeypatch.setattr("dpgpu.commands.common.load", lambda *a, **k: reads.append(a))
    out = read_only_folder / "rel"
    status, _, err = ngram(capsys, data, out)
    one_line_error(status, err, f"{out}: cannot write here (")
    assert reads == []


def test_evaluate_with_a_figure_that_cannot_be_written_writes_nothing(
        tmp_path, capsys, data, read_only_folder):
    """Regression: `evaluate --plot` into a read-only folder failed after the whole
    evaluation, and had written evaluation.json into the release meanwhile."""
    pytest.importorskip("matplotlib")
    release = tmp_path / "rel"
    assert ngram(capsys, data, release)[0] == 0
    fig = read_only_folder / "eval.png"
    status, _, err = run(capsys, "evaluate", "--original", str(data), "--release", str(release),
                         "--task", "lengths", "--plot", str(fig))
    assert status == 2 and f"{fig}: cannot write here (" in err, err
    assert not (release / "evaluation.json").exists()


def test_gz_outputs_are_compressed_at_gzip_default_level(tmp_path):
    """Regression: .gz outputs were compressed at Python's level 9, about twice as slow as
    gzip's default 6 for files about 1 % smaller; `generate big.seq.gz` was bound by it."""
    from dpgpu.data.io import GZIP_LEVEL  # noqa: PLC0415

    with atomic_output(tmp_path / "x.txt.gz") as f:
        f.write("1 2 3\n" * 1000)
    raw = (tmp_path / "x.txt.gz").read_bytes()
    assert GZIP_LEVEL == 6 and raw[8] == 0  # the header's XFL: 2 means level 9, 4 level 1
    assert gzip.decompress(raw) == b"1 2 3\n" * 1000


def test_generate_is_quiet_with_q_too(tmp_path, capsys):
    status, out, err = run(capsys, "generate", str(tmp_path / "g.seq"), "--tokens", "1000",
                           "-q")
    assert status == 0 and out == err == "" and (tmp_path / "g.seq").stat().st_size > 1000


def test_the_write_probe_is_no_longer_than_the_staging_file(tmp_path, capsys):
    """Regression (review): the probe's '.probe' suffix, a character longer than the staging
    file's '.part', refused an output name that the write itself could take (255 bytes)."""
    data = tmp_path / "d.txt"
    data.write_text("1 2\n3\n")
    out = tmp_path / ("x" * 236 + ".txt")  # ".<name>.XXXXXXXX.part" is 255 bytes
    status, _, err = run(capsys, "convert", str(data), str(out))
    assert status == 0 and out.read_text() == "1 2\n3\n", err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["d.txt", out.name])
