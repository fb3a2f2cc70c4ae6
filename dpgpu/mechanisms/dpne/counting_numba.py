"""Numba loops of DPNE's counting: bounded histograms, lookups, candidate keys, gram ids.

Imported only when used (it imports Numba).  They replace sorts and binary
searches over whole occurrence arrays by linear passes:

* each position's remaining sequence length takes one pass
  (:func:`remaining_lengths`),
* rows are grouped by user with a run scan (users already in order) or a
  counting sort on the user ids (:func:`user_runs`, :func:`group_by_user`),
* each user's few grams are sorted on their own (:func:`distinct_in_runs`),
* weights are added per gram in an open-addressing table keyed by the gram
  (:func:`add_runs`; the home slot of :func:`dpgpu.ops.grams_numba.key_table`),
  so only the distinct grams are sorted, once, at the end,
* the valid occurrences of a level and their candidate keys take one pass
  each (:func:`candidate_keys`),
* the DPSU baselines' gram codes are built by a merge walk
  (:func:`window_codes`) and ranked within their prefix's group
  (:func:`code_ranks`).

Every result is an exact function of the input (integers only, one
thread), so it equals what the sorting implementation gave.
"""

from __future__ import annotations

import numba
import numpy as np

from ...ops.grams_numba import home_slot

#: Runs up to this long are sorted by insertion (most users hold a handful of grams).
INSERTION_MAX = 16


@numba.njit(cache=True, nogil=True)
def remaining_lengths(offsets, cap):
    """``min(items left in its sequence, cap)`` at each position (:class:`.levels.Positions`).

    Parameters
    ----------
    offsets : (N + 1,) int64 array
        Sequence ``i`` is positions ``offsets[i] .. offsets[i + 1] - 1``.
    cap : int
        At most 255.

    Returns
    -------
    (offsets[-1],) uint8 array
    """
    out = np.empty(offsets[-1], dtype=np.uint8)
    for s in range(offsets.shape[0] - 1):
        end = offsets[s + 1]
        for p in range(offsets[s], end):
            out[p] = min(end - p, cap)
    return out


@numba.njit(cache=True, nogil=True)
def user_runs(users):
    """Starts and ids of the runs of equal ``users``, when ``users`` does not decrease.

    Parameters
    ----------
    users : (M,) integer array

    Returns
    -------
    starts : (S + 1,) int64 array
        Run ``j`` is rows ``starts[j] .. starts[j + 1] - 1``; empty (size 0)
        when ``users`` decreases somewhere.
    ids : (S,) int64 array
        The user of each run.
    """
    n = users.shape[0]
    runs = 1 if n else 0
    for i in range(1, n):
        if users[i] < users[i - 1]:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if users[i] != users[i - 1]:
            runs += 1
    starts = np.empty(runs + 1, dtype=np.int64)
    ids = np.empty(runs, dtype=np.int64)
    j = 0
    for i in range(n):
        if i == 0 or users[i] != users[i - 1]:
            starts[j] = i
            ids[j] = users[i]
            j += 1
    starts[runs] = n
    return starts, ids


@numba.njit(cache=True, nogil=True)
def group_by_user(users, grams, low, n_ids):
    """Counting sort of ``grams`` by user, users ascending, rows of a user in input order.

    Parameters
    ----------
    users : (M,) integer array
        Every value in ``low .. low + n_ids - 1``.
    grams : (M,) integer array
    low, n_ids : int

    Returns
    -------
    grouped : (M,) array of ``grams``' dtype
    starts : (S + 1,) int64 array
        Run ``j`` of ``grouped`` is rows ``starts[j] .. starts[j + 1] - 1``
        (one run per user present).
    ids : (S,) int64 array
        The user of each run, ascending.
    """
    head = np.zeros(n_ids + 1, dtype=np.int64)
    for i in range(users.shape[0]):
        head[users[i] - low + 1] += 1
    present = 0
    for u in range(n_ids):
        present += head[u + 1] > 0
        head[u + 1] += head[u]
    grouped = np.empty_like(grams)
    for i in range(users.shape[0]):   # head[u] ends as the start of user u + 1
        u = users[i] - low
        grouped[head[u]] = grams[i]
        head[u] += 1
    starts = np.empty(present + 1, dtype=np.int64)
    ids = np.empty(present, dtype=np.int64)
    j, lo = 0, 0
    for u in range(n_ids):
        if head[u] > lo:
            starts[j] = lo
            ids[j] = low + u
            j += 1
            lo = head[u]
    starts[present] = users.shape[0]
    return grouped, starts, ids


