"""SequenceDB: a database of item sequences, stored unpadded.

Items are kept flat (``items`` int32 plus ``offsets`` int64), so a dataset
with a few very long sequences (MSNBC: mean length 4.7, longest 14,795) costs
memory in proportion to its events.  Padded ``(N, L)`` tensors are made on
request, at the truncation length a mechanism asks for.
"""

from __future__ import annotations

import itertools
import logging
import math
import numbers
from collections.abc import Mapping
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..errors import InvalidParameter
from ..ops.keys import sorted_unique
from ..validation import check_bool, check_positive_int
from .vocabulary import NOT_A_LABEL, Vocabulary, is_unordered, item_label

log = logging.getLogger("dpgpu")

PAD = -1
#: User ids are int32: integer user labels in ``0 .. USER_ID_LIMIT - 1`` are kept as the ids.
USER_ID_LIMIT = 2 ** 31
#: The string values of :meth:`SequenceDB.padded`'s ``end`` (besides True and False).
END_MODES = ("uncut", "all")


class SequenceDB:
    """Item sequences over a vocabulary.

    Parameters
    ----------
    items : array of int
        Item ids of all sequences, concatenated (values in ``0 .. |vocab|-1``).
    offsets : array of int
        ``N + 1`` non-decreasing offsets: sequence ``i`` is
        ``items[offsets[i]:offsets[i + 1]]``.
    vocab : Vocabulary or sequence of str
        Labels of the item ids: a :class:`Vocabulary`, or the labels in id
        order, which become a public one (``Vocabulary(vocab)``).
    users : array of int, optional
        ``N`` user ids (integers that fit int32), for user-level data
        (several sequences per user).  :meth:`from_sequences` takes user
        labels of any kind.
    source : dict, optional
        Where the data came from: ``path``, ``format`` and whatever the
        writer needs to reproduce the input's format (e.g. the UCI header).
        Copied.

    Attributes
    ----------
    items : numpy.ndarray of int32
    offsets : numpy.ndarray of int64
    lengths : numpy.ndarray of int32
    vocab : Vocabulary
    users : numpy.ndarray of int32 or None
    source : dict

    Raises
    ------
    InvalidParameter
        When ``items``, ``offsets`` or ``users`` are not integers that fit,
        ``offsets`` do not bound ``items``, an item id is outside the
        vocabulary, ``vocab`` is neither a Vocabulary nor labels that
        :class:`Vocabulary` takes, or ``source`` is not a dict (a mapping).
    """

    def __init__(self, items: Any, offsets: Any, vocab: Vocabulary | Sequence[str], *,
                 users: Any = None, source: dict | None = None):
        self.items = _integers(items, "items", np.int32)
        self.offsets = _integers(offsets, "offsets", np.int64)
        if not isinstance(vocab, Vocabulary):
            vocab = Vocabulary(vocab, name="vocab")
        self.vocab = vocab
        if self.offsets.size < 1 or self.offsets[0] != 0 \
                or self.offsets[-1] != self.items.size or np.any(np.diff(self.offsets) < 0):
            raise InvalidParameter("offsets: must start at 0, end at len(items) and not "
                                   "decrease")
        if self.items.size and (self.items.min() < 0 or self.items.max() >= vocab.size):
            raise InvalidParameter(f"items: item ids must lie in 0 .. {vocab.size - 1} (the "
                                   "vocabulary's size less one)")
        self.lengths = np.diff(self.offsets).astype(np.int32)
        self.users = None if users is None else _integers(users, "users", np.int32)
        if self.users is not None and self.users.size != len(self):
            raise InvalidParameter(f"users: one user id per sequence is needed ({len(self)}), "
                                   f"got {self.users.size}; SequenceDB.from_sequences takes "
                                   "user labels of any kind")
        if source is not None and not isinstance(source, Mapping):
            raise InvalidParameter(f"source: expected a dict (such as {{'path': ..., 'format': "
                                   f"...}}) or None, got {type(source).__name__}")
        self.source = dict(source or {})

    # ------------------------------------------------------------------ basics
    @classmethod
    def from_sequences(cls, sequences: Iterable[Sequence[Any]], *,
                       vocab: Vocabulary | Sequence[str] | None = None,
                       users: Any = None) -> "SequenceDB":
        """Build a database from Python sequences of labels.

        Parameters
        ----------
        sequences : iterable of sequences
            Each sequence is a list (or tuple, array, ...) of item labels:
            strings or finite numbers, turned into strings (an integral float
            as the integer: ``1.0`` and ``1`` are one item, as are ``1`` and
            ``"1"``); None, NaN, booleans and bytes are refused.  Not a string itself
            (``"ab"`` would be read as ``["a", "b"]``), a mapping or a set;
            nor is ``sequences`` a mapping, a set or a string.
        vocab : Vocabulary or sequence of str, optional
            The public item universe (distinct labels, not a set: its order
            would change between sessions).  By default the
            sorted distinct labels (sorted numerically when all labels are
            integers), a vocabulary taken from the data (``vocab.public`` is
            False: a release that shows it is not differentially private).
        users : sequence of str or int, optional
            One user label per sequence, for user-level data: sequences with
            equal labels belong to one user.  Labels are strings or integers
            (a float such as ``2.0`` counts as the integer 2; ``1.5``, NaN,
            booleans and other values are refused, so distinct users never
            share an id).  Integers in ``0 .. 2**31 - 1`` are the user ids
            themselves; any other labels are numbered ``0 .. U-1`` in order
            of first appearance and kept in ``source["user_labels"]``, as the
            file readers keep them.  Default: each sequence is its own user.

        Returns
        -------
        SequenceDB

        Raises
        ------
        InvalidParameter
            When ``sequences`` or one of its sequences is not of the kinds
            above, a label is a container (a list, tuple, dict, set, ...) or
            not a string or finite number, a
            label is not an item of ``vocab``, ``vocab`` is a set or lists a
            label twice, or ``users`` does not give one label of the kinds
            above per sequence.
        """
        seqs = _label_lists(sequences)
        if vocab is None:
            vocab = Vocabulary(sort_labels({x for s in seqs for x in s}), public=False)
        elif not isinstance(vocab, Vocabulary):
            vocab = Vocabulary(vocab, name="vocab")
        lengths = np.array([len(s) for s in seqs], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        flat = vocab.encode([x for s in seqs for x in s], name="vocab", markers=())
        if users is None:
            return cls(flat, offsets, vocab)
        ids, labels = _user_ids(users, len(seqs))
        return cls(flat, offsets, vocab, users=ids,
                   source=None if labels is None else {"user_labels": labels})

    def __len__(self) -> int:
        return int(self.lengths.size)

    def __getitem__(self, index: Any) -> "tuple[str, ...] | SequenceDB":
        """Labels of one sequence, or a database of the sequences a slice picks.

        Parameters
        ----------
        index : int, slice, array of int or array of bool
            A sequence number (negative ones count from the end), a slice
            (negative bounds and steps as for a list), or what :meth:`select`
            takes.

        Returns
        -------
        tuple of str or SequenceDB
            For an integer, the sequence's labels; otherwise the picked
            sequences, as :meth:`select` returns them (same vocabulary,
            users and source).

        Raises
        ------
        IndexError
            When an integer ``index`` is out of range, as for a list.
        InvalidParameter
            When ``index`` is none of the above, as :meth:`select` says.
        """
        if isinstance(index, slice):
            try:
                picked = range(len(self))[index]
            except (TypeError, ValueError):
                raise InvalidParameter(f"index: a slice takes integers or None, and a step "
                                       f"other than 0; got {index!r}") from None
            return self.select(np.arange(picked.start, picked.stop, picked.step))
        if isinstance(index, numbers.Integral) and not isinstance(index, bool):
            return self.vocab.decode(self.sequence_ids(index))
        return self.select(index)

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        where = self.source.get("path", "memory")
        return (f"SequenceDB({len(self)} sequences, {self.vocab.size} items, "
                f"{self.items.size} events, from {where})")

    @property
    def n_events(self) -> int:
        """Total number of items over all sequences."""
        return int(self.items.size)

    @property
    def max_length(self) -> int:
        """Length of the longest sequence (0 for an empty database)."""
        return int(self.lengths.max()) if len(self) else 0

    def sequence_ids(self, i: int) -> np.ndarray:
        """Item ids of sequence ``i``.

        Parameters
        ----------
        i : int
            Sequence number; a negative one counts from the end.

        Returns
        -------
        numpy.ndarray of int32
            A view of :attr:`items` (no copy).

        Raises
        ------
        IndexError
            When ``i`` is out of range, as for ``db[i]``.
        InvalidParameter
            When ``i`` is not an integer.
        """
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise InvalidParameter(f"i: expected a sequence number (an integer), got {i!r}")
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"sequence {i} is out of range for a database of {n} sequences")
        i = int(i) % n
        return self.items[self.offsets[i]:self.offsets[i + 1]]

    def _rows(self, index: Any, name: str) -> np.ndarray:
        """Sequence numbers (int64, in order) picked by integers or a boolean mask."""
        try:
            idx = np.atleast_1d(np.asarray(index))
        except (TypeError, ValueError):  # ragged nesting
            idx = np.asarray([None])
        n = len(self)
        if idx.dtype == np.bool_:
            if idx.shape != (n,):
                raise InvalidParameter(f"{name}: a boolean mask needs one entry per sequence "
                                       f"({n}), got shape {idx.shape}")
            return np.flatnonzero(idx)
        if idx.size == 0:  # [] is a float array
            return np.zeros(0, dtype=np.int64)
        if isinstance(index, (list, tuple)) and any(isinstance(x, (bool, np.bool_))
                                                     for x in index):
            raise InvalidParameter(f"{name}: {index!r:.60} mixes booleans with numbers; pass "
                                   "sequence numbers (integers) or a boolean mask (one boolean "
                                   "per sequence)")
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise InvalidParameter(f"{name}: expected sequence numbers (integers) or a boolean "
                                   f"mask, got {index!r}")
        bad = idx[(idx < -n) | (idx >= n)]
        if bad.size:
            raise InvalidParameter(f"{name}: sequence {int(bad[0])} is out of range for a "
                                   f"database of {n} sequences")
        idx = idx.astype(np.int64)  # in range, so exact; idx + n could overflow a small dtype
        return np.where(idx < 0, idx + n, idx)

    # --------------------------------------------------------------- reshaping
    def select(self, index: Any) -> "SequenceDB":
        """A database of some of the sequences, in the same vocabulary.

        Parameters
        ----------
        index : int, array of int or array of bool
            Sequence numbers (negative ones count from the end; repeats and
            any order allowed), or a mask with one entry per sequence.

        Returns
        -------
        SequenceDB
            The picked sequences, in ``index`` order, with their users and
            case names.

        Raises
        ------
        InvalidParameter
            When ``index`` holds a number out of range or is neither integers
            nor a mask of the right length.
        """
        rows = self._rows(index, "index")
        starts, lens = self.offsets[rows], self.lengths[rows].astype(np.int64)
        gather = concat_ranges(starts, lens)
        offsets = np.concatenate([[0], np.cumsum(lens)])
        users = None if self.users is None else self.users[rows]
        source = dict(self.source)
        if "cases" in source:  # per-sequence case names follow their sequences
            source["cases"] = [source["cases"][i] for i in rows.tolist()]
        return SequenceDB(self.items[gather], offsets, self.vocab, users=users, source=source)

    def truncate(self, l_max: int) -> "SequenceDB":
        """Cut every sequence to its first ``l_max`` items.

        Truncation bounds each sequence's contribution and so sets a
        mechanism's sensitivity; it is logged with the number of sequences cut.

        Parameters
        ----------
        l_max : int
            Items kept per sequence (at least 1; any larger than the longest
            sequence cuts none).

        Returns
        -------
        SequenceDB
            A new database; this one is unchanged.

        Raises
        ------
        InvalidParameter
            When ``l_max`` is not a positive integer.
        """
        l_max = check_positive_int(l_max, "l_max")
        cut = int(np.count_nonzero(self.lengths > l_max))
        log.info("truncating to l_max=%d: %d of %d sequences are cut", l_max, cut, len(self))
        lens = np.minimum(self.lengths, min(l_max, self.max_length)).astype(np.int64)
        gather = concat_ranges(self.offsets[:-1], lens)
        offsets = np.concatenate([[0], np.cumsum(lens)])
        return SequenceDB(self.items[gather], offsets, self.vocab, users=self.users,
                          source=self.source)

    def padded(self, l_max: int, *, backend: Any = None, end: "bool | str" = False,
               start: bool = False, rows: Any = None, items: Any = None):
        """A padded ``(N, W)`` int32 tensor of the sequences cut to ``l_max`` items.

        Parameters
        ----------
        l_max : int
            Truncation length (items per sequence, markers excluded; any
            larger than the longest sequence cuts none).
        backend : str or Backend, optional
            Where the tensor lives (see :func:`dpgpu.backend.get_backend`).
        end : {False, True, "uncut", "all"}
            Append the end marker ``&`` (``vocab.end_id``): ``False`` to no
            sequence; ``True`` or ``"uncut"`` to every sequence that was
            *not* cut (a cut sequence did not end there); ``"all"`` to every
            sequence, cut or not (the truncated database, whose sequences all
            end after ``l_max``).
        start : bool
            Prepend the start marker ``$`` (``vocab.start_id``) to every sequence.
        rows : array of int or array of bool, optional
            Only these sequences, in this order (as :meth:`select` takes them).
        items : array, optional
            ``self.items`` already on the backend, so that building several
            blocks uploads it to a GPU once (default: copied per call).  Its
            shape and integer dtype are checked, not its values.

        Returns
        -------
        tokens : array of int32, shape (N, W)
            Padded with -1.  ``W = max(1, min(l_max, longest)) + start + end``.
        lengths : array of int32, shape (N,)
            Symbols per row, markers included.

        Raises
        ------
        InvalidParameter
            When ``l_max``, ``end``, ``start`` or ``rows`` is not one of the
            values above, ``items`` is not an integer array of the shape of
            :attr:`items`, or the tensor does not fit in memory (the message
            gives its size).
        """
        from ..backend import get_backend

        l_max = min(check_positive_int(l_max, "l_max"), max(self.max_length, 1))
        if isinstance(end, (bool, np.bool_)):
            end = "uncut" if end else None
        elif not (isinstance(end, str) and end in END_MODES):
            raise InvalidParameter(f"end: must be False, True, 'uncut' or 'all', got {end!r}")
        start = check_bool(start, "start")
        if items is not None:
            self._check_items(items)
        be = get_backend(backend)
        rows = slice(None) if rows is None else self._rows(rows, "rows")
        starts, full = self.offsets[:-1][rows], self.lengths[rows]
        kept = np.minimum(full, l_max)
        width = max(int(kept.max()) if kept.size else 0, 1)
        lengths = kept.astype(np.int32)
        if start:
            lengths += 1
        if end is not None:
            ends = np.flatnonzero(full <= l_max) if end == "uncut" else np.arange(kept.size)
            lengths[ends] += 1
        # Built where it will live: on a GPU only the items travel, not the padding.
        xp = be.xp
        shape = (kept.size, width + int(start) + int(end is not None))
        try:
            tokens = xp.full(shape, PAD, dtype=xp.int32)
            if self.items.size and kept.size:
                itype = np.int32 if self.items.size < 2 ** 31 else np.int64
                col = xp.arange(width, dtype=itype)
                gather = xp.asarray(starts.astype(itype))[:, None] + col[None, :]
                items = xp.asarray(self.items) if items is None else items
                tokens[:, int(start):int(start) + width] = xp.where(
                    col[None, :] < xp.asarray(kept)[:, None],
                    items[xp.minimum(gather, items.size - 1)], PAD)
        except MemoryError as exc:  # NumPy's and CuPy's out-of-memory errors
            gib = math.prod(shape) * 4 / 2 ** 30
            raise InvalidParameter(
                f"l_max: the padded tensor of {shape[0]} x {shape[1]} int32 ({gib:.3g} GiB, "
                f"more while it is built) does not fit in memory; pass a smaller l_max, "
                f"or fewer rows") from exc
        if start:
            tokens[:, 0] = self.vocab.start_id
        if end is not None:
            ends_dev = xp.asarray(ends)
            tokens[ends_dev, xp.asarray(lengths[ends] - 1)] = self.vocab.end_id
        return tokens, be.asarray(lengths)

    def _check_items(self, items: Any) -> None:
        """Refuse, naming ``items``, an array that cannot be :attr:`items` on a backend.

        Its shape and dtype only: scanning its values would cost a pass over
        the data (on a GPU, a sync) for every block :meth:`padded` builds.
        """
        shape, dtype = getattr(items, "shape", None), getattr(items, "dtype", None)
        if shape != self.items.shape or not isinstance(dtype, np.dtype) \
                or dtype.kind not in "iu":
            raise InvalidParameter(f"items: expected this database's items on the backend (an "
                                   f"integer array of shape {self.items.shape}), got "
                                   f"{type(items).__name__} of shape {shape} and dtype {dtype}")

    # ---------------------------------------------------------------- counting
    def gram_counts(self, n: int, l_max: int | None = None, *,
                    backend: Any = None) -> dict[tuple[str, ...], int]:
        """Exact counts of contiguous ``n``-grams of items.

        Parameters
        ----------
        n : int
            Gram length.
        l_max : int, optional
            Count only within each sequence's first ``l_max`` items.
        backend : str or Backend, optional

        Returns
        -------
        dict
            ``{tuple_of_labels: count}``, labels as the input wrote them.
            Not private: exact counts are for evaluation and tests.
        """
        from ..backend import to_numpy
        from ..ops.grams import count_grams

        n = check_positive_int(n, "n")
        grams, counts = count_grams(self, n, l_max=l_max, backend=backend)
        labels = self.vocab.labels
        return {tuple(labels[i] for i in g): c
                for g, c in zip(to_numpy(grams).tolist(), to_numpy(counts).tolist())}

    def stats(self) -> dict[str, Any]:
        """A summary of the dataset (exact, not private).

        Returns
        -------
        dict
            ``sequences``, ``items`` (vocabulary size), ``events``,
            ``distinct_items_seen``, ``mean_length``, ``median_length``,
            ``p90_length``, ``max_length``, ``min_length``,
            ``empty_sequences``, ``users`` (distinct user ids, or None) and
            ``most_frequent`` (up to five ``(label, count)`` pairs).
        """
        lens = self.lengths
        freq = np.bincount(self.items, minlength=self.vocab.size)
        top = np.argsort(-freq, kind="stable")[:5]
        return {
            "sequences": len(self),
            "items": self.vocab.size,
            "events": self.n_events,
            "distinct_items_seen": int(np.count_nonzero(freq)),
            "mean_length": float(lens.mean()) if lens.size else 0.0,
            "median_length": float(np.median(lens)) if lens.size else 0.0,
            "p90_length": float(np.percentile(lens, 90)) if lens.size else 0.0,
            "max_length": self.max_length,
            "min_length": int(lens.min()) if lens.size else 0,
            "empty_sequences": int(np.count_nonzero(lens == 0)),
            "users": None if self.users is None else int(sorted_unique(self.users).size),
            "most_frequent": [(self.vocab.labels[i], int(freq[i])) for i in top if freq[i]],
        }

    def save(self, path: Any, format: str | None = None, *, force: bool = False) -> int:
        """Write the database to ``path`` (atomically; gzip if it ends in ``.gz``).

        Parameters
        ----------
        path : str or path-like
        format : str, optional
            One of :data:`dpgpu.data.writers.WRITE_FORMATS` (``"seq"``,
            ``"spmf"``, ``"lines"``, ``"csv"``, ``"parquet"``, ``"xes"``,
            ``"wide"``, ``"trajectory"``, ``"column"``).  Default, as
            ``dpgpu convert`` chooses: the format the extension of ``path``
            names (after any ``.gz``: ``.csv``, ``.parquet``, ``.xes``,
            ``.seq``, ``.spmf``, ``.txt``, ...; a ``.csv`` or ``.tsv`` name
            keeps a wide, trajectory or column database in its format), else
            the format the data was read from, else ``"lines"``.
        force : bool
            Overwrite an existing file.

        Returns
        -------
        int
            The sequences written: fewer than ``len(self)`` where a format
            with a row per item (csv, parquet, trajectory) cannot hold the
            empty ones, as a warning then says.  The users of user-level
            data are written by csv, parquet and column only (another
            format leaves them out, with a warning; wide and trajectory
            refuse such data).

        Raises
        ------
        InvalidParameter
            When ``path`` is not a path, ``format`` is unknown or contradicts
            the extension (a ``.txt`` name suits every text format), the
            extension names a format dpgpu cannot write (``.jsonl``), or the
            format cannot hold the labels or users
            (:func:`dpgpu.data.writers.check_writable`).
        InputError
            When ``path`` may not be written (it exists without ``force``).
        """
        from .writers import save_format, write

        return write(self, path, format=save_format(self, path, format), force=force)


