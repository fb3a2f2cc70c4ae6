"""``dpgpu.load``: read any supported file into a SequenceDB.

Formats (``format=``): ``seq`` (UCI, e.g. MSNBC), ``spmf`` (with ``-1``/``-2``
separators or the stripped one-item-per-itemset variant), ``lines`` (one
sequence per line, integer or string tokens), ``csv`` and ``parquet`` event
logs (one row per event: case, activity, timestamp), ``xes`` event logs,
user-level text (:mod:`~dpgpu.data.users`): ``jsonl``, ``text-csv``,
``text-parquet`` (a user and a text per record, one sequence per sentence),
``wide`` state sequences (:mod:`~dpgpu.data.wide`: a CSV row per sequence, a
column per time point; never detected), ``trajectory`` points
(:mod:`~dpgpu.data.trajectory`: a CSV row per point, read as the cells of a
public grid; never detected), ``column`` tables (:mod:`~dpgpu.data.column`: a
CSV or Parquet row per sequence, the whole sequence in one cell; never
detected).  Without ``format`` the content decides (file
names are only a hint); gzip is recognised by its magic number.  The file is read once, so a pipe or FIFO
(``/dev/stdin``) works; ``text-parquet``, read by path, needs a regular file.
"""

from __future__ import annotations

import logging
import os
import stat
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import InputError, InvalidParameter
from . import text
from .io import check_not_binary, input_errors, read_bytes
from .public_vocab import on_vocabulary, public_vocabulary
from .sequencedb import SequenceDB

log = logging.getLogger("dpgpu")

FORMATS = ("seq", "spmf", "lines", "csv", "parquet", "xes", "jsonl", "text-csv", "text-parquet",
           "wide", "trajectory", "column")
_OPTIONS = {
    "seq": (), "spmf": (), "lines": ("tokens",),
    "csv": ("case", "activity", "timestamp", "user", "delimiter"),
    "parquet": ("case", "activity", "timestamp", "user"),
    "xes": ("activity", "timestamp"),
    "jsonl": ("user", "text", "lowercase"),
    "text-csv": ("user", "text", "lowercase", "delimiter"),
    "text-parquet": ("user", "text", "lowercase"),
    "wide": ("states", "case", "delimiter"),
    "trajectory": ("grid", "bounds", "case", "x", "y", "timestamp", "user", "outside", "repeats",
                   "delimiter"),
    "column": ("sequence", "tokens", "case", "user", "delimiter"),
}
#: The formats file extensions name (a hint to detection; what ``convert`` and ``generate``
#: write).  ``.txt`` names ``lines``, the plain text format (``convert`` lets ``--to`` pick
#: another text format for it, SPMF's datasets being ``.txt`` files); detection, which
#: falls back to ``lines``, only uses the ``jsonl`` and ``csv`` hints.
EXTENSIONS = {".seq": "seq", ".spmf": "spmf", ".txt": "lines", ".lines": "lines", ".csv": "csv",
              ".tsv": "csv", ".parquet": "parquet", ".xes": "xes", ".jsonl": "jsonl"}
DEMO_FILE = "msnbc990928.seq.gz"
#: Formats whose blank lines are empty sequences: given one of them, a file of blank
#: lines (not one of 0 bytes) is a database of empty sequences, one per line.
BLANK_LINE_FORMATS = ("lines", "spmf")


def demo_path() -> Path:
    """Path of the bundled MSNBC dataset (UCI, CC BY 4.0; see datasets/README.md).

    Returns
    -------
    Path
        The gzip-compressed ``.seq`` file :data:`DEMO_FILE` inside the installed
        package, ready for :func:`load`.
    """
    return Path(str(resources.files("dpgpu") / "datasets" / DEMO_FILE))


