"""The ``dpgpu`` command line.

Each subcommand lives in a module of :mod:`dpgpu.commands` that defines
``register(subparsers)``; the parser it adds sets ``func(args) -> int``.

Exit status: 0 success, 2 bad parameter or bad input (one line on stderr
naming the file, line or parameter; no traceback), 3 privacy budget
exceeded, 1 internal error, 141 (128 + SIGPIPE, as a shell reports a
command a pipe's reader left, such as ``dpgpu evaluate ... | head -1``)
silently when standard output is closed before everything was written.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import signal
import sys
import threading
import traceback
from typing import Any, Iterator, Sequence

from . import __version__
from .commands.common import Parser
from .errors import DPGPUError

#: Modules of dpgpu.commands, in the order their subcommands are listed: data, the
#: mechanisms, then what judges, explains and sizes a release.
COMMAND_MODULES = ("info", "stats", "demo", "convert", "generate", "ngram", "pst",
                   "em_top_k", "privtree_spatial", "pfs2", "dpne", "evaluate", "report",
                   "advise", "calibrate", "completion")


def build_parser() -> Parser:
    """The full ``dpgpu`` argument parser.

    Returns
    -------
    Parser
        The parser with ``--version``, ``-v/--verbose`` and a subcommand from each
        of :data:`COMMAND_MODULES`, in that order; each subcommand's parser sets
        ``func(args) -> int``.
    """
    parser = Parser(prog="dpgpu", description="Differentially private sequence data "
                    "publishing and mining, on GPU or CPU.")
    parser.add_argument("--version", action="version", version=f"dpgpu {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="log progress (-v) or debug detail (-vv) to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMAND_MODULES:
        importlib.import_module(f"dpgpu.commands.{name}").register(sub)
    return parser


#: What to lower when a command's run does not fit in memory (the options that size its work).
OOM_OPTIONS = {"ngram": "--l-max or --n-max", "pst": "--l-top, --max-length or --n-synthetic",
               "em-top-k": "--k or --l-top",
               "pfs2": "--l-upper or --max-candidates",
               "dpne": "--max-n, --contribution or --max-candidates",
               "evaluate": "--queries, --query-sizes or --k (or name fewer --task)"}


def oom_hint(command: str | None) -> str:
    """What to try when ``command`` ran out of memory: less data, and its sizing options.

    Parameters
    ----------
    command : str or None
        The subcommand that ran (``None`` when none was parsed).

    Returns
    -------
    str
        ``"fewer sequences"``, followed by the command's sizing options from
        :data:`OOM_OPTIONS` when it has any.
    """
    options = OOM_OPTIONS.get(command or "")
    return "fewer sequences" + (f", or a smaller {options}" if options else "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments, without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        0 on success (and for ``--help``, ``--version``); 2 for a usage
        error, a missing subcommand or a bad parameter or input; 3 when the
        privacy budget is exceeded; 1 for an internal error or running out of
        (GPU) memory; :data:`BROKEN_PIPE` (141), silently, when the reader
        of standard output went away (``| head``); 130 on Ctrl-C;
        ``128 + signum`` on SIGTERM or SIGHUP.  Errors are reported on stderr.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # usage errors (status 2), --help and --version (0)
        status = exc.code if isinstance(exc.code, int) else 2
        return status if _flushed() else BROKEN_PIPE  # --help's pipe may break at the flush
    except BrokenPipeError:
        return _broken_pipe()
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter())
    logging.basicConfig(level={0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG),
                        handlers=[handler])
    try:
        with _terminate_cleanly():
            status = int(args.func(args) or 0)
        return status if _flushed() else BROKEN_PIPE  # not left to break at exit, as noise
    except _Terminated as exc:
        print(f"dpgpu: terminated by signal {exc.signum}", file=sys.stderr)
        return 128 + exc.signum
    except DPGPUError as exc:
        print(f"dpgpu: error: {exc}", file=sys.stderr)
        return exc.exit_status
    except BrokenPipeError:  # the reader of our output went away (e.g. `| head`)
        return _broken_pipe()
    except KeyboardInterrupt:
        print("dpgpu: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print(f"dpgpu: error: out of memory; try {oom_hint(args.command)}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug in dpgpu: show where, for the report
        if type(exc).__name__ == "OutOfMemoryError":  # CuPy's; CuPy is not imported here
            print(f"dpgpu: error: out of GPU memory ({exc}); try --backend numpy, or "
                  f"{oom_hint(args.command)}", file=sys.stderr)
            return 1
        traceback.print_exc()
        print("dpgpu: internal error (the traceback above is worth reporting)", file=sys.stderr)
        return 1


#: Exit status when standard output's reader went away: 128 + SIGPIPE, as a shell reports a
#: program that SIGPIPE ended (Python ignores SIGPIPE, so a write raises BrokenPipeError).
BROKEN_PIPE = 128 + getattr(signal, "SIGPIPE", 13)


def _broken_pipe() -> int:
    """Silence standard output for good and return :data:`BROKEN_PIPE`.

    Output still buffered would be flushed at exit into the broken pipe and
    print ``Exception ignored ... BrokenPipeError``: standard output's file
    descriptor is pointed at the null device instead (the recipe of Python's
    :mod:`signal` documentation), and ``sys.stdout`` too where it has none.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # no descriptor (a test's capture)
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - kept open until exit
    finally:
        os.close(devnull)
    return BROKEN_PIPE


def _flushed() -> bool:
    """Flush standard output; False where its reader went away (:func:`_broken_pipe` done)."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BrokenPipeError:
        _broken_pipe()
        return False
    return True


class _Formatter(logging.Formatter):
    """Log lines on stderr: ``dpgpu: <message>``, and ``dpgpu: warning: <message>`` for a
    warning, so that warnings stand out from the progress lines of ``-v``."""

    def format(self, record: logging.LogRecord) -> str:  # noqa: D102 - logging hook
        kind = "warning: " if record.levelno == logging.WARNING else ""
        return f"dpgpu: {kind}{super().format(record)}"


class _Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C, so partial outputs are removed."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _terminate_cleanly() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP (``kill``, ``timeout``, ``docker stop``, a batch scheduler, a
    closed terminal) into :class:`_Terminated` while a command runs, so that every
    ``finally`` and staging clean-up runs; the previous handlers come back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _Terminated(signum)

    wanted = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])
    before = {sig: signal.signal(sig, stop) for sig in wanted}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    sys.exit(main())
