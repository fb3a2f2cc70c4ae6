"""The integer Policy-Laplace update of DPSU (Gopi et al., ICML'20), one user at a time.

Users are processed in order; each adds ``budget`` units to its kept
grams, one unit at a time, each unit to the kept gram of lowest current
weight below the cutoff ``Gamma`` (ties: the gram first in the tie order),
and stops early when all its grams reach ``Gamma``.  This is the integer
form of the paper's l1-descent ("water filling") towards ``Gamma``, computed
per user in closed form by :func:`water_fill`.

The proof below needs both orders to be the same on neighbouring datasets
for everything the two share, and ids cannot give that: a user's id or an
item's id is a rank that one added user can reshuffle (a string user label
among integer ones renumbers every user by first appearance; a
non-numeric token turns the numeric sort of a vocabulary taken from the
data into a text sort).  So :func:`fill_order` takes

* the users in a keyed random order: by two keyed 64-bit words per user,
  which under the coupling of the module doc of :mod:`.baselines` (by
  content) are the same for a user on both neighbours, whatever its id.
  Only a tie of all 128 bits between two users falls back to their ids:
  user ids are int32, so the probability of any tie is below ``2**62 /
  2**128 = 2**-66`` (:data:`ORDER_TIES`, added to the release's delta);
* the grams by content alone: shorter first, then item by item in the
  text order of the item labels (labels are distinct strings, so the order
  is total and adding items only inserts new ones into it).

Why it is private (the proof of Gopi et al. for l1-descent, on integers):
one unit step ``h -> h + e_i`` (``i`` the arg-min) is l1- *and*
l2-contractive on integer histograms.  Let ``h, h'`` pick ``i != j`` and
``d = h - h'``; ``h_i <= h_j`` and ``h'_j <= h'_i``, so
``d_i - d_j <= 0``, with equality only when both pairs tie, which the fixed
tie-break excludes; hence ``d_i <= -1`` or ``d_j >= 1`` and the step does
not increase ``||d||_1`` (nor ``||d||_2``: ``2(d_i - d_j) + 2 <= 0``).  If
only ``h`` moves (``h'`` has all its grams at ``Gamma``) then
``d_i < 0``.  So the other users' updates never increase the distance
between the histograms with and without one user, which inserts at most
``budget`` units: the final histograms differ by at most ``budget`` in l1.

Which grams are noised: every gram some user *keeps*, zero weight included
(:func:`policy_histogram`), never only the grams of positive weight.  A
user with more kept grams than ``budget`` leaves some at 0, and adding a
user moves the others' units: a gram that user never holds can go from 0
to 1.  Were only positive weights noised, such a gram would be noised (and
possibly released) on one neighbour and not even drawn on the other, an
event the threshold does not cover.  With every kept gram noised, the
noised sets differ exactly by the grams only the added user keeps
(the others' kept sets do not depend on it), and those grams start at 0
and are touched by no one else; the user's water-filling leaves them
within one unit of each other (they start at the lowest level, so they
end at the fill level or one above), with at most ``budget`` units in
all: ``t`` of them end at most ``ceil(budget / t)`` each, which the
threshold covers (:func:`~.baselines.laplace_threshold`).  Every other
noised gram is noised on both, within l1 distance ``budget`` in all.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ...ops.keys import sorted_unique, sorted_unique_ints

#: Bound on the probability that two of at most 2**31 users tie on both order words.
ORDER_TIES = 2.0 ** -66


def label_ranks(labels: list[str]) -> np.ndarray:
    """Rank of each item id's label in text order (module doc: the gram tie order).

    Also the order of a release vocabulary taken from the data
    (:func:`dpgpu.mechanisms.dpne.release_of`): it depends on each label alone.
    """
    rank = np.empty(len(labels), dtype=np.int64)
    rank[sorted(range(len(labels)), key=labels.__getitem__)] = np.arange(len(labels))
    return rank


def content_ranks(rows: list[np.ndarray], item_rank: np.ndarray) -> np.ndarray:
    """Rank of each gram of a run in the content order (module doc).

    Parameters
    ----------
    rows : list of (n_k, k) integer arrays
        The run's grams of each length, ascending lengths, in gram id order
        (gram ``j`` of the run is row ``j - offset_k`` of its length).
    item_rank : (n_items,) int64
        :func:`label_ranks` of the vocabulary.

    Returns
    -------
    (sum n_k,) int64
        A permutation of the run's gram ids.
    """
    out, base = [], 0
    for r in rows:
        content = item_rank[r]
        order = np.lexsort(content.T[::-1]) if r.shape[0] else np.zeros(0, dtype=np.int64)
        rank = np.empty(r.shape[0], dtype=np.int64)
        rank[order] = base + np.arange(r.shape[0])
        out.append(rank)
        base += r.shape[0]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def fill_order(users: np.ndarray, grams: np.ndarray, content: np.ndarray, key: Any,
               tag: int) -> tuple[np.ndarray, np.ndarray]:
    """Kept pairs renumbered into the order water filling takes (module doc).

    Parameters
    ----------
    users, grams : (P,) int64
        The kept ``(user, gram)`` pairs, in any order.
    content : int64 array
        :func:`content_ranks` of the run, indexed by gram id.
    key : NoiseKey
        Key of the user order's words (``tag``).
    tag : int

    Returns
    -------
    users, grams : (P,) int64
        Each user's place in the keyed random order and each gram's content
        rank, sorted by user place then gram rank (what
        :func:`policy_histogram` takes).
    """
    ids = sorted_unique(users)
    words = key.words(ids, tag, 2, backend="numpy")
    place = np.empty(ids.size, dtype=np.int64)
    place[np.lexsort((ids, words[1], words[0]))] = np.arange(ids.size)
    u, g = place[np.searchsorted(ids, users)], content[grams]
    order = np.lexsort((g, u))
    return u[order], g[order]


def policy_histogram(users: np.ndarray, grams: np.ndarray, n_grams: int, budget: int,
                     cutoff: int) -> tuple[np.ndarray, np.ndarray]:
    """The noised grams of Policy Laplace and their weights (module doc).

    Parameters
    ----------
    users, grams : (P,) int64
        The kept ``(user, gram)`` pairs, sorted by user then gram.
    n_grams, budget, cutoff : int
        As in :func:`water_fill`.

    Returns
    -------
    keys : (K,) int64
        Every kept gram, sorted, zero weight included.
    weights : (K,) int64
    """
    head = np.flatnonzero(np.r_[True, users[1:] != users[:-1]]) if users.size else \
        np.zeros(0, np.int64)
    hist = water_fill(np.r_[head, users.size], grams, n_grams, budget, cutoff)
    keys = sorted_unique_ints(grams)
    return keys, hist[keys]


def water_fill(starts: np.ndarray, grams: np.ndarray, n_grams: int, budget: int,
               cutoff: int) -> np.ndarray:
    """The Policy-Laplace histogram.

    Parameters
    ----------
    starts : (U + 1,) int64
        User ``a`` owns ``grams[starts[a]:starts[a + 1]]`` (distinct, ascending).
    grams : (P,) int64
        Gram ids in ``0 .. n_grams - 1``.
    n_grams : int
    budget : int
        Units per user (the l1 sensitivity).
    cutoff : int
        ``Gamma``: no gram is raised above it.

    Returns
    -------
    (n_grams,) int64
    """
    return _compiled()(np.ascontiguousarray(starts, dtype=np.int64),
                 np.ascontiguousarray(grams, dtype=np.int64), int(n_grams), int(budget),
                 int(cutoff))


def _fill_py(starts, grams, n_grams, budget, cutoff):
    h = np.zeros(n_grams, dtype=np.int64)
    for a in range(starts.size - 1):
        lo, hi = starts[a], starts[a + 1]
        t = hi - lo
        if t == 0:
            continue
        v = np.sort(h[grams[lo:hi]])
        if v[0] >= cutoff:
            continue
        level, left, j, extra = v[0], budget, 1, 0
        while True:                      # raise the j lowest grams together
            nxt = cutoff if j == t else min(v[j], cutoff)
            need = (nxt - level) * j
            if need >= left:
                level += left // j
                extra = left % j if level < cutoff else 0
                break
            left -= need
            level = nxt
            if level >= cutoff:
                break
            j += 1
        for i in range(lo, hi):          # the last ``extra`` units: smallest ids at the level
            g = grams[i]
            if h[g] <= level:
                h[g] = level
                if extra > 0 and level < cutoff:
                    h[g] += 1
                    extra -= 1
    return h



@lru_cache(maxsize=1)
def _compiled():
    """:func:`_fill_py` compiled by Numba (on first use; importing dpgpu never imports numba)."""
    import numba  # noqa: PLC0415 - lazy on purpose

    return numba.njit(nogil=True, cache=True)(_fill_py)
