"""What the subcommands share: the parser class, dataset and backend arguments,
and the options, progress display and summary of the mechanism commands."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import shutil
import sys
import time
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from tqdm import tqdm

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from ..backend import get_backend
from ..data.load import FORMATS, load
from ..data.text import LINE_TOKENS
from ..errors import InputError, InvalidParameter
from ..progress import Step
from ..release import check_release_target, dump_json
from ..scale.partitions import ENGINES

log = logging.getLogger("dpgpu")

#: Said after a private release made with ``--seed``.
SEEDED_WARNING = (
    "--seed made this release's noise reproducible: whoever knows or guesses the seed can "
    "subtract it, and two releases made with one seed (of data that has changed) differ by "
    "exact counts; publish only releases made without --seed")

#: Reader options the CLI passes on to :func:`dpgpu.load` when given.
FORMAT_OPTIONS = ("tokens", "case", "activity", "timestamp", "user", "delimiter", "text",
                  "lowercase", "states", "grid", "bounds", "x", "y", "outside", "repeats",
                  "sequence")

#: The arguments that name files a command reads (an output may not be one, nor hold one).
INPUT_ARGUMENTS = ("data", "points", "vocab", "config")

#: Actions whose value a ``--config`` file may set.
_CONFIGURABLE = (argparse._StoreAction, argparse._StoreConstAction, argparse.BooleanOptionalAction)


class Parser(argparse.ArgumentParser):
    """argparse with exit status 2, a one-line message for usage errors and ``--config``.

    A parser with a ``--config FILE.toml`` option reads that file before
    parsing: its keys (long option names, ``-`` or ``_``) become defaults,
    so options on the command line override them.  Options are written in
    full: argparse's abbreviations would take ``--to`` for ``--tokens`` on
    a command without ``--to``.  An option of one value given twice on the
    command line is an error, not the last one silently (``--epsilon 1
    --epsilon 2``), and so are both of a pair ``--x`` / ``--no-x``; options
    that collect values (``--task``), counts (``-v``) and flags may repeat.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def error(self, message: str) -> None:  # noqa: D102 - argparse hook
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args: Sequence[str] | None = None,
                         namespace: argparse.Namespace | None = None) -> Any:  # noqa: D102
        args = sys.argv[1:] if args is None else list(args)
        if any(action.dest == "config" for action in self._actions):
            path = _config_path(args)
            if path:  # an empty one is refused by the full parse (nonempty_path)
                self._apply_config(path)
        self._refuse_repeats(args)
        return super().parse_known_args(args, namespace)

    def _refuse_repeats(self, args: Sequence[str]) -> None:
        """Refuse an option of one value given twice in ``args``, or both of ``--x/--no-x``."""
        given: dict[str, str] = {}
        for arg in args:
            if arg == "--":
                break
            name = arg.split("=", 1)[0] if arg.startswith("--") else arg
            action = self._option_string_actions.get(name)
            if action is None:
                continue
            if action.dest not in given:
                given[action.dest] = name
            elif isinstance(action, argparse._StoreAction):
                self.error(f"{name}: given more than once; give it once (dpgpu does not pick "
                           "the last)")
            elif isinstance(action, argparse.BooleanOptionalAction) \
                    and given[action.dest] != name:
                self.error(f"{given[action.dest]} and {name}: both given; give one")

    def _apply_config(self, path: str) -> None:
        """Make the settings of the TOML file ``path`` this parser's defaults."""
        try:
            with open(path, "rb") as f:
                raw = f.read()
            table = tomllib.loads(raw.decode("utf-8").removeprefix("\ufeff"))
        except OSError as exc:
            self.error(f"--config {path}: {exc.strerror}")
        except UnicodeDecodeError as exc:
            self.error(f"--config {path}: not UTF-8 text (byte {exc.start + 1}); TOML files are "
                       "UTF-8 (save it as UTF-8, not UTF-16)")
        except tomllib.TOMLDecodeError as exc:
            self.error(f"--config {path}: not valid TOML: {exc}")
        options = {next(o for o in a.option_strings if o.startswith("--"))[2:]: a
                   for a in self._actions
                   if isinstance(a, _CONFIGURABLE) and a.dest != "config"
                   and any(o.startswith("--") for o in a.option_strings)}
        defaults, keys = {}, {}
        for key, value in table.items():
            action = options.get(key.replace("_", "-"))
            if action is None:
                self.error(f"{path}: unknown key {key!r} (not an option of {self.prog})")
            if action.dest in keys:
                self.error(f"{path}: keys {keys[action.dest]!r} and {key!r} both set "
                           f"{action.option_strings[-1]}; keep one")
            keys[action.dest] = key
            defaults[action.dest] = self._config_value(action, key, value, path)
            action.required = False
        self.set_defaults(**defaults)

    def _config_value(self, action: argparse.Action, key: str, value: Any, path: str) -> Any:
        """The value of ``key = value`` in the config file, checked as the option's."""
        if action.nargs == 0:  # a flag
            if not isinstance(value, bool):
                self.error(f"{path}: {key} must be true or false")
            if isinstance(action, argparse.BooleanOptionalAction):
                return value
            return action.const if value else action.default
        if isinstance(value, list):  # columns = ["x", "y"], bounds = [0, 1, 0, 1]
            value = ",".join(str(v) for v in value)
        if isinstance(value, (bool, dict)):
            self.error(f"{path}: {key}: invalid value {value!r}")
        try:
            value = action.type(str(value)) if action.type else str(value)
        except (TypeError, ValueError, argparse.ArgumentTypeError):
            self.error(f"{path}: {key}: invalid value {value!r}")
        if action.choices is not None and value not in action.choices:
            self.error(f"{path}: {key}: invalid choice {value!r} (choose from "
                       f"{', '.join(map(repr, action.choices))})")
        return value


