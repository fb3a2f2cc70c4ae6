"""Exact ground truth for evaluating releases (not private).

Every function here reads the original data and returns *exact* statistics.
They are what the papers compare a private release against; they must never
be published as part of a release.

Patterns are given as sequences of symbol ids of the database's vocabulary
(items ``0 .. |I|-1``; the end marker ``&`` is ``vocab.end_id`` and the
start marker ``$`` is ``vocab.start_id`` where a function allows markers).
:func:`encode_pattern` and :func:`parse_gram` turn label strings into ids.

Two notions of frequency are used by the papers:

* **occurrence count** of a *contiguous* pattern (a string, an n-gram): the
  number of positions where it occurs, summed over all sequences (N-gram
  paper Section 6.2.1, PrivTree Section 6.2) -- :func:`pattern_counts`,
  :func:`top_k_strings`;
* **support** of a *subsequence* pattern (items in order, gaps allowed): the
  number of sequences that contain it at least once (PFS^2 Section III-B)
  -- :func:`subsequence_supports`, :func:`frequent_subsequences`,
  :func:`top_k_subsequences`;

plus the DPNE notion of how many *users* hold a contiguous k-gram
(:func:`gram_user_counts`).

Top-k lists are ranked by frequency (descending), ties broken by pattern
length (shorter first) and then by the ids in lexicographic order, so they
are deterministic.

Numba is imported lazily, inside the functions that need it.
"""

from __future__ import annotations

import itertools
import logging
import math
import numbers
from typing import Any, Iterable, Iterator, Sequence
from urllib.parse import unquote

import numpy as np

from ..backend import to_numpy
from ..data.sequencedb import concat_ranges
from ..data.vocabulary import END_LABEL, START_LABEL
from ..errors import InputError, InvalidParameter
from ..ops.keys import INT63, decode_packed, sorted_unique
from ..validation import check_positive_int, check_real_array


log = logging.getLogger("dpgpu")

#: Bound on ``contexts x symbols`` cells of one next-symbol histogram call.
_HIST_CELLS = 2 ** 24


class CandidateLimit(InputError):
    """Exact mining met more candidate patterns than its ``max_candidates`` allows.

    Raised by :func:`frequent_subsequences` and :func:`top_k_subsequences`:
    how many candidates there are depends on the data, so the caller (which
    knows the setting to change) may word its own message from the attributes.

    Parameters
    ----------
    length : int
        The pattern length whose candidates passed the limit.
    candidates : int
        Candidates counted up to and including that length.
    limit : int
        The ``max_candidates`` passed.
    """

    def __init__(self, length: int, candidates: int, limit: int):
        super().__init__(f"max_candidates: exact mining met {candidates:,} candidate patterns "
                         f"of length up to {length}, more than the {limit:,} allowed")
        self.length, self.candidates, self.limit = length, candidates, limit


# --------------------------------------------------------------------- labels
def encode_pattern(vocab: Any, pattern: Any) -> tuple[int, ...]:
    """Symbol ids of a pattern given by labels.

    Parameters
    ----------
    vocab : Vocabulary
    pattern : str or sequence of str
        A string is read like a release file's gram column (labels joined by
        single spaces, ``&`` for the end marker; see :func:`parse_gram`).

    Returns
    -------
    tuple of int

    Raises
    ------
    KeyError
        When a label is not in the vocabulary.
    """
    if isinstance(pattern, str):
        ids = parse_gram(pattern, vocab)
        if ids is None:
            raise KeyError(pattern)
        return ids
    return tuple(vocab.id_of(str(x)) for x in pattern)


def parse_gram(text: str, vocab: Any, memo: dict | None = None) -> tuple[int, ...] | None:
    """Read a gram written as labels joined by single spaces.

    Tokens are %-decoded first (:func:`dpgpu.release.encode_gram` encodes
    labels holding white space, and items named ``&`` or ``$``: a bare ``&``
    or ``$`` is a marker).  Labels written with raw spaces (event-log
    activities) are also understood: when a token is not a label, the tokens
    are segmented into labels, trying the longest label first at each position.

    Parameters
    ----------
    text : str
    vocab : Vocabulary
    memo : dict, optional
        The id of each single token read so far, filled here: pass the same
        dict to read many grams of one vocabulary faster.

    Returns
    -------
    tuple of int or None
        The ids, or ``None`` when the text is not a sequence of labels.
    """
    tokens = text.split(" ")
    known = {} if memo is None else memo
    try:
        known.update((t, _token_id(t, vocab)) for t in tokens if t not in known)
        return tuple(map(known.__getitem__, tokens))
    except KeyError:
        pass
    n = len(tokens)
    memo: dict[int, tuple[int, ...] | None] = {n: ()}

    def seg(i: int) -> tuple[int, ...] | None:  # longest label first, with backtracking
        if i in memo:
            return memo[i]
        memo[i] = None
        for j in range(n, i, -1):
            try:
                first = vocab.id_of(" ".join(tokens[i:j]))
            except KeyError:
                continue
            rest = seg(j)
            if rest is not None:
                memo[i] = (first,) + rest
                break
        return memo[i]

    return seg(0)


def _token_id(token: str, vocab: Any) -> int:
    """The id of one token: a bare ``&`` or ``$`` is a marker, an item so named is
    written ``%26`` or ``%24``.

    Raises
    ------
    KeyError
        When the %-decoded token is not a label.
    """
    if token == END_LABEL:
        return vocab.end_id
    if token == START_LABEL:
        return vocab.start_id
    return vocab.id_of(unquote(token))


