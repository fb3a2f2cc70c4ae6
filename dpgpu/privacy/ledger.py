"""The privacy budget ledger: one per run, charged before any output exists.

A mechanism asks the ledger for each step *before* it computes the step's
output::

    ledger = PrivacyLedger(epsilon=1.0, delta=1e-6)          # fresh key
    step = ledger.charge("level-1 counts", epsilon=0.5)
    noise = DiscreteLaplace(2.0).sample(step.key, gram_keys, tag=0)

:meth:`PrivacyLedger.charge` refuses a step that would overspend with
:class:`~dpgpu.errors.BudgetExceeded` (CLI exit status 3) and records nothing,
so the step has no key and can draw no noise: nothing is released.  A step
that was charged stays charged even if the mechanism later fails.

Composition.  Sequential steps add up (basic composition: the run is
``(sum eps_i, sum delta_i)``-DP).  :meth:`PrivacyLedger.charge_parallel`
charges parts that read disjoint data (a neighbouring dataset changes only
one part) the maximum of their costs (parallel composition).  The sum is kept
in exact rational arithmetic on the binary values of the floats, so rounding
can never let a run overspend; :func:`split_budget` splits a budget into
floats whose exact sum does not exceed it.

Sampling delta.  Each step may also carry the delta that accounts the
samplers' distance from exact noise
(:func:`dpgpu.privacy.calibration.sampling_delta`); it is added to the step's
delta and kept visible separately in the report.  It is charged against its
own allowance ``max_sampling_delta``, in one of two ways:

* on top of ``delta`` (the default, allowance ``1e-9``): a pure-epsilon run
  (``delta=0``) can still run and reports its numerical delta honestly;
* within ``delta`` (``sampling_within_delta=True``, for mechanisms whose
  ``delta`` is the user's cap on the release): the allowance
  ``min(max_sampling_delta, delta / 100)`` is kept out of ``delta`` and the
  steps' own deltas get the rest (:attr:`PrivacyLedger.mechanism_delta`), so
  the release's total delta never passes ``delta``.

A step whose sampling delta alone passes the allowance is refused with
:class:`~dpgpu.errors.InvalidParameter`, not :class:`~dpgpu.errors.BudgetExceeded`:
its parameters are unusable whatever the data
(:meth:`PrivacyLedger.check_sampling`, which a mechanism can also call with a
public bound on all its steps before it reads any data).  The message names
``delta`` when a larger ``delta`` would make room and ``epsilon`` otherwise,
and the caller's ``hint`` names its own options that set the number of draws.

Keys.  The ledger owns the run's root :class:`~dpgpu.privacy.rng.NoiseKey`
(fresh by default, or from ``seed=``, recorded as ``seeded``); each step gets
a key derived from the root with the step's index and name, so no key serves
two releases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

from ..errors import BudgetExceeded, InvalidParameter
from ..validation import check_positive_real, check_positive_reals, check_probability
from .rng import NoiseKey
from .tables import float_at_most

#: With ``sampling_within_delta``, the samplers' allowance is at most this share of ``delta``.
SAMPLING_SHARE = Fraction(1, 100)


@dataclass(frozen=True)
class Step:
    """One charged step of a run.

    Attributes
    ----------
    index : int
        Position in the run (0, 1, ...).
    name : str
        What the step releases.
    epsilon, delta : float
        What the step costs (``delta`` excludes ``sampling_delta``).
    sampling_delta : float
        Delta accounting the samplers' distance from exact.
    composition : str
        ``"sequential"`` or ``"parallel"``.
    parts : tuple of (float, float)
        The ``(epsilon, delta)`` of each disjoint part of a parallel step.
    key : NoiseKey
        The step's own key (not serialised).
    """

    index: int
    name: str
    epsilon: float
    delta: float
    sampling_delta: float
    composition: str
    parts: tuple[tuple[float, float], ...]
    key: NoiseKey = field(repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The step as a JSON-ready dict (no key)."""
        out = {"index": self.index, "name": self.name, "epsilon": self.epsilon,
               "delta": self.delta, "sampling_delta": self.sampling_delta,
               "composition": self.composition}
        if self.composition == "parallel":
            out["parts"] = [{"epsilon": e, "delta": d} for e, d in self.parts]
        return out


