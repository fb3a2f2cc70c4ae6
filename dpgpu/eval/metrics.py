"""The papers' utility metrics (computed from exact values; not private).

Where a paper leaves a choice open, the choice made here is stated in the
function's docstring.  Summary of definitions:

* **relative error with sanity bound** (N-gram Section 6.2.1; PrivTree
  Section 6.1): ``|est - true| / max(true, s)`` with ``s = 0.1 % of |D|``.
* **random count-query protocol** (N-gram Section 6.2.1): for a maximal
  query size ``m``, 10,000 queries whose sizes are uniform on
  ``{1, .., m}`` and whose items are drawn independently and uniformly from
  the item universe ``I`` (with replacement; the end marker is not an item).
* **true positive ratio / top-k precision** (N-gram Section 6.2.2, PrivTree
  Section 6.2): ``|F_K(D) & F_K(D~)| / K``.
* **utility loss** (N-gram Section 6.2.2, after Chen et al. KDD'11):
  ``(1/K) * sum_{F in F_K(D)} |sup(F, D) - sup(F, D~)| / sup(F, D)``,
  where ``sup(F, D~)`` is ``F``'s support in the sanitized top-K list and 0
  when ``F`` is not in it.
* **precision / recall / F-score** of a released frequent-pattern set
  against the true one (PFS^2 Section VII-A).
* **relative error of supports** (PFS^2 Section VII-A, after PrivBasis):
  the median over the released patterns of ``|noisy - true| / true``.
* **total variation distance** of two length distributions (PrivTree
  Section 6.2): half the L1 distance of the normalised histograms.
* **K-anonymity coverage** (DPNE Section 3.1.2, Figure 4): the fraction of
  the k-grams held by at least ``K`` users that the release contains.
* **range-count query sets** (PrivTree Section 6.1): boxes covering
  ``[0.01 %, 0.1 %)``, ``[0.1 %, 1 %)``, ``[1 %, 10 %)`` of the domain's
  volume, in any dimension ``d >= 1``.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Mapping

import numpy as np

from ..errors import InvalidParameter
from ..validation import check_positive_int, check_positive_real, check_real_array

#: Sanity bound / smoothing factor as a fraction of the dataset size.
SANITY_FRACTION = 0.001
#: Maximal query sizes of the N-gram paper's five query subsets.
QUERY_SIZES = (4, 8, 12, 16, 20)
#: Most random queries of one workload subset: count queries of one maximal size, range
#: queries of one set (100 times the papers' 10,000).
MAX_QUERIES = 1_000_000
#: Most query items a count-query workload may draw: ``n_queries`` times the sum of its
#: maximal sizes (the N-gram paper's workload draws at most 600,000).
MAX_QUERY_ITEMS = 20_000_000
#: Volume fractions (area in 2-D) of PrivTree's small / medium / large range-query sets.
RANGE_SETS = {"small": (1e-4, 1e-3), "medium": (1e-3, 1e-2), "large": (1e-2, 1e-1)}


def _numbers(values: Any, name: str, *, allow_inf: bool = False) -> np.ndarray:
    """``values`` as a float64 array, refused unless it holds real numbers that are not NaN.

    Parameters
    ----------
    values : array_like
        Numbers of any shape (:func:`~dpgpu.validation.check_real_array`:
        bools, strings and other objects are refused).
    name : str
        The parameter's name, for the error message.
    allow_inf : bool
        Accept infinities (NaN is never accepted).

    Returns
    -------
    numpy.ndarray of float64

    Raises
    ------
    InvalidParameter
        A value that is not a real number, NaN, or infinite without ``allow_inf``.
    """
    arr = check_real_array(values, name)
    bad = np.isnan(arr) if allow_inf else ~np.isfinite(arr)
    if bad.any():
        need = "numbers other than NaN" if allow_inf else "finite numbers"
        raise InvalidParameter(f"{name}: expected {need}, got {arr[bad].ravel()[0]}")
    return arr


def _number(value: Any, name: str) -> float:
    """``value`` as a float if it is a finite real number (not a bool, not a string).

    Parameters
    ----------
    value : any
        The value given.
    name : str
        The parameter's name, for the error message.

    Returns
    -------
    float

    Raises
    ------
    InvalidParameter
        ``value`` is not a real number, or is NaN or infinite.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value):
        raise InvalidParameter(f"{name}: expected a finite number, got {value!r}")
    return float(value)


