"""Numba loop of DPNE's contribution bounding (:func:`.histogram.bounded_pairs`).

Imported only when used (it imports Numba).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def smallest_per_user(users, words, cap):
    """Mask of the ``cap`` rows with the smallest ``words`` in each run of equal ``users``.

    Ties go to the earlier row (a stable sort), so the mask equals what a
    ``lexsort((words, users))`` of rows already grouped by user selects.

    Parameters
    ----------
    users : (M,) int64 array
        Rows of one user are contiguous.
    words : (M,) uint64 array
    cap : int

    Returns
    -------
    (M,) bool array
    """
    n = users.shape[0]
    keep = np.zeros(n, dtype=np.bool_)
    i = 0
    while i < n:
        j = i + 1
        while j < n and users[j] == users[i]:
            j += 1
        if j - i <= cap:
            keep[i:j] = True
        else:
            order = np.argsort(words[i:j], kind="mergesort")
            for k in range(cap):
                keep[i + order[k]] = True
        i = j
    return keep