class PrivacyLedger:
    """The run's privacy budget, its steps and its root key.

    Parameters
    ----------
    epsilon : float
        Total epsilon, finite, ``> 0``.
    delta : float
        Total delta in ``[0, 1)`` (0: a pure-epsilon run); with
        ``sampling_within_delta``, in ``(0, 1)``, the samplers' allowance
        included.
    seed : int or None
        ``None`` (default): a fresh 256-bit key from :mod:`secrets`.  An
        integer makes every release of the run reproducible (and its noise
        predictable to whoever knows the seed); the report says so.
    max_sampling_delta : float
        Allowance for the samplers' accounted distance from exact, in
        ``[0, 1)``; with ``sampling_within_delta``, its cap.
    sampling_within_delta : bool
        Keep the allowance ``min(max_sampling_delta, delta / 100)`` out of
        ``delta`` instead of adding it on top (module doc).

    Attributes
    ----------
    max_sampling_delta : float
        The samplers' allowance.
    mechanism_delta : float
        What the steps' own deltas may add up to: ``delta``, less the
        allowance with ``sampling_within_delta`` (calibrate mechanisms at it).
    """

    def __init__(self, epsilon: float, delta: float = 0.0, *, seed: int | None = None,
                 max_sampling_delta: float = 1e-9, sampling_within_delta: bool = False) -> None:
        self.epsilon = check_positive_real(epsilon, "epsilon")
        self.delta = check_probability(delta, "delta", allow_zero=not sampling_within_delta)
        self._sampling_cap = check_probability(max_sampling_delta, "max_sampling_delta",
                                               allow_zero=True)
        self.sampling_within_delta = bool(sampling_within_delta)
        self.max_sampling_delta, self.mechanism_delta = self._sampling_cap, self.delta
        if self.sampling_within_delta:
            self.max_sampling_delta = min(self._sampling_cap,
                                          float_at_most(Fraction(self.delta) * SAMPLING_SHARE))
            self.mechanism_delta = float_at_most(Fraction(self.delta)
                                                 - Fraction(self.max_sampling_delta))
        self._root = NoiseKey.from_seed_or_fresh(seed)
        self._steps: list[Step] = []
        self._spent = (Fraction(0), Fraction(0), Fraction(0))

    @property
    def seeded(self) -> bool:
        """True when the run's randomness comes from a user seed."""
        return self._root.seeded

    @property
    def spent_epsilon(self) -> float:
        """Epsilon charged so far."""
        return float(self._spent[0])

    @property
    def spent_delta(self) -> float:
        """Delta charged so far, sampling delta included."""
        return float(self._spent[1] + self._spent[2])

    @property
    def remaining_epsilon(self) -> float:
        """Epsilon left (rounded down)."""
        return float_at_most(Fraction(self.epsilon) - self._spent[0])

    @property
    def remaining_delta(self) -> float:
        """Delta left for the steps' own deltas (rounded down; excludes the sampling allowance)."""
        return float_at_most(Fraction(self.mechanism_delta) - self._spent[1])

    def charge(self, name: str, epsilon: float, delta: float = 0.0, *,
               sampling_delta: float = 0.0, hint: str | None = None) -> Step:
        """Charge a sequential step, before computing its output.

        Parameters
        ----------
        name : str
            What the step releases (shown in the report).
        epsilon : float
            Finite, ``>= 0``.
        delta : float
            In ``[0, 1)``; ``epsilon`` and ``delta`` are not both 0.
        sampling_delta : float
            In ``[0, 1)``; see the module doc.
        hint : str, optional
            The caller's options that set the number of draws behind
            ``sampling_delta`` (for the message of :meth:`check_sampling`).

        Returns
        -------
        Step
            With the step's fresh key.

        Raises
        ------
        BudgetExceeded
            If the run cannot afford the step (nothing is recorded).
        InvalidParameter
            For invalid costs, and a ``sampling_delta`` past the allowance.
        """
        eps, dlt = _check_cost(epsilon, delta)
        return self._record(name, eps, dlt, sampling_delta, "sequential", ((eps, dlt),), hint)

    def charge_parallel(self, name: str, parts: Sequence[tuple[float, float]], *,
                        sampling_delta: float = 0.0, hint: str | None = None) -> Step:
        """Charge a step whose parts read disjoint data (parallel composition).

        The step costs ``max`` of the parts' epsilons and ``max`` of their
        deltas; ``sampling_delta`` covers all parts' draws together.

        Parameters
        ----------
        name : str
            What the step releases.
        parts : sequence of (epsilon, delta)
            One cost per disjoint part, each as in :meth:`charge`.
        sampling_delta : float
            In ``[0, 1)``.
        hint : str, optional
            As in :meth:`charge`.

        Returns
        -------
        Step
        """
        if isinstance(parts, (str, bytes)) or not len(parts):
            raise InvalidParameter("parts: expected a non-empty sequence of (epsilon, delta)")
        costs = tuple(_check_cost(*_pair(p)) for p in parts)
        return self._record(name, max(c[0] for c in costs), max(c[1] for c in costs),
                            sampling_delta, "parallel", costs, hint)

    def check_sampling(self, name: str, epsilon: float, sampling_delta: float, *,
                       hint: str | None = None) -> None:
        """Refuse a sampling delta that passes the run's allowance on its own.

        :meth:`charge` calls it for every step; a mechanism calls it with a
        public bound on the sampling delta of all its steps to refuse unusable
        parameters before it reads any data.  It records nothing.

        Parameters
        ----------
        name : str
            The step (or the steps) needing it, for the message.
        epsilon : float
            The step's epsilon, for the message.
        sampling_delta : float
            The samplers' accounted delta (a NaN passes on to the caller's
            own validation).
        hint : str, optional
            The caller's options, besides epsilon, that set the number of
            draws one record can change (e.g. ``"contribution and max_n"``).

        Raises
        ------
        InvalidParameter
            Naming ``delta`` when the run keeps its allowance within ``delta``
            and a larger ``delta`` would make room, else naming ``epsilon``.
        """
        # inf included; NaN goes on to check_probability's message
        if not (isinstance(sampling_delta, (int, float))
                and sampling_delta > self.max_sampling_delta):
            return
        fewer = "lower epsilon" + (f" (or that number, set by {hint})" if hint else "")
        why = (f"the samplers' accounted distance from exact noise, (1 + e^epsilon) x draws x "
               f"tv, grows with the step's epsilon={epsilon:g} and with the number of noisy "
               "values one record can change")
        if self.sampling_within_delta and sampling_delta <= self._sampling_cap:
            need = _delta_needed(sampling_delta)
            raise InvalidParameter(
                f"delta: {self.delta:g} is too small for the samplers: {name!r} needs "
                f"sampling_delta={sampling_delta:g}, and a run keeps min({self._sampling_cap:g}, "
                f"delta/{1 / SAMPLING_SHARE}) of its delta for them, so it needs delta >= {need}; "
                f"raise delta, or {fewer}: {why}; nothing was released")
        raise InvalidParameter(
            f"epsilon: step {name!r} needs sampling_delta={sampling_delta:g} but a run allows at "
            f"most {self._sampling_cap:g}: {why}; {fewer}; nothing was released")

    def _record(self, name: str, eps: float, dlt: float, sampling_delta: float,
                composition: str, parts: tuple[tuple[float, float], ...],
                hint: str | None) -> Step:
        if not isinstance(name, str) or not name:
            raise InvalidParameter(f"name: expected a non-empty string, got {name!r}")
        self.check_sampling(name, eps, sampling_delta, hint=hint)
        sdl = check_probability(sampling_delta, "sampling_delta", allow_zero=True)
        spent = (self._spent[0] + Fraction(eps), self._spent[1] + Fraction(dlt),
                 self._spent[2] + Fraction(sdl))
        if (spent[0] > Fraction(self.epsilon) or spent[1] > Fraction(self.mechanism_delta)
                or spent[2] > Fraction(self.max_sampling_delta)):
            raise BudgetExceeded(
                f"step {name!r} needs epsilon={eps:g}, delta={dlt:g}, sampling_delta={sdl:g} "
                f"but the run has epsilon={self.remaining_epsilon:g}, "
                f"delta={self.remaining_delta:g}, sampling_delta="
                f"{float_at_most(Fraction(self.max_sampling_delta) - self._spent[2]):g} left "
                f"(budget epsilon={self.epsilon:g}, delta={self.delta:g}); nothing was released")
        index = len(self._steps)
        step = Step(index, name, eps, dlt, sdl, composition, parts,
                    self._root.derive(f"step-{index}:{name}"))
        self._spent = spent
        self._steps.append(step)
        return step

    def steps(self) -> list[dict[str, Any]]:
        """Every charged step as a dict, in order (for ``report.json``)."""
        return [s.to_dict() for s in self._steps]

    def to_dict(self) -> dict[str, Any]:
        """Budget, spending, seeding and steps, JSON-ready."""
        return {"budget": {"epsilon": self.epsilon, "delta": self.delta,
                           "max_sampling_delta": self.max_sampling_delta,
                           "sampling_within_delta": self.sampling_within_delta,
                           "mechanism_delta": self.mechanism_delta},
                "spent": {"epsilon": self.spent_epsilon, "delta": float(self._spent[1]),
                          "sampling_delta": float(self._spent[2])},
                "seeded": self.seeded,
                "steps": self.steps()}

    def __repr__(self) -> str:
        return (f"PrivacyLedger(epsilon={self.epsilon:g}, delta={self.delta:g}, "
                f"spent_epsilon={self.spent_epsilon:g}, steps={len(self._steps)}, "
                f"seeded={self.seeded})")


