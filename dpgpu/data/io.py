"""File plumbing shared by readers and writers.

Reading: whole files as bytes, read once (so a pipe works), gzip detected by
its magic number (not the file name), a UTF-8 byte-order mark dropped, line
ends of every kind (LF, CRLF, a lone CR) read alike (:func:`unix_line_ends`,
:func:`line_number`), every failure turned into an
:class:`~dpgpu.errors.InputError` that names the file (and line, where there
is one).  Inputs are only ever opened for reading.

Writing: :func:`check_output` says whether a path may be written: a new
path, or with ``force`` an existing regular file (a release directory, for
release outputs), never a link, a device, another kind of directory, an
input or a folder that holds one.  :func:`atomic_output` writes to a
temporary file beside the target and renames it into place only when
everything was written, so a failed run leaves nothing half-written; a
folder that cannot be written or a full disk is an InputError naming the
output (:func:`output_errors`).
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import os
import re
import shutil
import stat
import tempfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from ..errors import InputError, InvalidParameter

GZIP_MAGIC = b"\x1f\x8b"
#: Compression level of ``.gz`` outputs: gzip's own default, about twice as fast as
#: Python's (9) for files about 1 % larger; writing was the bound of ``generate big.seq.gz``.
GZIP_LEVEL = 6
#: Deflate's largest compression ratio: a ``.gz`` output is at least this much smaller.
MAX_GZIP_RATIO = 1032
_CR_TO_LF = bytes.maketrans(b"\r", b"\n")
_LONE_CR = re.compile(rb"\r(?!\n)")


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

    A line ends with a line feed, a carriage return and line feed (Windows)
    or a lone carriage return (old Mac OS).

    Parameters
    ----------
    data : bytes
        The file's contents.
    offset : int
        A byte offset into ``data``.

    Returns
    -------
    int
        One more than the number of line ends before ``offset``.
    """
    if offset > 0 and data[offset - 1:offset + 1] == b"\r\n":
        offset -= 1  # the line feed of a CRLF is on the line its carriage return ends
    return count_line_ends(data, offset) + 1


def count_line_ends(data: bytes, end: int | None = None) -> int:
    """Line ends in ``data[:end]``: line feeds, CRLFs and lone carriage returns, one each.

    Parameters
    ----------
    data : bytes
        Text (a CRLF cut between its two bytes counts twice).
    end : int, optional
        Count before this offset only (default: all of ``data``), without a copy.

    Returns
    -------
    int
    """
    end = len(data) if end is None else end
    return data.count(b"\n", 0, end) + data.count(b"\r", 0, end) - data.count(b"\r\n", 0, end)


def unix_line_ends(data: bytes) -> bytes:
    """``data`` with every line ending in a line feed, of the same length.

    A lone carriage return (old Mac OS; Excel's "CSV (Macintosh)") becomes a
    line feed, and the carriage return of a CRLF a space, so that byte
    offsets are kept and line feeds number the lines.  Text that has no
    lone carriage return (LF or CRLF line ends) is returned as it is.

    Parameters
    ----------
    data : bytes
        Text, whole lines (a CRLF must not be cut between its two bytes).

    Returns
    -------
    bytes
        ``data`` itself, or a copy with its carriage returns replaced.
    """
    if b"\r" not in data or not _LONE_CR.search(data):
        return data
    if b"\r\n" in data:
        data = data.replace(b"\r\n", b" \n")
    return data.translate(_CR_TO_LF)


