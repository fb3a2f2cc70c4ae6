"""Consistency of the exploration tree (Chen et al., CCS'12, Section 4.3.4).

Post-processing of noisy counts only (no privacy cost).  Top-down, one
matrix operation per level: the children of every expanded node form a row
of a ``(F, |I| + 1)`` matrix.  Children below their threshold ("missing")
get counts estimated through their Markov parents or, failing that, an even
share of what their passing siblings leave of the parent's count; then each
row is rescaled to its parent's count.

The unigrams are the children of the virtual root, which has no count (the
paper is silent on them).  A passing unigram keeps its noisy count clamped at
0.  One below its threshold is missing, and Step 3 would share out what the
parent's count leaves over the passing siblings', of which the root has
none; it gets instead the least count consistent with level 2: its item's
occurrences after the expanded unigrams (the consistent counts of the
bigrams ending in it), 0 where no bigram says more.  (The authors' code
keeps every unigram's clamped noisy count.)  This matters because the
synthetic database holds as many items as the unigram total
(:mod:`.synthesis`): summed over every item of a public vocabulary, the
positive noise of the items that do not occur would add about
``|I| * scale / 2`` items whatever the data (52 million synthetic sequences
from 30 trajectories on a 1024x1024 grid), while the threshold lets a zero
count through with probability ``1 / |I|`` (Section 4.3.3), and the bigrams
add at most the passing unigrams' total.
"""

from __future__ import annotations

import numpy as np

from .tree import Level


def markov_parent_probability(levels: list[Level], grams: np.ndarray,
                              prob: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Conditional probability of each gram's Markov parent, and the parent's level.

    The Markov parent of ``L_1..L_i x`` is the node ``L_j..L_i x`` of the
    largest level (``j >= 2``) present in the tree; a gram with none gets
    probability 0 and level 0.

    Parameters
    ----------
    levels : list of Level
        Levels whose consistent counts are known (``len(prob)`` of them).
    grams : (M, n) int array
    prob : list of arrays
        ``prob[s-1][v]`` = conditional probability of node ``v`` of level ``s``.
    """
    n = grams.shape[1]
    p = np.zeros(grams.shape[0])
    lvl = np.zeros(grams.shape[0], dtype=np.int64)
    todo = np.ones(grams.shape[0], dtype=bool)
    for s in range(min(n - 1, len(prob)), 0, -1):
        if not todo.any():
            break
        idx = levels[s - 1].index.find(grams[todo, n - s:])
        hit = idx >= 0
        rows = np.flatnonzero(todo)[hit]
        p[rows] = prob[s - 1][idx[hit]]
        lvl[rows] = s
        todo[rows] = False
    return p, lvl


def enforce_consistency(levels: list[Level], *, approximate: bool = True) -> None:
    """Set ``count`` on every level so that each expanded node's children sum to it.

    Parameters
    ----------
    levels : list of Level
        The exploration tree; modified in place.
    approximate : bool
        Estimate missing children as Section 4.3.4 does; ``False`` sets them
        to 0 (the paper's *No-Approx* variant).
    """
    first = levels[0]
    first.count = np.where(first.passed, np.maximum(first.noisy, 0), 0).astype(float)
    total = first.count.sum()
    prob = [first.count / total if total > 0 else np.zeros_like(first.count)]
    for parent, child in zip(levels, levels[1:]):
        rows = np.flatnonzero(parent.expanded)
        width = child.grams.shape[0] // max(rows.size, 1)
        a = np.maximum(child.noisy, 0).astype(float).reshape(rows.size, width)
        passed = child.passed.reshape(rows.size, width)
        c_parent = parent.count[rows]
        a = np.where(passed, a, 0.0)
        if approximate:
            a = _fill_missing(levels, child, prob, a, passed, c_parent)
        row_sum = a.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            scaled = np.where(row_sum[:, None] > 0, a * (c_parent / row_sum)[:, None], 0.0)
        child.count = scaled.reshape(-1)
        prob.append(np.where(row_sum[:, None] > 0, a / np.where(row_sum > 0, row_sum, 1)[:, None],
                             0.0).reshape(-1))
    if len(levels) > 1:  # missing unigrams (module doc); level 1's rows are the item ids
        second = levels[1]
        item = second.grams[:, -1] < first.count.size  # not '&'
        after = np.bincount(second.grams[item, -1], weights=second.count[item],
                            minlength=first.count.size)
        first.count = np.where(first.passed, first.count, after)


def _fill_missing(levels: list[Level], child: Level, prob: list[np.ndarray], a: np.ndarray,
                  passed: np.ndarray, c_parent: np.ndarray) -> np.ndarray:
    """Steps 1-3 of Section 4.3.4 for rows with some but not all children passing."""
    some = passed.any(axis=1) & ~passed.all(axis=1)
    if not some.any():
        return a
    width = a.shape[1]
    p_mp, lvl = markov_parent_probability(levels, child.grams, prob)
    p_mp, lvl = p_mp.reshape(-1, width), lvl.reshape(-1, width)
    missing = ~passed
    high_quality = np.all(np.where(missing, lvl >= 2, True), axis=1)
    plus_sum = a.sum(axis=1)  # missing children are 0 in a
    plus_p = np.where(passed, p_mp, 0.0).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(plus_p[:, None] > 0, p_mp / plus_p[:, None], 0.0)
        even = np.where(plus_sum <= c_parent,
                        (c_parent - plus_sum) / np.maximum(missing.sum(axis=1), 1), 0.0)
    estimate = np.where(high_quality[:, None], ratio * plus_sum[:, None], even[:, None])
    return np.where(some[:, None] & missing, estimate, a)