@numba.njit(cache=True, nogil=True)
def distinct_in_runs(values, starts, out):
    """The distinct values of each run of ``values``, ascending, run after run in ``out``.

    Short runs are insertion-sorted straight into ``out``, dropping repeats
    as they come; longer ones are copied, sorted and packed there.

    Parameters
    ----------
    values : (M,) integer array
        Read only.
    starts : (S + 1,) int64 array
        Run ``j`` is ``values[starts[j]:starts[j + 1]]`` (non-empty).
    out : integer array
        At least ``starts[-1] - starts[0]`` long; on return ``out[:t.sum()]``
        holds the distinct values of run 0 ascending, then those of run 1,
        and so on.

    Returns
    -------
    t : (S,) int64 array
        Distinct values per run.
    """
    n_runs = starts.shape[0] - 1
    t = np.empty(n_runs, dtype=np.int64)
    o = 0
    for j in range(n_runs):
        lo, hi = starts[j], starts[j + 1]
        first = o
        if hi - lo <= INSERTION_MAX:
            for i in range(lo, hi):
                v = values[i]
                k = o - 1
                while k >= first and out[k] > v:
                    k -= 1
                if k >= first and out[k] == v:
                    continue
                for m in range(o, k + 1, -1):
                    out[m] = out[m - 1]
                out[k + 1] = v
                o += 1
        else:
            run = out[first:first + hi - lo]
            run[:] = values[lo:hi]
            run.sort()
            for i in range(hi - lo):  # o <= first + i: the write never passes the read
                if o == first or run[i] != out[o - 1]:
                    out[o] = run[i]
                    o += 1
        t[j] = o - first
    return t


@numba.njit(cache=True, nogil=True)
def candidate_keys(valid, left, right, shift, n_right):
    """The valid k-gram occurrences and their candidate keys.

    The loop of :meth:`dpgpu.mechanisms.dpne.Occurrences.candidates`.

    Parameters
    ----------
    valid : (M,) bool array
        In: the positions where a length-``k`` window starts.  Out: those
        whose ``left`` and ``right[p + shift]`` are also ``>= 0``.
    left, right : (M,) integer arrays
        Released indices per position, -1 where none.
    shift : int
        Where the right part of the window at ``p`` is read: ``p + shift``.
    n_right : int
        Size of the right set.

    Returns
    -------
    (V,) int64 array
        ``left[p] * n_right + right[p + shift]`` of each valid ``p``, in order.
    """
    n = valid.shape[0]
    count = 0
    for p in range(n):
        if valid[p]:
            if left[p] >= 0 and p + shift < n and right[p + shift] >= 0:
                count += 1
            else:
                valid[p] = False
    cand = np.empty(count, dtype=np.int64)
    c = 0
    for p in range(n):
        if valid[p]:
            cand[c] = np.int64(left[p]) * n_right + right[p + shift]
            c += 1
    return cand


@numba.njit(cache=True, nogil=True)
def _insert(slots, bits, key, weight):
    """Add ``weight`` to ``key``'s slot (claimed when new); 1 when the key was new, else 0."""
    mask = (1 << bits) - 1
    h = home_slot(key, bits)
    while slots[h, 0] != -1 and slots[h, 0] != key:
        h = (h + 1) & mask
    slots[h, 1] += weight
    if slots[h, 0] == -1:
        slots[h, 0] = key
        return 1
    return 0