def decode_pattern(vocab: Any, pattern: Iterable[int]) -> str:
    """A pattern of ids for people to read: labels joined by spaces (``&`` for the end marker).

    Parameters
    ----------
    vocab : Vocabulary
        The vocabulary the ids index.
    pattern : iterable of int
        Item ids and marker ids.

    Returns
    -------
    str
        The labels as they are (not %-encoded, unlike
        :func:`dpgpu.release.encode_ids`).

    Raises
    ------
    InvalidParameter
        When ``pattern`` is a string or not iterable, or holds something
        other than an integer id (bools included) or an id that is neither
        an item's nor a marker's; the message names ``pattern``.
    """
    if isinstance(pattern, (str, bytes)) or not isinstance(pattern, Iterable):
        raise InvalidParameter(f"pattern: expected a sequence of integer ids, got {pattern!r} "
                               "(Vocabulary.encode turns labels into ids)")
    labels = []
    for ident in pattern:
        if isinstance(ident, bool) or not isinstance(ident, numbers.Integral):
            raise InvalidParameter(f"pattern: expected integer ids, got {ident!r}")
        if not 0 <= int(ident) <= vocab.start_id:
            raise InvalidParameter(
                f"pattern: {int(ident)} is not an id of this vocabulary of size {vocab.size}: "
                f"ids are 0 .. {vocab.start_id} ({vocab.end_id} is {END_LABEL!r}, "
                f"{vocab.start_id} is {START_LABEL!r})")
        labels.append(vocab.label_of(int(ident)))
    return " ".join(labels)


