"""The committed verdict table (tests/verdict_table.jsonl): every corpus file's and every built-in reference
solution's verdict in CPU mode, as a status and the check or error that decided it. The corpus and suite tests
compare what they get with it, so a refactor that changes any verdict fails there, not only where a class's
expectation is loose (a `hack_detected` by another check than before, an honest twin rejected for a new
reason). Regenerate it only for a deliberate verdict change, and say which verdicts changed and why:

    python tests/corpus_runner.py $(cd tests && ls exploits*/*.py) > corpus.jsonl
    # then rebuild with table_rows
"""

from __future__ import annotations

import json
import re
from pathlib import Path

PATH = Path(__file__).parent / "verdict_table.jsonl"


def verdict_key(status: str, message: str) -> str:
    """What decided a verdict, without its run-dependent details (trial numbers, counts, values): the status
    and the check (`hack_detected: runtime check rt-host-read`) or the error's kind (`runtime_error: TypeError
    while running forward`)."""
    if status == "correct":
        return status
    head = re.split(r"[:(\n]", message, maxsplit=1)[0].strip()
    return f"{status}: {head}"


def load() -> dict[str, str]:
    """Name (`exploits/h01_....py`, `solutions/level0/1_relu`) -> verdict key."""
    return {row["name"]: row["verdict"] for row in map(json.loads, PATH.read_text().splitlines()) if row}


def table_rows(runner_lines: list[dict]) -> list[dict]:
    """Rows of the table from what tests/corpus_runner.py (or a solutions run) printed."""
    return [{"name": v["name"], "verdict": verdict_key(v["status"], v["message"])} for v in runner_lines
            if "name" in v]
