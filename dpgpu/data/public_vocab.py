"""A public item vocabulary supplied by the user, and data re-encoded on it.

Readers of formats without a declared item universe (every format but the
UCI ``.seq`` header) take the vocabulary from the items that occur, which is
a statistic of the data (:attr:`dpgpu.Vocabulary.public` is False).  A user
who knows the universe in advance (a product catalogue, an activity list, a
dictionary) passes it as ``vocab=`` / ``--vocab FILE``: items that never
occur are then part of it too, and the release may show it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, InvalidParameter
from .io import decode_text, read_bytes
from .sequencedb import SequenceDB
from .vocabulary import Vocabulary


def read_vocabulary(path: Any) -> Vocabulary:
    """A public vocabulary from a text file (optionally gzip): one item label per line.

    Surrounding white space is dropped and blank lines are skipped; labels
    keep their order as ids.

    Raises
    ------
    InputError
        A missing, binary or empty file, or a label listed twice (the
        message names the file and line).
    """
    p = Path(path)
    labels, seen = [], {}
    for number, line in enumerate(decode_text(p, read_bytes(p)).splitlines(), start=1):
        label = line.strip()
        if not label:
            continue
        if label in seen:
            raise InputError(f"{p}: line {number}: item {label!r} is listed twice "
                             f"(first on line {seen[label]})")
        seen[label] = number
        labels.append(label)
    if not labels:
        raise InputError(f"{p}: no item labels (expected one per line)")
    return Vocabulary(labels)


def public_vocabulary(vocab: Any) -> Vocabulary:
    """``vocab`` as a public :class:`~dpgpu.Vocabulary`.

    Parameters
    ----------
    vocab : Vocabulary, path-like or sequence of str
        A public vocabulary, a file for :func:`read_vocabulary`, or the
        labels in id order.

    Raises
    ------
    InvalidParameter
        A vocabulary taken from data, repeated labels or no labels.
    InputError
        From :func:`read_vocabulary`.
    """
    if isinstance(vocab, Vocabulary):
        if not vocab.public:
            raise InvalidParameter("vocab: this vocabulary was taken from the items of a "
                                   "dataset, so it is not public")
        return vocab
    if isinstance(vocab, (str, os.PathLike)):
        return read_vocabulary(vocab)
    try:
        labels = [str(x) for x in vocab]
        out = Vocabulary(labels)
    except TypeError:
        raise InvalidParameter(f"vocab: expected a Vocabulary, a file or a list of labels, "
                               f"got {type(vocab).__name__}") from None
    except ValueError:
        raise InvalidParameter("vocab: labels must be distinct") from None
    if not labels:
        raise InvalidParameter("vocab: no labels")
    return out


def check_vocab_format(vocab: Any, fmt: str, path: Any) -> None:
    """Refuse ``vocab=`` for a ``.seq`` input, whose header already declares the categories.

    (Its labels are the category numbers and its names the header's words;
    another vocabulary would renumber them.)
    """
    if vocab is not None and fmt == "seq":
        raise InvalidParameter(f"vocab: {path} is a .seq file, whose header declares its "
                               "categories; a vocabulary is for the other formats")


def label_ids(labels: list[str], vocab: Vocabulary, what: str) -> np.ndarray:
    """Id in ``vocab`` of each of ``labels``.

    Raises
    ------
    InputError
        Naming ``what`` (the data) and the first label missing from ``vocab``.
    """
    missing = [x for x in labels if x not in vocab]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise InputError(f"{what}: item {missing[0]!r}{more} not in the vocabulary given "
                         f"(vocab / --vocab): the public vocabulary must list every item")
    return np.array([vocab.id_of(x) for x in labels], dtype=np.int32)


def on_vocabulary(db: SequenceDB, vocab: Vocabulary, what: str) -> SequenceDB:
    """``db`` with its items re-encoded as ids of the public ``vocab`` (see :func:`label_ids`)."""
    ids = label_ids(db.vocab.labels, vocab, what)
    items = ids[db.items] if db.items.size else db.items.astype(np.int32)
    return SequenceDB(items, db.offsets, vocab, users=db.users, source=db.source)
