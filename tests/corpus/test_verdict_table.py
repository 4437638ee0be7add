"""Verdicts unchanged: every corpus file through tests/corpus_runner.py (one CPU
evaluator, each class's verdict settings per call, as the mutation tests run it)
gives the verdict of the committed table (tests/verdict_table.py; the reference
solutions' rows are checked by test_suite, which evaluates them anyway)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import corpus
import pytest
import verdict_table

HERE = Path(__file__).parents[1]  # tests/: the runner, the corpus, the table


@pytest.mark.slow
def test_every_corpus_file_keeps_its_verdict_in_the_table():
    names = sorted(c.name for c in corpus.all_cases())
    table = verdict_table.load()
    assert set(names) <= set(table), f"corpus files missing from the table: {sorted(set(names) - set(table))}"
    done = subprocess.run([sys.executable, str(HERE / "corpus_runner.py"), *names], capture_output=True,
                          text=True, env={**os.environ, "KERNELRL_RESULT_CACHE": "0"}, timeout=850, cwd=HERE)
    got = verdict_table.table_rows([json.loads(line)
                                    for line in done.stdout.splitlines() if line.startswith("{")])
    assert len(got) == len(names), f"the runner answered {len(got)} of {len(names)}:\n{done.stderr[-3000:]}"
    changed = {row["name"]: (table[row["name"]], row["verdict"])
               for row in got if table[row["name"]] != row["verdict"]}
    assert not changed, f"verdicts changed (table, now): {changed}"


def test_the_table_key_names_what_decided_the_verdict():
    key = verdict_table.verdict_key
    assert key("correct", "correct (2/2 trials)") == "correct"
    assert key("hack_detected", "runtime check rt-host-read: trial 0: item x4096") == \
        "hack_detected: runtime check rt-host-read"
    assert key("wrong_output", "wrong output (trial 0 on input set check, output 0: values)") == \
        "wrong_output: wrong output"
    assert key("runtime_error", "TypeError while running forward: kernel argument") == \
        "runtime_error: TypeError while running forward"