#: Keys of ``source`` that describe a file's format (no identifiers, no path).
FORMAT_KEYS = ("format", "columns", "delimiter", "timestamp_kind", "stripped", "tokens", "names",
               "grid", "bounds", "compression")


def synthetic_like(db: SequenceDB, items: Any, lengths: Any) -> SequenceDB:
    """A synthetic database in ``db``'s vocabulary and file format.

    Only the format options of ``db.source`` are kept: never its path, case
    names or user labels, which identify the original records.

    Parameters
    ----------
    db : SequenceDB
        The original: its vocabulary, and the format options of its ``source``
        (:data:`FORMAT_KEYS`).
    items : array_like of int
        The synthetic sequences' item ids, concatenated.
    lengths : array_like of int
        The length of each synthetic sequence, summing to ``len(items)``.

    Returns
    -------
    SequenceDB
        Without users.
    """
    offsets = np.concatenate([[0], np.cumsum(np.asarray(lengths, dtype=np.int64))])
    source = {k: v for k, v in db.source.items() if k in FORMAT_KEYS}
    return SequenceDB(items, offsets, db.vocab, source=source)


def _label_lists(sequences: Any) -> list[list[str]]:
    """The labels of each sequence of :meth:`SequenceDB.from_sequences`, as strings.

    Parameters
    ----------
    sequences : any
        The sequences given: an ordered collection of ordered collections of
        labels.

    Returns
    -------
    list of list of str

    Raises
    ------
    InvalidParameter
        ``sequences`` or one of its sequences is a string, a mapping, a set or
        not iterable, or a label is a container (``str()`` of it would be a
        made-up label); the message says which sequence.
    """
    if _unordered_or_scalar(sequences):
        raise InvalidParameter(f"sequences: expected a list of sequences of labels (such as "
                               f"[['a', 'b'], ['b']]), got {type(sequences).__name__}")
    seqs = []
    for i, sequence in enumerate(sequences):
        if type(sequence) not in (list, tuple) and _unordered_or_scalar(sequence):
            kind = "a string" if isinstance(sequence, (str, bytes)) else \
                f"of type {type(sequence).__name__}"
            raise InvalidParameter(f"sequences: sequence {i} is {sequence!r:.60}, {kind}; each "
                                   "sequence must be a list of labels, such as ['a', 'b']")
        seqs.append(list(sequence))
    # the kinds of labels, then the first label of a refused kind: faster than label by label
    kinds = set(map(type, itertools.chain.from_iterable(seqs)))
    containers = tuple(t for t in kinds if issubclass(t, Iterable)
                       and not issubclass(t, (str, bytes)))
    if containers:
        i, x = next((i, x) for i, s in enumerate(seqs) for x in s if type(x) in containers)
        raise InvalidParameter(f"sequences: sequence {i} holds {x!r:.60}, a "
                               f"{type(x).__name__}; a label is a string or a number")
    if all(issubclass(t, str) or issubclass(t, numbers.Integral) and not issubclass(t, bool)
           for t in kinds):
        return [[str(x) for x in s] for s in seqs]
    return [[_item_label(x, i) for x in s] for i, s in enumerate(seqs)]