def split_budget(total: float, weights: Sequence[float]) -> list[float]:
    """Split ``total`` in proportion to ``weights``; the parts' exact sum is ``<= total``.

    Parameters
    ----------
    total : float
        Finite, ``> 0``.
    weights : sequence of float
        Non-empty, each finite and ``> 0``.

    Returns
    -------
    list of float
        ``total * w_i / sum(w)``, each rounded down as far as needed.
    """
    total = check_positive_real(total, "total")
    w = [Fraction(x) for x in check_positive_reals(weights, "weights")]
    whole = sum(w)
    return [float_at_most(Fraction(total) * x / whole) for x in w]


def _delta_needed(sampling_delta: float) -> str:
    """The least ``delta`` of three significant digits whose allowance holds ``sampling_delta``."""
    mantissa, exponent = f"{float(Fraction(sampling_delta) / SAMPLING_SHARE):.2e}".split("e")
    digits, scale = int(mantissa.replace(".", "")), int(exponent) - 2   # digits: 100 .. 999

    def delta(d: int) -> float:
        return float(f"{d}e{scale}")

    while float_at_most(Fraction(delta(digits)) * SAMPLING_SHARE) < sampling_delta:
        digits += 1
    return f"{delta(digits):.3g}"


def _check_cost(epsilon: Any, delta: Any) -> tuple[float, float]:
    eps = check_positive_real(epsilon, "epsilon", allow_zero=True)
    dlt = check_probability(delta, "delta", allow_zero=True)
    if eps == 0 and dlt == 0:
        raise InvalidParameter("epsilon: a step must cost epsilon > 0 or delta > 0")
    return eps, dlt


def _pair(part: Any) -> tuple[Any, Any]:
    if not isinstance(part, (tuple, list)) or len(part) != 2:
        raise InvalidParameter(f"parts: each part must be (epsilon, delta), got {part!r}")
    return part[0], part[1]
