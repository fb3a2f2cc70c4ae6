"""``--engine dask --scheduler ADDRESS`` on every mechanism command: the workers read the
input, and the files written are those of the local run."""

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dpgpu
from dpgpu.cli import main
from dpgpu.data.load import demo_path

distributed = pytest.importorskip("dask.distributed")

COMMANDS = {
    "ngram": ["--epsilon", "2", "--l-max", "8", "--n-max", "3"],
    "pst": ["--epsilon", "2", "--l-top", "8"],
    "pfs2": ["--epsilon", "2", "--threshold", "0.2", "--l-upper", "6"],
    "dpne": ["--epsilon", "8", "--delta", "1e-5", "--max-n", "3", "--contribution", "3"],
    "privtree-spatial": ["--epsilon", "2", "--columns", "x,y", "--bounds", "0,1,0,1"],
}


def test_engine_dask_cli_writes_the_local_release(tmp_path):
    rng = np.random.default_rng(4)
    data = tmp_path / "d.txt"
    data.write_text("\n".join(" ".join(f"t{x}" for x in rng.choice(4, size=rng.integers(1, 10),
                                                                 p=[0.4, 0.3, 0.2, 0.1]))
                              for _ in range(300)) + "\n")
    points = tmp_path / "p.csv"
    xy = np.concatenate([rng.normal(0.3, 0.03, (2000, 2)), rng.random((2000, 2))]).clip(0, 1)
    points.write_text("x,y\n" + "\n".join(f"{x!r},{y!r}" for x, y in xy.tolist()) + "\n")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  dashboard_address=":0") as cluster:
        for command, options in COMMANDS.items():
            source = points if command == "privtree-spatial" else data
            base = [command, str(source), *options, "--seed", "3", "-q"]
            assert main(base + ["--out", str(tmp_path / f"{command}-local")]) == 0
            assert main(base + ["--out", str(tmp_path / f"{command}-dask"), "--engine", "dask",
                                "--scheduler", cluster.scheduler_address]) == 0
    for command in COMMANDS:
        local, remote = tmp_path / f"{command}-local", tmp_path / f"{command}-dask"
        files = sorted(p.name for p in local.iterdir())
        assert files == sorted(p.name for p in remote.iterdir())
        for name in files:
            if name not in ("report.json", "diagnostics.json"):  # engine; timings
                assert (local / name).read_bytes() == (remote / name).read_bytes(), (command, name)
        reports = [json.loads((d / "report.json").read_text()) for d in (local, remote)]
        assert [r["engine"] for r in reports] == ["local", "dask"]
        assert reports[0]["ledger"] == reports[1]["ledger"]


def test_standard_input_from_a_file_is_that_file_for_the_workers(tmp_path):
    """Workers read the input by path: ``/dev/stdin`` there is each worker's own input."""
    data = tmp_path / "d.txt"
    data.write_text("a b c\nb c\n" * 50)
    base = [sys.executable, "-m", "dpgpu", "ngram", "--epsilon", "2", "--n-max", "3", "--seed",
            "1", "-q", "--engine", "dask", "--no-synthetic", "--out"]
    with data.open() as stdin:
        piped = subprocess.run(base + [str(tmp_path / "stdin"), "-"], stdin=stdin,
                               capture_output=True, text=True)
    assert piped.returncode == 0, piped.stderr
    assert main([*base[3:], str(tmp_path / "path"), str(data)]) == 0
    assert (tmp_path / "stdin" / "ngrams.tsv").read_bytes() == \
        (tmp_path / "path" / "ngrams.tsv").read_bytes()


def test_a_pipe_is_refused_by_the_dask_engine(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(dpgpu.InputError, match="fifo: with the Dask engine, the input is read "
                                               "by path and this is not a regular file"):
        dpgpu.load_distributed(fifo, client=object())


@pytest.mark.parametrize("address", ["notanaddress", "tcp://127.0.0.1:1"])
def test_an_unreachable_scheduler_is_one_line_naming_it(tmp_path, capsys, address):
    import dask

    data = tmp_path / "d.txt"
    data.write_text("t1 t2\nt2\n")
    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        status = main(["ngram", str(data), "--epsilon", "1", "--out", str(tmp_path / "r"),
                       "--engine", "dask", "--scheduler", address])
    err = capsys.readouterr().err
    assert status == 2 and f"scheduler: cannot connect to '{address}'" in err
    assert "Traceback" not in err and not (tmp_path / "r").exists()


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
def test_ctrl_c_stops_a_local_cluster_run_in_one_line(tmp_path):
    """Regression: Ctrl-C, which a terminal sends to its whole process group, reached the
    local cluster's worker processes too: each printed a traceback, and an interrupt while
    the cluster started left the run hanging until a second Ctrl-C."""
    import pty  # noqa: PLC0415 - POSIX only

    out = tmp_path / "rel"
    env = {**os.environ, "PYTHONPATH": str(Path(dpgpu.__file__).parents[1])}
    terminal, stderr = pty.openpty()  # its progress line shows when the workers read
    run = subprocess.Popen(
        [sys.executable, "-m", "dpgpu", "ngram", str(demo_path()), "--epsilon", "1",
         "--engine", "dask", "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=stderr, env=env,
        start_new_session=True,  # a process group of its own, as a terminal's job
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    os.close(stderr)
    shown = b""
    try:
        while b"reading the input" not in shown:
            shown += os.read(terminal, 4096)
        os.killpg(run.pid, signal.SIGINT)
        with contextlib.suppress(OSError):  # EIO: the run exited, the terminal is closed
            while chunk := os.read(terminal, 4096):
                shown += chunk
        assert run.wait(timeout=60) == 130, shown
    finally:
        os.close(terminal)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(run.pid, signal.SIGKILL)
    text = shown.decode()
    assert "Traceback" not in text and text.rstrip().endswith("dpgpu: interrupted"), text
    assert not out.exists()


def test_the_cli_hides_tornado_callback_errors_unless_verbose():
    """Regression: a Ctrl-C that lands in one of Dask's waits logs a traceback through
    tornado.application, whose level Dask's configuration sets (ERROR) apart from tornado's:
    lowering 'tornado' alone left it shown (the Ctrl-C test above failed now and then)."""
    import argparse  # noqa: PLC0415
    import logging  # noqa: PLC0415

    from dpgpu.commands.common import engine_client  # noqa: PLC0415

    logger = logging.getLogger("tornado.application")
    before = logger.level
    try:
        args = argparse.Namespace(engine="dask", scheduler=None, backend="numpy", verbose=0)
        with engine_client(args):
            assert not logger.isEnabledFor(logging.ERROR)
    finally:
        logger.setLevel(before)