def _item_label(value: Any, i: int) -> str:
    """``value``, a label of sequence ``i``, as the item's text (:func:`item_label`)."""
    label = item_label(value)
    if label is None:
        raise InvalidParameter(f"sequences: sequence {i} holds {value!r:.60}, {NOT_A_LABEL}")
    return label


def _unordered_or_scalar(values: Any) -> bool:
    """Whether ``values`` is not an ordered collection: a string, a mapping, a set or a
    value that is not iterable."""
    return isinstance(values, (str, bytes, Mapping)) or is_unordered(values) \
        or not isinstance(values, Iterable)


def _user_ids(users: Any, n: int) -> tuple[np.ndarray, list | None]:
    """User ids of ``n`` sequences from their user labels (:meth:`SequenceDB.from_sequences`).

    Parameters
    ----------
    users : sequence of str or int
        One label per sequence.
    n : int
        The number of sequences.

    Returns
    -------
    ids : numpy.ndarray of int32
        The labels themselves when all are integers in
        ``0 .. USER_ID_LIMIT - 1``, else the labels numbered in order of
        first appearance.
    labels : list or None
        The labels of ids ``0 .. U-1`` where they were numbered, else None.

    Raises
    ------
    InvalidParameter
        When ``users`` is not a sequence of ``n`` labels, a label is neither
        a string nor an integer (an integral float counts as one), or two
        distinct labels read the same as text (``1`` and ``"1"``).
    """
    if isinstance(users, (str, bytes)) or not isinstance(users, Iterable):
        raise InvalidParameter(f"users: expected one user label per sequence (a list), "
                               f"got {users!r}")
    array = users if isinstance(users, np.ndarray) else None
    if array is not None and array.ndim == 1 and array.dtype.kind in "iu" and array.size == n \
            and (not n or (array.min() >= 0 and array.max() < USER_ID_LIMIT)):
        return array.astype(np.int32), None
    labels = [_user_label(u) for u in (users.tolist() if array is not None else users)]
    if len(labels) != n:
        raise InvalidParameter(f"users: one user label per sequence is needed ({n}), "
                               f"got {len(labels)}")
    if all(isinstance(u, int) and 0 <= u < USER_ID_LIMIT for u in labels):
        return np.array(labels, dtype=np.int32), None
    number: dict = {}
    ids = np.fromiter((number.setdefault(u, len(number)) for u in labels), dtype=np.int32,
                      count=n)
    as_text: dict[str, Any] = {}
    for label in number:  # written to a file, such labels would become one user
        other = as_text.setdefault(str(label), label)
        if other is not label:
            raise InvalidParameter(f"users: {other!r} and {label!r} are different users that "
                                   "read the same as text; use one kind of label")
    return ids, list(number)


