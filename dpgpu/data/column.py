"""Sequences kept whole in one column: a CSV (or Parquet) row per sequence.

A common way to keep sequences in a table: a peptide or a DNA read per row
(``GLWSKIKEVGKEAAKAAAKAAGKAALGAVSEAV,1``), a click path per session
(``session_id,path`` with ``path`` = ``home news sports``), beside other
columns (ids, labels, covariates) that are not part of the sequence.

Reading (``format="column"``, never detected) gives one sequence per data
row: the items of the cell in its *sequence column* (option ``sequence``;
by default the column named ``sequence``, compared without case, spaces,
``_`` and ``-``).  A cell's items are those the ``lines`` format takes from
a line (option ``tokens``, :data:`~dpgpu.data.text.LINE_TOKENS`): ``"str"``
splits the cell on white space, ``"int"`` does too and requires integers
(labelled as they print: ``007`` is ``7``), ``"auto"`` (the default) is
``"int"`` when every item of the file is an integer written as it prints
(:func:`~dpgpu.data.text.is_canonical_int`: no ``007``, no ``-0``) and
``"str"`` otherwise, so that every item keeps its text whatever the other
rows hold, and ``"chars"`` makes every character but white space an item
(amino acids, nucleotides).  An empty or blank cell is an empty sequence.  The vocabulary
is the items that occur, sorted (numerically when all are integers), so it
is not public.

``case`` names a column of row ids, kept as the sequences' names
(``source["cases"]``); ``user`` a column of user ids, for user-level data
(several rows per user; users are numbered in order of first appearance,
their labels in ``source["user_labels"]``).  Ids are stripped of white space
at their ends; they must not be empty, and row ids must be distinct.  No
other column is read.

CSV: a header row of column names, then the rows; the delimiter is the most
frequent of ``, TAB ; |`` in the header unless given; a quoted cell may hold
the delimiter and line breaks, and be of any length (a genome); blank lines
are left out.  A row may have fewer fields than the header as long as it has
the columns read: the fields it lacks are of columns that are not read (so a
file whose first line is no true header, such as modlAMP's
``5200,1,UniProt,AMP`` above rows of two fields, reads with
``sequence="5200"``).  A row without a field for a column
read is an error naming its line, and so is a row with more fields than the
header (a cell that holds the delimiter unquoted would be read cut).
Parquet (needs pyarrow): the columns read must hold text (numbers are read
as text); a null sequence is an empty one, a null id is an empty id.

Writing gives the same shape, as CSV: the row-id column (the input's
``case`` column: none where the input had none; ``id`` for data from other
formats), the sequence column (the input's name, else ``sequence``) and,
for user-level data, the user column (the input's name, else ``user``).
Rows are named by the input's case names, else ``case-1``, ``case-2``, ...;
a sequence's items are joined by a space, or not separated for data read a
character at a time (``tokens="chars"``, from this or the ``lines``
format), and an empty sequence is an empty cell.  Other columns are not
written.  A ``.csv`` file is comma-separated, a ``.tsv`` one tab-separated,
any other delimited as the input (a column or CSV file).  Read back with the
same ``sequence``, ``tokens``, ``case`` and ``user`` options, the file gives
the same sequences; a label that a cell cannot hold so (empty, with white
space, not one character where the items are characters) is refused
(:func:`dpgpu.data.writers.check_writable`).
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Callable, TextIO

import numpy as np

from ..errors import InputError
from ..validation import check_choice
from .eventlog import (PARQUET_HINT, EventNames, check_delimiter, check_option, csv_layout,
                       csv_line, csv_row_blocks, parquet_row, parquet_text, pick_column,
                       table_writer)
from .reading import (csv_fields_up_to, distinct_values, encode_values, gc_paused, numbering,
                      optional_pyarrow)
from .sequencedb import SequenceDB, concat_ranges, sort_labels
from .text import LINE_TOKENS, is_canonical_int
from .vocabulary import Vocabulary
from .writers import INT_TOKEN

#: The columns a column file may have read, by role (each role is also its option's name).
ROLES = ("sequence", "case", "user")
#: Parquet rows turned into Python strings at a time.
_BLOCK_ROWS = 1 << 16

#: Cells as read: for each role, the distinct texts in order of first appearance and
#: each row's index among them.
Cells = dict[str, tuple[list[str], np.ndarray]]


def read_column(path: Any, data: bytes, *, sequence: str | None = None, tokens: str = "auto",
                case: str | None = None, user: str | None = None,
                delimiter: str | None = None) -> SequenceDB:
    """Read a table with a whole sequence in one column of each row (module docstring).

    Parameters
    ----------
    path : path-like
        The file, named in messages and in ``source``.
    data : bytes
        What it holds, decompressed: CSV text or a Parquet file.
    sequence : str, optional
        The column holding the sequences; by default the one named
        ``sequence`` (any case, without spaces, ``_`` or ``-``).
    tokens : {"auto", "int", "str", "chars"}
        How a cell is cut into items, as for the ``lines`` format.
    case : str, optional
        Column of row ids (the sequences' names; distinct).
    user : str, optional
        Column of user ids, for user-level data (several rows per user).
    delimiter : str, optional
        CSV: one character (a tab also as ``\\t`` or ``tab``); by default
        the most frequent of ``, TAB ; |`` in the header row.

    Returns
    -------
    SequenceDB
        One sequence per data row, in file order.  ``source`` has the
        format, the columns (``{"sequence": ..., "case": ..., "user": ...}``),
        the kind of token read (``"int"``, ``"str"`` or ``"chars"``), the
        (CSV) delimiter and, with ``case`` and ``user``, the row ids
        (``cases``) and the user labels (``user_labels``).

    Raises
    ------
    InvalidParameter
        A ``tokens`` not in :data:`~dpgpu.data.text.LINE_TOKENS`, a column
        option that is not a non-empty string, a bad ``delimiter``.
    InputError
        No sequence column, or no column of the name given (the message
        names the option and lists the columns); a CSV row without a field
        for a column read or with more fields than the header; a Parquet
        column that does not hold text; an empty row or user id, a repeated
        row id; with ``tokens="int"``, an item that is not an integer.
        Messages name the file and the line (CSV) or row (Parquet).
    """
    tokens = check_choice(tokens, "tokens", LINE_TOKENS)
    options = {role: check_option(value, role)
               for role, value in zip(ROLES, (sequence, case, user))}
    delimiter = check_delimiter(delimiter)

    def pick(header: list[str]) -> dict[str, str | None]:
        return {role: pick_column(path, header, role, options[role], required=role == "sequence",
                                  candidates=("sequence",) if role == "sequence" else ())
                for role in ROLES}

    # a cell may pass the csv module's 128 KiB (a genome); messages read the rows again
    with csv_fields_up_to(len(data)):
        if data.startswith(b"PAR1"):
            columns, cells, where = _parquet_cells(path, data, pick)
        else:
            columns, cells, where, delimiter = _csv_cells(path, data, delimiter, pick)
        with gc_paused():  # a list of items per distinct cell
            items, lengths, vocab, kind = _items(path, where, columns["sequence"],
                                                 cells["sequence"], tokens)
        source: dict[str, Any] = {"path": str(path), "format": "column", "columns": columns,
                                  "tokens": kind}
        if delimiter is not None:
            source["delimiter"] = delimiter
        users = None
        if columns["case"] is not None:
            source["cases"] = _ids(path, where, "row id", columns["case"], cells["case"],
                                   distinct=True)[0]
        if columns["user"] is not None:
            source["user_labels"], users = _ids(path, where, "user", columns["user"],
                                                cells["user"], distinct=False)
    offsets = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return SequenceDB(items, offsets, vocab, users=users, source=source)


def _csv_cells(path: Any, data: bytes, delimiter: str | None,
               pick: Callable[[list[str]], dict[str, str | None]],
               ) -> tuple[dict[str, str | None], Cells, Callable[[int], str], str]:
    """The columns ``pick`` chooses from a CSV table, their cells, where a row is, the delimiter.

    Raises
    ------
    InputError
        Not UTF-8 text, no header, ``pick``'s error, a malformed line, a
        row without a field for a column read or with more fields than the
        header.
    """
    start, delimiter = csv_layout(path, data, delimiter, "a column file")

    def where(i: int) -> str:
        return f"line {csv_line(data, start, delimiter, i)}"

    blocks = csv_row_blocks(path, data, start, delimiter)
    header = [h.strip() for h in next(blocks)[0]]
    columns = pick(header)
    fields = {role: header.index(name) for role, name in columns.items() if name is not None}
    least = max(fields.values()) + 1  # the fields a row needs
    coded: dict[str, tuple[dict, list[np.ndarray]]] = {role: (numbering(), []) for role in fields}
    n_rows = 0
    with gc_paused():  # the rows are many short-lived lists
        for rows in blocks:
            widths = set(map(len, rows))
            if min(widths, default=least) < least or max(widths, default=0) > len(header):
                k = next(k for k, row in enumerate(rows) if not least <= len(row) <= len(header))
                raise InputError(f"{path}: {where(n_rows + k)}: "
                                 f"{_width_problem(len(rows[k]), header, columns, delimiter)}")
            for role, i in fields.items():
                table, codes = coded[role]
                codes.append(encode_values([row[i] for row in rows], table))
            n_rows += len(rows)
    return columns, {role: (list(table), np.concatenate(codes) if codes else
                            np.zeros(0, dtype=np.int64))
                     for role, (table, codes) in coded.items()}, where, delimiter


def _width_problem(width: int, header: list[str], columns: dict[str, str | None],
                   delimiter: str) -> str:
    """Why a CSV row of ``width`` fields cannot be read: it lacks a column read, or has
    more fields than the header."""
    if width > len(header):
        return (f"{width} fields, but the header has {len(header)} (a cell that holds the "
                f"delimiter {delimiter!r} must be quoted)")
    role, name = next((role, name) for role, name in columns.items()
                      if name is not None and header.index(name) >= width)
    return (f"{width} fields: no field for the {role} column {name!r} (field "
            f"{header.index(name) + 1} of the header's {len(header)})")


def _parquet_cells(path: Any, data: bytes, pick: Callable[[list[str]], dict[str, str | None]],
                   ) -> tuple[dict[str, str | None], Cells, Callable[[int], str]]:
    """The columns ``pick`` chooses from a Parquet table, their cells, where a row is.

    A null cell reads as an empty string.

    Raises
    ------
    InputError
        pyarrow is missing, the file is not Parquet, ``pick``'s error, a
        column read that does not hold text or numbers or holds bytes that
        are not UTF-8 (:func:`~dpgpu.data.eventlog.parquet_text`).
    """
    pa, pq = optional_pyarrow()
    if pa is None:
        raise InputError(f"{path}: reading Parquet needs pyarrow: {PARQUET_HINT}")
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data))
        columns = pick(parquet.schema_arrow.names)
        names = {role: name for role, name in columns.items() if name is not None}
        table = parquet.read(columns=list(dict.fromkeys(names.values())))
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    cells: Cells = {}
    for role, name in names.items():
        texts = parquet_text(pa, path, name, role, "a column file", table.column(name))
        values = numbering()
        codes = [encode_values(["" if v is None else v for v in
                                texts.slice(lo, _BLOCK_ROWS).to_pylist()], values)
                 for lo in range(0, len(texts), _BLOCK_ROWS)]
        cells[role] = (list(values), np.concatenate(codes) if codes else
                       np.zeros(0, dtype=np.int64))
    return columns, cells, parquet_row


def _items(path: Any, where: Callable[[int], str], column: str,
           cells: tuple[list[str], np.ndarray],
           tokens: str) -> tuple[np.ndarray, np.ndarray, Vocabulary, str]:
    """The items of every row's sequence cell, cut as ``tokens`` asks.

    Each distinct cell is cut once.

    Returns
    -------
    items : numpy.ndarray of int32
        The rows' items, one after another.
    lengths : numpy.ndarray of int64
        Items of each row.
    vocab : Vocabulary
        The items that occur, sorted (not public).
    kind : str
        ``"int"``, ``"str"`` or ``"chars"``: how the items were read.

    Raises
    ------
    InputError
        With ``tokens="int"``, an item that is not an integer (naming the
        first row that holds one).
    """
    texts, rows = cells
    cut = _characters if tokens == "chars" else str.split
    table = numbering()  # item text -> code, in order of first appearance
    pieces = [cut(text) for text in texts]
    counts = np.fromiter(map(len, pieces), dtype=np.int64, count=len(pieces))
    codes = encode_values(list(chain.from_iterable(pieces)), table)
    words, kind = list(table), "chars" if tokens == "chars" else "str"
    if tokens == "auto" and all(map(is_canonical_int, words)):
        kind = "int"  # every word is its number as it prints: the labels are the words
    elif tokens == "int":
        bad = next((k for k, word in enumerate(words) if not INT_TOKEN.fullmatch(word)), None)
        if bad is None:
            words, kind = [str(int(word)) for word in words], "int"
        else:  # the first distinct cell that holds it is on the first such row
            cell = int(np.searchsorted(np.cumsum(counts), np.argmax(codes == bad), side="right"))
            raise InputError(f"{path}: {where(int(np.argmax(rows == cell)))}: column "
                             f"{column!r}: {words[bad]!r} is not an integer (tokens int)")
    vocab = Vocabulary(sort_labels(set(words)), public=False)
    ids = vocab.encode(words, name=column, markers=())[codes]
    lengths = counts[rows]
    return ids[concat_ranges((np.cumsum(counts) - counts)[rows], lengths)], lengths, vocab, kind


def _characters(text: str) -> list[str]:
    """Every character of ``text`` but white space."""
    return list("".join(text.split()))


def _ids(path: Any, where: Callable[[int], str], what: str, column: str,
         cells: tuple[list[str], np.ndarray], *, distinct: bool) -> tuple[list[str], np.ndarray]:
    """The ids of a row-id or user column, stripped: the distinct ids in order of first
    appearance and each row's index among them.

    Raises
    ------
    InputError
        An empty id, or (``distinct``) an id on two rows, naming the row.
    """
    texts, rows = cells
    labels, index = distinct_values([text.strip() for text in texts])
    rows = index[rows]
    if "" in labels:
        first = int(np.argmax(rows == labels.index("")))
        raise InputError(f"{path}: {where(first)}: empty {what} (column {column!r})")
    if distinct and len(labels) < rows.size:  # ids are numbered as they first come
        again = int(np.argmax(rows[1:] <= np.maximum.accumulate(rows)[:-1])) + 1
        first = int(np.argmax(rows == rows[again]))
        raise InputError(f"{path}: {where(again)}: {what} {labels[rows[again]]!r} (column "
                         f"{column!r}) already on {where(first)}; each row is one sequence "
                         "and needs its own id")
    return labels, rows


# ------------------------------------------------------------------ writing
def output_columns(db: SequenceDB) -> tuple[str | None, str, str | None]:
    """The row-id, sequence and user column names a column file of ``db`` gets.

    The input's, when it was a column file (no row-id column where it had
    none); else ``id`` and ``sequence``.  The user column only for
    user-level data: the input's, else ``user``.

    Parameters
    ----------
    db : SequenceDB
        The database to write; its ``source`` names the input's columns.

    Returns
    -------
    tuple of (str or None, str, str or None)
        The row-id column (None: none), the sequence column and the user
        column (None: ``db`` has no users).
    """
    columns = db.source.get("columns") if db.source.get("format") == "column" else None
    case, sequence, user = (columns["case"], columns["sequence"], columns.get("user")) \
        if columns else ("id", "sequence", None)
    return case, sequence, None if db.users is None else user or "user"


class ColumnSink:
    """Writes a column file (CSV, a row per sequence), a part of the database at a time.

    Parameters
    ----------
    db : SequenceDB
        The whole database, or its first part: it decides the columns
        (:func:`output_columns`) and how rows and users are named
        (:class:`~dpgpu.data.eventlog.EventNames`).
    stream : text stream
    sep : str
        Written between the items of a sequence: ``" "``, or ``""`` for
        items read a character at a time.
    delimiter : str, optional
        Default: the input's (a column or CSV file), else ``,``.
    """

    def __init__(self, db: SequenceDB, stream: TextIO, *, sep: str = " ",
                 delimiter: str | None = None) -> None:
        self.header = output_columns(db)
        case, _, user = self.header
        self.names, self.sep = EventNames(db), sep
        self.labels = np.array(db.vocab.labels, dtype=object)
        self.writer = table_writer(stream, db, delimiter, "column", (
            self.names.cases(db, 0) if case is not None and self.names.input_cases else (),
            db.vocab.labels, self.names.users(db) if user is not None else ()))
        self.writer.writerow([name for name in self.header if name is not None])

    def write(self, part: SequenceDB, first: int) -> None:
        """Write the rows of ``part`` (``first``: sequences written before it).

        Parameters
        ----------
        part : SequenceDB
            The next sequences of the database, in its vocabulary.
        first : int
            How many sequences were written before ``part``: generated row
            ids (``case-1``, ``case-2``, ...) number on from there.
        """
        labels = self.labels[part.items].tolist()
        bounds = part.offsets.tolist()
        case, _, user = self.header
        columns = [self.names.cases(part, first)] if case is not None else []
        columns.append([self.sep.join(labels[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:])])
        if user is not None:
            columns.append(self.names.users(part))
        self.writer.writerows(zip(*columns))

    def close(self) -> None:
        """Nothing to end: the rows are complete."""