def _generator(seed: Any) -> np.random.Generator:
    """A generator as given, or seeded with ``seed``, an integer ``>= 0`` (``seed`` in messages)."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(check_positive_int(seed, "seed", minimum=0))


# ------------------------------------------------------------ relative error
def sanity_bound(n_records: int, fraction: float = SANITY_FRACTION) -> float:
    """The sanity bound ``s = fraction * |D|`` (0.1 % of the records by default).

    Parameters
    ----------
    n_records : int
        ``|D|``: sequences (count queries) or points (range queries) of the
        *original* dataset.
    fraction : float
        The share of the records, finite and ``> 0``.

    Returns
    -------
    float
        ``fraction * n_records``.

    Raises
    ------
    InvalidParameter
        ``n_records`` is not an integer ``>= 1``, or ``fraction`` is not a
        finite number ``> 0``.
    """
    n_records = check_positive_int(n_records, "n_records")
    return check_positive_real(fraction, "fraction") * n_records


def relative_errors(estimates: Any, truth: Any, bound: float) -> np.ndarray:
    """Per-query relative errors ``|est - true| / max(true, bound)``.

    Parameters
    ----------
    estimates, truth : array of float
        Answers on the release and on the original data; finite numbers.
    bound : float
        The sanity bound (:func:`sanity_bound`); must be > 0.

    Returns
    -------
    numpy.ndarray of float64

    Raises
    ------
    InvalidParameter
        ``bound`` is not a finite number ``> 0``; ``estimates`` or ``truth``
        holds something other than a finite number, or their shapes differ.
    """
    bound = check_positive_real(bound, "bound")
    est = _numbers(estimates, "estimates")
    tru = _numbers(truth, "truth")
    if est.shape != tru.shape:
        raise InvalidParameter("estimates: must have the shape of truth")
    return np.abs(est - tru) / np.maximum(tru, bound)


def random_count_queries(n_items: int, max_size: int, n_queries: int = 10_000, *,
                         seed: Any = 0) -> list[np.ndarray]:
    """Random count queries of the N-gram paper (Section 6.2.1).

    "For each subset, we generate 10,000 random queries of sizes that are
    uniformly distributed at random between 1 and its maximal size.  Each
    item in a query is uniformly selected at random from the item universe."

    The reading used here: the size of each query is drawn uniformly from
    ``{1, .., max_size}``; its items are drawn independently (with
    replacement, so repeats are allowed) and uniformly from the ``n_items``
    items; the end marker is not an item.  A query is a contiguous string;
    its answer is its number of occurrences (:func:`dpgpu.eval.truth.pattern_counts`).

    Parameters
    ----------
    n_items : int
        ``|I|``.
    max_size : int
        The subset's maximal query size (4, 8, 12, 16 or 20 in the paper).
    n_queries : int
        At most :data:`MAX_QUERIES`, with ``n_queries * max_size`` at most
        :data:`MAX_QUERY_ITEMS`.
    seed : int or numpy.random.Generator
        Evaluation randomness (not a privacy mechanism): a fixed seed makes
        the query workload reproducible, so different releases of the same
        data are judged on the same queries.

    Returns
    -------
    list of numpy.ndarray of int32
        Item ids.

    Raises
    ------
    InvalidParameter
        ``n_items``, ``max_size`` or ``n_queries`` is not an integer ``>= 1``,
        or the workload is larger than the maxima above, or ``seed`` is
        neither a generator nor an integer ``>= 0``.

    See Also
    --------
    random_count_workload : the same queries, concatenated.
    """
    items, sizes = random_count_workload(n_items, max_size, n_queries, seed=seed)
    return np.split(items, np.cumsum(sizes)[:-1])


def random_count_workload(n_items: int, max_size: int, n_queries: int = 10_000, *,
                          seed: Any = 0) -> tuple[np.ndarray, np.ndarray]:
    """The queries of :func:`random_count_queries` as one array of items and their sizes.

    The same draws (for the same ``seed``), without an array per query: a
    workload of many short queries takes a few bytes a query.

    Parameters
    ----------
    n_items, max_size, n_queries, seed
        As for :func:`random_count_queries`.

    Returns
    -------
    items : numpy.ndarray of int32
        The queries' item ids, concatenated.
    sizes : numpy.ndarray of int64, shape (n_queries,)
        Each query's size (its number of items).

    Raises
    ------
    InvalidParameter
        As :func:`random_count_queries`.
    """
    n_items = check_positive_int(n_items, "n_items")
    max_size = check_positive_int(max_size, "max_size", maximum=MAX_QUERY_ITEMS)
    n_queries = check_positive_int(n_queries, "n_queries", maximum=MAX_QUERIES)
    if n_queries * max_size > MAX_QUERY_ITEMS:
        raise InvalidParameter(f"n_queries: {n_queries:,} queries of up to {max_size:,} items "
                               f"may draw more than the {MAX_QUERY_ITEMS:,} query items "
                               "allowed; draw fewer or shorter queries")
    rng = _generator(seed)
    sizes = rng.integers(1, max_size + 1, size=n_queries)
    return rng.integers(0, n_items, size=int(sizes.sum())).astype(np.int32), sizes


def summarize(errors: Any) -> dict[str, float]:
    """Mean, median, 90th percentile and max of a vector of errors (0 for none).

    Parameters
    ----------
    errors : array_like of float
        The errors (any shape; all of them are summarized).

    Returns
    -------
    dict
        ``mean``, ``median``, ``p90``, ``max`` (float) and ``n`` (int, the
        number of errors); all 0 for no errors.

    Raises
    ------
    InvalidParameter
        An error that is not a finite number.
    """
    e = _numbers(errors, "errors")
    if e.size == 0:
        return {"mean": 0.0, "median": 0.0, "p90": 0.0, "max": 0.0, "n": 0}
    return {"mean": float(e.mean()), "median": float(np.median(e)),
            "p90": float(np.percentile(e, 90)), "max": float(e.max()), "n": int(e.size)}


# --------------------------------------------------------------------- top-k
def true_positive_ratio(true_top: Iterable[Any], released_top: Iterable[Any],
                        k: int | None = None) -> float | None:
    """``|F_K(D) & F_K(D~)| / K`` (N-gram Tables 5-6; PrivTree "precision").

    Parameters
    ----------
    true_top : iterable of hashable patterns
        ``F_K(D)``, the exact top-K.
    released_top : iterable of hashable patterns
        ``F_K(D~)``, the top-K found on (or returned by) the release.
    k : int, optional
        The divisor ``K``; default ``len(true_top)``.  Pass the true top-K
        itself and leave ``k`` out to take the ratio over the patterns that
        exist when the data has fewer than K.

    Returns
    -------
    float in [0, 1] or None
        None when ``k`` is left out and ``true_top`` is empty: there is
        nothing to compare, which is no perfect score.
    """
    t, r = set(true_top), set(released_top)
    k = len(t) if k is None else check_positive_int(k, "k")
    return len(t & r) / k if k else None


topk_precision = true_positive_ratio


def utility_loss(true_top: Mapping[Any, float], released_top: Mapping[Any, float]
                 ) -> float | None:
    """Utility loss of the N-gram paper (Section 6.2.2, after Chen et al. KDD'11).

    ``(1/K) sum_{F in F_K(D)} |sup(F, F_K(D)) - sup(F, F_K(D~))| / sup(F, F_K(D))``
    with ``sup(F, F_K(D~)) = 0`` when ``F`` is not in ``F_K(D~)``.  The
    extracted formula prints ``F_K(D)`` twice in the numerator; the text
    ("the accuracy of the supports of patterns in F_K(D~)") fixes it.
    0 means identical lists and supports; 1 means disjoint lists.

    Parameters
    ----------
    true_top : mapping pattern -> support
        ``F_K(D)`` with supports on the original (``K = len(true_top)``).
    released_top : mapping pattern -> support
        ``F_K(D~)`` with supports on the release (not rescaled).

    Returns
    -------
    float or None
        None for an empty ``true_top``: there is nothing to compare, which
        is no perfect score.

    Raises
    ------
    InvalidParameter
        A support of ``true_top`` that is not a finite number ``> 0``, or one
        of ``released_top`` that is not a finite number.
    """
    if not true_top:
        return None
    total = 0.0
    for f, s in true_top.items():
        s = check_positive_real(s, "true_top")
        total += abs(s - _number(released_top.get(f, 0.0), "released_top")) / s
    return total / len(true_top)


# ----------------------------------------------------------- frequent patterns
def precision_recall_fscore(true_set: Iterable[Any], released_set: Iterable[Any]
                            ) -> tuple[float, float, float] | tuple[None, None, None]:
    """Precision, recall and F-score of a released pattern set.

    ``precision = |T & R| / |R|``, ``recall = |T & R| / |T|``,
    ``F = 2 p r / (p + r)``.  Conventions for one empty set: precision is 1
    when nothing is released (no false positive), recall is 1 when nothing
    is truly frequent; F is 0 when ``p + r = 0``, so 0 for either.  When
    both sets are empty there is nothing to compare, which is no perfect
    score: all three are None (``n/a``), as :func:`true_positive_ratio`
    scores an empty top-K.

    Parameters
    ----------
    true_set : iterable of patterns
        The truly frequent patterns ``T`` (hashable).
    released_set : iterable of patterns
        The released patterns ``R``.

    Returns
    -------
    (float, float, float), or (None, None, None) when ``T`` and ``R`` are both empty
    """
    t, r = set(true_set), set(released_set)
    if not t and not r:
        return None, None, None
    hit = len(t & r)
    p = hit / len(r) if r else 1.0
    rc = hit / len(t) if t else 1.0
    f = 2 * p * rc / (p + rc) if p + rc > 0 else 0.0
    return p, rc, f


def support_relative_errors(released: Mapping[Any, float], true_support: Mapping[Any, float]
                            ) -> np.ndarray:
    """Per-pattern relative errors of released supports: ``|noisy - true| / true``.

    Over *all* released patterns (false positives included, with their true
    support); a released pattern that occurs nowhere (true support 0) is
    divided by 1 instead of 0.  PFS^2 reports RE after PrivBasis, which
    takes the **median** of these values (``summarize(...)["median"]``).

    Parameters
    ----------
    released : mapping pattern -> released (noisy) support
    true_support : mapping pattern -> exact support (must cover ``released``)

    Returns
    -------
    numpy.ndarray of float64
        One error per released pattern, in ``released``'s order.

    Raises
    ------
    InvalidParameter
        A released support that is not a finite number, a true support that
        is not a finite number ``>= 0``, or a released pattern that
        ``true_support`` lacks.
    """
    vals = []
    for f, s in released.items():
        if f not in true_support:
            raise InvalidParameter(f"true_support: has no support for the released pattern {f!r}")
        t = check_positive_real(true_support[f], "true_support", allow_zero=True)
        vals.append(abs(_number(s, "released") - t) / max(t, 1.0))
    return np.array(vals, dtype=np.float64)


# ------------------------------------------------------------------- lengths
def total_variation_distance(p: Any, q: Any) -> float:
    """Total variation distance ``0.5 * sum |P - Q|`` of two distributions.

    Parameters
    ----------
    p, q : array of float
        Histograms (e.g. sequences per length) of finite numbers ``>= 0``;
        each is normalised to sum 1 and the shorter is padded with zeros.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    InvalidParameter
        A histogram that holds something other than finite numbers ``>= 0``,
        or sums to 0 (the message names ``p`` or ``q``).
    """
    a = _numbers(p, "p").ravel()
    b = _numbers(q, "q").ravel()
    for name, h in (("p", a), ("q", b)):
        if (h < 0).any() or not h.sum() > 0:
            raise InvalidParameter(f"{name}: a histogram must be non-negative with a "
                                   "positive total")
    n = max(a.size, b.size)
    a = np.pad(a, (0, n - a.size)) / a.sum()
    b = np.pad(b, (0, n - b.size)) / b.sum()
    return float(0.5 * np.abs(a - b).sum())


# ---------------------------------------------------------------------- DPNE
def kanonymity_coverage(released: Iterable[Any], holders: Mapping[Any, int], K: int
                        ) -> float | None:
    """Fraction of the grams held by at least ``K`` users that the release contains.

    DPNE Section 3.1.2 / Figure 4: "what fraction of n-grams whose count is
    at least K is extracted".  The count of a gram is the number of distinct
    users whose text contains it (the paper's "used by at least 100 users").

    Parameters
    ----------
    released : iterable of patterns
        The extracted grams (all lengths, or one length for a per-k curve).
    holders : mapping pattern -> number of users
        Exact, from :func:`dpgpu.eval.truth.gram_user_counts`; integers ``>= 0``.
    K : int

    Returns
    -------
    float in [0, 1], or None when no gram reaches K (nothing to cover: no share).

    Raises
    ------
    InvalidParameter
        ``K`` is not an integer ``>= 1``, or a number of users is not an
        integer ``>= 0``.
    """
    K = check_positive_int(K, "K")
    r = set(released)
    eligible = [g for g, c in holders.items()
                if check_positive_int(c, "holders", minimum=0) >= K]
    return covered_share(sum(1 for g in eligible if g in r), len(eligible))


def spurious_fraction(released: Iterable[Any], present: Iterable[Any] | Mapping) -> float:
    """Fraction of released grams that occur in no user's text (DPNE's eta check).

    Parameters
    ----------
    released : iterable of patterns
        The extracted grams (counted once each).
    present : iterable of patterns, or mapping
        The grams that occur in the original data (a mapping's keys).

    Returns
    -------
    float
        In ``[0, 1]``; 0.0 when nothing is released.
    """
    r = set(released)
    p = present if isinstance(present, (set, frozenset, Mapping)) else set(present)
    return spurious_share(sum(1 for g in r if g not in p), len(r))


def covered_share(covered: int, eligible: int) -> float | None:
    """:func:`kanonymity_coverage` from its counts: None when no gram is eligible.

    Parameters
    ----------
    covered : int
        Eligible grams (held by at least ``K`` users) that the release contains.
    eligible : int
        Grams held by at least ``K`` users.

    Returns
    -------
    float or None
        ``covered / eligible``, or None when ``eligible`` is 0.

    Raises
    ------
    InvalidParameter
        ``eligible`` is not an integer ``>= 0``, or ``covered`` is not one
        in ``[0, eligible]``.
    """
    eligible = check_positive_int(eligible, "eligible", minimum=0)
    covered = check_positive_int(covered, "covered", minimum=0, maximum=eligible)
    return covered / eligible if eligible else None


def spurious_share(absent: int, released: int) -> float:
    """:func:`spurious_fraction` from its counts: 0.0 when nothing is released.

    Parameters
    ----------
    absent : int
        Released grams that occur in no user's text.
    released : int
        Released grams.

    Returns
    -------
    float
        ``absent / released``, or 0.0 when ``released`` is 0.

    Raises
    ------
    InvalidParameter
        ``released`` is not an integer ``>= 0``, or ``absent`` is not one
        in ``[0, released]``.
    """
    released = check_positive_int(released, "released", minimum=0)
    absent = check_positive_int(absent, "absent", minimum=0, maximum=released)
    return absent / released if released else 0.0


# --------------------------------------------------------------- spatial data
def domain_bounds(domain: Any) -> np.ndarray:
    """A box domain as a ``(d, 2)`` array of ``[lo, hi]`` rows.

    Parameters
    ----------
    domain : array of float
        Either ``(d, 2)`` rows ``[lo_j, hi_j]`` (the layout of
        ``report.json``'s ``domain.bounds``) or a flat ``(lo_1, .., lo_d,
        hi_1, .., hi_d)`` (in 2-D ``(x0, y0, x1, y1)``, like a query box).

    Returns
    -------
    numpy.ndarray of float64, shape (d, 2)

    Raises
    ------
    InvalidParameter
        Not numbers, not finite, or ``lo >= hi`` in some dimension.
    """
    b = _numbers(domain, "domain", allow_inf=True)
    if b.ndim == 1 and b.size >= 2 and b.size % 2 == 0:
        b = b.reshape(2, -1).T
    if b.ndim != 2 or b.shape[1] != 2 or b.shape[0] == 0:
        raise InvalidParameter("domain: need (d, 2) rows [lo, hi] or a flat (lo..., hi...)")
    if not (np.all(np.isfinite(b)) and np.all(b[:, 1] > b[:, 0])):
        raise InvalidParameter("domain: need finite lo < hi in every dimension")
    return b


def random_range_queries(domain: Any, n_queries: int = 10_000,
                         size: str | tuple[float, float] = "small", *, seed: Any = 0,
                         max_aspect: float = 4.0) -> np.ndarray:
    """Random range-count query boxes of PrivTree Section 6.1, in ``d >= 1`` dimensions.

    "Each query in the small, medium, and large set has a region that cover
    [0.01 %, 0.1 %), [0.1 %, 1 %), and [1 %, 10 %) of the data domain": each
    box covers a fraction ``a`` of the domain's *volume*, ``a`` drawn
    log-uniformly from ``[lo, hi)``.  The paper does not say how shapes are
    drawn; here, in domain-relative units, the logarithms of the sides are
    ``ln(a) / d + e`` with ``e`` uniform over the shapes whose sides differ
    by at most a factor ``max_aspect`` (``sum(e) = 0``, ``max(e) - min(e) <=
    ln(max_aspect)``; drawn by rejection).  In 2-D this is the aspect ratio
    ``r`` log-uniform on ``[1/max_aspect, max_aspect]`` and sides
    ``sqrt(a r)``, ``sqrt(a / r)``; in 1-D an interval of length ``a``.  A
    side longer than the domain is cut to it and the others are scaled up
    to keep the volume ``a``.  The position is uniform among those that
    keep the box inside the domain.

    Parameters
    ----------
    domain : array of float
        ``(d, 2)`` rows ``[lo, hi]``, or a flat ``(lo_1, .., lo_d, hi_1, .., hi_d)``
        (:func:`domain_bounds`).
    n_queries : int
        At most :data:`MAX_QUERIES`.
    size : {"small", "medium", "large"} or (lo, hi)
        A set of :data:`RANGE_SETS`, or a volume fraction range ``0 < lo < hi <= 1``.
    seed : int or numpy.random.Generator
    max_aspect : float
        Largest ratio of two sides (domain-relative); 1 gives cubes.

    Returns
    -------
    numpy.ndarray of float64, shape (n_queries, 2 d)
        Rows ``(lo_1, .., lo_d, hi_1, .., hi_d)``; in 2-D ``(x0, y0, x1, y1)``.

    Raises
    ------
    InvalidParameter
        ``n_queries`` is not an integer in ``[1, MAX_QUERIES]``, ``size`` neither a set's
        name nor a pair ``0 < lo < hi <= 1``, ``max_aspect`` not a finite
        number ``> 0``, a bad ``domain`` (:func:`domain_bounds`), or ``seed``
        neither a generator nor an integer ``>= 0``.
    """
    n_queries = check_positive_int(n_queries, "n_queries", maximum=MAX_QUERIES)
    if isinstance(size, str):
        if size not in RANGE_SETS:
            raise InvalidParameter(f"size: must be one of {', '.join(RANGE_SETS)}, got {size!r}")
        lo, hi = RANGE_SETS[size]
    else:
        try:
            lo, hi = size
        except (TypeError, ValueError):
            raise InvalidParameter(f"size: must be one of {', '.join(RANGE_SETS)} or a pair "
                                   f"(lo, hi), got {size!r}") from None
        lo, hi = check_positive_real(lo, "size"), check_positive_real(hi, "size")
        if not lo < hi <= 1:
            raise InvalidParameter("size: need 0 < lo < hi <= 1")
    spread = math.log(max(check_positive_real(max_aspect, "max_aspect"), 1.0))
    b = domain_bounds(domain)
    d = b.shape[0]
    rng = _generator(seed)
    a = np.exp(rng.uniform(math.log(lo), math.log(hi), n_queries))
    # t_j = e_j - e_d, uniform on [-spread, spread]^(d-1), kept where the sides' spread fits
    t = np.zeros((n_queries, d))
    todo = np.arange(n_queries)
    while todo.size:
        draw = np.zeros((todo.size, d))
        draw[:, :-1] = rng.uniform(-spread, spread, (todo.size, d - 1))
        ok = draw.max(axis=1) - draw.min(axis=1) <= spread
        t[todo[ok]] = draw[ok]
        todo = todo[~ok]
    side = np.exp(np.log(a)[:, None] / d + t - t.mean(axis=1, keepdims=True))
    for _ in range(d):  # cut sides longer than the domain; the free ones keep the volume a
        over = side > 1.0
        if not over.any():
            break
        side[over] = 1.0
        free = side < 1.0
        scale = (a / side.prod(axis=1)) ** (1.0 / np.maximum(free.sum(axis=1), 1))
        side = np.where(free, side * scale[:, None], side)
    side = np.minimum(side, 1.0)
    start = np.column_stack([rng.uniform(0.0, 1.0, n_queries) for _ in range(d)]) * (1.0 - side)
    width = b[:, 1] - b[:, 0]
    return np.hstack([b[:, 0] + start * width, b[:, 0] + (start + side) * width])


def _boxes(boxes: Any, d: int | None, name: str) -> np.ndarray:
    """Boxes as a ``(n, 2 d)`` float64 array (``d`` from the shape when not given); numbers,
    infinite sides allowed, NaN refused (:func:`_numbers`)."""
    arr = _numbers(boxes, name, allow_inf=True)
    if d is None:
        if arr.ndim != 2 or arr.shape[1] == 0 or arr.shape[1] % 2:
            raise InvalidParameter(f"{name}: need a (n, 2 d) array of rows (lo..., hi...)")
        return arr
    if arr.size % (2 * d):
        raise InvalidParameter(f"{name}: rows of 2 d = {2 * d} numbers are needed")
    return arr.reshape(-1, 2 * d)


def histogram_range_estimates(leaf_boxes: Any, leaf_counts: Any, query_boxes: Any) -> np.ndarray:
    """Answers of range-count queries from a spatial histogram (uniformity assumption).

    Each leaf with (noisy) count ``c`` contributes ``c * vol(leaf & query) /
    vol(leaf)``, the standard way a private decomposition answers a range
    query (PrivTree Section 2); a query that covers every leaf returns the
    sum of the counts, however narrow the leaves.

    Parameters
    ----------
    leaf_boxes : array of float, shape (L, 2 d)
        Rows ``(lo_1, .., lo_d, hi_1, .., hi_d)``, with ``0 < hi - lo < inf``.
    leaf_counts : array of float, shape (L,)
        Finite numbers (noisy counts may be negative).
    query_boxes : array of float, shape (Q, 2 d)
        Infinite sides are allowed (a box unbounded that way); NaN is not.

    Returns
    -------
    numpy.ndarray of float64, shape (Q,)

    Raises
    ------
    InvalidParameter
        Arrays of the wrong shape or holding something other than numbers
        (NaN, a count that is not finite), or a leaf box without a positive
        finite width in some dimension (it would hold no volume to spread its
        count on).
    """
    L = _boxes(leaf_boxes, None, "leaf_boxes")
    d = L.shape[1] // 2
    Q = _boxes(query_boxes, d, "query_boxes")
    c = _numbers(leaf_counts, "leaf_counts").ravel()
    if c.size != L.shape[0]:
        raise InvalidParameter("leaf_counts: one count per leaf box is needed")
    with np.errstate(over="ignore", invalid="ignore"):
        width = L[:, d:] - L[:, :d]
    bad = np.flatnonzero(~np.all(np.isfinite(width) & (width > 0), axis=1))
    if bad.size:
        raise InvalidParameter(f"leaf_boxes: box {bad[0]} needs finite lo < hi with a finite "
                               "width in every dimension")
    out = np.zeros(Q.shape[0], dtype=np.float64)
    step = max(1, 2 ** 22 // max(L.shape[0], 1))
    for s in range(0, Q.shape[0], step):
        q = Q[s:s + step]
        frac = np.ones((q.shape[0], L.shape[0]))
        for j in range(d):
            overlap = (np.minimum(q[:, None, d + j], L[None, :, d + j])
                       - np.maximum(q[:, None, j], L[None, :, j]))
            frac *= np.clip(overlap, 0, None) / width[None, :, j]
        out[s:s + step] = frac @ c
    return out


def range_relative_errors(estimates: Any, truth: Any, n_points: int,
                          fraction: float = SANITY_FRACTION) -> np.ndarray:
    """PrivTree's RE: ``|est - true| / max(true, Delta)`` with ``Delta = 0.1 % of n``.

    Parameters
    ----------
    estimates, truth : array_like of float
        Answers on the release and on the original data, of one shape.
    n_points : int
        Points of the original data.
    fraction : float
        The sanity bound's share of them (:func:`sanity_bound`).

    Returns
    -------
    numpy.ndarray of float64
        One error per query (:func:`relative_errors`).

    Raises
    ------
    InvalidParameter
        As :func:`sanity_bound` and :func:`relative_errors`.
    """
    return relative_errors(estimates, truth, sanity_bound(n_points, fraction))
