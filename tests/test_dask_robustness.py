"""Dask connections and clusters that go wrong: a scheduler address where a service that is
not Dask listens, an empty address, and the local cluster ``load_distributed`` starts."""

import gc
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import dpgpu
from dpgpu import InputError, InvalidParameter
from dpgpu.cli import main

distributed = pytest.importorskip("dask.distributed")
import dask  # noqa: E402 - after distributed, which adds its settings to Dask's configuration

from dpgpu.scale import loading  # noqa: E402 - needs dask
from dpgpu.scale.dask import close, connect  # noqa: E402
from dpgpu.scale.local_workers import HEARTBEAT_FAILED  # noqa: E402

#: What an SSH server sends first (port 22): read by Dask as the length of a frame.
SSH_BANNER = b"SSH-2.0-OpenSSH_8.9p1 Ubuntu-3ubuntu0.6\r\n"


@pytest.fixture(params=["silent", "banner"])
def not_dask(request):
    """``(address, kind)`` of a TCP service that is not Dask: it accepts connections and never
    answers (``silent``), or sends an SSH banner and waits (``banner``)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    stop, accepted = threading.Event(), []

    def serve():
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            accepted.append(conn)
            if request.param == "banner":
                conn.sendall(SSH_BANNER)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"tcp://127.0.0.1:{server.getsockname()[1]}", request.param
    stop.set()
    thread.join()
    for conn in [server, *accepted]:
        conn.close()


def raised_within(limit, fn, *args):
    """What ``fn(*args)`` raises, run on a thread of its own: fails the test if it is still
    running after ``limit`` seconds (instead of hanging the test run)."""
    raised = []

    def run():
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)
        else:
            raised.append(None)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert not thread.is_alive(), f"still connecting after {limit} s"
    return raised[0]


def why(kind: str) -> str:
    """The reason the message gives (a banner's error depends on how Dask frames it)."""
    return ("no Dask scheduler answered within 1 s" if kind == "silent" else
            "what answers there is not a Dask scheduler: ")


def test_connect_gives_up_on_a_service_that_is_not_dask(not_dask):
    """Within Dask's connect timeout, with one line naming the address; nothing is left
    running."""
    address, kind = not_dask
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        start = time.monotonic()
        exc = raised_within(20, connect, address)
        took = time.monotonic() - start
    assert isinstance(exc, InvalidParameter), repr(exc)
    assert str(exc).startswith(f"scheduler: cannot connect to '{address}' ({why(kind)}")
    assert took < 10
    assert not [t for t in threading.enumerate() if t.name == "dpgpu-connect"]


def test_the_cli_exits_with_status_2_on_a_service_that_is_not_dask(not_dask, tmp_path):
    """In a process of its own: the CLI reports one line and exits (nothing keeps it alive)."""
    address, kind = not_dask
    data = tmp_path / "d.txt"
    data.write_text("t1 t2\nt2\n")
    root = str(Path(dpgpu.__file__).parents[1])
    env = {**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s",
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "dpgpu", "ngram", str(data), "--epsilon", "1",
                           "--out", str(tmp_path / "r"), "--engine", "dask",
                           "--scheduler", address],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2, done.stderr
    # the error is the last line and the only one of dpgpu's (a dependency may warn)
    lines = done.stderr.splitlines()
    assert lines[-1].startswith(f"dpgpu: error: scheduler: cannot connect to '{address}' "
                                f"({why(kind)}")
    assert [x for x in lines if x.startswith("dpgpu:")] == lines[-1:]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()


def test_an_empty_scheduler_address_is_refused(tmp_path, capsys):
    """As the Python API refuses an empty ``client``: no local cluster started in its place."""
    data = tmp_path / "d.txt"
    data.write_text("t1 t2\nt2\n")
    for address in ("", " "):
        assert main(["ngram", str(data), "--epsilon", "1", "--out", str(tmp_path / "r"),
                     "--engine", "dask", "--scheduler", address]) == 2
        assert capsys.readouterr().err == ("dpgpu: error: scheduler: an empty scheduler address "
                                           "(leave it out for a local cluster)\n")
    assert not (tmp_path / "r").exists()
    with pytest.raises(InvalidParameter, match="^client: an empty scheduler address"):
        connect("", name="client")


def test_load_distributed_checks_its_client(not_dask, tmp_path):
    address, kind = not_dask
    data = tmp_path / "d.txt"
    data.write_text("1 2\n3\n")
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        exc = raised_within(20, dpgpu.load_distributed, data, address)
    assert isinstance(exc, InvalidParameter), repr(exc)
    assert str(exc).startswith(f"client: cannot connect to '{address}' ({why(kind)}")
    with pytest.raises(InvalidParameter, match="^client: expected a dask.distributed.Client"):
        dpgpu.load_distributed(data, 8786)


@pytest.fixture
def closed(monkeypatch, request):
    """The clients :func:`load_distributed` closes; Dask's own messages from INFO up shown,
    as before any quiet client."""
    logger = logging.getLogger("distributed")
    request.addfinalizer(lambda level=logger.level: logger.setLevel(level))
    logger.setLevel(logging.INFO)
    clients = []

    def spy(client):
        clients.append(client)
        close(client)

    monkeypatch.setattr(loading, "close", spy, raising=False)
    return clients


def test_the_local_cluster_of_load_distributed_lives_as_long_as_its_data(tmp_path, closed,
                                                                          capfd):
    path = tmp_path / "d.txt"
    path.write_text("1 2\n3\n" * 10)
    db = dpgpu.load_distributed(path)
    client, cluster = db.client, db.client.cluster
    assert len(db.collect()) == 20 and client.status == "running" and not closed
    del db
    gc.collect()
    assert closed == [client] and client.status == "closed"
    assert cluster.status.name == "closed"
    with pytest.raises(InputError, match="no such file"):  # refused before any cluster starts
        dpgpu.load_distributed(tmp_path / "missing.txt")
    assert len(closed) == 1
    bad = tmp_path / "bad.spmf"
    bad.write_text("1 -1 2 -1 -2\n3 x -1 -2\n")
    with pytest.raises(InputError, match="line 2: non-numeric"):  # a failed read closes it at once
        dpgpu.load_distributed(bad)
    assert len(closed) == 2 and closed[1].status == "closed"
    assert " - INFO - " not in capfd.readouterr().err  # quiet, as the CLI's cluster


def test_a_local_cluster_does_not_need_port_8787(recwarn):
    """Regression: with port 8787 taken (another run's cluster, a notebook's dashboard), every
    local cluster warned 'Port 8787 is already in use', even under --quiet."""
    with socket.socket() as taken:
        try:
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        except OSError:  # already taken by something else: the case to test all the same
            pass
        client = connect(n_workers=1, quiet=True)
        try:
            assert client.scheduler_info()["workers"]
        finally:
            close(client)
    assert not [w for w in recwarn if "8787" in str(w.message)], [str(w.message) for w in recwarn]


def _sigint_ignored():
    return os.getpid(), signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def _worker_logs(*messages):
    """Whether the worker's logger lets each message through its filters."""
    worker_log = logging.getLogger("distributed.worker")
    return [bool(worker_log.filter(worker_log.makeRecord(
        worker_log.name, logging.ERROR, __file__, 0, m, (), None))) for m in messages]


def _worker_sigint(client):
    """``{address: (pid, whether SIGINT is ignored)}`` of the workers ({}: none answers)."""
    try:
        return client.run(_sigint_ignored)
    except OSError:  # a worker gone while asked
        return {}


def test_a_worker_restarted_by_its_nanny_ignores_ctrl_c_too():
    """Regression: a local cluster's workers ignore SIGINT (a terminal's Ctrl-C reaches its
    whole process group, and the client alone handles it), but a worker that its nanny
    restarted, after it died, started from the client's handler and got asyncio's."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # a client's usual one
    client = connect(n_workers=1, quiet=True)
    try:
        (pid, ignored), = _worker_sigint(client).values()
        assert ignored
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 120
        while not [p for p, _ in _worker_sigint(client).values() if p != pid]:
            assert time.monotonic() < deadline, "the nanny did not restart the worker"
            time.sleep(0.2)
        (restarted, ignored), = _worker_sigint(client).values()
        assert restarted != pid and ignored
        (said,) = client.run(_worker_logs, HEARTBEAT_FAILED, "another error").values()
        assert said == [False, True]  # a closed scheduler is not shouted into the terminal
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the client's own
    finally:
        close(client)
        signal.signal(signal.SIGINT, before)
