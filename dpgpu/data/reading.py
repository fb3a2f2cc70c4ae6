"""What the file readers share: values numbered as they come, block by block.

Readers that go through a large file a block at a time (CSV and XES event
logs, text of words) turn each block's strings into integer codes at once,
so that no string is kept per event.
"""

from __future__ import annotations

import numpy as np


def encode_values(values: list, table: dict) -> np.ndarray:
    """The number of each value in ``table``, where new values are numbered as they come.

    Parameters
    ----------
    values : list of hashable
        One block's values.
    table : dict
        Value -> number, shared by the blocks of a file; updated in place.

    Returns
    -------
    numpy.ndarray of int64
        ``table[v]`` for each value ``v``.
    """
    distinct, inverse = distinct_values(values)
    numbers = np.fromiter((table.setdefault(v, len(table)) for v in distinct), dtype=np.int64,
                          count=len(distinct))
    return numbers[inverse]


def distinct_values(values: list) -> tuple[list, np.ndarray]:
    """The distinct values in order of first appearance, and each value's index among them.

    Parameters
    ----------
    values : list of hashable

    Returns
    -------
    distinct : list
    inverse : numpy.ndarray of int64
        ``distinct[inverse[i]] == values[i]``.
    """
    index = dict.fromkeys(values)
    for i, value in enumerate(index):
        index[value] = i
    return list(index), np.fromiter(map(index.__getitem__, values), dtype=np.int64,
                                    count=len(values))
