"""How the worker processes of dpgpu's local Dask cluster behave on Ctrl-C and shutdown.

Imported only with ``dask[distributed]`` (by :func:`dpgpu.scale.dask.connect`).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Any

from distributed import WorkerPlugin

#: What a worker logs, with a traceback, when its heartbeat finds no scheduler.
HEARTBEAT_FAILED = "Failed to communicate with scheduler during heartbeat."


class LocalWorkerSetup(WorkerPlugin):
    """Every worker of a local cluster ignores SIGINT, and is quiet about a closed scheduler.

    * SIGINT: a local cluster's first workers inherit the SIGINT ignored
      while it starts (:func:`dpgpu.scale.dask.connect`); a worker that its
      nanny restarts later (after it died or ran out of memory) started
      from the client's own handler, and asyncio added one, so a Ctrl-C in
      the terminal interrupted it with a traceback.  Only in a worker's
      main thread, where Python sets signal handlers.
    * The scheduler of a local cluster runs in the client's process, so a
      worker finds it gone only while that process closes the cluster
      (after a Ctrl-C, say).  A worker still being stopped by its nanny
      then logged the failed heartbeat with a traceback into the user's
      terminal; that message is dropped.

    Registered on the client, the plugin runs on every worker that joins,
    restarted ones too.

    Parameters
    ----------
    ignore_interrupts : bool
        Whether the workers ignore SIGINT (as the client's start-up made the
        first ones do).
    """

    idempotent = True
    name = "dpgpu-local-worker-setup"

    def __init__(self, ignore_interrupts: bool) -> None:
        self.ignore_interrupts = ignore_interrupts

    def setup(self, worker: Any) -> None:
        """Set up this worker process (see the class docstring)."""
        if self.ignore_interrupts and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        logging.getLogger("distributed.worker").addFilter(_no_heartbeat_failure)


def _no_heartbeat_failure(record: logging.LogRecord) -> bool:
    return record.msg != HEARTBEAT_FAILED
