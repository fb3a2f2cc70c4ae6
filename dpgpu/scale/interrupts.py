"""The worker processes of a local Dask cluster ignore Ctrl-C, also after a restart.

Imported only with ``dask[distributed]`` (by :func:`dpgpu.scale.dask.connect`).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from distributed import WorkerPlugin


class IgnoreInterrupts(WorkerPlugin):
    """Makes every worker process ignore SIGINT, those its nanny restarts too.

    A local cluster's first workers inherit the SIGINT ignored while it
    starts (:func:`dpgpu.scale.dask.connect`); a worker that its nanny
    restarts later (after it died or ran out of memory) starts from the
    client's own handler, and asyncio adds one, so a Ctrl-C in the terminal
    interrupted it with a traceback.  Registered on the client, the plugin
    runs on every worker that joins.  Only in a worker's main thread, where
    Python sets signal handlers (a worker in a thread of the client is left
    alone).
    """

    idempotent = True
    name = "dpgpu-ignore-interrupts"

    def setup(self, worker: Any) -> None:
        """Ignore SIGINT in this worker process."""
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
