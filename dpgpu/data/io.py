"""File plumbing shared by readers and writers.

Reading: whole files as bytes, read once (so a pipe works), gzip detected by
its magic number (not the file name), a UTF-8 byte-order mark dropped, every
failure turned into an :class:`~dpgpu.errors.InputError` that names the file
(and line, where there is one).  Inputs are only ever opened for reading.

Writing: :func:`check_output` says whether a path may be written: a new
path, or with ``force`` an existing regular file (a release directory, for
release outputs), never a link, a device, another kind of directory, an
input or a folder that holds one.  :func:`atomic_output` writes to a
temporary file beside the target and renames it into place only when
everything was written, so a failed run leaves nothing half-written.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import os
import stat
import tempfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from ..errors import InputError

GZIP_MAGIC = b"\x1f\x8b"


@contextlib.contextmanager
def input_errors(path: Any) -> Iterator[None]:
    """Turn a failure to open or read ``path`` inside the block into an InputError naming it.

    Parameters
    ----------
    path : str or path-like
        The file the block opens or reads, named in the error.

    Raises
    ------
    InputError
        In place of an OSError of the block: the file is missing, a directory,
        or cannot be read.
    """
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
    """Turn a gzip decoding failure inside the block into an InputError naming ``path``.

    Parameters
    ----------
    path : str or path-like
        The file whose data the block decompresses, named in the error.

    Raises
    ------
    InputError
        In place of an EOFError, :class:`gzip.BadGzipFile` or :class:`zlib.error`
        of the block: truncated or corrupt gzip data.
    """
    try:
        yield
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(f"{path}: truncated or corrupt gzip data ({exc})") from None


def read_bytes(path: Any) -> bytes:
    """Contents of ``path``, decompressed when it is gzip data, without a UTF-8 byte-order mark.

    The file is opened once and read to its end, so a pipe or FIFO
    (``/dev/stdin``) gives all its data.  One byte-order mark at the start
    of the (decompressed) data is dropped, so every text format reads clean
    text.

    Parameters
    ----------
    path : str or path-like
        The file (or pipe) to read.

    Returns
    -------
    bytes
        The whole contents, decompressed, without a leading UTF-8 byte-order
        mark.

    Raises
    ------
    InputError
        Missing or unreadable file, a directory, a device (``/dev/zero``, a
        terminal), or truncated/corrupt gzip.
    """
    p = Path(path)
    with input_errors(p), open(p, "rb") as f:
        if _kind(os.fstat(f.fileno()).st_mode) == "a device":
            raise InputError(f"{p}: is a device, not a data file (pipe the data in, or save "
                             "it to a file)")
        raw = f.read()
    if raw[:2] == GZIP_MAGIC:
        with gzip_errors(p):
            raw = gzip.decompress(raw)
    return raw.removeprefix(codecs.BOM_UTF8)


def line_number(data: bytes, offset: int) -> int:
    """1-based line number of byte ``offset`` in ``data``.

    Parameters
    ----------
    data : bytes
        The file's contents.
    offset : int
        A byte offset into ``data``.

    Returns
    -------
    int
        One more than the number of newlines before ``offset``.
    """
    return data.count(b"\n", 0, offset) + 1


def decode_text(path: Any, data: bytes) -> str:
    """``data`` as text, or an InputError naming the first line that is not text.

    Parameters
    ----------
    path : str or path-like
        The file ``data`` came from, named in the error.
    data : bytes
        The contents to decode.

    Returns
    -------
    str
        ``data`` decoded as UTF-8.

    Raises
    ------
    InputError
        ``data`` holds a NUL byte, or is not valid UTF-8 (the message names
        the line).
    """
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
    """Raise InputError if ``data`` holds a NUL byte or is not UTF-8.

    Parameters
    ----------
    path : str or path-like
        The file ``data`` came from, named in the error.
    data : bytes
        The contents to check (:func:`decode_text`).

    Raises
    ------
    InputError
        ``data`` is not text; the message names the line.
    """
    decode_text(path, data)


def current_umask() -> int:
    """The process umask (temporary files are created 0600; renamed ones get the usual mode).

    Returns
    -------
    int
        The umask's permission bits (read by setting it and setting it back).
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, as error messages say it."""
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a FIFO or socket"


def _absolute(path: Any) -> Path:
    """``path`` made absolute with its folder resolved (its own name is kept, link or not).

    A last component ``.`` or ``..`` names a folder, which is resolved too.
    """
    p = Path(path)
    if p.name in ("", ".."):
        return Path(os.path.realpath(p))
    return Path(os.path.realpath(p.parent)) / p.name


def _overlap(target: Path, st: os.stat_result, inputs: Iterable[Any]) -> str | None:
    """Why the existing ``target`` (stat ``st``) may not be replaced, or None.

    It may not be an input, hold one, or be or hold the current folder (which
    the replacement would pull from under the run).
    """
    cwd = Path.cwd()
    if target == cwd or target in cwd.parents:
        return "is or holds the current folder"
    for name in inputs:
        path = Path(name)
        with contextlib.suppress(OSError):  # a missing input is reported when it is read
            if os.path.samestat(st, os.stat(path)):
                return f"is the input {name}"
        if target in Path(os.path.realpath(path)).parents:
            return f"holds the input {name}"
    return None


def check_output(path: Any, *, force: bool = False, release: str | None = None,
                 inputs: Iterable[Any] = ()) -> Path:
    """Check, before anything is read or written, that ``path`` may be written.

    A new path in an existing folder may be written.  An existing one may be
    replaced only with ``force``, and only when it is a regular file (a file
    output) or a directory holding the file ``release`` (a release
    directory).  A symbolic link, a device, a FIFO, any other directory, an
    input, or a directory that holds an input or the current folder is never
    replaced.

    Parameters
    ----------
    path : str or path-like
        The output.
    force : bool
        Whether an existing output may be replaced.
    release : str, optional
        For a directory output: the name of the file that marks a directory
        as one to replace (a release's ``report.json``).  Without it the
        output is a file.
    inputs : iterable of path-like
        The files the run reads.

    Returns
    -------
    pathlib.Path
        ``path``, absolute, its folder resolved (``.`` and ``..`` as well).

    Raises
    ------
    InputError
        When ``path`` may not be written; the message names it and says why.
    """
    target = _absolute(path)
    try:
        st = os.lstat(target)
    except (FileNotFoundError, NotADirectoryError):
        if not target.parent.is_dir():
            raise InputError(f"{path}: folder {target.parent} does not exist") from None
        return target
    kind = _kind(st.st_mode)
    wanted = "a directory" if release else "a file"
    problem = "is a symbolic link" if kind == "a symbolic link" else _overlap(target, st, inputs)
    if problem is None and kind != wanted:
        problem = f"is {kind}, not {'a release directory' if release else 'a regular file'}"
    if problem is None and release and not (target / release).is_file():
        problem = f"is a directory but not a dpgpu release (it holds no {release})"
    if problem is not None:
        raise InputError(f"{path}: {problem}; dpgpu does not replace it, even with --force "
                         "(choose another output path)")
    if not force:
        raise InputError(f"{path}: already exists (use --force / force=True to replace it)")
    return target


@contextlib.contextmanager
def atomic_output(path: Any, *, force: bool = False, binary: bool = False,
                  inputs: Iterable[Any] = ()) -> Iterator[BinaryIO]:
    """Open a temporary file that replaces ``path`` only if the block succeeds.

    Parameters
    ----------
    path : str or path-like
        Target.  A name ending in ``.gz`` is gzip-compressed.
    force : bool
        Replace an existing regular file ``path``; otherwise an existing
        ``path`` is an error.
    binary : bool
        Yield a binary stream instead of a text stream.
    inputs : iterable of path-like
        The files the run reads, which ``path`` may not be
        (:func:`check_output`).

    Yields
    ------
    binary or text stream
        The temporary file: a binary stream (gzip-compressing for ``.gz``)
        with ``binary``, else a UTF-8 text stream with ``\\n`` newlines.

    Raises
    ------
    InputError
        When :func:`check_output` refuses ``path`` (checked again before the
        rename, since the target may change while the data is written).
    """
    inputs = tuple(inputs)
    target = check_output(path, force=force, inputs=inputs)
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
        check_output(path, force=force, inputs=inputs)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
