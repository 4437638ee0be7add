"""bench/throughput.py keeps what it measured: its JSON holds every finished mode's row before the next mode
starts, so a run cut by a time limit loses only the mode it was in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.slow  # runs the bench script
def test_each_finished_modes_row_is_in_the_json_before_the_next_mode_runs(tmp_path):
    out = tmp_path / "throughput.json"
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "throughput.py"), "--device", "cpu",
                             "--modes", "cached,pool", "--json", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if line.strip().startswith("cached:"):  # the first mode's line; the pool mode runs next
                rows = json.loads(out.read_text())["rows"]
                break
        else:
            raise AssertionError("no 'cached:' line:\n" + "".join(seen[-20:]))
    finally:
        proc.kill()  # cut in the second mode, as a call's time limit would
        proc.wait(timeout=60)
    assert [row["mode"] for row in rows] == ["cached"]
    assert rows[0]["evaluations"] > 0 and rows[0]["cache_hits"] > 0
    assert json.loads(out.read_text())["rows"][0]["mode"] == "cached"  # the kill left the file whole
