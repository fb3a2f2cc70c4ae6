"""Item labels and the integer ids dpgpu computes with."""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

END_LABEL = "&"
START_LABEL = "$"


class Vocabulary:
    """A bijection between item labels (strings) and ids ``0 .. size-1``.

    Two marker ids follow the items: ``end_id == size`` stands for the end
    marker ``&`` and ``start_id == size + 1`` for the start marker ``$``.
    They never occur in a :class:`~dpgpu.data.SequenceDB`'s items; operations
    add them where a mechanism asks for them.

    Parameters
    ----------
    labels : sequence of str
        The item labels, in id order.  Labels must be distinct.
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

    Attributes
    ----------
    public : bool
    """

    def __init__(self, labels: Sequence[str], names: Sequence[str] | None = None, *,
                 public: bool = True):
        self.public = bool(public)
        self.labels = [str(x) for x in labels]
        if len(set(self.labels)) != len(self.labels):
            raise ValueError("vocabulary labels must be distinct")
        if names is not None and len(names) != len(self.labels):
            raise ValueError("one name per label is needed")
        self.names = list(names) if names is not None else None
        self._index = {label: i for i, label in enumerate(self.labels)}

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
        """Whether ``label`` is one of the items (markers excluded)."""
        return label in self._index

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.labels == other.labels

    def __repr__(self) -> str:
        head = ", ".join(self.labels[:5]) + (", ..." if self.size > 5 else "")
        origin = "" if self.public else ", from the data"
        return f"Vocabulary({self.size} items{origin}: {head})"

    def id_of(self, label: str) -> int:
        """Id of ``label`` (markers ``&`` and ``$`` included)."""
        if label in self._index:
            return self._index[label]
        if label == END_LABEL:
            return self.end_id
        if label == START_LABEL:
            return self.start_id
        raise KeyError(label)

    def label_of(self, ident: int) -> str:
        """Label of id ``ident`` (marker ids give ``&`` and ``$``)."""
        ident = int(ident)
        if 0 <= ident < self.size:
            return self.labels[ident]
        if ident == self.end_id:
            return END_LABEL
        if ident == self.start_id:
            return START_LABEL
        raise KeyError(ident)

    def decode(self, ids: Iterable[int]) -> tuple[str, ...]:
        """Labels of a sequence of ids."""
        return tuple(self.label_of(i) for i in ids)

    def encode(self, labels: Iterable[str]) -> np.ndarray:
        """Ids (int32) of a sequence of labels."""
        return np.array([self.id_of(x) for x in labels], dtype=np.int32)