def _pattern_matrix(patterns: Iterable[Any], n_symbols: int, name: str = "patterns",
                    lengths: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Checked patterns as a padded matrix, built without a Python step per symbol.

    Parameters
    ----------
    patterns : iterable of sequences of int, or array of int
        Each one is flattened (``numpy.ravel``) unless it is a tuple or a list.
        Ids are integers (Python or NumPy), not bools, floats or strings.
        With ``lengths``: one 1-D integer array, the patterns' ids concatenated.
    n_symbols : int
        Ids must lie in ``0 .. n_symbols - 1``.
    name : str
        How messages name the parameter.
    lengths : array of int, optional
        The patterns' lengths, when ``patterns`` is their concatenated ids;
        they must sum to its size.

    Returns
    -------
    matrix : numpy.ndarray of int32, shape (P, longest)
        Pattern ``i`` in ``matrix[i, :lengths[i]]``, then -1.
    lengths : numpy.ndarray of int64, shape (P,)

    Raises
    ------
    InvalidParameter
        When ``patterns`` is a string or not iterable, at the first pattern
        that holds something other than an integer id (a label, say: the
        message points to :meth:`Vocabulary.encode
        <dpgpu.data.vocabulary.Vocabulary.encode>`), and at the first pattern
        that is empty or holds an id out of range; with ``lengths``, when
        either is not a 1-D integer array or they do not add up.
    """
    if lengths is None:
        flat, lens, pats = _listed(patterns, n_symbols, name)
    else:
        (flat, lens), pats = _ragged(patterns, lengths, n_symbols, name), None
    owner = np.repeat(np.arange(lens.size), lens)
    starts = np.cumsum(lens) - lens
    bad = lens == 0
    bad[owner[(flat < 0) | (flat >= n_symbols)]] = True
    if bad.any():
        i = int(np.argmax(bad))
        if not lens[i]:
            raise InvalidParameter(f"{name}: empty pattern")
        t = tuple(int(x) for x in pats[i]) if pats is not None else \
            tuple(flat[starts[i]:starts[i] + lens[i]].tolist())
        raise InvalidParameter(f"{name}: symbol id out of range 0..{n_symbols - 1} in {t}")
    mat = np.full((lens.size, int(lens.max(initial=0))), -1, dtype=np.int32)
    mat[owner, np.arange(flat.size) - np.repeat(starts, lens)] = flat
    return mat, lens


def _listed(patterns: Iterable[Any], n_symbols: int, name: str
            ) -> tuple[np.ndarray, np.ndarray, list]:
    """The ids of patterns given one by one, concatenated (ids beyond int64 read -1), their
    lengths and the patterns as read (:func:`_pattern_matrix`)."""
    if isinstance(patterns, (str, bytes)) or not isinstance(patterns, Iterable):
        raise InvalidParameter(f"{name}: expected a sequence of patterns, each a tuple of "
                               f"symbol ids, got {patterns!r}")
    pats = [p if isinstance(p, (tuple, list)) else np.asarray(p).ravel() for p in patterns]
    ids = list(itertools.chain.from_iterable(pats))
    odd = {t for t in set(map(type, ids))
           if issubclass(t, bool) or not issubclass(t, numbers.Integral)}
    if odd:
        i, x = next((i, x) for i, p in enumerate(pats) for x in p if type(x) in odd)
        raise InvalidParameter(f"{name}: pattern {i} holds {x!r}, which is not a symbol id; "
                               f"patterns are tuples of integer ids 0 .. {n_symbols - 1} "
                               "(Vocabulary.encode turns labels into ids: "
                               "db.vocab.encode(['a', 'b']))")
    lens = np.fromiter(map(len, pats), dtype=np.int64, count=len(pats))
    try:
        flat = np.fromiter(ids, dtype=np.int64, count=len(ids))
    except OverflowError:  # an id beyond int64: out of range like a negative one
        flat = np.fromiter((x if 0 <= x < n_symbols else -1 for x in ids), dtype=np.int64,
                           count=len(ids))
    return flat, lens, pats


def _ragged(ids: Any, lengths: Any, n_symbols: int, name: str
            ) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated ids and their patterns' lengths, checked to be 1-D integer arrays that
    add up, as int64 (uint64 ids beyond ``n_symbols`` read ``n_symbols``: out of range)."""
    flat, lens = np.asarray(ids), np.asarray(lengths)
    for arr, what in ((flat, name), (lens, "lengths")):
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise InvalidParameter(f"{what}: with lengths, expected a 1-D array of integers, "
                                   f"got shape {arr.shape} of {arr.dtype}")
    if (lens < 0).any() or int(lens.sum()) != flat.size:
        raise InvalidParameter(f"lengths: expected integers >= 0 that sum to the {flat.size} "
                               f"ids of {name}")
    if flat.dtype == np.uint64:  # beyond int64 it would wrap round
        flat = np.minimum(flat, n_symbols)
    return flat.astype(np.int64), lens.astype(np.int64)


# ---------------------------------------------------------- contiguous counts
def pattern_counts(db: Any, patterns: Iterable[Any], *, lengths: Any = None,
                   l_max: int | None = None, backend: Any = None,
                   engine: Any = None) -> np.ndarray:
    """Occurrence counts of contiguous patterns (query strings).

    The count of a pattern is the number of (sequence, position) pairs where
    it occurs as a contiguous string -- the "number of occurrences of Q in a
    database" of the N-gram paper (Section 6.2.1).  Patterns may use the
    markers: ``&`` matches the end of a sequence (of one that was not cut
    by ``l_max``), ``$`` its start.

    Parameters
    ----------
    db : SequenceDB
    patterns : iterable of sequences of int, or array of int
        Symbol ids, any lengths >= 1, duplicates allowed; with ``lengths``,
        one 1-D integer array of all the patterns' ids, concatenated.
    lengths : array of int, optional
        The length of each pattern, when ``patterns`` is their concatenated
        ids (many patterns without a Python object each).
    l_max : int, optional
        Count within each sequence's first ``l_max`` items only.
    backend : str or Backend, optional
    engine : GramEngine, optional
        Reuse an engine built with ``start=True, end=True`` on ``db``.

    Returns
    -------
    numpy.ndarray of int64
        One exact count per pattern, in input order.

    Raises
    ------
    InvalidParameter
        When a pattern is empty, or holds something other than an integer
        id (a label, a float, a bool) or an id out of ``0 .. vocab.start_id``;
        :meth:`Vocabulary.encode <dpgpu.data.vocabulary.Vocabulary.encode>`
        turns labels into ids; with ``lengths``, when either is not a 1-D
        integer array or they do not add up.

    Notes
    -----
    Level by level on the :class:`~dpgpu.ops.grams.GramEngine`: the counts
    of the length-``n`` prefixes of all patterns come from one
    next-symbol histogram of their distinct ``(n-1)``-prefixes; a pattern
    whose prefix does not occur is dropped (its count is 0), so random long
    queries cost only as many levels as some prefix survives.
    """
    from ..ops.grams import GramEngine

    vocab = db.vocab
    mat, lens = _pattern_matrix(patterns, vocab.size + 2, lengths=lengths)
    out = np.zeros(lens.size, dtype=np.int64)
    if not lens.size or len(db) == 0:
        return out
    eng = engine or GramEngine(db, l_max, start=True, end=True, backend=backend)
    xp = eng.xp
    grams, counts = eng.count(1)
    dense = np.zeros(eng.n_symbols, dtype=np.int64)
    dense[to_numpy(grams)[:, 0]] = to_numpy(counts)
    cur = dense[mat[:, 0]]
    out[lens == 1] = cur[lens == 1]
    for n in range(2, mat.shape[1] + 1):
        active = np.flatnonzero((lens >= n) & (cur > 0))
        cur[(lens >= n) & (cur <= 0)] = 0
        if active.size == 0:
            break
        ctx, inverse = np.unique(mat[active, :n - 1], axis=0, return_inverse=True)
        inverse = inverse.ravel()
        step = max(1, _HIST_CELLS // eng.n_symbols)
        found = np.empty(active.size, dtype=np.int64)
        for s in range(0, ctx.shape[0], step):
            hist = to_numpy(eng.next_symbol_histogram(xp.asarray(ctx[s:s + step])))
            sel = np.flatnonzero((inverse >= s) & (inverse < s + step))
            found[sel] = hist[inverse[sel] - s, mat[active[sel], n - 1]]
        cur[active] = found
        done = lens == n
        out[done] = cur[done]
    return out


def top_k_strings(db: Any, k: int, *, min_length: int = 1, max_length: int | None = None,
                  l_max: int | None = None, backend: Any = None
                  ) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """The ``k`` most frequent contiguous strings (by occurrence count).

    Parameters
    ----------
    db : SequenceDB
    k : int
    min_length : int
        Shortest string considered (``2`` excludes single items, as the
        N-gram paper does in Section 6.2.2).
    max_length : int, optional
        Longest string considered (default: no bound).
    l_max : int, optional
        Count within each sequence's first ``l_max`` items (the *Truncate*
        baseline of PrivTree Section 6.2).
    backend : str or Backend, optional

    Returns
    -------
    patterns : list of tuple of int
        At most ``k`` strings of items (no markers), ranked as described in
        the module docstring.
    counts : numpy.ndarray of int64

    Notes
    -----
    Level-wise: all ``n``-grams are counted for ``n = 1, 2, ...`` and the
    search stops at the first level whose largest count is below the
    current ``k``-th largest count among kept strings (a longer string
    never occurs more often than its prefix).
    """
    from ..ops.grams import GramEngine

    k = check_positive_int(k, "k")
    min_length = check_positive_int(min_length, "min_length")
    if max_length is not None:
        max_length = check_positive_int(max_length, "max_length")
    eng = GramEngine(db, l_max, backend=backend)
    kept_p: list[tuple[int, ...]] = []
    kept_c: list[int] = []
    longest = db.max_length if l_max is None else min(db.max_length, l_max)
    n = 0
    while n < longest and (max_length is None or n < max_length):
        n += 1
        grams, counts = eng.count(n)
        grams, counts = to_numpy(grams), to_numpy(counts)
        if counts.size == 0:
            break
        thr = _kth(kept_c, k)
        if counts.max() < thr:
            break
        if n >= min_length:
            keep = counts >= thr
            if int(keep.sum()) > k:  # only the k best of this level can enter
                idx = _rank(grams[keep], counts[keep])[:k]
                g, c = grams[keep][idx], counts[keep][idx]
            else:
                g, c = grams[keep], counts[keep]
            kept_p.extend(tuple(int(x) for x in row) for row in g)
            kept_c.extend(int(x) for x in c)
            order = _rank_tuples(kept_p, kept_c)[:k]
            kept_p = [kept_p[i] for i in order]
            kept_c = [kept_c[i] for i in order]
    return kept_p, np.array(kept_c, dtype=np.int64)


def _kth(counts: Sequence[int], k: int) -> int:
    """The k-th largest value, or 1 when fewer than k values are known."""
    if len(counts) < k:
        return 1
    return int(np.partition(np.asarray(counts), len(counts) - k)[len(counts) - k])


def _rank(grams: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Order of rows by (-count, ids lexicographically) for equal-length grams."""
    keys = [grams[:, j] for j in range(grams.shape[1] - 1, -1, -1)] + [-counts]
    return np.lexsort(keys)


def _rank_tuples(patterns: Sequence[tuple[int, ...]], counts: Sequence[int]) -> list[int]:
    return sorted(range(len(patterns)), key=lambda i: (-counts[i], len(patterns[i]), patterns[i]))


# --------------------------------------------------------- subsequence support
def _support_kernel():
    """The Numba support loop (imported on first use; importing dpgpu never imports numba)."""
    from .subseq_numba import support_counts  # noqa: PLC0415 - lazy on purpose

    return support_counts


def subsequence_supports(db: Any, patterns: Iterable[Any], *, l_max: int | None = None,
                         weights: Any = None) -> np.ndarray:
    """Supports of subsequence patterns: how many sequences contain each one.

    A sequence ``T`` contains ``S = s_1 .. s_m`` when there are positions
    ``w_1 < .. < w_m`` with ``T[w_i] = s_i`` (gaps allowed; PFS^2 Section
    III-B).  A sequence counts once however often it contains ``S``.

    Parameters
    ----------
    db : SequenceDB
    patterns : iterable of sequences of int
        Item ids (no markers), any lengths >= 1, duplicates allowed.
    l_max : int, optional
        Look only at each sequence's first ``l_max`` items.
    weights : array of int, optional
        A weight per sequence (default 1): the support is the sum of the
        weights of the containing sequences; integers >= 0.

    Returns
    -------
    numpy.ndarray of int64
        One support per pattern, in input order.

    Raises
    ------
    InvalidParameter
        When a pattern is empty, or holds something other than an integer
        id (a label, a float, a bool) or an id out of ``0 .. vocab.size - 1``
        (:meth:`Vocabulary.encode <dpgpu.data.vocabulary.Vocabulary.encode>`
        turns labels into ids); when ``weights`` is not one integer >= 0 per
        sequence.

    Notes
    -----
    A Numba kernel, parallel over chunks of sequences.  Patterns are grouped
    by their prefix (all items but the last): per sequence, each distinct
    prefix is matched greedily once (leftmost match, which ends earliest),
    and each pattern of the group is then contained iff its last item occurs
    after that end -- one table lookup with the sequence's last-occurrence
    table.  The same table rejects a prefix at its first absent item.
    """
    mat, lens = _pattern_matrix(patterns, db.vocab.size)
    if not lens.size:
        return np.zeros(0, dtype=np.int64)
    src = db if l_max is None else db.truncate(l_max)
    if weights is None:
        w = np.ones(len(src), dtype=np.int64)
    else:
        w = np.asarray(weights)
        if w.dtype.kind not in "iu":
            raise InvalidParameter(f"weights: expected integers >= 0, got an array of {w.dtype}")
        if w.shape != (len(src),):
            raise InvalidParameter("weights: one weight per sequence is needed")
        if (w < 0).any():
            raise InvalidParameter(f"weights: expected integers >= 0, got {w.min()}")
        w = np.ascontiguousarray(w, dtype=np.int64)
    return _grouped_supports(src, w, mat, lens, _prefix_ids(mat, lens))


def _grouped_supports(db: Any, weights: np.ndarray, mat: np.ndarray, lens: np.ndarray,
                      group: np.ndarray) -> np.ndarray:
    """Weighted supports of the patterns ``mat[i, :lens[i]]`` grouped by prefix as ``group``
    says (:func:`_prefix_layout`), in row order, by the Numba kernel."""
    pre_flat, pre_off, grp_off, ext_item, members = _prefix_layout(mat, lens, group)
    out = np.empty(lens.size, dtype=np.int64)
    out[members] = _support_kernel()(db.items, db.offsets, weights, pre_flat, pre_off, grp_off,
                                     ext_item, db.vocab.size, _chunks(len(db)))
    return out


def _chunks(n: int) -> int:
    """How many parallel chunks a Numba loop over ``n`` elements gets (four per thread)."""
    import numba  # noqa: PLC0415 - lazy on purpose

    return max(1, min(n, 4 * numba.get_num_threads()))


def group_by_prefix(pats: Sequence[tuple[int, ...]]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The support kernels' layout of patterns grouped by prefix (all items but the last).

    Shared by the Numba kernel here and the CUDA kernel ``dpgpu_subseq_supports``
    (``kernels/subseq.cu``).

    Parameters
    ----------
    pats : sequence of tuple of int
        Non-empty patterns of ids >= 0.

    Returns
    -------
    pre_flat : numpy.ndarray of int32
        The distinct prefixes, concatenated, in order of first appearance.
    pre_off : numpy.ndarray of int64
        ``G + 1`` offsets of the prefixes in ``pre_flat``.
    grp_off : numpy.ndarray of int64
        ``G + 1`` offsets of each group's patterns in ``ext_item``.
    ext_item : numpy.ndarray of int32
        Last item of each pattern, grouped.
    members : numpy.ndarray of int64
        Input index of each pattern of ``ext_item``, ascending within a group.

    Raises
    ------
    InvalidParameter
        At an empty pattern, an id that is not an integer, or a negative id.
    """
    mat, lens = _pattern_matrix(pats, np.iinfo(np.int32).max, "pats")
    return _prefix_layout(mat, lens, _prefix_ids(mat, lens))


def _prefix_ids(mat: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Group id of each pattern ``mat[i, :lens[i]]`` by its prefix, groups numbered in order of
    first appearance."""
    if not lens.size:
        return np.zeros(0, dtype=np.int64)
    pre = mat.copy()
    pre[np.arange(lens.size), lens - 1] = -1  # the padding is -1 too: lengths stay apart
    _, first, inverse = np.unique(pre, axis=0, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse.ravel()]


def _run_ids(level: np.ndarray) -> np.ndarray:
    """Group id of each row of a sorted matrix of equal-length patterns by its prefix: the
    rows of a prefix are a run, numbered in order."""
    new = np.ones(level.shape[0], dtype=bool)
    np.any(level[1:, :-1] != level[:-1, :-1], axis=1, out=new[1:])
    return np.cumsum(new) - 1


def _prefix_layout(mat: np.ndarray, lens: np.ndarray, group: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`group_by_prefix`'s arrays of the patterns ``mat[i, :lens[i]]`` whose prefix groups
    are ``group`` (ids ``0 .. G-1`` in order of first appearance)."""
    members = np.argsort(group, kind="stable")
    grp_off = np.zeros(int(group.max(initial=-1)) + 2, dtype=np.int64)
    np.cumsum(np.bincount(group, minlength=grp_off.size - 1), out=grp_off[1:])
    heads = members[grp_off[:-1]]
    pre_len = lens[heads] - 1
    pre_off = np.zeros(heads.size + 1, dtype=np.int64)
    np.cumsum(pre_len, out=pre_off[1:])
    pre_flat = mat[heads][np.arange(mat.shape[1]) < pre_len[:, None]].astype(np.int32)
    ext_item = mat[members, lens[members] - 1].astype(np.int32)
    return pre_flat, pre_off, grp_off, ext_item, members


def _candidates(level: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """Candidate (n+1)-subsequences from the frequent n-subsequences (GSP join + prune).

    The tuple form of :func:`~dpgpu.eval.subseq_numba.gsp_candidates` (which the
    miner uses), kept as the reference it is tested against.
    """
    return [c for _, c in gsp_join(level, level)]


def gsp_join(level: Iterable[tuple[int, ...]], parents: Iterable[tuple[int, ...]]
             ) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """``(p, c)`` for each parent ``p`` of ``level`` in the order given and each candidate
    ``c = p + (q[-1],)`` with ``q`` in ``level`` and ``p[1:] == q[:-1]``, kept only when
    every subsequence obtained by deleting one item is in ``level`` (supports are
    anti-monotone under taking subsequences); lazily, so a caller may stop early.

    Parameters
    ----------
    level : iterable of tuple of int
        The frequent patterns of one length ``k``.
    parents : iterable of tuple of int
        The patterns of ``level`` to extend, in the order wanted.

    Yields
    ------
    tuple of (tuple of int, tuple of int)
        A parent ``p`` and a candidate ``c`` of length ``k + 1``; a parent's
        candidates in ascending order of their last item.
    """
    have = set(level)
    by_prefix: dict[tuple[int, ...], list[int]] = {}
    for q in sorted(have):
        by_prefix.setdefault(q[:-1], []).append(q[-1])
    for p in parents:
        for x in by_prefix.get(p[1:], ()):
            c = p + (x,)
            if all(c[:i] + c[i + 1:] in have for i in range(1, len(c) - 1)):
                yield p, c


def frequent_subsequences(db: Any, min_support: int, *, max_length: int | None = None,
                          min_length: int = 1, l_max: int | None = None,
                          max_candidates: int | None = None
                          ) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """All subsequence patterns with support >= ``min_support`` (exact).

    Parameters
    ----------
    db : SequenceDB
    min_support : int
        Absolute threshold (a number of sequences; ``ceil(theta * |D|)``
        for a relative threshold ``theta``, see :func:`support_threshold`).
    max_length : int, optional
        Longest pattern (default: no bound).
    min_length : int
        Shortest pattern reported (shorter ones are still mined; none is
        when it exceeds the longest sequence).
    l_max : int, optional
        Look only at each sequence's first ``l_max`` items.
    max_candidates : int, optional
        Most candidate patterns of length 3 or more to count, over all
        lengths (default: no bound).  A low threshold on long sequences has
        exponentially many.

    Returns
    -------
    patterns : list of tuple of int
        Ranked by support (ties: shorter, then lexicographic).
    supports : numpy.ndarray of int64

    Raises
    ------
    CandidateLimit
        When more than ``max_candidates`` candidates turn up.

    Notes
    -----
    Level-wise (Apriori/GSP) candidate generation with exact supports from
    :func:`subsequence_supports`.
    """
    min_support = check_positive_int(min_support, "min_support")
    return _mine(db, min_support, None, max_length, min_length, l_max, max_candidates)


def top_k_subsequences(db: Any, k: int, *, max_length: int | None = None, min_length: int = 1,
                       l_max: int | None = None, max_candidates: int | None = None
                       ) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """The ``k`` subsequence patterns of largest support (exact).

    Parameters
    ----------
    db : SequenceDB
    k : int
    max_length : int, optional
        Longest pattern (``k_max``); default no bound.
    min_length : int
        Shortest pattern considered (``2`` excludes single items); none is
        when it exceeds the longest sequence.
    l_max : int, optional
    max_candidates : int, optional
        As for :func:`frequent_subsequences`: until ``k`` patterns are kept,
        and below ``min_length``, every pattern that occurs is a candidate.

    Returns
    -------
    patterns : list of tuple of int
    supports : numpy.ndarray of int64

    Raises
    ------
    CandidateLimit
        When more than ``max_candidates`` candidates turn up.

    Notes
    -----
    Level-wise mining whose threshold rises to the current ``k``-th largest
    support among kept patterns: a pattern can only reach the final top-k if
    all its subsequences have at least that support.
    """
    k = check_positive_int(k, "k")
    return _mine(db, 1, k, max_length, min_length, l_max, max_candidates)


def _mine(db, min_support, k, max_length, min_length, l_max, max_candidates):
    """Level-wise mining of :func:`frequent_subsequences` (``k`` None) or
    :func:`top_k_subsequences` (threshold raised to the ``k``-th support kept so far).

    Each level is a matrix of patterns of one length, rows in lexicographic
    order; its candidates come from :func:`_pairs` (length 2) or
    :func:`~dpgpu.eval.subseq_numba.gsp_candidates`, in that order too.
    """
    min_length = check_positive_int(min_length, "min_length")
    if max_length is not None:
        max_length = check_positive_int(max_length, "max_length")
    if max_candidates is not None:
        max_candidates = check_positive_int(max_candidates, "max_candidates")
    src = db if l_max is None else db.truncate(l_max)
    if min_length > src.max_length:  # no pattern is long enough: nothing to mine
        return [], np.zeros(0, dtype=np.int64)
    src, weights = _dedupe(src)
    counted = 0  # candidates from gsp_candidates, which max_candidates bounds
    kept: list[tuple[np.ndarray, np.ndarray]] = []  # length n at n - 1: rows in order, supports
    cands = np.arange(db.vocab.size, dtype=np.int32).reshape(-1, 1)
    sup = None  # the candidates' supports, where found with them
    n = 1
    while cands.shape[0]:
        if sup is None:
            sup = _grouped_supports(src, weights, cands, np.full(cands.shape[0], n),
                                    _run_ids(cands))
        thr = min_support if k is None else max(min_support, _kth(_supports_of(kept), k))
        hit = sup >= thr if n >= min_length else np.zeros(sup.size, dtype=bool)
        kept.append((cands[hit], sup[hit]))
        if k is not None and n >= min_length:
            kept = _best(kept, k)
            thr = max(min_support, _kth(_supports_of(kept), k))
        # with k patterns kept, a longer one tied with the k-th ranks after it: only those
        # above the threshold extend (ties would grow without bound on repetitive data)
        full = k is not None and _supports_of(kept).size >= k
        level = cands[sup > thr] if full else cands[sup >= thr]
        log.info("exact mining: length %d: %s candidates, %s frequent", n,
                 f"{cands.shape[0]:,}", f"{level.shape[0]:,}")
        if max_length is not None and n >= max_length:
            break
        if n == 1:
            cands, sup = _pairs(src, weights, level)
        else:
            from .subseq_numba import gsp_candidates  # noqa: PLC0415 - Numba on use

            cands, sup = gsp_candidates(level, _chunks(level.shape[0])), None
            counted += cands.shape[0]
            if max_candidates is not None and counted > max_candidates:
                raise CandidateLimit(n + 1, counted, max_candidates)
        n += 1
    if not kept:
        return [], np.zeros(0, dtype=np.int64)
    order = _ranking(kept)[0]
    flat = list(itertools.chain.from_iterable(zip(*rows.T.tolist()) for rows, _ in kept))
    return list(map(flat.__getitem__, order.tolist())), _supports_of(kept)[order]


def _supports_of(kept: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The supports of the patterns kept per length, concatenated."""
    return np.concatenate([np.zeros(0, dtype=np.int64)] + [s for _, s in kept])


def _ranking(kept: list[tuple[np.ndarray, np.ndarray]]
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ranking of the module docstring of patterns kept per length (at ``n - 1`` the
    patterns of length ``n``, rows in lexicographic order, and their supports).

    Returns
    -------
    order : numpy.ndarray of int64
        Ranked positions in the concatenation of the lengths' patterns.
    length, row : numpy.ndarray of int64
        The length of each position and its row in that length's matrix.
    """
    sizes = [s.size for _, s in kept]
    length = np.repeat(np.arange(1, len(kept) + 1), sizes)
    row = np.concatenate([np.zeros(0, dtype=np.int64)] + [np.arange(m) for m in sizes])
    return np.lexsort((row, length, -_supports_of(kept))), length, row


def _best(kept: list[tuple[np.ndarray, np.ndarray]], k: int
          ) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``k`` best patterns of ``kept`` (see :func:`_ranking`), kept per length likewise."""
    order, length, row = _ranking(kept)
    top = order[:k]
    out = []
    for n, (rows, sup) in enumerate(kept, 1):
        sel = np.sort(row[top[length[top] == n]])
        out.append((rows[sel], sup[sel]))
    return out


def _pairs(db: Any, weights: np.ndarray, level: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 2-item candidates of ``level`` (single items, a column) that some sequence holds,
    with their supports (:func:`~dpgpu.eval.subseq_numba.occurring_pairs`).

    The same patterns as :func:`_candidates` with a support of at least 1 (the
    others cannot reach any threshold), in the same (lexicographic) order, as
    rows of an int32 matrix, without joining every pair of items: 9,025
    items make 81M pairs, of which LEVIATHAN holds 5M.
    """
    from .subseq_numba import occurring_pairs  # noqa: PLC0415 - Numba on use

    n_sym = db.vocab.size
    keys, held = occurring_pairs(db.items, db.offsets, weights, n_sym)
    pairs, inverse = np.unique(keys, return_inverse=True)
    support = np.bincount(inverse.reshape(-1), weights=held, minlength=pairs.size)
    a, b = pairs // n_sym, pairs % n_sym
    items = np.zeros(n_sym, dtype=bool)
    items[level[:, 0]] = True
    keep = items[a] & items[b]
    return (np.column_stack((a[keep], b[keep])).astype(np.int32),
            np.rint(support[keep]).astype(np.int64))


def _dedupe(db: Any, weights: np.ndarray | None = None) -> tuple[Any, np.ndarray]:
    """Distinct sequences and their multiplicities (supports are sums of weights).

    With ``weights`` (one int per sequence of ``db``), a distinct sequence
    weighs the sum of its copies' weights.  The distinct sequences come in
    the order of their first occurrence; grouping is exact (hashes only
    propose matches, :func:`dpgpu.eval.subseq_numba.group_rows`).
    """
    from ..data.sequencedb import SequenceDB
    from .subseq_numba import gather_rows, group_rows, sequence_hashes  # noqa: PLC0415 - numba

    weights = np.ones(len(db), dtype=np.int64) if weights is None else \
        np.ascontiguousarray(weights, dtype=np.int64)
    if len(db) == 0:
        return db, weights
    first, total = group_rows(db.items, db.offsets, sequence_hashes(db.items, db.offsets),
                              weights)
    items, offsets = gather_rows(db.items, db.offsets, first)
    return SequenceDB(items, offsets, db.vocab), total


def support_threshold(theta: float, n_sequences: int) -> int:
    """Absolute support threshold of a relative threshold ``theta``: ``ceil(theta * |D|)``.

    A pattern is frequent when its support is no less than ``theta * |D|``
    (PFS^2 Section III-B); supports are integers, hence the ceiling (with a
    relative tolerance of 1e-12 against floating-point noise).

    Parameters
    ----------
    theta : float
        The relative threshold, in ``(0, 1]`` (not checked here).
    n_sequences : int
        ``|D|``: the sequences of the database.

    Returns
    -------
    int
        At least 1.
    """
    return max(1, int(math.ceil(theta * n_sequences * (1 - 1e-12))))


# ------------------------------------------------------------------- lengths
def length_distribution(db: Any, *, l_max: int | None = None) -> np.ndarray:
    """Number of sequences of each length: ``out[L]`` = sequences with ``L`` items.

    Parameters
    ----------
    db : SequenceDB
    l_max : int, optional
        Cut lengths at ``l_max`` first (the truncated database).

    Returns
    -------
    numpy.ndarray of int64
        ``L + 1`` counts, ``L`` the longest (cut) length; ``[0]`` for no
        sequences.
    """
    lens = db.lengths if l_max is None else np.minimum(db.lengths, l_max)
    return np.bincount(lens.astype(np.int64), minlength=1).astype(np.int64)


# ------------------------------------------------------------------ DPNE
def gram_user_counts(db: Any, n: int, *, by: str = "user"
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Every contiguous ``n``-gram of items with the number of users holding it.

    Parameters
    ----------
    db : SequenceDB
    n : int
    by : {"user", "sequence"}
        Count distinct users (``db.users``; each sequence is its own user
        when the data has no users) or distinct sequences.

    Returns
    -------
    grams : numpy.ndarray of int32, shape (U, n)
        Distinct n-grams, in lexicographic order.
    holders : numpy.ndarray of int64, shape (U,)
        How many distinct users (sequences) have the gram in their text.

    Notes
    -----
    Each window gets an int64 key that orders the grams lexicographically
    (:func:`_window_keys`); the distinct ``(gram, owner)`` pairs are then one
    value sort of ``key * owners + owner``, and a gram's holders are the
    length of its run of pairs.
    """
    n = check_positive_int(n, "n")
    if by not in ("user", "sequence"):
        raise InvalidParameter(f"by: must be 'user' or 'sequence', got {by!r}")
    n_win = np.maximum(db.lengths.astype(np.int64) - n + 1, 0)
    pos = concat_ranges(db.offsets[:-1], n_win)
    if pos.size == 0:
        return np.zeros((0, n), dtype=np.int32), np.zeros(0, dtype=np.int64)
    row = np.repeat(np.arange(len(db), dtype=np.int64), n_win)
    owner = db.users[row].astype(np.int64) if (by == "user" and db.users is not None) else row
    n_owners = int(owner.max()) + 1
    radix = db.vocab.size + 1
    keys, first = _window_keys(db.items, pos, n, radix, n_owners)
    pairs = sorted_unique(keys * n_owners + owner)
    gram = pairs // n_owners
    starts = np.flatnonzero(np.r_[True, gram[1:] != gram[:-1]])
    holders = np.diff(np.r_[starts, gram.size])
    if first is None:
        grams = decode_packed(gram[starts], n, radix)
    else:  # keys are dense ranks, every one held
        grams = db.items[pos[first][:, None] + np.arange(n)]
    return grams.astype(np.int32), holders.astype(np.int64)


def _window_keys(items: np.ndarray, pos: np.ndarray, n: int, radix: int, n_owners: int
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Keys of the ``n``-grams starting at ``pos``, in the grams' lexicographic order.

    The items are packed one digit ``item + 1`` at a time in base ``radix``
    (the keys of :mod:`dpgpu.ops.keys`).  Before a digit would overflow
    int64, the keys so far are replaced by their dense ranks, which keep the
    order; so are the final keys when ``key * n_owners`` could overflow.
    Ranks are below the number of windows ``M``, so this holds while ``M``
    times ``radix`` and ``M`` times ``n_owners`` stay below 2**63 (any data
    held in memory).

    Returns
    -------
    keys : numpy.ndarray of int64
        One per window; ``keys * n_owners + owner`` fits int64.
    first : numpy.ndarray of int64 or None
        ``None`` when the keys are the packed grams
        (:func:`~dpgpu.ops.keys.decode_packed` reads them back); else the keys
        are ranks ``0 .. U-1`` and ``first[r]`` is a window of rank ``r``.
    """
    keys = np.zeros(pos.size, dtype=np.int64)
    span, first = 1, None
    for j in range(n):
        if span * radix > INT63:
            keys, first = _dense_ranks(keys)
            span = first.size
        keys = keys * radix + (items[pos + j] + 1)
        span *= radix
    if first is not None or span * n_owners > INT63:
        keys, first = _dense_ranks(keys)
    return keys, first


def _dense_ranks(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rank of each key among the distinct keys (ascending) and, per rank, one key's index."""
    order = np.argsort(keys)
    srt = keys[order]
    new = np.empty(srt.size, dtype=bool)
    new[:1] = True
    np.not_equal(srt[1:], srt[:-1], out=new[1:])
    ranks = np.empty_like(keys)
    ranks[order] = np.cumsum(new) - 1
    return ranks, order[new]


# --------------------------------------------------------------- spatial data
_RANGE_KERNELS: dict[str, Any] = {}


def range_counts(points: Any, boxes: Any) -> np.ndarray:
    """Exact number of points in each axis-aligned box ``[lo_1, hi_1) x .. x [lo_d, hi_d)``.

    Parameters
    ----------
    points : array of float, shape (n, d)
        ``d >= 1`` coordinates per point (a 1-D array is ``n`` points of ``d = 1``).
    boxes : array of float, shape (Q, 2 d)
        Rows ``(lo_1, .., lo_d, hi_1, .., hi_d)``; in 2-D ``(x0, y0, x1, y1)``.
        Half-open on the upper sides; a box with ``hi_j <= lo_j`` is empty.

    Returns
    -------
    numpy.ndarray of int64, shape (Q,)

    Raises
    ------
    InvalidParameter
        When ``points`` or ``boxes`` holds something other than real numbers
        (strings, which NumPy would read as numbers, bools, objects) or NaN
        (infinite sides are fine), or has the wrong shape; the message names
        the parameter.

    Notes
    -----
    * ``d = 1``: two binary searches per interval in the sorted coordinates.
    * ``d = 2``: offline dominance counting: ``F(X, Y) = #{x < X, y < Y}`` at
      the four corners of every box, by one sweep over the points sorted by
      ``x`` with a Fenwick tree over ``y`` ranks (Numba); ``O((n + Q) log n)``.
    * ``d >= 3``: binary searches give, in every dimension, the slab of
      points whose coordinate lies in the box's side; each box scans the
      smallest of its ``d`` slabs and tests the other coordinates (Numba);
      ``O(d Q log n + sum of the smallest slabs)``.
    """
    pts = _coordinates(points, "points")
    pts = pts.reshape(-1, 1) if pts.ndim == 1 else pts
    if pts.ndim != 2 or pts.shape[1] == 0:
        raise InvalidParameter("points: need an (n, d) array of coordinates")
    d = pts.shape[1]
    bx = _coordinates(boxes, "boxes")
    if bx.size % (2 * d):
        raise InvalidParameter(f"boxes: rows of 2 d = {2 * d} numbers are needed for "
                               f"{d}-D points")
    bx = bx.reshape(-1, 2 * d)
    lo, hi = bx[:, :d], np.maximum(bx[:, d:], bx[:, :d])  # an inverted box is empty
    if bx.shape[0] == 0 or pts.shape[0] == 0:
        return np.zeros(bx.shape[0], dtype=np.int64)
    if d == 2:
        return _range_counts_2d(pts, lo, hi)
    order = np.argsort(pts, axis=0, kind="stable")                 # (n, d)
    srt = np.take_along_axis(pts, order, axis=0)
    start = np.column_stack([np.searchsorted(srt[:, j], lo[:, j], side="left")
                             for j in range(d)])
    stop = np.column_stack([np.searchsorted(srt[:, j], hi[:, j], side="left")
                            for j in range(d)])
    if d == 1:
        return (stop[:, 0] - start[:, 0]).astype(np.int64)
    best = np.argmin(stop - start, axis=1)
    rows = np.arange(bx.shape[0])
    return _range_kernel("slab")(np.ascontiguousarray(pts), np.ascontiguousarray(order.T),
                                 best, start[rows, best], stop[rows, best],
                                 np.ascontiguousarray(lo), np.ascontiguousarray(hi))


def _coordinates(values: Any, name: str) -> np.ndarray:
    """``values`` as a float64 array of real numbers other than NaN, else an
    InvalidParameter naming ``name``."""
    arr = check_real_array(values, name)
    if np.isnan(arr).any():
        raise InvalidParameter(f"{name}: expected numbers other than NaN")
    return arr


def _range_counts_2d(pts: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """2-D range counts by a Fenwick sweep (see :func:`range_counts`)."""
    ys = sorted_unique(pts[:, 1])
    prank = np.searchsorted(ys, pts[:, 1]).astype(np.int64)  # 0-based rank
    porder = np.argsort(pts[:, 0], kind="stable")
    px = pts[porder, 0]
    prank = prank[porder]
    cx = np.concatenate([lo[:, 0], hi[:, 0], lo[:, 0], hi[:, 0]])
    cy = np.concatenate([lo[:, 1], lo[:, 1], hi[:, 1], hi[:, 1]])
    cyr = np.searchsorted(ys, cy, side="left").astype(np.int64)  # ranks < cyr have y < Y
    corder = np.argsort(cx, kind="stable")
    f = np.empty(cx.size, dtype=np.int64)
    f[corder] = _range_kernel("fenwick")(px, prank, cx[corder], cyr[corder], ys.size)
    q = lo.shape[0]
    return f[3 * q:] - f[2 * q:3 * q] - f[q:2 * q] + f[:q]


def _range_kernel(name: str):
    if name in _RANGE_KERNELS:
        return _RANGE_KERNELS[name]
    import numba  # noqa: PLC0415 - lazy on purpose

    @numba.njit(nogil=True, cache=True)
    def fenwick(px, prank, cx, cyr, n_ranks):
        tree = np.zeros(n_ranks + 1, dtype=np.int64)
        out = np.empty(cx.size, dtype=np.int64)
        p = 0
        for i in range(cx.size):
            while p < px.size and px[p] < cx[i]:
                j = prank[p] + 1
                while j <= n_ranks:
                    tree[j] += 1
                    j += j & (-j)
                p += 1
            s = 0
            j = cyr[i]
            while j > 0:
                s += tree[j]
                j -= j & (-j)
            out[i] = s
        return out

    @numba.njit(nogil=True, cache=True)
    def slab(pts, order, best, start, stop, lo, hi):
        d = pts.shape[1]
        out = np.zeros(best.size, dtype=np.int64)
        for q in range(best.size):
            dim = best[q]
            c = 0
            for r in range(start[q], stop[q]):
                p = order[dim, r]
                inside = True
                for j in range(d):
                    if j != dim and not (lo[q, j] <= pts[p, j] < hi[q, j]):
                        inside = False
                        break
                if inside:
                    c += 1
            out[q] = c
        return out

    _RANGE_KERNELS.update(fenwick=fenwick, slab=slab)
    return _RANGE_KERNELS[name]