#: Byte-order marks of text that is not UTF-8 (longest first: UTF-32 LE starts as UTF-16 LE).
_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))
_SAVE_AS_UTF8 = "dpgpu reads UTF-8 text: save the file as UTF-8"


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
        ``data`` is UTF-16 or UTF-32 text (it starts with a byte-order
        mark), holds a NUL byte (binary data), or is not valid UTF-8 (the
        message names the line, the byte and its column).
    """
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    if encoding:
        raise InputError(f"{path}: line 1: {encoding} text (byte-order mark); {_SAVE_AS_UTF8}")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(f"{path}: line {line_number(data, nul)}: binary data (NUL byte); "
                         "not a text sequence file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = max(data.rfind(b"\n", 0, exc.start), data.rfind(b"\r", 0, exc.start)) + 1
        column = len(data[line_start:exc.start].decode("utf-8")) + 1
        raise InputError(f"{path}: line {line_number(data, exc.start)}: not UTF-8 text (byte "
                         f"0x{data[exc.start]:02x} at column {column}); {_SAVE_AS_UTF8}"
                         ) from None


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

    A new path in an existing folder that takes new files (a file is made
    there and removed, as outputs are staged beside their target) may be
    written.  An existing one may be
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
        return _writable_folder(path, target)
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
    return _writable_folder(path, target)


def _writable_folder(path: Any, target: Path) -> Path:
    """``target``, once a file could be made (and removed) in its folder; else an OutputError.

    A read-only file system or a folder without write permission was found
    only when the output was written, after all the work.
    """
    with output_errors(path):  # named as the staging file will be: as long, as cleaned up
        fd, probe = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part",
                                     dir=target.parent)
        try:
            os.close(fd)
        finally:
            os.unlink(probe)
    return target


@contextlib.contextmanager
def output_errors(path: Any) -> Iterator[None]:
    """Turn a failure of the file system inside the block into an InputError naming ``path``.

    For the block that writes the output ``path`` (its temporary file or
    staging directory): a folder that cannot be written, a full disk.  The
    block cleans up after itself; only an OSError is turned, any other
    error passes unchanged.  Every OSError of the block is taken for the
    output's: a block that also computes what it writes (``dpgpu generate``'s
    worker processes) names the output for their OSErrors too, with the
    system's reason (too many open files, say) after it.

    Parameters
    ----------
    path : str or path-like
        The output the block writes, named in the error.

    Raises
    ------
    InputError
        In place of an OSError of the block: ``<path>: cannot write here
        (<the system's reason>)``.
    """
    try:
        yield
    except OSError as exc:
        raise output_error(path, exc) from None


class OutputError(InputError):
    """An output the file system failed to write (:func:`output_error`).

    Attributes
    ----------
    cause : OSError
        The failure, so that a caller writing inside a larger output (a
        release's staging directory) can name that output instead.
    """

    def __init__(self, message: str, cause: OSError) -> None:
        super().__init__(message)
        self.cause = cause


def output_error(path: Any, exc: OSError) -> OutputError:
    """The InputError for a failure ``exc`` of the file system to write the output ``path``.

    Parameters
    ----------
    path : str or path-like
        The output, named in the error.
    exc : OSError
        The failure; its reason (``strerror``) is quoted, not the name of the
        temporary file it may name.

    Returns
    -------
    OutputError
        ``<path>: cannot write here (<reason>)``, holding ``exc``.
    """
    return OutputError(f"{path}: cannot write here ({exc.strerror or exc})", exc)


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
        The temporary file: a binary stream (gzip-compressing for ``.gz``, at
        :data:`GZIP_LEVEL`)
        with ``binary``, else a UTF-8 text stream with ``\\n`` newlines.

    Raises
    ------
    InputError
        When :func:`check_output` refuses ``path`` (checked again before the
        rename, since the target may change while the data is written), or
        the file system fails to write it (:func:`output_errors`): the
        temporary file is removed and an existing ``path`` is left as it was.
    """
    inputs = tuple(inputs)
    target = check_output(path, force=force, inputs=inputs)
    with output_errors(path):
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as raw:
                stream: Any = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                            compresslevel=GZIP_LEVEL) \
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


def check_free_space(target: Path, least: int, what: str) -> None:
    """Refuse an output of at least ``least`` bytes that cannot fit in ``target``'s folder.

    ``least`` is a lower bound on the uncompressed size, divided by
    :data:`MAX_GZIP_RATIO` for a ``.gz`` output, so that nothing that could
    succeed is refused.

    Parameters
    ----------
    target : pathlib.Path
        The output, in an existing folder (:func:`check_output`).
    least : int
        Bytes the output takes at least, uncompressed.
    what : str
        The option and amount at fault, to start the message (``"--tokens: 1,000
        items"``).

    Raises
    ------
    InvalidParameter
        Naming ``what``, the bytes needed at least and the bytes free.
    """
    need = least // MAX_GZIP_RATIO if target.name.endswith(".gz") else least
    free = shutil.disk_usage(target.parent).free
    if need > free:
        raise InvalidParameter(f"{what} need at least {byte_size(need)} as {target.name}, but "
                               f"{target.parent} has {byte_size(free)} free")


def byte_size(n: int) -> str:
    """``n`` bytes, for a message: ``'2,000,000,000 bytes (2.0 GB)'``."""
    return f"{n:,} bytes" + (f" ({n / 1e9:,.1f} GB)" if n >= 10**9 else "")
