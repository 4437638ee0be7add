"""Every command's --help at 80 columns: each option name shown in full (no "…" cutting one), and the
exit-code epilogue only where its codes apply."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

from kernelrl.cli import app
from kernelrl.cli.app import EPILOG


def commands(command=None, path=()):
    command = command or typer.main.get_command(app)
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from commands(sub, (*path, name))


COMMANDS = list(commands())


def help_at_80(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "80", "NO_COLOR": "1"},
                                terminal_width=80)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) or "kernelrl" for p, _ in COMMANDS])
def test_help_at_80_columns_shows_every_option_name_in_full(path, command):
    text = help_at_80(path)
    assert max(len(line) for line in text.splitlines()) <= 80
    names = [name for param in command.params for name in (*param.opts, *param.secondary_opts)
             if name.startswith("-")]
    for name in names:
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), (path, name, text)
    # nothing cut in the name columns (the first words of a row; help text further right may cut a long word)
    for line in text.splitlines():
        # a row that starts with a name (not help text wrapped further right)
        if not line.startswith(("│ -", "  -")):
            continue
        first = line.strip("│ ").split()[:2]
        assert not any(word.startswith("-") and word.endswith("…") for word in first), line


EXIT_CODES_APPLY = {("eval",), ("demo",), ("agent",)}
OWN_EXIT_CODES = {("audit",), ("baselines",), ("bench",), ("gen",), ("train", "sft"), ("train", "grpo"),
                  ("train", "two-stage")}


def test_exit_code_epilogue_only_where_its_codes_apply():
    flat = {path: " ".join(help_at_80(path).replace("│", " ").split()) for path, _ in COMMANDS if path}
    epilog = " ".join(EPILOG.split())
    for path, text in flat.items():
        assert (epilog in text) == (path in EXIT_CODES_APPLY), path
        assert ("Exit codes:" in text) == (path in EXIT_CODES_APPLY | OWN_EXIT_CODES), path
    for path in (("train", "sft"), ("train", "grpo"), ("train", "two-stage")):
        assert "1 = " not in flat[path] and "130 = interrupted" in flat[path]
