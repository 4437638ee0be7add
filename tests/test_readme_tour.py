"""The README's "A 60-second tour" runs as written: its Python block, verbatim, on this (CPU-only) machine,
and every kernelrl command its bash block names exists."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNELRL = Path(sys.executable).with_name("kernelrl")
# what the tour's Python block promises in its comments, and the test checks in its output
PROMISED = ("['correct', 'format_error'] [1.0, -10.0]", "no code block found")


def tour_blocks(text: str | None = None) -> dict[str, str]:
    """The tour's fenced blocks by language ('python', 'bash'): from its heading to the next heading."""
    text = (ROOT / "README.md").read_text() if text is None else text
    start = text.index("## A 60-second tour")
    end = text.find("\n## ", start + 1)
    section = text[start:end if end != -1 else len(text)]
    blocks: dict[str, str] = {}
    for found in re.finditer(r"^```(\w+)\n(.*?)^```$", section, re.S | re.M):
        blocks.setdefault(found[1], found[2])
    return blocks


def tour_commands(bash: str) -> list[list[str]]:
    """The kernelrl subcommands the bash block runs: ['eval'], ['train', 'sft'], ..."""
    commands = []
    for line in bash.splitlines():
        words = shlex.split(line.split("#", 1)[0])
        if not words or words[0] != "kernelrl":
            continue
        command = [words[1]]
        if words[1] == "train":
            command.append(words[2])
        if command not in commands:
            commands.append(command)
    return commands


def test_the_tour_has_both_blocks_and_promises_what_the_test_checks():
    blocks = tour_blocks()
    assert set(blocks) >= {"python", "bash"}
    for promise in PROMISED:
        assert promise in blocks["python"], f"the tour's comments no longer promise {promise!r}"
    assert "open_scorer" in blocks["python"] and "VerdictSettings" in blocks["python"]


def test_the_extraction_reads_a_block_with_a_fence_inside_a_string():
    text = ('## A 60-second tour\n\n```python\nx = "```python\\ny\\n```"\nprint(x)\n```\n\n```bash\n'
            'kernelrl rules'
            '   # the rules\n```\n\n## Next\n\n```python\nnot this\n```\n')
    blocks = tour_blocks(text)
    assert blocks["python"] == 'x = "```python\\ny\\n```"\nprint(x)\n'
    assert tour_commands(blocks["bash"]) == [["rules"]]


@pytest.mark.slow  # a kernelrl process per tour command
def test_every_tour_command_exists():
    commands = tour_commands(tour_blocks()["bash"])
    assert {"eval", "bench", "report", "rules"} <= {c[0] for c in commands}
    env = {**os.environ, "COLUMNS": "120"}
    for command in commands:
        done = subprocess.run([str(KERNELRL), *command, "--help"], capture_output=True, text=True, env=env,
                              timeout=120)
        assert done.returncode == 0, f"kernelrl {' '.join(command)} --help: {done.stdout}{done.stderr}"


@pytest.mark.slow
def test_the_tour_runs_verbatim_on_the_cpu(tmp_path):
    source = tour_blocks()["python"]
    assert '"auto"' in source  # the block as a reader copies it: no device forced here
    script = tmp_path / "tour.py"
    script.write_text(source)
    env = {**os.environ, "KERNELRL_RESULT_CACHE": "0", "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "CUDA_VISIBLE_DEVICES": ""}  # on a GPU host too, "auto" finds no GPU: CPU mode, as in CI
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "correct cpu-interpreter", done.stdout
    for promise in PROMISED:
        assert promise in done.stdout, done.stdout
