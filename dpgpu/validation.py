"""Positive parameter checks.

Each check accepts only what is valid (``x > 0 and isfinite(x)``), so NaN,
infinities, zero, negatives, booleans and wrong types fail with an
:class:`~dpgpu.errors.InvalidParameter` that names the parameter.  No check
looks at the data.
"""

from __future__ import annotations

import math
import numbers
from decimal import Decimal
from typing import Any

import numpy as np

from .errors import InvalidParameter


def check_positive_int(value: Any, name: str, *, minimum: int = 1,
                       maximum: int | None = None) -> int:
    """Return ``value`` as an int if it is an integer in ``[minimum, maximum]``.

    Parameters
    ----------
    value : any
        The value given; an integral number, not a bool.
    name : str
        The parameter's name, for the error message.
    minimum : int
        The smallest value allowed.
    maximum : int, optional
        The largest value allowed; no bound when omitted.

    Returns
    -------
    int

    Raises
    ------
    InvalidParameter
        ``value`` is not an integer (or is a bool), or is out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidParameter(f"{name}: expected an integer, got {value!r}")
    value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"at least {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise InvalidParameter(f"{name}: must be an integer {bound}, got {value}")
    return value


def check_positive_real(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float if it is finite and ``> 0`` (``>= 0`` with allow_zero).

    Parameters
    ----------
    value : any
        The value given; a real number, not a bool.
    name : str
        The parameter's name, for the error message.
    allow_zero : bool
        Accept 0 as well.

    Returns
    -------
    float

    Raises
    ------
    InvalidParameter
        ``value`` is not a real number (or is a bool), is NaN or infinite
        (or an int beyond float range), or is not positive.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameter(f"{name}: expected a number, got {value!r}")
    try:
        x = float(value)
    except OverflowError:  # an int beyond float range (10**400)
        x = math.inf
    ok = math.isfinite(x) and (x >= 0 if allow_zero else x > 0)
    if not ok:
        need = "finite and >= 0" if allow_zero else "finite and > 0"
        raise InvalidParameter(f"{name}: must be {need}, got {value!r}")
    return x


def check_probability(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` if it is a finite number in ``(0, 1)`` (``[0, 1)`` with allow_zero).

    Parameters
    ----------
    value : any
        The value given; a real number, not a bool.
    name : str
        The parameter's name, for the error message.
    allow_zero : bool
        Accept 0 as well.

    Returns
    -------
    float
        ``value`` as a float.

    Raises
    ------
    InvalidParameter
        ``value`` is not a real number (or is a bool), or is not in the range.
    """
    x = check_positive_real(value, name, allow_zero=allow_zero)
    if not x < 1:
        raise InvalidParameter(f"{name}: must be below 1, got {value!r}")
    return x


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``.

    Parameters
    ----------
    value : any
        The value given.
    name : str
        The parameter's name, for the error message.
    choices : tuple of str
        The values allowed.

    Returns
    -------
    str
        ``value`` unchanged.

    Raises
    ------
    InvalidParameter
        ``value`` is not one of ``choices``.
    """
    if value not in choices:
        raise InvalidParameter(f"{name}: must be one of {', '.join(choices)}, got {value!r}")
    return value


def check_positive_reals(values: Any, name: str) -> list[float]:
    """Return ``values`` as floats if it is a non-empty sequence of finite numbers ``> 0``.

    Parameters
    ----------
    values : any
        The values given: a sized sequence, not a str, bytes or dict.
    name : str
        The parameter's name, for the error message.

    Returns
    -------
    list of float
        Each value as by :func:`check_positive_real`.

    Raises
    ------
    InvalidParameter
        ``values`` is not a non-empty sequence, or one of them is not a
        finite number ``> 0``.
    """
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__") or not len(values):
        raise InvalidParameter(f"{name}: expected a non-empty sequence of numbers, got {values!r}")
    return [check_positive_real(v, name) for v in values]


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` as a bool if it is one (``True``, ``False`` or a NumPy bool).

    Any other value is refused, so that ``"no"`` or ``"False"`` (truthy
    strings) never switch an option on.

    Parameters
    ----------
    value : any
        The value given.
    name : str
        The parameter's name, for the error message.

    Returns
    -------
    bool

    Raises
    ------
    InvalidParameter
        ``value`` is not a bool.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidParameter(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def check_real_array(values: Any, name: str) -> np.ndarray:
    """``values`` as a float64 array of real numbers (NaN and infinities not checked).

    Parameters
    ----------
    values : array-like
        Numbers: NumPy integers or floats, or objects that are real numbers
        (pandas' nullable and Arrow columns, ``Decimal``).
    name : str
        The parameter, named in the message.

    Returns
    -------
    numpy.ndarray of float64

    Raises
    ------
    InvalidParameter
        Ragged rows, text (NumPy would read ``"1.5"`` as 1.5), booleans (as 1
        and 0), complex numbers (their imaginary parts would be dropped),
        missing values (``None``, ``pd.NA``) or other objects.
    """
    try:
        array = np.asarray(values)
        if array.dtype.kind == "O" and all(
                isinstance(v, (numbers.Real, Decimal)) and not isinstance(v, (bool, np.bool_))
                for v in array.ravel().tolist()):
            array = array.astype(np.float64)
    except (TypeError, ValueError):  # ragged rows, pd.NA
        raise InvalidParameter(f"{name}: expected an array of real numbers (every row of the "
                               "same length, no missing values)") from None
    if array.dtype.kind not in "iuf":
        raise InvalidParameter(f"{name}: expected real numbers, got values of type {array.dtype}")
    return array.astype(np.float64, copy=False)
