"""Write a SequenceDB in the input's own format, SPMF or plain lines.

Synthetic data written in the format it was read from is a drop-in
replacement for the original file.  Every writer goes through
:func:`~dpgpu.data.io.atomic_output`: a failed write leaves nothing behind
and an existing file is only replaced with ``force``.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Iterator, TextIO

from ..errors import InvalidParameter
from .io import atomic_output
from .text import SEQ_DATA_VOCABULARY

log = logging.getLogger("dpgpu")

WRITE_FORMATS = ("seq", "spmf", "lines", "csv", "parquet", "xes")
_INT = re.compile(r"-?\d+$")


def write(db: Any, path: Any, format: str | None = None, *, force: bool = False) -> None:
    """Write ``db`` to ``path`` (see :meth:`SequenceDB.save`)."""
    fmt = format or db.source.get("format") or "lines"
    if fmt not in WRITE_FORMATS:
        raise InvalidParameter(f"format: cannot write {fmt!r}; choose one of "
                               f"{', '.join(WRITE_FORMATS)}")
    from . import eventlog  # noqa: PLC0415

    if fmt == "parquet":
        with atomic_output(path, force=force, binary=True) as stream:
            eventlog.write_parquet_log(db, stream)
        return
    writer = {"seq": write_seq, "spmf": write_spmf, "lines": write_lines,
              "csv": eventlog.write_csv_log, "xes": eventlog.write_xes}[fmt]
    with atomic_output(path, force=force) as stream:
        writer(db, stream)


def _label_rows(db: Any, labels: list[str]) -> Iterator[list[str]]:
    for i in range(len(db)):
        yield [labels[j] for j in db.sequence_ids(i).tolist()]


def write_seq(db: Any, stream: TextIO) -> None:
    """UCI ``.seq``: a header naming the categories, then 1-based category numbers.

    Categories are numbered in vocabulary order; their names are the
    vocabulary's names (from a ``.seq`` input) or else its labels.  A
    vocabulary taken from the data is marked so in the header
    (:data:`dpgpu.data.text.SEQ_DATA_VOCABULARY`).
    """
    names = db.vocab.names or db.vocab.labels
    bad = [n for n in names if not n or any(c.isspace() for c in n)]
    if bad:
        raise InvalidParameter(f"format: category name {bad[0]!r} contains white space, "
                               "which the .seq header cannot hold; write spmf or lines")
    stream.write("% Different categories found in input file:\n\n")
    stream.write(" ".join(names) + "\n\n")
    if not db.vocab.public:  # reading the file back must not make them public
        stream.write(SEQ_DATA_VOCABULARY + "\n")
    stream.write("\n% Sequences:\n\n")
    numbers = [str(i + 1) for i in range(db.vocab.size)]
    for row in _label_rows(db, numbers):
        stream.write("".join(x + " " for x in row) + "\n")


def write_spmf(db: Any, stream: TextIO) -> None:
    """SPMF: ``item -1 item -1 ... -2`` per line (or the stripped variant if read so).

    Integer labels are written as they are; other labels are replaced by
    their id and listed in ``@ITEM=id=label`` lines, as SPMF does for text.
    """
    labels = db.vocab.labels
    if not all(_INT.match(x) and int(x) >= 0 for x in labels):
        stream.write("@CONVERTED_FROM_TEXT\n")
        for i, label in enumerate(labels):
            stream.write(f"@ITEM={i}={label}\n")
        labels = [str(i) for i in range(len(labels))]
    stripped = db.source.get("format") == "spmf" and db.source.get("stripped")
    for row in _label_rows(db, labels):
        if stripped:
            stream.write(" ".join(row) + "\n")
        else:
            stream.write("".join(x + " -1 " for x in row) + "-2\n")


def write_lines(db: Any, stream: TextIO) -> None:
    """One sequence per line, labels separated by single spaces.

    White space inside a label (event-log activities such as ``"Send Fine"``)
    is replaced by ``_`` so that the line splits back into the same items; a
    warning says so.
    """
    labels = db.vocab.labels
    safe = [re.sub(r"\s", "_", x) for x in labels]
    if safe != labels:
        log.warning("lines format: white space in item labels written as '_'")
        if len(set(safe)) != len(safe):
            raise InvalidParameter("format: item labels collide once white space becomes '_'; "
                                   "write spmf, csv or xes instead")
    for row in _label_rows(db, safe):
        stream.write(" ".join(row) + "\n")