def _user_label(value: Any) -> "str | int":
    """``value`` as a user label: a string, or an integer (integral floats included)."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool) \
            and math.isfinite(value) and float(value).is_integer():
        return int(value)
    raise InvalidParameter(f"users: {value!r} is not a user label: labels are strings or "
                           "integers (fractions and booleans are refused: rounding them would "
                           "merge distinct users)")


def _integers(values: Any, name: str, dtype: type) -> np.ndarray:
    """``values`` as a contiguous 1-d array of ``dtype``, refusing what would change on the way
    (fractions, booleans, values out of the type's range) with InvalidParameter naming ``name``."""
    array = np.asarray(values)
    if array.size == 0 and array.ndim == 1:  # [] is a float array
        array = array.astype(dtype)
    if array.dtype.kind not in "iu" or array.ndim != 1:
        raise InvalidParameter(f"{name}: expected a 1-d array of integers, got {array.dtype} of "
                               f"shape {array.shape}")
    limits = np.iinfo(dtype)
    if array.size and array.dtype != dtype and (array.min() < limits.min
                                                or array.max() > limits.max):
        raise InvalidParameter(f"{name}: values must fit {np.dtype(dtype).name}")
    return np.ascontiguousarray(array, dtype=dtype)


def sort_labels(labels: Iterable[str]) -> list[str]:
    """Labels sorted numerically when all are integers, else as strings.

    Parameters
    ----------
    labels : iterable of str

    Returns
    -------
    list of str
        A new sorted list (equal numbers, ``"1"`` and ``"01"``, by their
        text).
    """
    labels = list(labels)
    try:
        return sorted(labels, key=lambda s: (int(s), s))
    except ValueError:
        return sorted(labels)


def concat_ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + l)`` for each pair, vectorized.

    Parameters
    ----------
    starts : numpy.ndarray of int
        The first value of each range.
    lens : numpy.ndarray of int
        The length of each range (non-negative), as many as ``starts``.

    Returns
    -------
    numpy.ndarray of int64
        ``lens.sum()`` values.
    """
    lens = np.asarray(lens, dtype=np.int64)
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lens)
    base = np.repeat(np.asarray(starts, dtype=np.int64) - (ends - lens), lens)
    return base + np.arange(total, dtype=np.int64)


def check_db(db: Any, name: str = "data", *, items: bool = False) -> SequenceDB:
    """Raise :class:`InvalidParameter` unless ``db`` is a SequenceDB (or data held on workers).

    Data held in partitions (:class:`dpgpu.scale.partitions.HeldData`, e.g. a
    dataset read on Dask workers) passes too: mechanisms count it through
    its partitions.  With ``items``, its vocabulary must hold an item (the
    tree mechanisms branch over the items).

    Parameters
    ----------
    db : any
        The value given.
    name : str
        The parameter's name, for the message.
    items : bool
        Also require a non-empty vocabulary.

    Returns
    -------
    SequenceDB or HeldData
        ``db`` unchanged.

    Raises
    ------
    InvalidParameter
        ``db`` is neither, or (``items``) its vocabulary is empty.
    """
    from ..scale.partitions import HeldData  # noqa: PLC0415 - avoid an import cycle

    if not isinstance(db, (SequenceDB, HeldData)):
        raise InvalidParameter(f"{name}: expected a SequenceDB, got {type(db).__name__}")
    if items and db.vocab.size == 0:
        raise InvalidParameter(f"{name}: the item vocabulary is empty; pass the public list of "
                               "items (--vocab FILE, or vocab= to dpgpu.load)")
    return db
