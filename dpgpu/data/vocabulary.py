"""Item labels and the integer ids dpgpu computes with."""

from __future__ import annotations

import math
import numbers
from collections.abc import KeysView, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import InvalidParameter, UnknownLabel
from ..validation import check_bool

END_LABEL = "&"
START_LABEL = "$"


#: Why a value is refused as an item label (after the value, in messages).
NOT_A_LABEL = ("which is not an item label: labels are strings or finite numbers (a missing "
               "value, NaN, a boolean or bytes would become a made-up item)")


def item_label(value: Any) -> str | None:
    """``value`` as an item's text, or None where it is not a label.

    A string as it is; a finite real number as it prints, an integral one
    as the integer (so that ``1.0`` and ``1`` are one item, as ``1`` and
    ``"1"`` are); None for anything else (None, NaN, infinities, booleans,
    bytes, other objects).

    Parameters
    ----------
    value : any

    Returns
    -------
    str or None
    """
    if isinstance(value, str):
        return str(value)
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) \
            and math.isfinite(value):
        return str(int(value)) if float(value).is_integer() else str(value)
    return None


class Vocabulary:
    """A bijection between item labels (strings) and ids ``0 .. size-1``.

    Two marker ids follow the items: ``end_id == size`` stands for the end
    marker ``&`` and ``start_id == size + 1`` for the start marker ``$``.
    They never occur in a :class:`~dpgpu.data.SequenceDB`'s items; operations
    add them where a mechanism asks for them.

    Parameters
    ----------
    labels : sequence of str
        The item labels, in id order (entries are turned into strings, so
        ``[1, 2]`` gives ``["1", "2"]``).  Labels must be distinct.  A set
        is refused: its order, and so the ids, would change from one Python
        session to the next (pass ``sorted(...)``).
    names : sequence of str, optional
        Human-readable names, one per label (UCI ``.seq`` category names,
        SPMF ``@ITEM`` names).  Labels stay what the input file wrote.
    public : bool
        Whether the item universe is public knowledge, fixed before the data
        was seen: a ``.seq`` header, a vocabulary the user supplies, a
        generator's alphabet (the default for a vocabulary built by hand).
        The readers set ``False`` when the labels are the items that occur in
        the data: the labels, their number and anything computed from them
        then depend on the data, so a release that shows them is not
        differentially private (mechanisms say so in their report).
    name : str
        The parameter that ``labels`` came from, named in errors.

    Attributes
    ----------
    public : bool

    Raises
    ------
    InvalidParameter
        When ``labels`` is a string, a set or not iterable, lists a label
        twice, ``names`` does not give one name per label, or ``public`` is
        not a bool.
    """

    def __init__(self, labels: Sequence[str], names: Sequence[str] | None = None, *,
                 public: bool = True, name: str = "labels"):
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
            raise InvalidParameter(f"{name}: pass a sequence of labels (a list such as "
                                   f"['a', 'b']), got {labels!r}")
        check_ordered(labels, name)
        self.public = check_bool(public, "public")
        self.labels = [str(x) for x in labels]
        self._index = {label: i for i, label in enumerate(self.labels)}
        if len(self._index) != len(self.labels):  # a repeated label keeps its last id
            first, label = next((i, x) for i, x in enumerate(self.labels) if self._index[x] != i)
            raise InvalidParameter(f"{name}: {label!r} is listed more than once (ids {first} "
                                   f"and {self._index[label]}); labels must be distinct")
        if names is not None and len(names) != len(self.labels):
            raise InvalidParameter(f"names: one name per label is needed ({len(self.labels)}), "
                                   f"got {len(names)}")
        self.names = list(names) if names is not None else None

    @property
    def size(self) -> int:
        """Number of items (markers excluded)."""
        return len(self.labels)

    @property
    def end_id(self) -> int:
        """Id of the end marker ``&``."""
        return self.size

    @property
    def start_id(self) -> int:
        """Id of the start marker ``$``."""
        return self.size + 1

    def __len__(self) -> int:
        return self.size

    def __contains__(self, label: object) -> bool:
        """Whether ``label`` is one of the items (markers excluded).

        Labels are strings: anything else (a number, a list) is not in the
        vocabulary, even where its text is a label.
        """
        return isinstance(label, str) and label in self._index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.labels == other.labels

    def __repr__(self) -> str:
        head = ", ".join(self.labels[:5]) + (", ..." if self.size > 5 else "")
        origin = "" if self.public else ", from the data"
        return f"Vocabulary({self.size} items{origin}: {head})"

    def id_of(self, label: str) -> int:
        """Id of ``label``: an item, else the marker ``&`` or ``$``.

        An item label wins: ``"&"`` is the end marker only when no item has
        that label (likewise ``"$"``).

        Parameters
        ----------
        label : str
            An item label, ``"&"`` or ``"$"``.

        Returns
        -------
        int
            The item's id, :attr:`end_id` or :attr:`start_id`.

        Raises
        ------
        dpgpu.errors.UnknownLabel
            When ``label`` is neither an item nor a marker (a non-string
            never is one); the message names it.  It is both an
            :class:`~dpgpu.errors.InvalidParameter` and a :class:`KeyError`.
        """
        if label in self:
            return self._index[label]
        if label == END_LABEL:
            return self.end_id
        if label == START_LABEL:
            return self.start_id
        raise UnknownLabel(f"label: {label!r} is neither an item of the vocabulary nor the "
                           f"marker {END_LABEL!r} or {START_LABEL!r}")

    def label_of(self, ident: int) -> str:
        """Label of id ``ident`` (marker ids give ``&`` and ``$``).

        Parameters
        ----------
        ident : int
            An item id (``0 .. size-1``), :attr:`end_id` or :attr:`start_id`.

        Returns
        -------
        str

        Raises
        ------
        InvalidParameter
            When ``ident`` is not an integer or is none of these ids (the
            message names it and the vocabulary's size).
        """
        return self._label(ident, "ident")

    def decode(self, ids: Iterable[int]) -> tuple[str, ...]:
        """Labels of a sequence of ids.

        Parameters
        ----------
        ids : iterable of int
            Item ids and marker ids.

        Returns
        -------
        tuple of str

        Raises
        ------
        InvalidParameter
            When an id is not an integer or is neither an item's nor a
            marker's, as :meth:`label_of`.
        """
        return tuple(self._label(i, "ids") for i in ids)

    def _label(self, ident: Any, name: str) -> str:
        """:meth:`label_of`, naming parameter ``name`` in errors."""
        if isinstance(ident, bool) or not isinstance(ident, numbers.Integral):
            raise InvalidParameter(f"{name}: expected integer ids, got {ident!r}")
        ident = int(ident)
        if 0 <= ident < self.size:
            return self.labels[ident]
        if ident == self.end_id:
            return END_LABEL
        if ident == self.start_id:
            return START_LABEL
        raise InvalidParameter(f"{name}: {ident} is not an id of this vocabulary of size "
                               f"{self.size}: ids are 0 .. {self.start_id} ({self.end_id} is "
                               f"{END_LABEL!r}, {self.start_id} is {START_LABEL!r})")

    def encode(self, labels: Iterable[Any], *, name: str = "labels",
               markers: Sequence[str] = (END_LABEL, START_LABEL)) -> np.ndarray:
        """Ids (int32) of a sequence of labels, every one checked.

        Entries are turned into strings first (:func:`item_label`), as
        :meth:`SequenceDB.from_sequences <dpgpu.data.sequencedb.SequenceDB.from_sequences>`
        does, so ``[1, 2.0]`` reads as ``["1", "2"]``.  An item label wins over
        a marker (:meth:`id_of`).

        Parameters
        ----------
        labels : sequence of labels
            Not a single string: ``"12"`` is not read as ``["1", "2"]``.
        name : str
            The parameter named in errors.
        markers : sequence of str
            The markers (``"&"``, ``"$"``) accepted where no item has that
            label; ``()`` accepts items only.

        Returns
        -------
        numpy.ndarray of int32

        Raises
        ------
        InvalidParameter
            When ``labels`` is a string or not iterable, or holds a value that
            is not a label (None, NaN, a boolean, bytes) or a label that is
            neither an item nor one of ``markers`` (the message names it).
        """
        if isinstance(labels, (str, bytes)) or not isinstance(labels, Iterable):
            raise InvalidParameter(f"{name}: pass a sequence of labels (a list such as "
                                   f"['a', 'b']), got {labels!r}")
        ids = []
        for value in labels:
            label = item_label(value)
            if label is None:
                raise InvalidParameter(f"{name}: {value!r:.60}, {NOT_A_LABEL}")
            if label not in self._index and label not in markers:
                raise InvalidParameter(f"{name}: {label!r} is not in the vocabulary")
            ids.append(self.id_of(label))
        return np.array(ids, dtype=np.int32)

    def encode_string(self, labels: Iterable[Any], *, name: str = "labels") -> np.ndarray:
        """Ids (int32) of a non-empty item string that the end marker ``&`` may end.

        The strings whose counts the releases estimate
        (:meth:`NGramRelease.estimate <dpgpu.mechanisms.ngram.NGramRelease.estimate>`,
        :meth:`PSTRelease.estimate <dpgpu.mechanisms.privtree.pst.PSTRelease.estimate>`).
        Labels are read as :meth:`encode` reads them: ``"&"`` is the end
        marker only when no item has that label.

        Parameters
        ----------
        labels : sequence of labels
            Items, optionally followed by ``"&"``.
        name : str
            The parameter named in errors.

        Returns
        -------
        numpy.ndarray of int32

        Raises
        ------
        InvalidParameter
            As :meth:`encode` (``"$"`` is not accepted), when ``labels`` is a
            set or a mapping (their order is no string's), or when the
            string holds no item or ``&`` is not its last symbol.
        """
        if is_unordered(labels) or isinstance(labels, Mapping):
            raise InvalidParameter(f"{name}: expected the string's labels in order (a list "
                                   f"such as ['a', 'b']), got a {type(labels).__name__}")
        ids = self.encode(labels, name=name, markers=(END_LABEL,))
        if not ids.size or ids[0] == self.end_id:
            raise InvalidParameter(f"{name}: the string holds no item; pass at least one item "
                                   f"label (then {END_LABEL!r} if it ends a sequence)")
        if np.any(ids[:-1] == self.end_id):
            raise InvalidParameter(f"{name}: the end marker {END_LABEL!r} may only end the string")
        return ids


def is_unordered(values: Any) -> bool:
    """Whether iterating ``values`` may give another order in another Python session.

    Sets (``set``, ``frozenset`` and other :class:`collections.abc.Set`)
    iterate in an order that depends on string hashing, which
    ``PYTHONHASHSEED`` changes; a dict's keys keep their insertion order.

    Parameters
    ----------
    values : any
        The collection given.

    Returns
    -------
    bool
    """
    return isinstance(values, AbstractSet) and not isinstance(values, KeysView)


def check_ordered(values: Any, name: str) -> None:
    """Refuse, naming ``name``, a collection whose order may change between sessions.

    Raises
    ------
    InvalidParameter
        When :func:`is_unordered` is true of ``values``.
    """
    if is_unordered(values):
        raise InvalidParameter(f"{name}: a {type(values).__name__} has no order, so the item "
                               "ids would change between Python sessions; pass a list (e.g. "
                               "sorted(...))")
