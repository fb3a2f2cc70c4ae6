"""The one exception hierarchy of dpgpu.

Every error dpgpu raises on purpose is a :class:`DPGPUError`.  The CLI maps
them to exit statuses: :class:`InvalidParameter` and :class:`InputError` give
status 2, :class:`BudgetExceeded` gives status 3; anything else is an internal
error (status 1).
"""

from __future__ import annotations


class DPGPUError(Exception):
    """Base class of every error dpgpu raises deliberately."""

    exit_status = 1


class InvalidParameter(DPGPUError, ValueError):
    """A parameter is out of range, of the wrong type, NaN or infinite.

    The message names the parameter.  Whether it is raised depends on the
    parameters only, never on the data.
    """

    exit_status = 2


class InputError(DPGPUError):
    """An input file (or in-memory input) cannot be read as asked.

    The message names the file and, where there is one, the line.
    """

    exit_status = 2


class UnknownLabel(InvalidParameter, KeyError):
    """A label that is neither an item of the vocabulary nor a marker
    (:meth:`dpgpu.Vocabulary.id_of`).

    An :class:`InvalidParameter`, and a :class:`KeyError` as a dict lookup
    would raise, so that code catching either sees it.
    """

    __str__ = BaseException.__str__  # the message as written, not quoted as KeyError's is


class BudgetExceeded(DPGPUError):
    """A step would spend more privacy budget than the run has left."""

    exit_status = 3


class BackendUnavailable(InvalidParameter):
    """The backend asked for (``cupy``) cannot be used on this machine."""
