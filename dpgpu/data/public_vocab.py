"""A public item vocabulary supplied by the user, and data re-encoded on it.

Readers of formats without a declared item universe (every format but the
UCI ``.seq`` header) take the vocabulary from the items that occur, which is
a statistic of the data (:attr:`dpgpu.Vocabulary.public` is False).  A user
who knows the universe in advance (a product catalogue, an activity list, a
dictionary) passes it as ``vocab=`` / ``--vocab FILE``: items that never
occur are then part of it too, and the release may show it.

A file is matched to such a vocabulary by its items' labels, except where
the file names its items: SPMF text numbers items and names them in
``@ITEM=id=name`` lines, and those names are what the vocabulary lists; a
``.seq`` header already declares the categories, so a vocabulary given with
it must list exactly those names.  A file written on a public vocabulary
(:mod:`dpgpu.data.writers`) thus reads back on it with the same item ids.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError, InvalidParameter
from .io import decode_text, read_bytes
from .sequencedb import SequenceDB
from .vocabulary import Vocabulary, check_ordered


#: What ends a line of a vocabulary file (not the other breaks of :meth:`str.splitlines`,
#: which a label may hold).
_LINE_END = re.compile(r"\r\n|\r|\n")


def read_vocabulary(path: Any) -> Vocabulary:
    """A public vocabulary from a text file (optionally gzip): one item label per line.

    A label is its line without the line end (``\\n``, ``\\r\\n`` or ``\\r``):
    white space around it is kept, as the readers keep it in a CSV cell or
    an ``@ITEM`` name, so that such labels can be listed.  Blank lines
    (empty, or white space only: no reader gives a blank label) are
    skipped; labels keep their order as ids.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    Vocabulary
        Public, with the labels in the file's order.

    Raises
    ------
    InputError
        A missing, binary or empty file, or a label listed twice (the
        message names the file and line).
    """
    p = Path(path)
    labels, seen = [], {}
    for number, label in enumerate(_LINE_END.split(decode_text(p, read_bytes(p))), start=1):
        if not label.strip():
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

    Returns
    -------
    Vocabulary
        ``vocab`` itself when it is a public Vocabulary, else a new one.

    Raises
    ------
    InvalidParameter
        A vocabulary taken from data, a set (no order), repeated labels or no
        labels.
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
    check_ordered(vocab, "vocab")
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


def check_seq_header(header_names: list[str], vocab: Vocabulary, what: str) -> None:
    """Accept ``vocab`` for a ``.seq`` file only if it lists exactly the header's categories.

    A ``.seq`` file numbers its items by the header's categories, so the
    file keeps its ids; ``vocab``'s labels (or names) must be the header's
    names, in order.

    Parameters
    ----------
    header_names : list of str or None
        The categories the file's header declares, in order.
    vocab : Vocabulary
        The public vocabulary given.
    what : str
        The file, for the message.

    Raises
    ------
    InvalidParameter
        The header declares other categories.
    """
    if list(header_names or []) not in (list(vocab.labels), list(vocab.names or [])):
        raise InvalidParameter(f"vocab: {what} is a .seq file, whose header declares its "
                               "categories; a vocabulary given with it must list exactly "
                               "those names, in the header's order")


def label_ids(labels: list[str], vocab: Vocabulary, what: str) -> np.ndarray:
    """Id in ``vocab`` of each of ``labels``.

    Parameters
    ----------
    labels : list of str
        Item labels (as :func:`item_keys` gives them).
    vocab : Vocabulary
        The public vocabulary.
    what : str
        The data, for the message.

    Returns
    -------
    numpy.ndarray of int32
        One id per label, in order.

    Raises
    ------
    InputError
        Naming ``what`` (the data) and the first label missing from ``vocab``.
    """
    missing = [x for x in labels if x not in vocab]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        near = next((x for x in vocab.labels if x.strip() == missing[0].strip()), None)
        near = f" (it lists {near!r}: labels are matched exactly, white space too)" \
            if near is not None else ""
        raise InputError(f"{what}: item {missing[0]!r}{more} not in the vocabulary given "
                         f"(vocab / --vocab): the public vocabulary must list every "
                         f"item{near}")
    return np.array([vocab.id_of(x) for x in labels], dtype=np.int32)


def item_keys(labels: list[str], source: dict, what: str) -> list[str]:
    """The label under which each item of a file is looked up in a public vocabulary.

    An item of an SPMF file (``source["format"] == "spmf"``) that an
    ``@ITEM=id=name`` line names (``source["names"]``) is looked up by its
    name; any other item by its label.

    Parameters
    ----------
    labels : list of str
        The file's item labels.
    source : dict
        The ``source`` of the database read from the file.
    what : str
        The file, for messages.

    Returns
    -------
    list of str
        One key per label, in order: its ``@ITEM`` name, or the label itself.

    Raises
    ------
    InputError
        Two items of the file stand for the same label (two equal names, or
        a name equal to an unnamed item's number).
    """
    names = source.get("names") if source.get("format") == "spmf" else None
    if not names:
        return list(labels)
    keys = [names.get(label, label) for label in labels]
    first: dict[str, str] = {}
    for label, key in zip(labels, keys):
        if key in first:
            raise InputError(f"{what}: items {first[key]} and {label} both stand for {key!r} "
                             "(@ITEM names), so a vocabulary cannot tell them apart")
        first[key] = label
    return keys


def public_ids(labels: list[str], names: Any, source: dict, vocab: Vocabulary,
               what: str) -> np.ndarray | None:
    """Ids in the public ``vocab`` of the items ``labels`` read from the file ``what``.

    Items are matched by :func:`item_keys` (see :func:`label_ids`).  A
    ``.seq`` file (``source["format"]``) keeps its category ids instead, so
    that ``None`` is returned once its header's ``names`` are checked to be
    ``vocab``'s labels (or names), in order.

    Parameters
    ----------
    labels : list of str
        The labels of the file's items, in their id order.
    names : list of str or None
        The categories a ``.seq`` file's header declares (else unused).
    source : dict
        The ``source`` of the database read from the file.
    vocab : Vocabulary
        The public vocabulary.
    what : str
        The file, for messages.

    Returns
    -------
    numpy.ndarray of int32 or None
        The id in ``vocab`` of each of the file's items (indexed by the item's
        id in the file), or ``None`` for a ``.seq`` file, whose ids stand.

    Raises
    ------
    InputError
        From :func:`item_keys` and :func:`label_ids`.
    InvalidParameter
        A ``.seq`` header that declares other categories than ``vocab``
        (:func:`check_seq_header`).
    """
    if source.get("format") == "seq":
        check_seq_header(names, vocab, what)
        return None
    return label_ids(item_keys(labels, source, what), vocab, what)


def on_vocabulary(db: SequenceDB, vocab: Vocabulary, what: str) -> SequenceDB:
    """``db``, read from the file ``what``, with its items as ids of the public ``vocab``
    (:func:`public_ids`, whose errors it raises).

    Parameters
    ----------
    db : SequenceDB
        The database as read, in the vocabulary of the items that occur (or a
        ``.seq`` header's).
    vocab : Vocabulary
        The public vocabulary.
    what : str
        The file, for messages.

    Returns
    -------
    SequenceDB
        The same sequences, users and ``source``, in ``vocab``.
    """
    ids = public_ids(db.vocab.labels, db.vocab.names, db.source, vocab, what)
    items = db.items if ids is None else ids[db.items] if db.items.size \
        else db.items.astype(np.int32)
    return SequenceDB(items, db.offsets, vocab, users=db.users, source=db.source)
