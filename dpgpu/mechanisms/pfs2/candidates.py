"""The next level's PFS² candidates, capped (:func:`capped_candidates`).

Arrays throughout: the level is a sorted matrix of items, a candidate is
the pair of rows it joins, coded in one integer whose order is the
candidates' lexicographic order, and the join, the prune and the early
stop run in one Numba loop (:mod:`.candidates_numba`).  Tuples are built
at the end, for the candidates kept only.  Post-processing of released
supports only.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

#: Smallest number of candidates collected between two selections of the best.
MIN_CHUNK = 1 << 16

_NO_FLOOR = np.iinfo(np.int64).max  # a score no candidate beats


def capped_candidates(prev: dict[tuple[int, ...], int], budget: int
                      ) -> tuple[list[tuple[int, ...]], bool]:
    """The next level's candidates (GSP join and prune of ``prev``), at most ``budget`` of them.

    The candidates are the ``c = p + (q[-1],)`` for ``p, q`` in ``prev``
    with ``p[1:] == q[:-1]`` such that deleting any one inner item of ``c``
    leaves a pattern of ``prev`` (deleting the first gives ``q``, the last
    ``p``).  Beyond ``budget``, the candidates whose two parents have the
    largest smaller noisy support (``min(prev[p], prev[q])``) are kept
    (ties: in lexicographic order), listed in lexicographic order.

    A candidate's score is at most its first parent's support, so the
    parents are joined in decreasing order of support (ties: in
    lexicographic order), and the joining stops once the best ``budget``
    so far can no longer be displaced and some candidate is known to be
    left out: a level far over the cap is never built whole (millions of
    frequent pairs join into billions of triples).  Only the best so far
    are held, with at most ``max(budget, MIN_CHUNK)`` more found since
    the last selection, and a candidate that cannot enter them is not
    written at all.

    Parameters
    ----------
    prev : dict of tuple of int to int
        The frequent patterns of one length ``k >= 1`` and their supports.
    budget : int

    Returns
    -------
    candidates : list of tuple of int
    capped : bool
        Whether some candidates were left out.

    Raises
    ------
    ValueError
        When the patterns of ``prev`` are not all of one length ``>= 1``.
    """
    budget = int(budget)
    m = len(prev)
    if not m:
        return [], budget < 0
    lengths = set(map(len, prev))
    k = next(iter(lengths))
    if len(lengths) > 1 or k < 1:
        raise ValueError("capped_candidates: the patterns must all have one length >= 1, "
                         f"not {sorted(lengths)}")
    level = np.fromiter(chain.from_iterable(prev), dtype=np.int64, count=m * k).reshape(m, k)
    sup = np.fromiter(prev.values(), dtype=np.int64, count=m)
    rows = np.lexsort(level.T[::-1])
    level, sup = np.ascontiguousarray(level[rows]), sup[rows]
    order = np.argsort(-sup, kind="stable")
    from .candidates_numba import join_scan  # noqa: PLC0415 - imports numba

    cap_max = max(budget, 0) + max(budget, MIN_CHUNK)
    out_key = np.empty(min(cap_max, MIN_CHUNK), dtype=np.int64)
    out_s = np.empty_like(out_key)
    pos, j, found, n_out = 0, -1, 0, 0
    full, floor_s, floor_key = budget <= 0, _NO_FLOOR, -1  # nothing can enter a budget of 0
    while True:
        pos, j, found, n_out, stopped = join_scan(level, sup, order, pos, j, found, budget,
                                                  full, floor_s, floor_key, out_key, out_s,
                                                  n_out)
        if stopped or pos >= m:
            break
        if out_key.size < cap_max:  # full buffer: grow it, or keep only the best
            size = min(2 * out_key.size, cap_max)
            out_key = np.concatenate([out_key, np.empty(size - out_key.size, np.int64)])
            out_s = np.concatenate([out_s, np.empty(size - out_s.size, np.int64)])
        else:
            n_out, floor_s, floor_key = _keep_best(out_key, out_s, n_out, budget)
            full = True
    if 0 < budget < n_out:
        n_out, _, _ = _keep_best(out_key, out_s, n_out, budget)
    keys = np.sort(out_key[:n_out])
    parent, last = keys // m, level[keys % m, k - 1]
    columns = [level[parent, t].tolist() for t in range(k)] + [last.tolist()]
    return list(zip(*columns)), found > budget  # tuples from columns: fewer objects


def _keep_best(key: np.ndarray, score: np.ndarray, n: int, budget: int
               ) -> tuple[int, int, int]:
    """Keep, in ``key[:budget]`` and ``score[:budget]``, the ``budget`` best of the first
    ``n > budget >= 1`` (largest score; ties: smallest key), in no particular order.

    A partition finds the score cut and another the key cut among those tied at it,
    without sorting.

    Returns
    -------
    n : int
        ``budget``.
    floor_s, floor_key : int
        The worst kept: the score cut and the largest key kept at it.
    """
    s, c = score[:n], key[:n]
    cut = np.partition(s, n - budget)[n - budget]  # the budget-th largest
    above = np.flatnonzero(s > cut)
    tied = np.flatnonzero(s == cut)
    need = budget - above.size  # >= 1: fewer than budget score above the cut
    if need < tied.size:
        tied_keys = c[tied]
        tied = tied[tied_keys <= np.partition(tied_keys, need - 1)[need - 1]]  # keys distinct
    kept = np.concatenate([above, tied])
    floor_key = int(c[tied].max())
    key[:budget], score[:budget] = c[kept], s[kept]
    return budget, int(cut), floor_key
