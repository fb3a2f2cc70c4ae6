"""``dpgpu completion {bash,zsh,fish}``: print a shell completion script.

The script is generated from dpgpu's own argument parser (with shtab:
``pip install dpgpu[completion]``), so it knows every subcommand, option
and choice, and completes file names where a command reads or writes one.
Install it once:

  bash:  dpgpu completion bash > ~/.local/share/bash-completion/completions/dpgpu
  zsh:   dpgpu completion zsh > ~/.zfunc/_dpgpu   (with fpath+=(~/.zfunc) before
         compinit in ~/.zshrc)
  fish:  dpgpu completion fish > ~/.config/fish/completions/dpgpu.fish

Regenerate it after upgrading dpgpu.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import add_command

SHELLS = ("bash", "zsh", "fish")
#: Options whose value is a directory (the rest of the path options are files).
DIRECTORY_OPTIONS = ("out", "release")
#: Options whose value is a file.
FILE_OPTIONS = ("config", "html", "plot", "original")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``completion`` subcommand."""
    p = add_command(sub, "completion", help="print a shell completion script",
                    description=__doc__,
                    example="dpgpu completion bash > ~/.local/share/bash-completion/"
                            "completions/dpgpu")
    p.add_argument("shell", choices=SHELLS, help="the shell the script is for")
    p.set_defaults(func=run)


def script(shell: str, parser: argparse.ArgumentParser | None = None) -> str:
    """The completion script of ``parser`` (default: the full ``dpgpu`` parser) for ``shell``.

    Parameters
    ----------
    shell : {"bash", "zsh", "fish"}
    parser : argparse.ArgumentParser, optional
        Marked in place: positional arguments and path options complete
        file (or directory) names.

    Returns
    -------
    str

    Raises
    ------
    InvalidParameter
        For another shell, or when shtab is not installed (names
        ``pip install dpgpu[completion]``).
    """
    from ..notebook import require  # noqa: PLC0415 - shtab is optional
    from ..validation import check_choice  # noqa: PLC0415

    shell = check_choice(shell, "shell", SHELLS)
    shtab = require("shtab")
    if parser is None:
        from ..cli import build_parser  # noqa: PLC0415 - the CLI imports this module

        parser = build_parser()
    _mark_paths(parser, shtab)
    return shtab.complete(parser, shell=shell)


def _mark_paths(parser: argparse.ArgumentParser, shtab: Any) -> None:
    """Let positionals (without choices) and path options complete file names.

    Subcommands are described by their one-line help (shtab shows a
    parser's description, which here is a whole docstring).
    """
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                sub.description = helps.get(name) or sub.description
                _mark_paths(sub, shtab)
        elif action.dest in DIRECTORY_OPTIONS:
            action.complete = shtab.DIRECTORY
        elif action.dest in FILE_OPTIONS or (not action.option_strings and not action.choices):
            action.complete = shtab.FILE


def run(args: argparse.Namespace) -> int:
    """Print the script for ``args.shell``."""
    sys.stdout.write(script(args.shell))
    return 0