def load(path: Any, format: str | None = None, *, vocab: Any = None,
         **options: Any) -> SequenceDB:
    """Read a sequence dataset.

    Parameters
    ----------
    path : str or path-like
        The file (optionally gzip-compressed).  It is only read.
    format : str, optional
        One of :data:`FORMATS`; detected from the content when omitted
        (``text-csv``, ``text-parquet``, ``wide``, ``trajectory`` and
        ``column`` are never detected).
    vocab : Vocabulary, path-like or sequence of str, optional
        The public item universe (:func:`dpgpu.data.public_vocab.public_vocabulary`:
        a file with one label per line, or the labels).  Every item of the
        file must be in it; ids follow its order.  SPMF items named by
        ``@ITEM=id=name`` lines are matched by name, and a ``.seq`` header
        must list exactly its labels (:func:`~dpgpu.data.public_vocab.on_vocabulary`).
        Without it the vocabulary is the ``.seq`` header, or else the items
        that occur (then ``vocab.public`` is False and a release that shows
        the vocabulary is not private).
    **options
        Format options: ``tokens`` (lines, column: ``"auto"``, ``"int"``,
        ``"str"``, ``"chars"``: every character but white space an item);
        ``case``, ``activity``, ``timestamp``, ``user``, ``delimiter``
        (csv/parquet column names); ``activity``, ``timestamp`` (xes
        attribute keys); ``user``, ``text``, ``lowercase`` (jsonl/text-csv/
        text-parquet: field or column names, lower-casing); ``states``,
        ``case``, ``delimiter`` (wide: the state columns, ``"FIRST:LAST"`` or
        a list, and the row-id column); ``grid``, ``bounds``, ``case``,
        ``x``, ``y``, ``timestamp``, ``user``, ``outside``, ``repeats``,
        ``delimiter`` (trajectory: ``"NXxNY"`` cells over
        ``"xmin,xmax,ymin,ymax"``, the columns, ``"error"`` or ``"drop"``
        for a point outside the bounds, ``"collapse"`` or ``"keep"`` for
        runs of points in one cell); ``sequence``, ``tokens``, ``case``,
        ``user``, ``delimiter`` (column: the column holding each row's
        sequence, default ``sequence``; how its cell is cut into items, as
        for lines; the row-id and user columns).

    Returns
    -------
    SequenceDB

    Raises
    ------
    InputError
        The file is missing, empty (0 bytes, or only blank lines where the
        format is not given or is not one of :data:`BLANK_LINE_FORMATS`),
        binary, corrupt or malformed (the message names the file and line).
    InvalidParameter
        ``path`` is not a str or path-like (sequences in memory go to
        :meth:`SequenceDB.from_sequences`), an unknown format or an option the
        format does not take.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidParameter(f"path: expected a file path (str or path-like), got "
                               f"{type(path).__name__}; for sequences in memory use "
                               "SequenceDB.from_sequences")
    check_format(format)
    if vocab is not None:
        vocab = public_vocabulary(vocab)
    p = Path(path)
    data = b"" if format == "text-parquet" else read_bytes(p)
    if is_parquet(format, data):
        fmt = format or "parquet"
    else:
        # isspace(), not strip(), which would copy the whole file
        if not data or (data.isspace() and format not in BLANK_LINE_FORMATS):
            hint = ("; to read its blank lines as empty sequences, give the format 'lines' "
                    "(--format lines)") if data and format is None else ""
            raise InputError(f"{p}: empty file (no sequences){hint}")
        fmt = format or detect_format(p, data)
    check_options(fmt, options)
    db = read(fmt, p, data, options)
    if p.suffix.lower() == ".gz":  # synthetic data of it is written compressed too
        db.source["compression"] = "gzip"
    if vocab is not None:
        db = on_vocabulary(db, vocab, str(p))
    log.info("loaded %s as %s: %d sequences, %d items", p, fmt, len(db), db.vocab.size)
    return db


def check_format(format: str | None) -> str | None:
    """Return ``format`` if it is ``None`` or one of :data:`FORMATS`.

    Parameters
    ----------
    format : str or None
        A format name, or ``None`` for "detect it".

    Returns
    -------
    str or None
        ``format`` unchanged.

    Raises
    ------
    InvalidParameter
        ``format`` is not ``None`` and not one of :data:`FORMATS`.
    """
    if format is not None and format not in FORMATS:
        raise InvalidParameter(f"format: unknown format {format!r}; choose one of "
                               f"{', '.join(FORMATS)}")
    return format


def is_parquet(format: str | None, head: bytes) -> bool:
    """Whether a file starting with ``head`` is read as Parquet (asked for, or detected).

    Parameters
    ----------
    format : str or None
        The format asked for, or ``None`` to detect it.
    head : bytes
        The start of the file (its whole contents will do).

    Returns
    -------
    bool
        True if ``format`` is ``parquet`` or ``text-parquet``, or it is ``None``
        and ``head`` starts with Parquet's magic number ``PAR1``.
    """
    return format in ("parquet", "text-parquet") or (format is None and head.startswith(b"PAR1"))


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character that its end cuts in two."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:          # ASCII or the first byte of a character
            size = 1 if byte < 0x80 else 2 if byte >> 5 == 6 else 3 if byte >> 4 == 14 else 4
            return data if size <= back else data[:-back]
    return data


def check_options(fmt: str, options: dict) -> None:
    """Raise InvalidParameter for an option the format ``fmt`` does not take.

    Parameters
    ----------
    fmt : str
        One of :data:`FORMATS`.
    options : dict
        The format options given (names to values); only the names are checked.

    Raises
    ------
    InvalidParameter
        An option ``fmt`` does not take (the first such, in sorted order).
    """
    unknown = set(options) - set(_OPTIONS[fmt])
    if unknown:
        raise InvalidParameter(f"{sorted(unknown)[0]}: not an option of the '{fmt}' format "
                               f"(it takes: {', '.join(_OPTIONS[fmt]) or 'none'})")


#: Bytes of a file's start that :func:`detect_format` looks at.
DETECT_BYTES = 1 << 16


def detect_format(path: Path, data: bytes) -> str:
    """Name of the format of ``data`` (content first, file name as a tie-break).

    Only the first :data:`DETECT_BYTES` are looked at; where that cuts a
    line, the cut line is checked for text up to its last whole character.
    ``data`` may itself be a head of exactly :data:`DETECT_BYTES` (as the
    distributed loader reads), so a head that long is taken as cut.

    Parameters
    ----------
    path : Path
        The file, named in errors; its extension breaks a tie between
        ``jsonl``, ``csv`` and ``lines`` (:func:`extension_format`).
    data : bytes
        The file's contents (decompressed), or at least its first
        :data:`DETECT_BYTES`.

    Returns
    -------
    str
        ``"seq"``, ``"xes"``, ``"spmf"``, ``"jsonl"``, ``"csv"`` or, failing
        all these, ``"lines"``.

    Raises
    ------
    InputError
        The data looks binary (:func:`~dpgpu.data.io.check_not_binary`), or
        the file is named ``.seq`` but does not open with the UCI header.
    """
    head = data[:DETECT_BYTES]
    whole = _whole_characters(head) if len(head) == DETECT_BYTES else head
    check_not_binary(path, head[:head.rfind(b"\n") + 1] or whole)
    if text.looks_like_seq(head):
        return "seq"
    from . import eventlog  # noqa: PLC0415 - event-log support loads on demand

    if eventlog.looks_like_xes(head):
        return "xes"
    if text.looks_like_spmf_file(head):
        return "spmf"
    hint = extension_format(path)[1]
    if hint == "seq":  # read as lines, its header would become sequences of made-up items
        raise InputError(f"{path}: named .seq, but it does not open with the UCI .seq header "
                         "('% Different categories found in input file:'); give the format it "
                         "has (--format / format=, such as lines: one sequence per line)")
    if hint == "jsonl" or head.lstrip().startswith(b"{"):
        return "jsonl"
    if hint == "csv" or eventlog.looks_like_csv_log(head):
        return "csv"
    return "lines"


def extension_format(path: Any) -> tuple[str, str | None]:
    """The extension of ``path`` after any ``.gz`` (lower case, ``""`` if none), and the
    format it names (:data:`EXTENSIONS`; ``None`` if it names none).

    Parameters
    ----------
    path : str or path-like
        A file name; only its name is looked at.

    Returns
    -------
    tuple of (str, str or None)
        The last suffix other than ``.gz``, lower-cased with its dot
        (``".csv"``), or ``""``; and the format :data:`EXTENSIONS` maps it to,
        or ``None``.
    """
    suffixes = [s for s in Path(path).suffixes if s != ".gz"]
    suffix = suffixes[-1].lower() if suffixes else ""
    return suffix, EXTENSIONS.get(suffix)


def regular_file(p: Path, what: str) -> Path:
    """``p``, which must be a regular file (not a pipe or device) to be read by its path.

    Parameters
    ----------
    p : pathlib.Path
        The input file.
    what : str
        Who reads it by path, for the message (``"text-parquet"``).

    Returns
    -------
    pathlib.Path
        ``p``.

    Raises
    ------
    InputError
        When ``p`` cannot be found or is not a regular file.
    """
    with input_errors(p):
        mode = os.stat(p).st_mode
    if not stat.S_ISREG(mode):
        raise InputError(f"{p}: {what} is read by path and this is not a regular file; "
                         "save the data to a file first")
    return p


def read(fmt: str, p: Path, data: bytes, options: dict) -> SequenceDB:
    """Parse ``data``, the contents of ``p``, in the format ``fmt`` (options already checked).

    ``text-parquet`` reads ``p`` itself (a regular file) and ignores ``data``.

    Parameters
    ----------
    fmt : str
        One of :data:`FORMATS` (not ``None``: detected before).
    p : Path
        The file, named in errors (and read by ``text-parquet``).
    data : bytes
        The file's contents, decompressed.
    options : dict
        The format's options (:func:`check_options`), passed on as keywords
        to the format's reader.

    Returns
    -------
    SequenceDB

    Raises
    ------
    InputError
        The contents are malformed for ``fmt`` (or, for ``text-parquet``,
        ``p`` is not a regular file).
    InvalidParameter
        An option value the format's reader does not take.
    """
    if fmt == "seq":
        return text.read_seq(p, data)
    if fmt == "spmf":
        return text.read_spmf(p, data)
    if fmt == "lines":
        return text.read_lines(p, data, **options)
    from . import eventlog, users  # noqa: PLC0415

    if fmt == "jsonl":
        return users.read_jsonl(p, data, **options)
    if fmt == "text-csv":
        return users.read_text_csv(p, data, **options)
    if fmt == "text-parquet":
        return users.read_text_parquet(regular_file(p, "text-parquet"), **options)
    if fmt == "wide":
        from .wide import read_wide  # noqa: PLC0415

        return read_wide(p, data, **options)
    if fmt == "trajectory":
        from .trajectory import read_trajectory  # noqa: PLC0415

        return read_trajectory(p, data, **options)
    if fmt == "column":
        from .column import read_column  # noqa: PLC0415

        return read_column(p, data, **options)
    if fmt == "csv":
        return eventlog.read_csv_log(p, data, **options)
    if fmt == "parquet":
        return eventlog.read_parquet_log(p, data, **options)
    return eventlog.read_xes(p, data, **options)
