"""``dpgpu info``: versions, the backend a run would use, and the device."""

from __future__ import annotations

import argparse
import platform
from importlib import metadata

from .. import __version__
from ..backend import get_backend
from .common import add_command, add_backend_argument, print_json


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``info`` subcommand."""
    p = add_command(sub, "info", help="show versions, backend and device", description=__doc__,
                    example="dpgpu info --backend cupy --json")
    add_backend_argument(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def collect(backend: str | None = None) -> dict:
    """Facts about this installation and the backend a run would use."""
    be = get_backend(backend)
    facts = {
        "dpgpu": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": _version("numpy"),
        "scipy": _version("scipy"),
        "numba": _version("numba"),
        "cupy": _cupy_version(),
        "backend": be.name,
        "device": be.device_name(),
    }
    if be.is_gpu:
        rt = be.xp.cuda.runtime
        facts["cuda_driver"] = _cuda_version(rt.driverGetVersion())
        facts["cuda_runtime"] = _cuda_version(rt.runtimeGetVersion())
        facts["gpu_memory_gib"] = round(rt.memGetInfo()[1] / 2 ** 30, 1)
    return facts


def run(args: argparse.Namespace) -> int:
    """Print the facts."""
    facts = collect(args.backend)
    if args.json:
        print_json(facts)
    else:
        for key, value in facts.items():
            print(f"{key:<14}{value if value is not None else '-'}")
    return 0


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cupy_version() -> str | None:
    for dist in ("cupy-cuda13x", "cupy-cuda12x", "cupy"):
        v = _version(dist)
        if v:
            return f"{v} ({dist})"
    return None


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"