def _config_path(args: Sequence[str]) -> str | None:
    """The ``--config`` value among ``args`` (None if absent or missing its value)."""
    pre = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    pre.add_argument("--config")
    try:
        return pre.parse_known_args(args)[0].config
    except argparse.ArgumentError:  # no value: the full parse reports it
        return None



def whole_number(text: str, option: str) -> int:
    """``text`` as a non-negative integer, written as digits or as ``1e9``, ``2.5e6``.

    Raises
    ------
    InvalidParameter
        Naming ``option``, when ``text`` is not a whole number (``1.5``,
        ``nan``, ``inf``, ``-3``).
    """
    try:
        value = Decimal(text.strip().replace("_", ""))
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite() or value != value.to_integral_value() \
            or value < 0:
        raise InvalidParameter(f"{option}: expected a whole number such as 1000000 or 1e6, "
                               f"got {text!r}")
    return int(value)


def whole_count(text: str) -> int:
    """argparse ``type`` of a count that may be written ``1e6``: :func:`whole_number`'s value.

    Raises
    ------
    argparse.ArgumentTypeError
        When ``text`` is not a whole number (argparse names the option).
    """
    try:
        return whole_number(text, "value")
    except InvalidParameter:
        raise argparse.ArgumentTypeError(f"expected a whole number such as 1000000 or 1e6, got "
                                         f"{text!r}") from None


def check_outside_release(path: Any, release: Any, why: str) -> None:
    """Refuse an output ``path`` inside the release directory ``release``, even with --force.

    A release directory is what gets published: a page or figure made from
    it, or from the exact data, must not join it.

    Parameters
    ----------
    path : path-like
        The output.
    release : path-like
        The release directory.
    why : str
        Why the output may not go there, for the message.

    Raises
    ------
    InputError
        Naming both paths.
    """
    folder = Path(os.path.realpath(Path(path).parent))
    where = Path(os.path.realpath(release))
    if folder == where or where in folder.parents:
        raise InputError(f"{path}: is inside the release directory {release}, and {why}; "
                         "it is not written there, even with --force (choose a path outside it)")


