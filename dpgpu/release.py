"""Release directories: staged, then renamed into place whole.

A mechanism run writes one directory: ``report.json`` (mechanism, public
parameters, epsilon/delta, ledger steps, backend, device, version, seeded or
not), its release files (``ngrams.tsv``, ``pst.json``, ``frequent.tsv``,
...), where it makes one the synthetic dataset, and ``diagnostics.json``.
The run's wall-clock timings go to ``diagnostics.json``, not to the report:
they grow with the size of the data, which a release must not show (DESIGN:
diagnostics with exact values go to a separate file that says it is not
private), so that file says ``"private": false`` and is not one of the
release's ``files``; publish the directory without it.  Files
are written into a hidden staging directory beside the target, which is
renamed to the target only when the whole release is complete, so a failed
run leaves nothing half-written (a folder that cannot be written or a full
disk is an InputError naming the release directory).  An existing target is
replaced only with ``force``, and only when it is a release directory (it
holds ``report.json``) that holds none of the run's inputs
(:func:`check_release_target`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence
from urllib.parse import quote

import numpy as np

from . import __version__
from .backend import to_numpy
from .data.io import OutputError, check_output, current_umask, output_error, output_errors
from .errors import InputError, InvalidParameter
from .validation import check_bool

log = logging.getLogger("dpgpu")

REPORT = "report.json"
#: The run's diagnostics (timings): not private, not part of the release.
DIAGNOSTICS = "diagnostics.json"
DIAGNOSTICS_NOTE = ("Not private: wall-clock timings of the run grow with the size of the data. "
                    "This file is not part of the release; do not publish it.")
#: File name extensions of synthetic data, by format (default: the format's name).
_EXTENSIONS = {"lines": "txt", "spmf": "txt", "wide": "csv", "trajectory": "csv", "column": "csv"}
#: Synthetic sentences of a user-level text input are written one per line.
_SYNTHETIC_FORMATS = {"jsonl": "lines", "text-csv": "lines", "text-parquet": "lines"}
#: Tried in order when the input's format cannot hold every generated label.
_FALLBACK_FORMATS = ("spmf", "lines", "csv", "xes", "seq", "parquet")


#: How an item label that is exactly a marker's name is written in release files.
_MARKER_LIKE = {"&": "%26", "$": "%24"}
#: Characters a release file %-encodes in a label (as the UTF-8 bytes of each): ``%``, white
#: space and control characters; the rest, non-ASCII text included, is written as it is.
_ENCODED = re.compile(r"[%\s\x00-\x1f\x7f-\x9f]")
#: Rows of a table that :meth:`ReleaseWriter.write_columns` turns into text at once.
_CHUNK_ROWS = 1 << 18


def encode_gram(labels: Sequence[str]) -> str:
    """A gram of items as release files write it: labels joined by single spaces.

    In a label, ``%``, white space and control characters are %-encoded
    (``Send Fine`` becomes ``Send%20Fine``; other text, accents and
    ideographs included, is kept), so the text splits back into the same
    labels and reads with :func:`urllib.parse.unquote`; so is a
    label that is exactly a marker's name (``&`` becomes ``%26``, ``$``
    ``%24``), so that a bare ``&`` or ``$`` is always a marker
    (:func:`encode_ids`).  :func:`dpgpu.eval.truth.parse_gram` reads it.

    Parameters
    ----------
    labels : sequence of str
        The item labels of the gram, in order (no markers).

    Returns
    -------
    str
        The encoded labels joined by single spaces (``""`` for no labels).
    """
    return " ".join(_encode_label(x) for x in labels)


def encode_ids(vocab: Any, ids: Iterable[int]) -> str:
    """A gram of symbol ids (items and the markers ``&``, ``$``) as release files write it.

    Items as :func:`encode_gram` writes them, markers as ``&`` and ``$``.

    Parameters
    ----------
    vocab : Vocabulary
        The vocabulary the ids index.
    ids : iterable of int
        Item ids (``0 .. vocab.size-1``), ``vocab.end_id`` or ``vocab.start_id``.

    Returns
    -------
    str
        The encoded symbols joined by single spaces.
    """
    return " ".join(_encode_symbol(vocab, i) for i in map(int, ids))


def encode_id_grams(vocab: Any, grams: Any) -> np.ndarray:
    """Many grams of symbol ids as release files write them (:func:`encode_ids`), at once.

    Each distinct symbol is encoded once; the texts of grams of one length
    are then joined column by column with NumPy.

    Parameters
    ----------
    vocab : Vocabulary
    grams : array_like of int or sequence of sequences of int
        An ``(n, k)`` array of ids (one gram per row; NumPy or CuPy), or
        ``n`` grams of any lengths.

    Returns
    -------
    numpy.ndarray of object
        ``n`` strings: ``encode_ids(vocab, gram)`` for each gram, in order.

    Examples
    --------
    >>> from dpgpu import Vocabulary
    >>> vocab = Vocabulary(["Send Fine", "&", "b"])
    >>> encode_id_grams(vocab, [[0, 3], [1, 2, 4]]).tolist()
    ['Send%20Fine &', '%26 b $']
    """
    if hasattr(grams, "__cuda_array_interface__"):  # a CuPy array: one copy to the host
        grams = to_numpy(grams)
    if not (isinstance(grams, np.ndarray) and grams.ndim == 2):
        grams = [tuple(map(int, g)) for g in grams]
        lengths = np.array([len(g) for g in grams], dtype=np.int64)
        out = np.empty(len(grams), dtype=object)
        for k in np.unique(lengths).tolist():  # one array of grams per length
            rows = np.flatnonzero(lengths == k)
            same = np.array([grams[r] for r in rows.tolist()], dtype=np.int64)
            out[rows] = encode_id_grams(vocab, same.reshape(rows.size, k))
        return out
    if grams.shape[1] == 0:
        return np.full(grams.shape[0], "", dtype=object)
    symbols = np.empty(vocab.size + 2, dtype=object)
    used = np.unique(grams).tolist()
    symbols[used] = [_encode_symbol(vocab, i) for i in used]
    text = symbols[grams[:, 0]]
    for j in range(1, grams.shape[1]):
        text = text + " " + symbols[grams[:, j]]
    return text


def _encode_symbol(vocab: Any, ident: int) -> str:
    return _encode_label(vocab.labels[ident]) if ident < vocab.size else vocab.label_of(ident)


def _encode_label(label: str) -> str:
    text = _ENCODED.sub(lambda m: quote(m.group(0), safe=""), label)
    return _MARKER_LIKE.get(text, text)


def _text_column(values: Any) -> np.ndarray:
    """``values`` as an object array of ``str`` (as ``str`` writes each value)."""
    values = values.tolist() if isinstance(values, np.ndarray) else values
    return np.array(list(map(str, values)), dtype=object)


def vocabulary_fingerprint(vocab: Any) -> str:
    """SHA-256 of the vocabulary's labels in id order (identifies the item universe).

    Parameters
    ----------
    vocab : Vocabulary

    Returns
    -------
    str
        The hex digest of the labels' UTF-8 bytes, each followed by a NUL byte.
    """
    h = hashlib.sha256()
    for label in vocab.labels:
        h.update(label.encode("utf-8") + b"\x00")
    return h.hexdigest()


def vocabulary_facts(vocab: Any, *, shown: bool = False) -> dict:
    """What a report says of the item universe.

    A public vocabulary (:attr:`dpgpu.Vocabulary.public`) is described by its
    size and :func:`vocabulary_fingerprint`.  One made of the items that
    occur in the data only by ``{"public": false}``, since its size and its
    fingerprint are exact statistics of the data -- unless the release shows
    the vocabulary anyway (``shown``; it is then not private, see
    :func:`add_vocabulary`).

    Parameters
    ----------
    vocab : Vocabulary
        The release's item universe.
    shown : bool
        Whether the release shows every item (size and fingerprint are then
        given even for a vocabulary taken from the data).

    Returns
    -------
    dict
        ``{"public": False}``, or ``{"public": vocab.public, "size": ...,
        "sha256": ...}`` (:func:`vocabulary_fingerprint`).
    """
    if not (vocab.public or shown):
        return {"public": False}
    return {"public": vocab.public, "size": vocab.size, "sha256": vocabulary_fingerprint(vocab)}


#: Why a release that shows a vocabulary taken from the data is not private.
DATA_VOCABULARY_WARNING = (
    "the item vocabulary is the set of items that occur in the data, and this release shows "
    "it (every item's label, and their number): it is NOT differentially private; pass the "
    "public list of items (--vocab FILE, or vocab= to dpgpu.load)")


def add_vocabulary(report: dict, vocab: Any) -> dict:
    """Add the ``vocabulary`` entry of a release that shows every item of ``vocab``.

    N-gram, PST and PFS² release a noisy count for every item, under its
    label, and calibrate noise from the number of items.  With a vocabulary
    taken from the data that is not differentially private (a neighbouring
    dataset with one more distinct item has one more label), so the report
    is marked ``"private": false`` with epsilon infinite, delta 1 and a
    warning, as the non-private baselines are, and the warning is logged.

    Parameters
    ----------
    report : dict
        The release's report, to update.
    vocab : Vocabulary
        The vocabulary whose every item the release shows.

    Returns
    -------
    dict
        ``report``, updated in place.
    """
    report["vocabulary"] = vocabulary_facts(vocab, shown=True)
    if not vocab.public:
        report.update(private=False, epsilon=math.inf, delta=1.0)
        report["warning"] = "; ".join(w for w in (report.get("warning"), DATA_VOCABULARY_WARNING)
                                      if w)
        log.warning("%s", DATA_VOCABULARY_WARNING)
    return report


def names_users(db: Any) -> bool:
    """Whether the input names users (``--user``, the text formats).

    Parameters
    ----------
    db : SequenceDB or any
        Its ``has_users`` where it has that attribute (distributed data),
        else whether its ``users`` is not None.

    Returns
    -------
    bool
    """
    has_users = getattr(db, "has_users", None)
    return bool(getattr(db, "users", None) is not None if has_users is None else has_users)


def note_users(report: dict, db: Any) -> dict:
    """Say in ``report`` (and the log) that a sequence-level release ignores the data's users.

    N-gram, PST and PFS² protect one sequence.  When the data names users
    (``--user``, text formats), a user with ``k`` sequences is protected at
    ``k`` times epsilon; DPNE is the mechanism with user-level privacy.

    Parameters
    ----------
    report : dict
        The release's report, to update.
    db : SequenceDB or any
        The input data; it names users when its ``has_users`` is true or,
        lacking that attribute, its ``users`` is not None.

    Returns
    -------
    dict
        ``report``, updated in place.
        With users, its ``privacy_unit`` is set to :data:`USERS_IGNORED`;
        otherwise it is unchanged.
    """
    if names_users(db):
        report["privacy_unit"] = USERS_IGNORED
        log.warning("%s", USERS_IGNORED)
    return report


#: Why a sequence-level release on data with users protects a user less.
USERS_IGNORED = ("one sequence: the data names users, but this mechanism protects each "
                 "sequence, so a user with k sequences is protected at k * epsilon (DPNE "
                 "protects users)")


def check_release_target(out_dir: Any, *, force: bool = False,
                         inputs: Iterable[Any] = ()) -> Path:
    """Check that the release directory ``out_dir`` may be written, before the run.

    A new directory may be written; an existing one is replaced only with
    ``force``, and only when it is a dpgpu release (it holds ``report.json``)
    and holds none of ``inputs`` (:func:`dpgpu.data.io.check_output`).

    Parameters
    ----------
    out_dir : str or path-like
        The release directory.
    force : bool
        Whether an existing release may be replaced.
    inputs : iterable of path-like
        The files the run reads.

    Returns
    -------
    pathlib.Path
        ``out_dir``, absolute, its folder resolved.

    Raises
    ------
    InputError
        When ``out_dir`` may not be written (the message names it and says why).
    """
    return check_output(out_dir, force=force, release=REPORT, inputs=inputs)


class ReleaseWriter:
    """Collects the files of one release and publishes them atomically.

    Parameters
    ----------
    out_dir : str or path-like
        The release directory to create.
    force : bool
        Replace an existing release directory (:func:`check_release_target`).
    inputs : iterable of path-like
        The files the run reads, which the release may neither be nor hold.
    progress : callable, optional
        Called with a message (``"writing ngrams.tsv: 910130 rows"``) before
        each release file is written; a mechanism passes its own, as it does
        to the mechanism's run.  Default: logged at INFO level (``dpgpu -v``
        prints it).

    Raises
    ------
    InputError
        ``out_dir`` may not be written (:func:`check_release_target`), or the
        file system fails to write the release, here or in the ``with``
        block (a folder that cannot be written, a full disk): the staging
        directory is removed and an existing release is left as it was.

    Examples
    --------
    >>> with ReleaseWriter(out) as rel:            # doctest: +SKIP
    ...     rel.write_columns("ngrams.tsv", ["gram", "count"], [grams, counts])
    ...     rel.finish({"mechanism": "ngram", ...})
    """

    def __init__(self, out_dir: Any, *, force: bool = False, inputs: Iterable[Any] = (),
                 progress: Callable[[str], None] | None = None):
        self.out_dir = out_dir
        self.inputs = tuple(inputs)
        self.force = check_bool(force, "force")
        self.target = check_release_target(out_dir, force=self.force, inputs=self.inputs)
        self.progress = progress or (lambda msg: log.info("release: %s", msg))
        with output_errors(out_dir):
            self.staging = Path(tempfile.mkdtemp(prefix=f".{self.target.name}.",
                                                 suffix=".part", dir=self.target.parent))
        os.chmod(self.staging, 0o777 & ~current_umask())
        self.files: list[str] = []
        self.done = False

    def __enter__(self) -> "ReleaseWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        """Remove the staging directory of a release not finished; a failure of the file
        system to write the release (an OSError) becomes an InputError naming it."""
        if not self.done:
            shutil.rmtree(self.staging, ignore_errors=True)
            if isinstance(exc, OSError):
                raise output_error(self.out_dir, exc) from None

    def path(self, name: str) -> Path:
        """Path of release file ``name`` inside the staging directory.

        The name is recorded as one of the release's ``files``.

        Parameters
        ----------
        name : str
            A plain file name: no ``/``, not empty, ``.``, ``..``, :data:`REPORT`
            or :data:`DIAGNOSTICS`.

        Returns
        -------
        Path
            Where to write the file (it is not created).

        Raises
        ------
        ValueError
            A bad file name.
        """
        if "/" in name or name in ("", ".", "..", REPORT, DIAGNOSTICS):
            raise ValueError(f"bad release file name {name!r}")
        self.files.append(name)
        return self.staging / name

    def write_columns(self, name: str, header: Sequence[str], columns: Sequence[Any]) -> None:
        """Write a tab-separated file with a header line, from its columns.

        Lines are built a chunk of rows at a time by joining whole columns
        with NumPy, so a table of millions of rows is written in seconds.

        Parameters
        ----------
        name : str
            The release file.
        header : sequence of str
            The column names.
        columns : sequence of array_like
            One per header name, all of one length: the values of each row,
            written as ``str`` writes them (format numbers beforehand to
            write them otherwise).
        """
        texts = [_text_column(c) for c in columns]
        n = len(texts[0]) if texts else 0
        self.progress(f"writing {name}: {n} rows")
        with open(self.path(name), "w", encoding="utf-8", newline="\n") as f:
            f.write("\t".join(header) + "\n")
            for start in range(0, n, _CHUNK_ROWS):
                line = texts[0][start:start + _CHUNK_ROWS]
                for column in texts[1:]:
                    line = line + "\t" + column[start:start + _CHUNK_ROWS]
                f.write("\n".join(line.tolist()) + "\n")

    def write_synthetic(self, db: Any) -> tuple[str, str]:
        """Write a synthetic database as ``synthetic.<ext>``; return the name and the format.

        The format is the input's own (sentences of a user-level text input:
        ``lines``), unless it cannot hold a generated label (a label of a
        public vocabulary with a space, for a ``lines`` input): then SPMF, or
        the first other format that can, with a warning that says why, so a
        finished release is not lost at its last step.  The other formats are
        checked (:func:`dpgpu.data.writers.label_problem`) only then: checking
        the event-log formats means building every sequence's case name.  A
        CSV table is delimited as its input was (:func:`synthetic_file`).

        Parameters
        ----------
        db : SequenceDB
            The synthetic database; ``db.source["format"]`` (default
            ``lines``) is its input's format.

        Returns
        -------
        name : str
            The release file (:func:`synthetic_file`).
        format : str
            The format it is written in.

        Raises
        ------
        OSError
            The file system fails to write it (a full disk): the writer's
            :class:`~dpgpu.data.io.OutputError` naming the staging file is
            turned back into its OSError, which :meth:`__exit__` reports
            naming the release directory, as for every other release file.
        """
        from .data.writers import WRITE_FORMATS, label_problem, write  # noqa: PLC0415

        fmt = synthetic_format(db.source.get("format", "lines"))
        problem = label_problem(db, fmt) if fmt in WRITE_FORMATS else "dpgpu does not write it"
        if problem is not None:
            fallback = next((f for f in _FALLBACK_FORMATS if label_problem(db, f) is None), None)
            if fallback is not None:
                log.warning("synthetic data: %s cannot hold it (%s); written as %s instead",
                            fmt, problem, fallback)
                fmt = fallback
        name, delimiter = synthetic_file(db, fmt)
        self.progress(f"writing {name}: {len(db)} sequences")
        try:
            write(db, self.path(name), format=fmt, force=True, delimiter=delimiter)
        except OutputError as exc:
            raise exc.cause from None  # named as the release's by __exit__, not the staging's
        return name, fmt

    def synthetic_entries(self, db: Any) -> dict:
        """Write ``db`` as the release's synthetic data (:meth:`write_synthetic`); return the
        report entries that say where it is and how to read it back.

        Parameters
        ----------
        db : SequenceDB
            The synthetic database.

        Returns
        -------
        dict
            ``synthetic_file`` (its name), ``synthetic_format`` and
            ``synthetic_options`` (:func:`synthetic_reader_options`), for the
            report: :func:`read_synthetic` reads the file with them.
        """
        name, fmt = self.write_synthetic(db)
        return {"synthetic_file": name, "synthetic_format": fmt,
                "synthetic_options": synthetic_reader_options(db, fmt)}

    def write_json(self, name: str, obj: Any, *, items: tuple[str, Iterable] | None = None
                   ) -> None:
        """Write ``obj`` as indented JSON.

        With ``items = (key, iterable)``, ``obj[key]`` is the list of the
        iterable's items, written one at a time, each on one line: a list
        too large to hold as Python objects is never built.

        Parameters
        ----------
        name : str
            The release file (:meth:`path`).
        obj : any
            The value to write, made JSON-ready (:func:`json_ready`: no
            infinite or NaN floats); a dict when ``items`` is given.
        items : tuple of (str, iterable), optional
            A key of ``obj``'s, not already in it, and the items of its list,
            written after the rest of ``obj``.
        """
        self.progress(f"writing {name}")
        with open(self.path(name), "w", encoding="utf-8") as f:
            if items is None:
                dump_json(obj, f)
                return
            key, values = items
            head = json.dumps(json_ready({**obj, key: []}), indent=2, allow_nan=False)
            f.write(head[:head.rindex("[")] + "[")
            for i, value in enumerate(values):
                f.write(("," if i else "") + "\n    " + json.dumps(json_ready(value),
                                                              allow_nan=False))
            f.write("\n  ]\n}\n")

    def finish(self, report: dict) -> Path:
        """Write ``report.json`` and ``diagnostics.json``, and move the release into place.

        The report gets ``dpgpu`` (version) and ``files`` added; its
        ``timings`` go to ``diagnostics.json`` instead (module doc).  The
        target is checked again (it may have changed during the run); a
        release it replaces is moved aside, then removed.

        Parameters
        ----------
        report : dict
            The release's report (a ``timings`` entry is moved out of it); it
            is not modified.

        Returns
        -------
        Path
            The release directory, as given to the writer.

        Raises
        ------
        InputError
            The target may no longer be written, or the release it replaced
            could not be removed (the new release is in place then).
        """
        report = {**report, "dpgpu": __version__, "files": sorted(self.files)}
        diagnostics = {"private": False, "note": DIAGNOSTICS_NOTE,
                       "timings": report.pop("timings", {})}
        for name, obj in ((REPORT, report), (DIAGNOSTICS, diagnostics)):
            with open(self.staging / name, "w", encoding="utf-8") as f:
                dump_json(obj, f)
        check_release_target(self.target, force=self.force, inputs=self.inputs)
        old = None
        if os.path.lexists(self.target):  # a release (checked): moved aside, removed below
            old = self.staging.with_suffix(".old")
            os.replace(self.target, old)
        try:
            os.replace(self.staging, self.target)
        except OSError:
            if old is not None:
                os.replace(old, self.target)
            raise
        self.done = True
        if old is not None:
            try:
                shutil.rmtree(old)
            except OSError as exc:
                raise InputError(f"{self.target}: written, but the release it replaced, moved "
                                 f"to {old}, could not be removed ({exc.strerror or exc}); "
                                 "remove it by hand") from None
        return Path(self.out_dir)


def synthetic_format(input_format: Any) -> Any:
    """The format synthetic data of an input in ``input_format`` is written in, unless the
    labels send it elsewhere (:meth:`ReleaseWriter.write_synthetic`).

    Parameters
    ----------
    input_format : str or None
        The format the input was read in (``db.source["format"]``).

    Returns
    -------
    str or None
        ``lines`` for a user-level text format (``jsonl``, ``text-csv``,
        ``text-parquet``), else ``input_format`` unchanged.
    """
    return _SYNTHETIC_FORMATS.get(input_format, input_format)


def synthetic_file(db: Any, fmt: str) -> tuple[str, str | None]:
    """The name of a release's synthetic file of ``db`` in ``fmt``, and its field delimiter.

    ``synthetic.<ext>``: ``.txt`` for ``lines`` and ``spmf``, ``.csv`` for
    ``wide``, ``trajectory`` and ``column``, else the format's name; a
    CSV table (``csv``, ``wide``, ``trajectory``, ``column``) is delimited
    as its input was (``source["delimiter"]``, else a comma), and named
    ``.tsv`` when that is a tab.  ``.gz`` follows where the input was gzip
    data (``source["compression"]``).

    Parameters
    ----------
    db : SequenceDB
        The synthetic database; its ``source`` holds its input's format options.
    fmt : str
        The format it is written in.

    Returns
    -------
    name : str
        The release file's name.
    delimiter : str or None
        The field delimiter of a CSV table, else None.
    """
    ext, delimiter = _EXTENSIONS.get(fmt, fmt), None
    if ext == "csv":
        delimiter = db.source.get("delimiter") or ","
        ext = "tsv" if delimiter == "\t" else ext
    gz = ".gz" if db.source.get("compression") == "gzip" else ""
    return f"synthetic.{ext}{gz}", delimiter


def synthetic_reader_options(db: Any, fmt: str) -> dict:
    """The reader options of :func:`dpgpu.load` that read ``db``'s synthetic file back.

    What the writer of ``fmt`` chose from ``db.source`` and the file's name
    (:meth:`ReleaseWriter.write_synthetic`), so that the file reads back as
    the same sequences however the original was given: how a ``lines`` or
    ``column`` cell is cut into items (``tokens``: ``"chars"`` for data read a
    character at a time, else ``"str"``, the labels as written), the columns
    or attribute keys an event log, ``wide``, ``trajectory`` or ``column``
    file is written with, the grid of a trajectory (every synthetic step a
    point, ``repeats="keep"``) and the delimiter of a CSV table
    (:func:`synthetic_file`).
    They are format options only, as :func:`dpgpu.data.sequencedb.synthetic_like`
    keeps: never a path, a case name or a user label.

    Parameters
    ----------
    db : SequenceDB
        The synthetic database written.
    fmt : str
        The format it was written in.

    Returns
    -------
    dict
        Keyword arguments for :func:`dpgpu.load` beside ``format=fmt``
        (empty for ``seq`` and ``spmf``, which need none).
    """
    from .data import column, eventlog, trajectory, wide  # noqa: PLC0415
    from .data.writers import written_as_chars  # noqa: PLC0415

    tokens = "chars" if written_as_chars(db) else "str"
    options: dict[str, Any] = {}
    if fmt == "lines":
        options["tokens"] = tokens
    elif fmt == "column":
        options.update(sequence=column.output_columns(db)[1], tokens=tokens)
    elif fmt in ("csv", "parquet"):
        columns = eventlog.output_columns(db)[0]
        options.update((role, columns[role]) for role in ("case", "activity", "timestamp")
                       if columns[role] is not None)
    elif fmt == "xes":
        keys = db.source.get("columns", {}) if db.source.get("format") == "xes" else {}
        options.update(activity=keys.get("activity") or "concept:name",
                       timestamp=keys.get("timestamp") or "time:timestamp")
    elif fmt == "wide":
        options["states"] = wide.output_columns(db)[1]
    elif fmt == "trajectory":
        grid = trajectory.Grid.from_source(db.source)
        options.update(zip(("case", "x", "y"), trajectory.output_columns(db)))
        options.update(grid=f"{grid.nx}x{grid.ny}", bounds=list(grid.bounds), repeats="keep")
    delimiter = synthetic_file(db, fmt)[1]
    if delimiter is not None:
        options["delimiter"] = delimiter
    return options


def synthetic_reading(report: dict) -> tuple[str | None, dict | None]:
    """How a release's synthetic file is read, from its report.

    Parameters
    ----------
    report : dict
        The release's report: its ``synthetic_format``, ``synthetic_options``
        and, failing the first, ``input["format"]`` are used.

    Returns
    -------
    format : str or None
        ``synthetic_format`` (a report without it: the format synthetic data
        of its input's format is written in), or None where that is no
        format :func:`dpgpu.load` reads (it then detects the format).
    options : dict or None
        ``synthetic_options`` (:func:`synthetic_reader_options`), or None for
        a release written before reports recorded them.

    Raises
    ------
    InputError
        When ``synthetic_options`` is not a JSON object.
    """
    from .data.load import FORMATS  # noqa: PLC0415

    fmt = report.get("synthetic_format") or synthetic_format((report.get("input") or {})
                                                             .get("format"))
    options = report.get("synthetic_options")
    if options is not None and not isinstance(options, dict):
        raise InputError(f"{REPORT}: synthetic_options is not a JSON object")
    return (fmt if fmt in FORMATS else None), options


def read_synthetic(path: Any, report: dict, **options: Any) -> Any:
    """A release's synthetic file, read as its report says (:func:`synthetic_reading`).

    The items of a ``seq`` or ``spmf`` file, which numbers them and names
    them in its header, are labelled by those names where they are the
    release's labels (:func:`named_vocabulary`), unless ``vocab`` is given.

    Parameters
    ----------
    path : path-like
        The synthetic file.
    report : dict
        The release's ``report.json``.
    **options
        Options of :func:`dpgpu.load` (``vocab``: the release's public
        vocabulary, for its item ids); they win over the report's
        ``synthetic_options``, the only ones a release records, so a
        release written before reports recorded them needs them where its
        format takes options.

    Returns
    -------
    SequenceDB
        The synthetic sequences; none for an empty file (a release without
        synthetic sequences), on ``vocab`` (default: no items).

    Raises
    ------
    InputError
        When the file cannot be read, or the report is malformed.
    """
    from .data.load import load  # noqa: PLC0415
    from .data.public_vocab import on_vocabulary, public_vocabulary  # noqa: PLC0415
    from .data.sequencedb import SequenceDB  # noqa: PLC0415
    from .data.vocabulary import Vocabulary  # noqa: PLC0415

    fmt, recorded = synthetic_reading(report)
    vocab = options.get("vocab")
    if Path(path).stat().st_size == 0:  # no synthetic sequence (a reader refuses an empty file)
        return SequenceDB(np.zeros(0, dtype=np.int32), np.zeros(1, dtype=np.int64),
                          Vocabulary([]) if vocab is None else public_vocabulary(vocab))
    db = load(path, **{"format": fmt, **(recorded or {}), **options})
    named = None if vocab is not None else named_vocabulary(db, report)
    return db if named is None else on_vocabulary(db, named, str(path))


def named_vocabulary(db: Any, report: dict) -> Any:
    """The release's vocabulary as the header of its ``seq`` or ``spmf`` synthetic file names it.

    Such a file numbers its items and names them in its header (a ``.seq``
    header's categories, SPMF's ``@ITEM=id=name`` lines), every item of the
    vocabulary in id order; read without a vocabulary, its items are
    labelled by their numbers.  The names are the release's labels when
    their :func:`vocabulary_fingerprint` is the report's.

    Parameters
    ----------
    db : SequenceDB
        The synthetic file, read without a vocabulary.
    report : dict
        The release's ``report.json``.

    Returns
    -------
    Vocabulary or None
        The names as labels (public as the report's vocabulary is), or None
        where they are not the release's labels (a ``.seq`` input's labels
        are its category numbers) or the file names no items.
    """
    from .data.vocabulary import Vocabulary  # noqa: PLC0415

    spmf_names = db.source.get("names") or {}
    names = db.vocab.names if db.source.get("format") == "seq" else \
        [spmf_names[k] for k in sorted(spmf_names, key=int)]
    facts = report.get("vocabulary")
    if not (names and isinstance(facts, dict) and len(set(names)) == len(names)):
        return None
    vocab = Vocabulary(names, public=bool(facts.get("public")))
    return vocab if facts.get("sha256") == vocabulary_fingerprint(vocab) else None


def release_path(path: Any, name: str) -> Path:
    """A release directory's path, refused unless it is given as a path.

    Parameters
    ----------
    path : any
        The value given for the release directory.
    name : str
        The parameter, named in the message.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    InvalidParameter
        When ``path`` is not a str or path-like (an in-memory release, say).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidParameter(f"{name}: expected the path of a release directory (str or "
                               f"path-like), got {type(path).__name__}; write an in-memory "
                               "release with release.save(path) and pass that path")
    return Path(path)


#: The keys of ``report.json`` that name files of the release, and whether each holds a list.
FILE_KEYS = (("files", True), ("synthetic_file", False))


def _is_file_name(value: Any) -> bool:
    """Whether ``value`` is a plain file name: one path component, not ``.`` or ``..``."""
    return isinstance(value, str) and value not in ("", ".", "..") \
        and not any(c in value for c in "/\\\0")


def check_file_names(report: dict, path: Any) -> None:
    """Refuse a report whose file names would lead out of its release directory.

    A release's files lie in its directory, and its report names them
    (:data:`FILE_KEYS`); a hand-edited report naming ``/etc/passwd``,
    ``../x`` or ``sub/x`` would have readers open a file elsewhere.

    Parameters
    ----------
    report : dict
        The parsed ``report.json``.
    path : path-like
        The ``report.json`` file, for the message.

    Raises
    ------
    InputError
        Naming ``report.json`` and the key, when ``files`` is not a list of
        plain file names or ``synthetic_file`` is neither one nor null.
    """
    for key, many in FILE_KEYS:
        value = report.get(key)
        names = value if many else [value]
        if value is not None and not (isinstance(names, list) and all(map(_is_file_name, names))):
            what = "a list of file names" if many else "a file name or null"
            raise InputError(f"{path}: {key}: expected {what} inside the release directory "
                             f"(no folder, no '..'), got {json.dumps(value)[:200]}")


def read_report(release_dir: Any) -> dict:
    """The ``report.json`` of a release directory, with the timings of its ``diagnostics.json``.

    Parameters
    ----------
    release_dir : str or path-like
        The release directory.

    Returns
    -------
    dict
        The parsed report, with ``timings`` from ``diagnostics.json`` where
        that file exists.  That it is a JSON object is not checked
        (:func:`dpgpu.report.read_release_report` checks it); its file
        names are (:func:`check_file_names`).

    Raises
    ------
    InputError
        When the directory or its report is missing or not valid JSON, or
        the report names a file outside the directory.
    """
    p = Path(release_dir) / REPORT
    try:
        report = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{p}: no such file (is {release_dir} a dpgpu release "
                         "directory?)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not valid JSON ({exc})") from None
    if isinstance(report, dict):
        check_file_names(report, p)
    diagnostics = Path(release_dir) / DIAGNOSTICS
    if diagnostics.exists() and isinstance(report, dict):
        try:
            report["timings"] = json.loads(diagnostics.read_text(encoding="utf-8")).get(
                "timings", {})
        except (json.JSONDecodeError, UnicodeDecodeError, AttributeError) as exc:
            raise InputError(f"{diagnostics}: not valid diagnostics JSON ({exc})") from None
    return report


#: Values :func:`json_ready` leaves as they are.
_PLAIN_JSON = {str, int, bool, type(None)}


def json_ready(obj: Any) -> Any:
    """``obj`` in plain JSON values, with ``None`` for every infinite or NaN float.

    JSON has no infinity: Python would write ``Infinity``, which other JSON
    readers refuse, so the epsilon of a release that is not private is
    written ``null`` (its report says ``"private": false``).  Arrays and
    NumPy scalars become lists and numbers, paths strings; other objects are
    left for the caller's ``default``.

    Parameters
    ----------
    obj : any
        A value to write as JSON; dicts, lists and tuples are converted
        recursively.

    Returns
    -------
    any
        The converted value: dicts and lists are rebuilt (tuples become
        lists); other values are returned as they are.
    """
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        obj = obj.tolist()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_ready(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        kinds = set(map(type, obj))  # a long list of plain values (a histogram) as it is:
        if kinds <= _PLAIN_JSON or (kinds == {float} and all(map(math.isfinite, obj))):
            return list(obj)
        return [json_ready(v) for v in obj]
    return obj


def dump_json(obj: Any, f: Any, *, default: Any = None) -> None:
    """Write ``obj`` to the text stream ``f`` as indented, standard JSON (:func:`json_ready`).

    Parameters
    ----------
    obj : Any
    f : text stream
    default : callable, optional
        As :func:`json.dump`'s: what becomes of other objects (default: a
        ``TypeError``).
    """
    json.dump(json_ready(obj), f, indent=2, allow_nan=False, default=default)
    f.write("\n")
