"""Per-user contribution bounding and level lookups as whole-array operations (NumPy or CuPy).

The array path of DPNE's levels (:mod:`dpgpu.mechanisms.dpne.device`), for
the GPU: sorts, searches and scans over whole arrays where the host path
runs Numba loops (:mod:`dpgpu.mechanisms.dpne.counting_numba`,
:mod:`dpgpu.mechanisms.dpne.subset_numba`), with the same results bit for
bit.  Every function takes and returns arrays of its inputs' namespace.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..errors import InvalidParameter
from .keys import array_module
from .levels import run_sums

#: Users and per-user gram ranks each take 32 bits of a subset-choice identity.
IDENTITY_BITS = 32


def stable_argsort(a: Any):
    """Indices that sort ``a``, equal values in their input order (CuPy's sort is stable)."""
    xp = array_module(a)
    return xp.argsort(a, kind="stable") if xp is np else xp.argsort(a)


def remaining_lengths(offsets: Any, cap: int):
    """``min(items left in its sequence, cap)`` at each position, as uint8.

    Parameters
    ----------
    offsets : (N + 1,) int64 array
        Sequence ``i`` is positions ``offsets[i] .. offsets[i + 1] - 1``.
    cap : int
        At most 255.
    """
    xp = array_module(offsets)
    p = xp.arange(int(offsets[-1]), dtype=xp.int64)
    end = offsets[xp.searchsorted(offsets, p, side="right")]
    return xp.minimum(end - p, cap).astype(xp.uint8)


def candidate_keys(valid: Any, left: Any, right: Any, shift: int, n_right: int):
    """The valid k-gram occurrences and their candidate keys.

    Parameters
    ----------
    valid : (M,) bool array
        The positions where a length-``k`` window starts (not modified).
    left, right : (M,) integer arrays
        Released indices per position, -1 where none.
    shift : int
        The right part of the window at ``p`` is ``right[p + shift]``.
    n_right : int
        Size of the right set.

    Returns
    -------
    valid : (M,) bool array
        Those of ``valid`` whose ``left[p]`` and ``right[p + shift]`` are ``>= 0``.
    cand : (V,) int64 array
        ``left[p] * n_right + right[p + shift]`` of each valid ``p``, in order.
    """
    xp = array_module(valid)
    n = valid.size
    ahead = xp.full(n, -1, dtype=xp.int64)
    if shift < n:
        ahead[:n - shift] = right[shift:]
    valid = valid & (left >= 0) & (ahead >= 0)
    return valid, left[valid].astype(xp.int64) * n_right + ahead[valid]


def index_of(values: Any, released: Any, dtype: Any = np.int64):
    """Index of each value in the sorted ``released``, -1 where absent (a binary search each).

    Parameters
    ----------
    values : (M,) integer array
    released : (R,) integer array
        Sorted and distinct, of the same namespace.
    dtype : type
        Of the result (indices below ``R`` and -1 must fit it).
    """
    xp = array_module(values)
    if released.size == 0:
        return xp.full(values.size, -1, dtype=dtype)
    at = xp.minimum(xp.searchsorted(released, values), released.size - 1)
    return xp.where(released[at] == values, at, -1).astype(dtype)


def _run_starts(sorted_values: Any):
    """Per row of ``sorted_values`` (grouped): the index of its run's first row."""
    xp = array_module(sorted_values)
    first = xp.ones(sorted_values.size, dtype=bool)
    first[1:] = sorted_values[1:] != sorted_values[:-1]
    starts = xp.flatnonzero(first)
    return starts[xp.cumsum(first) - 1]


def distinct_user_grams(users: Any, grams: Any):
    """The distinct ``(user, gram)`` rows, sorted by user then gram, with counts and ranks.

    Returns
    -------
    users, grams : (P,) int64 arrays
    held : (P,) int64 array
        How many distinct grams the row's user holds.
    rank : (P,) int64 array
        The row's place among its user's grams (ascending gram: 0, 1, ...).
    """
    xp = array_module(users)
    u, g = users.astype(xp.int64), grams.astype(xp.int64)
    order = stable_argsort(g)
    order = order[stable_argsort(u[order])]
    u, g = u[order], g[order]
    new = xp.ones(u.size, dtype=bool)
    new[1:] = (u[1:] != u[:-1]) | (g[1:] != g[:-1])
    u, g = u[new], g[new]
    start = _run_starts(u)
    rank = xp.arange(u.size, dtype=xp.int64) - start
    ends = xp.concatenate([xp.flatnonzero(u[1:] != u[:-1]) + 1,
                           xp.asarray([u.size], dtype=xp.int64)])
    held = ends[xp.searchsorted(ends, start, side="right")] - start
    return u, g, held, rank


def kept_rows(users: Any, held: Any, rank: Any, max_items: int,
              words: Callable[[Any], Any]):
    """Mask of the rows each user keeps: all when it holds at most ``max_items``, else the
    ``max_items`` with the smallest keyed words (ties to the lower rank).

    Parameters
    ----------
    users, held, rank : (P,) int64 arrays
        Of :func:`distinct_user_grams`.
    max_items : int
    words : callable
        ``words(identities)``: uint64 keyed words of the identities ``user *
        2**32 + rank`` (uint64) of the rows of users holding more.

    Raises
    ------
    InvalidParameter
        Where such a user id or rank needs more than 32 bits.
    """
    xp = array_module(users)
    keep = held <= max_items
    over = xp.flatnonzero(~keep)
    if over.size == 0:
        return keep
    u, r = users[over], rank[over]
    if int(u.max()) >= 2 ** IDENTITY_BITS or int(r.max()) >= 2 ** IDENTITY_BITS:
        raise InvalidParameter("contribution bounding: more than 2**32 users, or a user "
                               "with more than 2**32 distinct grams")
    w = words((u.astype(xp.uint64) << xp.uint64(IDENTITY_BITS)) | r.astype(xp.uint64))
    order = stable_argsort(w)                # rows are in (user, rank) order: ties keep it
    order = order[stable_argsort(u[order])]
    place = xp.arange(order.size, dtype=xp.int64) - _run_starts(u[order])
    keep[over[order[place < max_items]]] = True
    return keep


def gram_sums(grams: Any, weights: Any):
    """Sorted distinct ``grams`` (int64) and the exact sum of ``weights`` per gram."""
    xp = array_module(grams)
    grams = grams.astype(xp.int64, copy=False)
    order = stable_argsort(grams)
    return run_sums(grams[order], weights.astype(xp.int64, copy=False)[order])


def bounded_sums(users: Any, grams: Any, max_items: int, weight_of: Any,
                 words: Callable[[Any], Any], *, bound: bool = True):
    """Distinct grams and the sum of their users' weights after contribution bounding.

    Each user keeps its :func:`kept_rows` and adds ``weight_of[min(t,
    max_items)]`` to each, ``t`` being the number of distinct grams it holds.

    Parameters
    ----------
    users, grams : (M,) integer arrays
        One row per occurrence (duplicates allowed), both ``>= 0``.
    max_items : int
    weight_of : (max_items + 1,) int64 array
        Of the same namespace.
    words : callable
        As for :func:`kept_rows`.
    bound : bool
        ``False`` keeps every gram (an audit's broken variant only).

    Returns
    -------
    grams : (U,) int64, sorted
    weights : (U,) int64
    """
    xp = array_module(users)
    if users.size == 0:
        empty = xp.zeros(0, dtype=xp.int64)
        return empty, empty.copy()
    u, g, held, rank = distinct_user_grams(users, grams)
    keep = kept_rows(u, held, rank, max_items, words) if bound else xp.ones(u.size, dtype=bool)
    weights = weight_of[xp.minimum(held, max_items)]
    return gram_sums(g[keep], weights[keep])


def merged_sums(parts: list[tuple[Any, Any]]):
    """The sum of several ``(grams, weights)`` histograms (each sorted and distinct)."""
    if len(parts) == 1:
        return parts[0]
    xp = array_module(parts[0][0])
    return gram_sums(xp.concatenate([g for g, _ in parts]), xp.concatenate([w for _, w in parts]))
