"""Reading a dataset on the Dask workers, so that it never passes through the client.

:func:`load_distributed` is :func:`dpgpu.load` for ``engine="dask"``: the
client reads only the head of the file (to detect the format and read a
UCI ``.seq`` header) and picks cut points at line ends; each worker reads
its own byte range and parses it with the reader :func:`dpgpu.load` uses,
and keeps the result.  Ids are made global in a second round: the workers
send their labels (items, and users for user-level text), the client
merges them as a local load orders them (item labels sorted, users in order
of first appearance, part by part) and sends each part its id maps.

The result, a :class:`DistributedDB`, goes to any mechanism in place of a
SequenceDB with ``engine="dask"``; the release is the one the mechanism
makes of ``dpgpu.load(path)`` for the same key.  With ``by_user`` (DPNE)
its partitions are shuffled by user on the workers, so every user's
sequences meet in one partition.

* The file must be readable under the same path on the client and on every
  worker (a shared file system).
* ``seq``, ``spmf``, ``lines`` and ``jsonl`` files are split.  A gzip file
  cannot be split at byte offsets, and the other formats (event logs, XES,
  Parquet, ``text-csv``) group records across lines: for those one worker
  reads the whole file and cuts the result into partitions, which Dask may
  then move to other workers.
* A bad line is reported with the file's own line number (the worker that
  meets it counts the lines before its range).  Each part reports its first
  problem and the first part in file order wins, so in a file with several
  bad lines the one named may differ from the one a local load names.
* The file's variant is decided for the whole file, as by a local load: an
  SPMF file is stripped only if no line outside its metadata holds a ``-2``
  (the client reads up to the first), a ``lines`` file has string tokens
  if any part has one (a token that is not an integer written as it prints,
  :func:`dpgpu.data.text.is_canonical_int`: then every token's label is its
  text in either mode, and the parts read as integers are read again as
  text only so that the result is the local load's to the bit).  Parts
  without sequences are dropped.
* A UTF-8 byte-order mark at the start of the file is skipped, as by a
  local load.
* Paths are made absolute on the client (the workers may not share its
  working directory), and standard input or a ``/dev/fd`` descriptor
  redirected from a file is replaced by that file (the workers do not share
  the client's descriptors), so messages name the path read.  Other links
  are left to the workers to follow: their mounts may differ from the
  client's.
* What the reader of a file read whole warns of on its worker (such as
  that a column named like ``user`` is not read as the users) is logged on
  the client instead, once, as a local load logs it; what passes the
  worker's own log level is kept, so its progress messages stay there.  An
  SPMF file read in parts warns of its itemsets of several items (read
  flattened) on the client, once, with the whole file's count and the
  first one's line in the file, as a local load does.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import logging
import threading
import weakref
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..data import text
from ..data.io import GZIP_MAGIC, count_line_ends, gzip_errors, input_errors
from ..data.load import (BLANK_LINE_FORMATS, check_format, check_options, detect_format,
                         is_parquet, load, read, regular_file)
from ..data.public_vocab import public_ids, public_vocabulary
from ..data.sequencedb import SequenceDB, sort_labels
from ..data.vocabulary import Vocabulary
from ..errors import DPGPUError, InputError, InvalidParameter
from ..validation import check_positive_int
from .dask import DaskPartitions, check_client, close, connect
from .partitions import HeldData

log = logging.getLogger("dpgpu")

#: Formats whose records are single lines, read in byte ranges by several workers.
SPLITTABLE = ("seq", "spmf", "lines", "jsonl")
#: Bytes the client reads to detect the format and find the ``.seq`` header.
HEAD_BYTES = 1 << 16
#: Bytes read at a time while looking for a cut point or counting lines.
_BLOCK = 1 << 20


class DistributedDB(HeldData):
    """A sequence dataset held in partitions on Dask workers (see :func:`load_distributed`).

    Parameters
    ----------
    client : dask.distributed.Client
    states : list of distributed.Future
        One SequenceDB per partition (global item and user ids), in file order.
    sizes : list of int
        Sequences of each partition.
    vocab : Vocabulary
    source : dict
        As :attr:`SequenceDB.source` of a local load (path, format, ...).
    has_users : bool
        Whether the sequences carry user ids (user-level text).

    Attributes
    ----------
    vocab : Vocabulary
    source : dict
    has_users : bool
    """

    def __init__(self, client: Any, states: list[Any], sizes: list[int], vocab: Vocabulary,
                 source: dict, has_users: bool):
        self.client, self.states = client, states
        self.starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
        self.vocab, self.source, self.has_users = vocab, dict(source), has_users

    def __len__(self) -> int:
        return int(self.starts[-1])

    def __repr__(self) -> str:
        where = self.source.get("path", "memory")
        return (f"DistributedDB({len(self)} sequences, {self.vocab.size} items, in "
                f"{len(self.states)} partitions on Dask workers, from {where})")

    def __getitem__(self, index: Any) -> Any:
        """Refused: the sequences are on the workers (see :meth:`collect`).

        Raises
        ------
        InvalidParameter
            Always, saying to :meth:`collect` the data first.
        """
        raise InvalidParameter("index: a DistributedDB's sequences are held on the Dask "
                               "workers, not here; call .collect() for a SequenceDB in this "
                               "process (if the data fits) and index that")

    def __reduce__(self) -> Any:
        """Refused: the data is held by a live Dask client (see :meth:`collect`).

        Raises
        ------
        InvalidParameter
            Always, saying to :meth:`collect` the data first.
        """
        raise InvalidParameter("a DistributedDB cannot be pickled or copied: its partitions "
                               "live on the Dask workers of this session's client; call "
                               ".collect() for a SequenceDB in this process (if the data "
                               "fits) and pickle that")

    def partitions(self, *, by_user: bool = False) -> DaskPartitions:
        """The partitions (sequence ``i`` of the file is row ``i``).

        Parameters
        ----------
        by_user : bool
            Every user's sequences in one partition: with user ids, the
            partitions are shuffled on the workers (user ``u`` goes to
            partition ``u mod P``, keeping the file order); without, each
            sequence is its own user, identified by its row.

        Returns
        -------
        DaskPartitions
        """
        ranges = [np.arange(lo, hi, dtype=np.int64)
                  for lo, hi in zip(self.starts[:-1], self.starts[1:])]
        if not by_user:
            return DaskPartitions(self.client, self.states, ranges)
        if not self.has_users:
            states = [self.client.submit(_rows_as_users, s, int(lo), pure=False)
                      for s, lo in zip(self.states, self.starts[:-1])]
            return DaskPartitions(self.client, states, ranges)
        n = len(self.states)
        pieces = [[self.client.submit(_users_of, s, int(lo), j, n, pure=False) for j in range(n)]
                  for s, lo in zip(self.states, self.starts[:-1])]
        joined = [self.client.submit(_join, *[row[j] for row in pieces], pure=False)
                  for j in range(n)]
        rows = self.client.gather([self.client.submit(_second, f, pure=False) for f in joined])
        keep = [j for j in range(n) if rows[j].size] or [0]  # fewer users than partitions
        states = [self.client.submit(_first, joined[j], pure=False) for j in keep]
        return DaskPartitions(self.client, states, [rows[j] for j in keep])

    def collect(self) -> SequenceDB:
        """All the sequences as one SequenceDB in this process (for data that fits here).

        What indexing, iterating or pickling needs: a DistributedDB refuses
        them, its sequences being on the workers.

        Returns
        -------
        SequenceDB
            The sequences in file order, with their users and ``source``.
        """
        parts = self.client.gather(self.states)
        items = np.concatenate([p.items for p in parts])
        lengths = np.concatenate([p.lengths for p in parts])
        users = np.concatenate([p.users for p in parts]) if self.has_users else None
        return SequenceDB(items, np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]),
                          self.vocab, users=users, source=self.source)


def load_distributed(path: Any, client: Any = None, *, format: str | None = None,
                     partitions: int | None = None, vocab: Any = None,
                     **options: Any) -> DistributedDB:
    """Read a sequence dataset on the Dask workers (see the module docstring).

    Parameters
    ----------
    path : str or path-like
        Readable at this path by the client and every worker.  Only read.
    client : dask.distributed.Client or str, optional
        A client, or a scheduler's address.  For an address, or by default
        (a local cluster of two workers, with Dask's messages from WARNING
        up only), the client opened here is closed, and the local cluster
        with it, when the returned object is no longer referenced; and at
        once when reading fails.
    format : str, optional
        As for :func:`dpgpu.load` (detected from the head of the file when omitted).
    partitions : int, optional
        Number of partitions (default: twice the number of workers).
    vocab : Vocabulary, path-like or sequence of str, optional
        The public item universe, as for :func:`dpgpu.load`.
    **options
        The format's options, as for :func:`dpgpu.load`.

    Returns
    -------
    DistributedDB

    Raises
    ------
    InputError
        As :func:`dpgpu.load`: a missing, empty or malformed file (naming the
        file and line).
    InvalidParameter
        Unknown format or option, a bad ``partitions`` or ``client``, or no
        scheduler answers at the address ``client``.
    """
    check_format(format)
    regular_file(Path(path), "with the Dask engine, the input")  # before a cluster starts
    if vocab is not None:
        vocab = public_vocabulary(vocab)
    if client is not None and not isinstance(check_client(client), str):
        return _load_distributed(path, client, format, partitions, vocab, options)
    client = connect(client, quiet=True, name="client")
    try:
        db = _load_distributed(path, client, format, partitions, vocab, options)
    except BaseException:
        close(client)
        raise
    weakref.finalize(db, close, client)  # the cluster lives as long as the data
    return db


def _load_distributed(path: Any, client: Any, format: str | None, partitions: int | None,
                      vocab: Vocabulary | None, options: dict) -> DistributedDB:
    """:func:`load_distributed` with a client."""
    n_workers = len(client.scheduler_info()["workers"])
    n_parts = check_positive_int(2 * max(1, n_workers) if partitions is None else partitions,
                                 "partitions")
    p = _shared_path(path)
    head, start, size, gz = _head(p)
    parquet = is_parquet(format, head)
    if not parquet and (not head or (format not in BLANK_LINE_FORMATS and not head.strip()
                                     and _all_blank(p, gz, start))):
        raise InputError(f"{p}: empty file (no sequences)")
    fmt = format or ("parquet" if parquet else detect_format(p, head))
    check_options(fmt, options)
    if gz or fmt not in SPLITTABLE:
        db = _read_whole(client, p, fmt, dict(options, vocab=vocab), n_parts)
    else:
        db = _read_split(client, p, fmt, options, n_parts, head, start, size, vocab)
    log.info("loaded %s as %s on %d workers: %d partitions", p, fmt, n_workers,
             len(db.states))
    return db


# ------------------------------------------------------------------ client
def _shared_path(path: Any) -> Path:
    """``path`` as the workers can open it: absolute, and standard input or a
    descriptor of this process replaced by the file it was redirected from."""
    p = Path(path).absolute()
    if str(p) == "/dev/stdin" or str(p).startswith(("/dev/fd/", "/proc/self/fd/")):
        return p.resolve()
    return p


def _head(p: Path) -> tuple[bytes, int, int, bool]:
    """The head of ``p`` and where it starts, the size of ``p`` on disk, and whether it is gzip.

    The head is the first :data:`HEAD_BYTES` of the (decompressed) data
    after a UTF-8 byte-order mark, which a local load drops; it starts
    after the mark (offset 3), or at 0.
    """
    with input_errors(p), open(p, "rb") as f:
        raw = f.read(len(codecs.BOM_UTF8) + HEAD_BYTES)
        size = f.seek(0, 2)
    gz = raw[:2] == GZIP_MAGIC
    if gz:
        with gzip_errors(p), gzip.open(p, "rb") as f:
            raw = f.read(len(codecs.BOM_UTF8) + HEAD_BYTES)
    start = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    return raw[start:start + HEAD_BYTES], start, size, gz


def _all_blank(p: Path, gz: bool, start: int) -> bool:
    """Whether the file (decompressed) holds nothing but white space from byte ``start`` on."""
    with input_errors(p), gzip_errors(p), (gzip.open(p, "rb") if gz else open(p, "rb")) as f:
        f.seek(start)
        while block := f.read(_BLOCK):
            if block.strip():
                return False
    return True


def _read_whole(client: Any, p: Path, fmt: str, options: dict, n_parts: int) -> DistributedDB:
    """One worker reads the whole file; its partitions are cut there.  What the
    reader logged there is logged here (before its error, as by a local load)."""
    loaded = client.submit(_load_file, str(p), fmt, options, pure=False)
    whole = client.submit(_first, loaded, pure=False)
    described, said = client.gather([client.submit(_describe, whole, pure=False),
                                     client.submit(_second, loaded, pure=False)])
    for level, message in said:
        log.log(level, "%s", message)
    if isinstance(described, DPGPUError):
        raise described
    n, vocab, source, has_users = described
    bounds = np.unique(np.linspace(0, n, n_parts + 1).astype(np.int64)) if n else np.zeros(2)
    states = [client.submit(_rows, whole, int(lo), int(hi), pure=False)
              for lo, hi in zip(bounds[:-1], bounds[1:])]
    return DistributedDB(client, states, np.diff(bounds).astype(int).tolist(), vocab, source,
                         has_users)


def _read_split(client: Any, p: Path, fmt: str, options: dict, n_parts: int, head: bytes,
                start: int, size: int, public: Vocabulary | None) -> DistributedDB:
    """Workers read byte ranges; then the client merges labels and the workers remap ids.

    ``head`` is the file's head from byte ``start`` on (after a byte-order mark).
    """
    header, names, stripped, public_header = b"", None, None, False
    if fmt == "seq":
        head = _seq_head(p, head, start, size)
        names, body_start, public_header = text.seq_header(p, head)
        header = head[:body_start]
    if fmt == "spmf":  # the whole file decides the variant, as for a local load
        stripped = not _has_terminators(p, start)
    body = start + len(header)  # the offset of the first range
    cuts = _cut_points(p, body, size, n_parts, stripped is False)
    ranges = list(zip(cuts[:-1], cuts[1:])) or [(body, body)]
    kind = {"header": header, "body": body, "names": names, "stripped": stripped}
    parsed = [client.submit(_parse_range, str(p), fmt, options, kind, lo, hi, pure=False)
              for lo, hi in ranges]
    meta = _gather_meta(client, parsed)
    if fmt == "lines" and options.get("tokens", "auto") == "auto" and \
            any(m["source"].get("tokens") == "str" for m in meta):
        # a string token anywhere (a word, or an integer not written as it prints, such as
        # 07) makes the whole file a string file, as for a local load; the labels of a part
        # of canonical integers are their texts either way, so no record's items change
        again = {**options, "tokens": "str"}
        for i, m in enumerate(meta):
            if m["source"].get("tokens") == "int":
                parsed[i] = client.submit(_parse_range, str(p), fmt, again, kind, *ranges[i],
                                          pure=False)
        meta = _gather_meta(client, parsed)
    _warn_of_itemsets(p, meta, ranges, body)
    if fmt == "jsonl" and not any(m["n"] for m in meta):
        raise InputError(f"{p}: no words (no sequences)")
    source = _merged_source(meta, fmt)
    labels = sort_labels(set().union(*(m["labels"] for m in meta)))
    index = {label: i for i, label in enumerate(labels)}
    if public is None:
        vocab = Vocabulary(labels, names=names, public=public_header)
    else:  # a .seq file keeps its category ids; other items are matched to the public ones
        ids = public_ids(labels, names, source, public, str(p))
        vocab, index = public, index if ids is None else dict(zip(labels, ids.tolist()))
    users: dict[str, int] = {}  # every part's users, in file order, words or not (as locally)
    user_maps = [None if m["user_labels"] is None else
                 np.array([users.setdefault(u, len(users)) for u in m["user_labels"]],
                          dtype=np.int32) for m in meta]
    keep = [i for i, m in enumerate(meta) if m["n"]] or [0]  # no empty partitions
    states = [client.submit(_remap, parsed[i],
                            np.array([index[x] for x in meta[i]["labels"]], dtype=np.int32),
                            user_maps[i], vocab, pure=False) for i in keep]
    if fmt == "jsonl":
        source["user_labels"] = list(users)
    return DistributedDB(client, states, [meta[i]["n"] for i in keep], vocab, source,
                         fmt == "jsonl")


def _warn_of_itemsets(p: Path, meta: list[dict], ranges: list[tuple[int, int]],
                      body: int) -> None:
    """The whole file's warning of SPMF itemsets of several items, from its parts' findings
    (the first one's line counted from the start of its part)."""
    found = [(lo, m["itemsets"]) for (lo, _), m in zip(ranges, meta) if m["itemsets"][0]]
    if found:
        lo, (_, first) = found[0]
        text.warn_of_itemsets(p, sum(n for _, (n, _) in found), _count_lines(p, body, lo) + first)


def _gather_meta(client: Any, parsed: list[Any]) -> list[dict]:
    """The parts' :func:`_labels`; the first part in file order that failed raises its error."""
    meta = client.gather([client.submit(_labels, f, pure=False) for f in parsed])
    for m in meta:
        if "error" in m:
            raise m["error"]
    return meta


def _seq_head(p: Path, head: bytes, start: int, size: int) -> bytes:
    """The start of a ``.seq`` file from byte ``start`` on, long enough to hold its header."""
    while start + len(head) < size:
        mark = head.find(text.SEQ_MARK)
        line_end = head.find(b"\n", mark) if mark >= 0 else -1
        if line_end >= 0 and line_end + 3 <= len(head):
            break
        with input_errors(p), open(p, "rb") as f:
            f.seek(start)
            head = f.read(2 * len(head))
    return head


def _has_terminators(p: Path, start: int) -> bool:
    """Whether the SPMF file holds a ``-2`` outside its metadata lines (read from byte
    ``start`` up to the first)."""
    with input_errors(p), open(p, "rb") as f:
        f.seek(start)
        while block := f.read(_BLOCK) + f.readline():
            if text.looks_like_spmf(text.spmf_without_metadata(block)):
                return True
    return False


def _cut_points(p: Path, start: int, size: int, n_parts: int, terminated: bool) -> list[int]:
    """Offsets ``start = c_0 < c_1 < ... < c_k = size``, each just after a line end.

    With ``terminated`` (SPMF with ``-2``), only after a line whose last
    token is ``-2`` (not a metadata line), so that no sequence is cut.
    """
    cuts = [start]
    with input_errors(p), open(p, "rb") as f:
        for k in range(1, n_parts):
            at = max(cuts[-1], start + (size - start) * k // n_parts)
            cut = _next_line_end(f, at, size, terminated)
            if cut > cuts[-1]:
                cuts.append(cut)
    if size > cuts[-1]:
        cuts.append(size)
    return cuts


def _next_line_end(f: Any, at: int, size: int, terminated: bool) -> int:
    """Offset just after the first qualifying line end at or after ``at`` (``size``: none)."""
    if at <= 0:
        return 0
    f.seek(at - 1)  # the line end may be the byte before ``at``
    pos = at - 1 + len(f.readline())  # the end of the line holding byte ``at - 1``
    if not terminated:
        return pos
    while line := f.readline():  # later lines are seen whole
        pos += len(line)
        body = line.strip()
        if body.split()[-1:] == [b"-2"] and not body.startswith((b"#", b"%", b"@")):
            return pos
    return size


def _merged_source(meta: list[dict], fmt: str) -> dict:
    """The ``source`` of a local load: the parts' (they agree), SPMF item names merged."""
    source = dict(meta[0]["source"])
    source.pop("user_labels", None)
    if fmt == "spmf":
        names = {}
        for m in meta:
            names.update(m["source"].get("names", {}))
        source.pop("names", None)
        if names:
            source["names"] = names
    if fmt == "lines":
        kinds = {m["source"].get("tokens") for m in meta}
        source["tokens"] = "chars" if "chars" in kinds else "str" if "str" in kinds else "int"
    return source


# ----------------------------------------------------------------- workers
class _Kept(logging.Filter):
    """Keeps, instead of logging them, the records that dpgpu logs in a thread
    within :meth:`keeping` (a filter of the ``dpgpu`` logger)."""

    def __init__(self) -> None:
        super().__init__()
        self.here = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        kept = getattr(self.here, "kept", None)
        if kept is None:
            return True
        kept.append((record.levelno, record.getMessage()))
        return False

    @contextlib.contextmanager
    def keeping(self) -> Iterator[list[tuple[int, str]]]:
        """Within the block, what this thread logs is kept in the list given, as
        ``(level, message)``, and not logged (the worker's own levels apply); if
        the block raises, what was kept is logged here after all."""
        log.addFilter(self)  # once: a filter that is there is not added again
        before, self.here.kept = getattr(self.here, "kept", None), []
        kept, done = self.here.kept, False
        try:
            yield kept
            done = True
        finally:
            self.here.kept = before
            for level, message in [] if done else kept:  # a failure: said here after all
                log.log(level, "%s", message)


_KEPT = _Kept()


def _load_file(path: str, fmt: str, options: dict
               ) -> tuple[SequenceDB | DPGPUError, list[tuple[int, str]]]:
    """The file loaded on this worker, and what the reader logged, for the client to log.

    An error of dpgpu is returned as a value, so that the worker does not log
    it as a failure.
    """
    with _KEPT.keeping() as said:
        try:
            db = load(path, format=fmt, **options)
        except DPGPUError as exc:
            db = exc
    return db, said


def _describe(db: SequenceDB | DPGPUError) -> tuple[int, Vocabulary, dict, bool] | DPGPUError:
    if isinstance(db, DPGPUError):
        return db
    return len(db), db.vocab, db.source, db.users is not None


def _rows(db: SequenceDB, lo: int, hi: int) -> SequenceDB:
    part = db.select(np.arange(lo, hi, dtype=np.int64))
    return SequenceDB(part.items, part.offsets, db.vocab, users=part.users)


def _parse_range(path: str, fmt: str, options: dict, kind: dict, lo: int, hi: int
                 ) -> tuple[SequenceDB | DPGPUError, tuple[int, int | None]]:
    """Parse bytes ``lo .. hi`` of the file on this worker (an error of dpgpu is returned),
    with its SPMF itemsets of several items: their number and the first one's line in
    the range (for the client to warn of, :func:`_warn_of_itemsets`).

    ``kind``: the ``.seq`` ``header`` and category ``names``, the offset
    of the first range (``body``), whether an SPMF file is ``stripped``.
    """
    p, itemsets = Path(path), []
    try:
        with input_errors(p), open(p, "rb") as f:
            f.seek(lo)
            data = f.read(hi - lo)
        try:
            db = _parse(p, fmt, options, kind, data, itemsets)
        except InputError:
            # parse again behind as many empty lines as precede the range: same error, true line
            skipped = _count_lines(p, kind["body"], lo)
            _parse(p, fmt, options, kind, b"\n" * skipped + data, [])
            raise
    except DPGPUError as exc:  # a value, so that the worker does not log it as a failure
        db = exc
    return db, (itemsets or [(0, None)])[0]


def _parse(p: Path, fmt: str, options: dict, kind: dict, data: bytes,
           itemsets: list) -> SequenceDB:
    if fmt == "seq":
        header = kind["header"]
        return text.read_seq_body(p, header + data, len(header), kind["names"])
    if fmt == "spmf":
        return text.read_spmf(p, data, stripped=kind["stripped"], itemsets=itemsets)
    if fmt == "jsonl":
        return read(fmt, p, data, {**options, "allow_empty": True})
    return read(fmt, p, data, options)


def _count_lines(p: Path, lo: int, hi: int) -> int:
    """Line ends (LF, CRLF or a lone CR, as the readers count them) in bytes ``lo .. hi`` of
    ``p``."""
    count, after_cr = 0, False
    with input_errors(p), open(p, "rb") as f:
        f.seek(lo)
        left = hi - lo
        while left > 0 and (block := f.read(min(_BLOCK, left))):
            count += count_line_ends(block) \
                - (after_cr and block.startswith(b"\n"))  # a CRLF cut between two blocks
            after_cr = block.endswith(b"\r")
            left -= len(block)
    return count


def _labels(parsed: tuple[SequenceDB | DPGPUError, tuple[int, int | None]]) -> dict:
    db, itemsets = parsed
    if isinstance(db, DPGPUError):
        return {"error": db}
    users = db.source.get("user_labels")
    return {"n": len(db), "labels": list(db.vocab.labels), "names": db.vocab.names,
            "itemsets": itemsets,
            "user_labels": list(users) if users is not None else None,
            "source": {k: v for k, v in db.source.items() if k != "user_labels"}}


def _remap(parsed: tuple[SequenceDB, Any], item_map: np.ndarray, user_map: np.ndarray | None,
           vocab: Vocabulary) -> SequenceDB:
    db = parsed[0]
    users = user_map[db.users] if user_map is not None else None
    return SequenceDB(item_map[db.items], db.offsets, vocab, users=users)


def _rows_as_users(db: SequenceDB, first_row: int) -> SequenceDB:
    rows = np.arange(first_row, first_row + len(db))
    return SequenceDB(db.items, db.offsets, db.vocab, users=rows)


def _users_of(db: SequenceDB, first_row: int, j: int, n: int) -> tuple[SequenceDB, np.ndarray]:
    """The sequences of ``db`` whose user goes to partition ``j`` of ``n``, and their rows."""
    rows = np.flatnonzero(db.users % n == j)
    return db.select(rows), first_row + rows


def _join(*pieces: tuple[SequenceDB, np.ndarray]) -> tuple[SequenceDB, np.ndarray]:
    dbs = [db for db, _ in pieces]
    lengths = np.concatenate([db.lengths for db in dbs])
    joined = SequenceDB(np.concatenate([db.items for db in dbs]),
                        np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]),
                        dbs[0].vocab, users=np.concatenate([db.users for db in dbs]))
    return joined, np.concatenate([rows for _, rows in pieces])


def _first(pair: tuple) -> Any:
    return pair[0]


def _second(pair: tuple) -> Any:
    return pair[1]
