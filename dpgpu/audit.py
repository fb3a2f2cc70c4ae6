"""Statistical privacy audits: a confident lower bound on a mechanism's privacy loss.

:func:`audit` runs a mechanism many times on two neighbouring datasets ``d0``
and ``d1`` (one sequence, or one user, added), counts how often each output
event occurs, and turns the counts into a lower bound on epsilon that holds
with probability at least ``1 - alpha``:

* for every event ``E`` and both directions, a one-sided Clopper--Pearson
  lower bound ``p_lo`` on ``P[M(d_a) in E]`` and upper bound ``p_hi`` on
  ``P[M(d_b) in E]``, each at level ``alpha / (4 m)`` for ``m`` events
  (Bonferroni over events, directions and the two bounds);
* ``(epsilon, delta)``-DP requires ``P[M(d_a) in E] <= e^eps P[M(d_b) in E] + delta``,
  so ``epsilon >= log((p_lo - delta) / p_hi)`` whenever every interval holds.

The audit *fails* when the largest such bound exceeds the claimed epsilon.
A correct mechanism therefore fails with probability at most ``alpha``; a
mechanism whose true loss on some event is clearly above the claim fails once
the trials resolve it.  The test suite shows both (a correct discrete-Laplace
count passes; the same release with epsilon 1.5, or with its noise scale
times 0.7, is rejected).

Mechanisms audit themselves the same way: pick the worst-case neighbours
(the neighbour adds the largest contribution one privacy unit may make), a
small family of events (:func:`threshold_events` for counts), and the claimed
``(epsilon, delta)``.  For speed, a mechanism may run all trials in one call
(``batch=True``): ``mechanism(dataset, seed, trials)`` then returns the
``trials`` independent outputs, and the events receive that batch.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from typing import Any, Callable, Sequence, Union

import numpy as np
from scipy.stats import beta

from .backend import to_numpy
from .errors import InvalidParameter
from .validation import check_positive_int, check_positive_real, check_probability

#: One function returning a boolean per event, or one predicate per event.
Events = Union[Callable[[Any], Any], Sequence[Callable[[Any], Any]]]


@dataclass(frozen=True)
class AuditResult:
    """What an audit found.

    Attributes
    ----------
    passed : bool
        True unless the samples prove, at confidence ``1 - alpha``, a loss
        above the claim.
    epsilon, delta : float
        The claim.
    epsilon_lower_bound : float
        The largest confident lower bound on epsilon over the events (0 when
        no event says anything).
    delta_lower_bound : float
        The largest confident lower bound on ``P[M(d_a) in E] - e^eps P[M(d_b) in E]``
        at the claimed epsilon (the audit fails iff it exceeds ``delta``).
    worst_event : int
        Index of the event giving ``epsilon_lower_bound``.
    worst_direction : str
        ``"d0/d1"`` or ``"d1/d0"``: which dataset is in the numerator.
    counts : numpy.ndarray
        ``(2, m)`` hits of each event on ``d0`` and ``d1``.
    trials : int
        Runs per dataset.
    alpha : float
        Probability that a correct mechanism fails.
    """

    passed: bool
    epsilon: float
    delta: float
    epsilon_lower_bound: float
    delta_lower_bound: float
    worst_event: int
    worst_direction: str
    counts: np.ndarray
    trials: int
    alpha: float

    def summary(self) -> str:
        """A readable one-paragraph verdict.

        Returns
        -------
        str
            PASSED or FAILED, the claim, the confident lower bound on epsilon
            with the worst event's hits on each dataset, and the audit's size
            (events, trials, ``alpha``).  It is also ``str(result)``.
        """
        verdict = "PASSED" if self.passed else "FAILED"
        num, den = (0, 1) if self.worst_direction == "d0/d1" else (1, 0)
        e = self.worst_event
        return (f"privacy audit {verdict}: claimed epsilon={self.epsilon:g}, "
                f"delta={self.delta:g}; confident lower bound epsilon >= "
                f"{self.epsilon_lower_bound:.4f} (event {e}, {self.worst_direction}: "
                f"{self.counts[num, e]} vs {self.counts[den, e]} hits of {self.trials}); "
                f"{self.counts.shape[1]} events, {self.trials} trials per dataset, "
                f"alpha={self.alpha:g} with Bonferroni correction")

    __str__ = summary


def audit(mechanism: Callable[..., Any], d0: Any, d1: Any, events: Events,
          epsilon: float, delta: float = 0.0, *, trials: int = 100_000, alpha: float = 1e-6,
          seed: int | None = None, batch: bool = False) -> AuditResult:
    """Audit ``mechanism`` on neighbouring datasets against a claimed ``(epsilon, delta)``.

    Parameters
    ----------
    mechanism : callable
        ``mechanism(dataset, seed) -> output`` for one run with randomness
        from the integer ``seed``; with ``batch=True``,
        ``mechanism(dataset, seed, trials)`` returns ``trials`` independent
        outputs (an array, or a sequence the events understand).
    d0, d1 : any
        Neighbouring datasets.
    events : callable or sequence of callables
        Either one function of an output returning ``m`` booleans (one per
        event), or a list of predicates, one per event.  With ``batch=True``
        they receive the whole batch and return ``(trials, m)`` (or
        ``(trials,)`` per predicate).
    epsilon : float
        Claimed epsilon, finite, ``> 0``.
    delta : float
        Claimed delta in ``[0, 1)``.
    trials : int
        Runs per dataset.
    alpha : float
        Allowed probability of failing a correct mechanism, in ``(0, 1)``.
    seed : int or None
        Seed of the audit's own run seeds (None: random); printed seeds make
        a failure reproducible.
    batch : bool
        Whether ``mechanism`` runs all trials in one call.

    Returns
    -------
    AuditResult
        ``passed`` is False when a confident lower bound on epsilon exceeds
        ``epsilon``.

    Raises
    ------
    InvalidParameter
        When ``mechanism`` is not callable; ``epsilon``, ``delta``,
        ``trials``, ``alpha`` or ``seed`` is out of range (named); ``events``
        is neither a callable nor a non-empty sequence of predicates; or,
        with ``batch=True``, the events of a batch are not ``(trials, m)``
        booleans.  What ``mechanism`` and ``events`` raise passes through.
    """
    if not callable(mechanism):
        raise InvalidParameter("mechanism: expected a callable")
    epsilon = check_positive_real(epsilon, "epsilon")
    delta = check_probability(delta, "delta", allow_zero=True)
    trials = check_positive_int(trials, "trials")
    alpha = check_probability(alpha, "alpha")
    base = secrets.randbits(62) if seed is None else check_positive_int(seed, "seed", minimum=0)
    counts = np.stack([_hits(mechanism, d, events, trials, 2 * base + side, batch)
                       for side, d in enumerate((d0, d1))])
    m = counts.shape[1]
    level = alpha / (4 * m)
    lower = _cp_lower(counts, trials, level)
    upper = _cp_upper(counts, trials, level)
    # rows: direction d0/d1 (numerator d0) and d1/d0
    num = np.stack([lower[0], lower[1]])
    den = np.stack([upper[1], upper[0]])
    with np.errstate(divide="ignore", invalid="ignore"):
        bounds = np.where(num - delta > 0, np.log((num - delta) / den), -np.inf)
    direction, event = np.unravel_index(int(np.argmax(bounds)), bounds.shape)
    eps_lb = max(0.0, float(bounds[direction, event]))
    delta_lb = max(0.0, float(np.max(num - math.exp(epsilon) * den)))
    return AuditResult(passed=bool(eps_lb <= epsilon), epsilon=epsilon, delta=delta,
                       epsilon_lower_bound=eps_lb, delta_lower_bound=delta_lb,
                       worst_event=int(event), worst_direction=("d0/d1", "d1/d0")[direction],
                       counts=counts, trials=trials, alpha=alpha)


def threshold_events(thresholds: Sequence[float], *, index: int | None = None
                     ) -> Callable[[Any], np.ndarray]:
    """Events ``{output >= t}`` and ``{output <= t}`` for each threshold ``t``.

    Parameters
    ----------
    thresholds : sequence of float
        The ``t`` values; ``2 * len(thresholds)`` events.
    index : int or None
        For vector outputs, the coordinate to threshold (``output[..., index]``).

    Returns
    -------
    callable
        Works on one output and on a batch (leading trial axis).

    Raises
    ------
    InvalidParameter
        When ``thresholds`` is empty, not one-dimensional, or holds NaN,
        an infinity or something that is not a number.
    """
    try:
        t = np.asarray(thresholds, dtype=np.float64)
    except (TypeError, ValueError):  # text, ragged lists
        t = np.empty(0)
    if t.ndim != 1 or not t.size or not np.isfinite(t).all():
        raise InvalidParameter("thresholds: expected a non-empty list of finite numbers")

    def events(output: Any) -> np.ndarray:
        x = np.asarray(to_numpy(output))
        if index is not None:
            x = x[..., index]
        x = x[..., None]
        return np.concatenate([x >= t, x <= t], axis=-1)

    return events


def _hits(mechanism: Callable[..., Any], dataset: Any, events: Events, trials: int,
          seed: int, batch: bool) -> np.ndarray:
    """How many of ``trials`` runs fall in each event."""
    if batch:
        rows = _event_matrix(events, mechanism(dataset, seed, trials))
        if rows.ndim != 2 or rows.shape[0] != trials:
            raise InvalidParameter(f"events: expected ({trials}, m) booleans for a batch, "
                                   f"got shape {rows.shape}")
    else:
        rows = np.stack([_event_matrix(events, mechanism(dataset, seed * trials + i))
                         for i in range(trials)])
    return rows.sum(axis=0, dtype=np.int64)


def _event_matrix(events: Events, output: Any) -> np.ndarray:
    if callable(events):
        return np.asarray(to_numpy(events(output)), dtype=bool)
    if isinstance(events, (str, bytes)) or not len(events):
        raise InvalidParameter("events: expected a callable or a non-empty list of predicates")
    return np.stack([np.asarray(to_numpy(p(output)), dtype=bool) for p in events], axis=-1)


def _cp_lower(k: np.ndarray, n: int, level: float) -> np.ndarray:
    """One-sided Clopper--Pearson lower bounds at ``level`` (0 when k = 0)."""
    return np.where(k > 0, beta.ppf(level, np.maximum(k, 1), n - k + 1), 0.0)


def _cp_upper(k: np.ndarray, n: int, level: float) -> np.ndarray:
    """One-sided Clopper--Pearson upper bounds at ``level`` (1 when k = n)."""
    return np.where(k < n, beta.isf(level, k + 1, np.maximum(n - k, 1)), 1.0)
