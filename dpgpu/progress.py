"""Progress messages that mechanisms hand to their ``progress`` callable.

A mechanism reports each stage as a string.  A stage of a counted loop
(tree levels, candidate lengths) is a :class:`Step`: still a plain ``str``
-- so ``progress=print`` or a logger works unchanged -- that also carries
how far the loop is, from which the CLI draws a progress bar.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from .errors import InvalidParameter

log = logging.getLogger("dpgpu")


class Step(str):
    """A progress message for step ``done`` of ``total``.

    Parameters
    ----------
    message : str
        What was done.
    done, total : int
        Steps finished and steps expected (``total`` may grow when a loop
        runs longer than expected; the bar then shows ``done`` of ``done``).

    Examples
    --------
    >>> step = Step("level 2: 289 nodes", 2, 5)
    >>> step, step.done, step.total
    ('level 2: 289 nodes', 2, 5)
    """

    done: int
    total: int

    def __new__(cls, message: str, done: int, total: int) -> "Step":
        self = super().__new__(cls, message)
        self.done = int(done)
        self.total = max(int(total), int(done))
        return self


def stage_reporter(progress: Any, mechanism: str) -> Callable[[str], None]:
    """The callable a mechanism run reports its stages to: ``progress``, or a logger.

    Parameters
    ----------
    progress : callable or None
        The mechanism's ``progress`` parameter.
    mechanism : str
        Prefix of the log lines (``"ngram: ..."``) when ``progress`` is None.

    Returns
    -------
    callable
        ``progress`` itself, or one that logs each message at INFO level.

    Raises
    ------
    InvalidParameter
        Naming ``progress``, when it is neither None nor callable: the
        mechanisms check it before they read any data, where a bad value
        would otherwise fail at the first stage, its budget spent.
    """
    if progress is None:
        return lambda msg: log.info("%s: %s", mechanism, msg)
    if not callable(progress):
        raise InvalidParameter(f"progress: expected a callable (such as print) or None, got "
                               f"{progress!r}")
    return progress
