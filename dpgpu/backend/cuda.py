"""CUDA C kernels from ``kernels/``, compiled at run time by CuPy (NVRTC).

The ``.cu`` / ``.cuh`` sources ship as package data (``dpgpu/kernels``, a
link to the repository's top-level ``kernels/`` that the wheel build
resolves into real files); a checkout where that link is missing falls back
to ``<repo>/kernels``.  Nothing is compiled ahead of time and no PTX ships:
CuPy compiles for the GPU at hand and caches the binary on disk.

Local ``#include "x.cuh"`` lines are inlined before compiling, so that
CuPy's cache key, which hashes the source text, also covers the headers.

Importing this module imports neither CuPy nor NVRTC.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Python >= 3.11 location; only for annotations
    from importlib.resources.abc import Traversable

#: Options for NVRTC, on top of those CuPy always adds (``--std=c++17``,
#: CCCL and CuPy include paths).
COMPILE_OPTIONS: tuple[str, ...] = ()

#: Threads per block of every 1-D launch.
BLOCK_SIZE = 256

#: Cap on blocks per launch; kernels loop grid-stride over the rest.
MAX_BLOCKS = 65_536

_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"([^"]+)"[ \t]*$', re.MULTILINE)

_modules: dict[tuple[str, int], Any] = {}
_multiprocessors: dict[int, int] = {}


def kernel_dir() -> Traversable:
    """The directory holding the kernel sources (package data, else the checkout's)."""
    packaged = resources.files("dpgpu") / "kernels"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "kernels"


def kernel_names() -> list[str]:
    """Names (stems) of all ``.cu`` files, sorted."""
    return sorted(p.name[:-3] for p in kernel_dir().iterdir() if p.name.endswith(".cu"))


def kernel_source(name: str) -> str:
    """Source of ``<name>.cu`` with its local headers inlined, as handed to NVRTC.

    Each header is inlined once (the first time it is included), between
    ``#line`` directives so that compiler messages name the right file and line.
    """
    return _inline(f"{name}.cu", kernel_dir(), set())


def _inline(filename: str, directory: Traversable, seen: set[str]) -> str:
    text = (directory / filename).read_text(encoding="utf-8")
    pieces, last = [], 0
    for match in _LOCAL_INCLUDE.finditer(text):
        header = match.group(1)
        pieces.append(text[last:match.start()])
        if header not in seen:
            seen.add(header)
            line = text.count("\n", 0, match.end()) + 2
            pieces.append(f'#line 1 "{header}"\n{_inline(header, directory, seen)}\n'
                          f'#line {line} "{filename}"')
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces)


def module(name: str):
    """The ``cupy.RawModule`` of ``kernels/<name>.cu`` for the current device (memoised).

    Compilation is lazy: NVRTC runs on the first ``get_function`` (or is
    skipped when CuPy's kernel cache already holds the binary).
    """
    import cupy  # noqa: PLC0415 - GPU path only

    key = (name, cupy.cuda.Device().id)
    mod = _modules.get(key)
    if mod is None:
        mod = _modules[key] = cupy.RawModule(code=kernel_source(name), options=COMPILE_OPTIONS)
    return mod


def function(name: str, kernel: str):
    """The ``extern "C"`` kernel ``kernel`` of ``kernels/<name>.cu`` (a ``cupy.RawKernel``)."""
    return module(name).get_function(kernel)


def launch(kernel: Any, n_items: int, args: tuple, *, max_blocks: int = MAX_BLOCKS,
           shared_mem: int = 0) -> None:
    """Launch a grid-stride 1-D kernel over ``n_items`` work items.

    Parameters
    ----------
    kernel : cupy.RawKernel
    n_items : int
        Number of work items (> 0).
    args : tuple
        Kernel arguments: CuPy arrays (passed as pointers) and NumPy scalars
        whose dtypes match the C parameter types exactly.
    max_blocks : int
        Cap on the grid (at most :data:`MAX_BLOCKS`).
    shared_mem : int
        Dynamic shared memory per block, in bytes.
    """
    blocks = min(-(-n_items // BLOCK_SIZE), max_blocks, MAX_BLOCKS)
    if shared_mem:
        kernel((blocks,), (BLOCK_SIZE,), args, shared_mem=shared_mem)
    else:
        kernel((blocks,), (BLOCK_SIZE,), args)


def multiprocessors() -> int:
    """Streaming multiprocessors of the current CUDA device (asked once per device).

    ``cupy.cuda.Device().attributes`` would query every device attribute on
    each call; this is asked at every shared-memory histogram launch.
    """
    import cupy  # noqa: PLC0415 - GPU path only

    device = cupy.cuda.Device().id
    if device not in _multiprocessors:
        runtime = cupy.cuda.runtime
        _multiprocessors[device] = int(runtime.deviceGetAttribute(
            runtime.cudaDevAttrMultiProcessorCount, device))
    return _multiprocessors[device]
