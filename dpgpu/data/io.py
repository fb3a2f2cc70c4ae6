"""File plumbing shared by readers and writers.

Reading: whole files as bytes, gzip detected by its magic number (not the
file name), every failure turned into an :class:`~dpgpu.errors.InputError`
that names the file (and line, where there is one).  Inputs are only ever
opened for reading.

Writing: :func:`atomic_output` writes to a temporary file beside the target
and renames it into place only when everything was written, so a failed run
leaves nothing half-written; an existing file is kept unless ``force``.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from ..errors import InputError

GZIP_MAGIC = b"\x1f\x8b"


@contextlib.contextmanager
def input_errors(path: Any) -> Iterator[None]:
    """Turn a failure to open or read ``path`` inside the block into an InputError naming it."""
    try:
        yield
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a data file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None


@contextlib.contextmanager
def gzip_errors(path: Any) -> Iterator[None]:
    """Turn a gzip decoding failure inside the block into an InputError naming ``path``."""
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(f"{path}: truncated or corrupt gzip data ({exc})") from None


def read_bytes(path: Any) -> bytes:
    """Contents of ``path``, decompressed when it is gzip data.

    Raises
    ------
    InputError
        Missing or unreadable file, a directory, or truncated/corrupt gzip.
    """
    p = Path(path)
    with input_errors(p):
        raw = p.read_bytes()
    if raw[:2] == GZIP_MAGIC:
        with gzip_errors(p):
            raw = gzip.decompress(raw)
    return raw


def line_number(data: bytes, offset: int) -> int:
    """1-based line number of byte ``offset`` in ``data``."""
    return data.count(b"\n", 0, offset) + 1


def decode_text(path: Any, data: bytes) -> str:
    """``data`` as text, or an InputError naming the first line that is not text."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(f"{path}: line {line_number(data, nul)}: binary data (NUL byte); "
                         "not a text sequence file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: line {line_number(data, exc.start)}: not UTF-8 text "
                         "(binary data?)") from None


def check_not_binary(path: Any, data: bytes) -> None:
    """Raise InputError if ``data`` holds a NUL byte or is not UTF-8."""
    decode_text(path, data)


def current_umask() -> int:
    """The process umask (temporary files are created 0600; renamed ones get the usual mode)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_output(path: Any, *, force: bool = False, binary: bool = False) -> Iterator[BinaryIO]:
    """Open a temporary file that replaces ``path`` only if the block succeeds.

    Parameters
    ----------
    path : str or path-like
        Target.  A name ending in ``.gz`` is gzip-compressed.
    force : bool
        Replace an existing ``path``; otherwise an existing file is an error.
    binary : bool
        Yield a binary stream instead of a text stream.

    Raises
    ------
    InputError
        When ``path`` exists and ``force`` is false, or its folder is missing.
    """
    target = Path(path)
    if target.exists() and not force:
        raise InputError(f"{target}: already exists (use --force / force=True to replace it)")
    if not target.parent.is_dir():
        raise InputError(f"{target}: folder {target.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            stream: Any = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) \
                if target.name.endswith(".gz") else raw
            with stream if stream is not raw else contextlib.nullcontext(raw):
                if binary:
                    yield stream
                else:
                    import io  # noqa: PLC0415

                    text = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")
                    yield text
                    text.flush()
                    text.detach()
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
