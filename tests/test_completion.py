"""``dpgpu completion {bash,zsh,fish}``: scripts generated from the argument parser."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys

import pytest

from dpgpu.cli import build_parser, main

pytest.importorskip("shtab")


def subcommands() -> list[str]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def script(capsys, shell: str) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_script_names_every_subcommand(capsys, shell):
    text = script(capsys, shell)
    assert "completion" in subcommands()
    for command in subcommands():
        assert command in text, (shell, command)
    assert "--epsilon" in text and "privtree-spatial" in text


@pytest.mark.skipif(not shutil.which("bash"), reason="no bash")
def test_bash_accepts_the_script_and_completes(capsys, tmp_path):
    path = tmp_path / "dpgpu.bash"
    path.write_text(script(capsys, "bash"))
    subprocess.run(["bash", "-n", str(path)], check=True)
    (tmp_path / "events.seq").write_text("")

    def complete(*words: str) -> list[str]:
        quoted = " ".join(f"'{w}'" for w in ("dpgpu",) + words)
        probe = (f"source '{path}'; cd '{tmp_path}'; COMP_WORDS=({quoted}); "
                 f"COMP_CWORD={len(words)}; _shtab_dpgpu; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
        return done.stdout.split()

    assert sorted(complete("")) == sorted(subcommands())
    assert complete("ngram", "--backend", "") == ["auto", "numpy", "cupy"]
    assert "--epsilon" in complete("dpne", "--eps")
    assert complete("ngram", "ev") == ["events.seq"]  # the dataset: a file name
    assert complete("completion", "") == ["bash", "zsh", "fish"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_accept_the_script(capsys, tmp_path, shell):
    if not shutil.which(shell):
        pytest.skip(f"no {shell}")
    path = tmp_path / f"dpgpu.{shell}"
    path.write_text(script(capsys, shell))
    subprocess.run([shell, "-n", str(path)], check=True)


def test_help_ends_with_an_example(capsys):
    assert main(["completion", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-2:] == [
        "example:", "  dpgpu completion bash > ~/.local/share/bash-completion/completions/dpgpu"]


def test_unknown_shell_is_a_usage_error(capsys):
    assert main(["completion", "cmd.exe"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_without_shtab_the_error_names_the_extra(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "shtab", None)  # makes `import shtab` fail
    assert main(["completion", "bash"]) == 2
    assert "pip install dpgpu[completion]" in capsys.readouterr().err