#: A word that starts like a negative number (``-1e3``, ``-.5``, ``-inf``, ``-nan``,
#: ``-180,180,-90,90``, ``-3x3``): :class:`Parser` takes it for a value, wherever an option
#: takes one or several (``--bounds -1e3 1 0 1``), so that the option's check names what is
#: wrong with it.  argparse's own pattern knows only ``-1`` and ``-1.5``, and takes any other
#: word starting with ``-`` for an option ("expected one argument").  No option of dpgpu
#: looks like one of these (``-v``, ``-q``, ``--...``).
_NEGATIVE_NUMBER = re.compile(r"-(\.?\d|inf|nan)", re.IGNORECASE)


#: What ``-`` names as an input file.
STDIN = "/dev/stdin"


def nonempty_path(text: str) -> str:
    """argparse ``type`` of a path: ``text`` unless it is empty.

    An empty path would be read as the current folder or ignored, in a
    message that does not name the option.

    Raises
    ------
    argparse.ArgumentTypeError
        When ``text`` is empty (argparse names the option).
    """
    if not text:
        raise argparse.ArgumentTypeError("empty path")
    return text


def add_command(sub: argparse._SubParsersAction, name: str, *, help: str, description: str,
                example: str) -> argparse.ArgumentParser:
    """Add the subcommand ``name``, with ``example`` (a command line) in its ``--help``.

    ``-v`` is taken after the subcommand's name too (where it replaces a
    count given before it).
    """
    p = sub.add_parser(name, help=help, description=description,
                       epilog=f"example:\n  {example}",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="count", default=argparse.SUPPRESS,
                   help="log progress (-v) or debug detail (-vv) to stderr")
    return p


def add_mechanism_command(sub: argparse._SubParsersAction, name: str, *, help: str,
                          description: str, example: str,
                          delta: bool = False) -> argparse.ArgumentParser:
    """Add a mechanism subcommand with the options every mechanism shares.

    Parameters
    ----------
    sub : argparse._SubParsersAction
        The ``dpgpu`` subparsers.
    name, help, description, example : str
        Subcommand name, one-line help, ``--help`` text and an example
        command line.
    delta : bool
        Whether the mechanism takes a ``--delta``.

    Returns
    -------
    argparse.ArgumentParser
        The subcommand's parser, for its own options.
    """
    p = add_command(sub, name, help=help, description=description, example=example)
    group = p.add_argument_group("release options (shared by the mechanisms)")
    group.add_argument("--epsilon", type=float, required=True, help="privacy budget")
    if delta:
        group.add_argument("--delta", type=float, required=True, help="privacy delta")
    group.add_argument("--seed", type=int, help="reproducible noise (recorded as seeded)")
    add_backend_argument(group)
    group.add_argument("--out", required=True, type=nonempty_path,
                       help="release directory to create")
    group.add_argument("--force", action="store_true", help="replace an existing release")
    group.add_argument("-q", "--quiet", action="store_true",
                       help="no progress and no summary line (errors are still printed)")
    group.add_argument("--json", action="store_true",
                       help="print the summary as one JSON object on stdout")
    group.add_argument("--config", metavar="FILE.toml", type=nonempty_path,
                       help="read options from a TOML file (keys: long option names, e.g. "
                            "epsilon = 1.0, l-max = 20); the command line overrides it")
    return p


def data_path(text: str) -> str:
    """argparse ``type`` of an input file: a path, or ``-`` for standard input.

    ``-`` is read as ``/dev/stdin``, so messages name that file.

    Raises
    ------
    argparse.ArgumentTypeError
        When ``text`` is empty, or is ``-`` on a system without ``/dev/stdin``.
    """
    if nonempty_path(text) != "-":
        return text
    if not os.path.exists(STDIN):
        raise argparse.ArgumentTypeError(f"'-' is read as {STDIN}, which this system lacks; "
                                         "give a file")
    return STDIN