@numba.njit(cache=True, nogil=True)
def add_runs(slots, count, grams, t, keep, weights):
    """Add each run's weight to its kept grams in a table of sums keyed by gram.

    The table (open addressing, linear probing, the Fibonacci home slot of
    :func:`dpgpu.ops.grams_numba.key_table`; a slot's gram and sum side by
    side, one cache line) is doubled whenever it would become more than
    three quarters full, so it may be returned as a new array.

    Parameters
    ----------
    slots : (2**b, 2) int64 array
        ``slots[h]``: a gram (-1 while empty) and the sum of the weights
        added to it.
    count : int
        Slots in use.
    grams : (P,) integer array, ``>= 0``
        The runs' grams, run after run (:func:`distinct_in_runs`).
    t : (S,) int64 array
        Grams per run.
    keep : (P,) bool array
        Which grams take their run's weight.
    weights : (S,) int64 array
        The weight of each run's kept grams.

    Returns
    -------
    slots, count
    """
    bits = 0
    while (1 << bits) < slots.shape[0]:
        bits += 1
    i = 0
    for j in range(t.shape[0]):
        w = weights[j]
        for _ in range(t[j]):
            if keep[i]:
                if 4 * (count + 1) > 3 * slots.shape[0]:
                    slots = _doubled(slots, bits)
                    bits += 1
                count += _insert(slots, bits, grams[i], w)
            i += 1
    return slots, count


@numba.njit(cache=True, nogil=True)
def _doubled(slots, bits):
    """The table of :func:`add_runs` rehashed into twice the slots."""
    out = np.zeros((2 * slots.shape[0], 2), dtype=np.int64)
    out[:, 0] = -1
    for h in range(slots.shape[0]):
        if slots[h, 0] != -1:
            _insert(out, bits + 1, slots[h, 0], slots[h, 1])
    return out


@numba.njit(cache=True, nogil=True)
def window_codes(prev_starts, prev_ids, starts, items, k, radix):
    """Codes ``prefix id * radix + last item`` of the length-``k`` windows at ``starts``.

    Parameters
    ----------
    prev_starts, prev_ids : (W,) int64 arrays
        The length-``k - 1`` windows (ascending starts) and their gram ids.
    starts : (V,) int64 array
        Ascending starts of the length-``k`` windows: each is in
        ``prev_starts`` (a window that fits also fits shortened by one).
    items : integer array
    k, radix : int

    Returns
    -------
    (V,) int64 array
    """
    out = np.empty(starts.shape[0], dtype=np.int64)
    j = 0
    for i in range(starts.shape[0]):
        s = starts[i]
        while prev_starts[j] < s:  # a merge walk: both are ascending
            j += 1
        out[i] = prev_ids[j] * radix + items[s + k - 1]
    return out


@numba.njit(cache=True, nogil=True)
def code_ranks(codes, values, radix):
    """``numpy.searchsorted(values, codes)`` for the sorted, non-negative ``values``.

    ``values`` is cut into groups of equal ``value // radix`` (one start per
    group, found in one pass), and each code is searched for in its own
    group only: a few entries, on one or two cache lines, instead of a
    binary search over all of ``values``.

    Parameters
    ----------
    codes : (M,) int64 array
    values : (U,) int64 array
        Sorted, ``>= 0``.
    radix : int
        ``>= 1``.

    Returns
    -------
    (M,) int64 array
        The first index ``i`` with ``values[i] >= codes[j]`` (``U`` when none).
    """
    n = values.shape[0]
    groups = values[n - 1] // radix + 1 if n else 0
    first = np.empty(groups + 1, dtype=np.int64)  # first[g]: the first value of group >= g
    i = 0
    for g in range(groups + 1):
        while i < n and values[i] // radix < g:
            i += 1
        first[g] = i
    out = np.empty(codes.shape[0], dtype=np.int64)
    for j in range(codes.shape[0]):
        c = codes[j]
        if c < 0:
            out[j] = 0
            continue
        g = c // radix
        if g >= groups:
            out[j] = n
            continue
        lo, hi = first[g], first[g + 1]
        while lo < hi:
            mid = (lo + hi) >> 1
            if values[mid] < c:
                lo = mid + 1
            else:
                hi = mid
        out[j] = lo
    return out