def output_path(text: str) -> str:
    """argparse ``type`` of an output file: a path, not ``-``.

    Outputs are written to a temporary file and renamed into place, so
    standard output cannot be one.

    Raises
    ------
    argparse.ArgumentTypeError
        When ``text`` is empty or ``-``.
    """
    if nonempty_path(text) == "-":
        raise argparse.ArgumentTypeError("'-': outputs are written to a file (atomically), not "
                                         "to standard output; give a file name")
    return text


def add_data_arguments(parser: argparse.ArgumentParser, name: str = "data") -> None:
    """Add the dataset path and the reader options to ``parser``."""
    parser.add_argument(name, type=data_path,
                        help="dataset file (gzip allowed; - for standard input); format "
                             "detected from content")
    group = parser.add_argument_group("input format")
    group.add_argument("--format", choices=FORMATS, help="input format (default: detect)")
    group.add_argument("--tokens", choices=LINE_TOKENS,
                       help="lines/column formats: token type (default auto: integers when "
                            "every token is an integer written as it prints (no 007, -0, +7), "
                            "else strings as written; int: integers, relabelled as they print "
                            "(007 is 7); str: always as written; chars: every character but "
                            "white space an item)")
    group.add_argument("--case", help="csv/parquet: case (sequence) id column; wide/column: row "
                       "id column; trajectory: trajectory id column")
    group.add_argument("--activity", help="csv/parquet/xes: activity column or attribute")
    group.add_argument("--timestamp", help="csv/parquet/xes/trajectory: timestamp column or "
                       "attribute")
    group.add_argument("--user", help="csv/parquet/jsonl/text-*/trajectory/column: user id "
                       "column or field (user-level data; jsonl/text-*: default author)")
    group.add_argument("--delimiter", help="csv/wide/trajectory/column/text-csv: field "
                       "delimiter (default: detect)")
    group.add_argument("--states", metavar="FIRST:LAST",
                       help="wide: the state columns, in time order (FIRST:LAST, or a,b,c)")
    group.add_argument("--sequence", metavar="COLUMN",
                       help="column format: the column holding each row's whole sequence "
                            "(default: sequence)")
    group.add_argument("--grid", metavar="NXxNY",
                       help="trajectory: cells of the grid laid over --bounds (e.g. 32x32)")
    group.add_argument("--bounds", nargs=4, metavar=("XMIN", "XMAX", "YMIN", "YMAX"),
                       help="trajectory: the grid's extent, chosen without looking at the data")
    group.add_argument("--x", help="trajectory: x (longitude) column (default: detect)")
    group.add_argument("--y", help="trajectory: y (latitude) column (default: detect)")
    group.add_argument("--outside", choices=("error", "drop"),
                       help="trajectory: a point outside --bounds is an error (default) or is "
                            "left out")
    group.add_argument("--repeats", choices=("collapse", "keep"),
                       help="trajectory: one item per run of points in a cell (default) or "
                            "one per point")
    group.add_argument("--text", help="jsonl/text-csv/text-parquet: text column or field "
                       "(default: content)")
    group.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                       help="jsonl/text-*: lower-case the words (default: on)")
    group.add_argument("--vocab", metavar="FILE", type=nonempty_path,
                       help="the public item vocabulary, one label per line (gzip allowed); "
                            "default: the .seq header, else the items that occur, which "
                            "makes an N-gram, PST or PFS2 release NOT private")


def add_backend_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--backend``."""
    parser.add_argument("--backend", choices=("auto", "numpy", "cupy"),
                        help="array backend (default: $DPGPU_BACKEND, else auto)")


def add_engine_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--engine {local,dask}`` and ``--scheduler ADDRESS`` (read by :func:`engine_client`)."""
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="count here, or over Dask partitions (same release for the same key)")
    parser.add_argument("--scheduler", help="with --engine dask: scheduler address "
                        "(default: a local cluster of two workers; with --backend cupy, "
                        "one worker per GPU, with dask-cuda)")


@contextlib.contextmanager
def engine_client(args: argparse.Namespace) -> Iterator[Any]:
    """The Dask client of ``--engine dask [--scheduler ADDRESS]`` (None for ``--engine local``).

    A context manager: the client, and the local cluster it started when no
    address was given, are closed at exit.  That cluster has one worker per
    GPU (``dask-cuda``) when the backend is ``cupy``.  Dask's own INFO
    messages, and the errors its event loop's callbacks log through Tornado,
    are shown with ``-v`` only.  ``--scheduler`` without
    ``--engine dask`` is an :class:`~dpgpu.errors.InvalidParameter`.
    """
    if getattr(args, "engine", "local") != "dask":
        if getattr(args, "scheduler", None) is not None:
            raise InvalidParameter("--scheduler: only with --engine dask (this run would "
                                   "count locally and ignore the scheduler)")
        yield None
        return
    from ..scale.dask import close, connect  # noqa: PLC0415 - optional dependency

    gpus = args.scheduler is None and get_backend(getattr(args, "backend", None)).is_gpu
    quiet = not getattr(args, "verbose", 0)
    client = connect(args.scheduler, quiet=quiet, gpus=gpus)
    if quiet:  # a Ctrl-C that lands in one of Dask's waits logs a traceback through Tornado;
        # after the import of Dask, whose configuration gives tornado.application its level
        for name in ("tornado", "tornado.application"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield client
    except BaseException:
        if quiet:  # a run stopped (Ctrl-C, a signal, an error), its own message says why:
            # the gathers it left are reported by asyncio, one traceback each, at shutdown
            logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        raise
    finally:
        close(client)


def load_from_args(args: argparse.Namespace, name: str = "data") -> Any:
    """Load the dataset named on the command line with its reader options.

    With ``--engine dask`` (``args.client`` set by :func:`run_mechanism`) the
    workers read it (:func:`dpgpu.scale.loading.load_distributed`).
    """
    options = {k: getattr(args, k) for k in FORMAT_OPTIONS if getattr(args, k, None) is not None}
    if getattr(args, "vocab", None) is not None:
        options["vocab"] = args.vocab
    client = getattr(args, "client", None)
    if client is not None:
        from ..scale.loading import load_distributed  # noqa: PLC0415 - optional dependency

        return load_distributed(getattr(args, name), client, format=args.format, **options)
    return load(getattr(args, name), format=args.format, **options)


def input_paths(args: argparse.Namespace) -> list[str]:
    """The files the command of ``args`` reads (its :data:`INPUT_ARGUMENTS` that are given)."""
    return [getattr(args, n) for n in INPUT_ARGUMENTS if getattr(args, n, None) is not None]


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    dump_json(obj, sys.stdout, default=str)


#: How a counted stage is drawn: ``ngram: 40%|########            | 2/5 [00:01<00:02] level 2...``.
_BAR = "{desc}: {percentage:3.0f}%|{bar:20}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}]"


class Progress:
    """The stage a command is at: one status line on stderr, rewritten in place.

    Counted stages (:class:`dpgpu.progress.Step`) show a progress bar.

    Pass an instance as a mechanism's ``progress`` callable.  When not shown
    (``--quiet``, ``-v``, or stderr is not a terminal) the stages are logged
    at INFO level instead, which ``dpgpu -v`` prints.  Log records (warnings)
    erase the status line before they are printed.

    Parameters
    ----------
    command : str
        Prefix of every line (the subcommand).
    show : bool
        Whether to draw the status line.
    """

    def __init__(self, command: str, *, show: bool) -> None:
        self.command = command
        self.show = show
        self._t0 = time.perf_counter()
        self._drawn = False

    def __call__(self, message: str) -> None:
        """Report that the command has reached the stage ``message``.

        A :class:`dpgpu.progress.Step` is drawn as a progress bar (tqdm's
        meter) followed by the message.
        """
        if not self.show:
            log.info("%s: %s", self.command, message)
            return
        elapsed = time.perf_counter() - self._t0
        if isinstance(message, Step):
            plain = not (sys.stderr.encoding or "").lower().startswith("utf")  # no block glyphs
            line = tqdm.format_meter(message.done, message.total, elapsed, prefix=self.command,
                                     bar_format=_BAR, ascii=plain) + f" {message}"
        else:
            line = f"{self.command}: {message} [{elapsed:.1f} s]"
        width = shutil.get_terminal_size().columns - 1  # a wrapped line cannot be redrawn
        sys.stderr.write("\r\x1b[K" + line[:width])
        sys.stderr.flush()
        self._drawn = True

    def _erase(self, record: logging.LogRecord | None = None) -> bool:
        """Erase the status line (also a logging filter that lets ``record`` through)."""
        if self._drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._drawn = False
        return True

    def __enter__(self) -> Progress:
        if self.show:
            for handler in logging.getLogger().handlers:
                handler.addFilter(self._erase)
        return self

    def __exit__(self, *exc: Any) -> None:
        for handler in logging.getLogger().handlers:
            handler.removeFilter(self._erase)
        self._erase()  # before the summary or an error


def run_mechanism(args: argparse.Namespace, load: Callable[[argparse.Namespace], Any],
                  release: Callable[[argparse.Namespace, Any, Progress], Any],
                  describe: Callable[[Any], str]) -> int:
    """Check ``--out``, read the input, release, write the release directory, print the summary.

    ``--out`` is checked before the input is read
    (:func:`dpgpu.release.check_release_target`), so a run that could not
    be written is not started.  The summary (the line, or the ``--json``
    object) shows no timings: they grow with the data, so they go to the
    release's ``diagnostics.json`` (the input's reading time too, as
    ``load_s``).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments of a command added by :func:`add_mechanism_command`.
    load : callable
        ``load(args)``: the mechanism's input.
    release : callable
        ``release(args, data, progress)``: the release object, which has
        ``report`` and ``save(out, force=...)``.
    describe : callable
        ``describe(release)``: what was released, for the summary line
        (released values and public parameters only).

    Returns
    -------
    int
        Exit status 0.  (A release that is not private says why in its
        report's ``warning``, which the mechanism also logs; the summary
        says ``NOT private`` instead of the budget spent, and the ``--json``
        summary has ``"private": false``.  A private release made with
        ``--seed`` is followed by :data:`SEEDED_WARNING`.)

    Raises
    ------
    InputError
        ``--out`` may not be written: it exists (without ``--force``), is not
        a release directory, is or holds an input.
    """
    check_release_target(args.out, force=args.force, inputs=input_paths(args))
    show = not (args.quiet or args.verbose) and sys.stderr.isatty()
    with Progress(args.command, show=show) as progress, engine_client(args) as client:
        args.client = client  # read by load_from_args and the release
        t0 = time.perf_counter()
        progress("reading the input")
        data = load(args)
        load_s = time.perf_counter() - t0
        progress("releasing")
        rel = release(args, data, progress)
        rel.report.setdefault("timings", {})["load_s"] = round(load_s, 4)  # to diagnostics.json
        progress(f"writing {args.out}")
        out = Path(rel.save(args.out, force=args.force))
    r = rel.report
    if r["seeded"] and r["private"]:
        log.warning(SEEDED_WARNING)
    if args.json:
        print_json({"mechanism": r["mechanism"], "private": r["private"],
                    "epsilon": r["epsilon"], "delta": r["delta"],
                    "out": str(out), "files": sorted(p.name for p in out.iterdir()),
                    "seeded": r["seeded"]})
    elif not args.quiet:
        spent = f"epsilon={r['epsilon']:g}" + (f", delta={r['delta']:g}" if r["delta"] else "")
        guarantee = f"spent {spent}" if r["private"] else "NOT private (see the report's warning)"
        print(f"{describe(rel)}; {guarantee}; written to {out}")
    return 0
