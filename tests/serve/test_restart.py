"""`kernelrl serve` as users start it: a server killed with SIGKILL and
started again on the same journal still answers every verdict it had answered,
without evaluating again; what the command refuses before it starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
from served import free_port

from kernelrl import load_suite

SUITE = load_suite()
RELU = SUITE.get("level0/1_relu")
SOLUTION = SUITE.solution_path(RELU).read_text()


def start(port: int, journal, token_file) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kernelrl.cli", "serve", "--device", "cpu",
                             "--port", str(port), "--journal", str(journal), "--token-file", str(token_file),
                             "--no-cache"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_ready(process: subprocess.Popen, url: str) -> None:
    end = time.monotonic() + 180
    while time.monotonic() < end:
        assert process.poll() is None, process.stdout.read()
        try:
            if httpx.get(f"{url}/readyz").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    raise AssertionError("kernelrl serve was not ready within 180 s")


def metric(text: str, name: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))


@pytest.mark.slow
def test_a_killed_server_restarted_on_its_journal_answers_what_it_had_answered(tmp_path):
    token_file = tmp_path / "token"
    subprocess.run([sys.executable, "-m", "kernelrl.cli", "serve", "--new-token", str(token_file)],
                   check=True)
    assert oct(token_file.stat().st_mode & 0o777) == "0o600"
    headers = {"Authorization": f"Bearer {token_file.read_text().strip()}", "Idempotency-Key": "step-3"}
    journal, port = tmp_path / "journal.sqlite", free_port()
    url = f"http://127.0.0.1:{port}"
    request = {"items": [{"id": "a", "problem": {"id": RELU.id}, "code": SOLUTION},
                         {"id": "b", "problem": {"id": RELU.id}, "code": SOLUTION.replace("0.0)", "1.0)")},
                         {"id": "c", "problem": {"id": RELU.id}, "completion": "no code"}]}
    first = start(port, journal, token_file)
    try:
        wait_ready(first, url)
        answered = httpx.post(f"{url}/v1/evaluate", json=request, headers=headers,
                              timeout=300).json()["results"]
        assert [a["result"]["status"] for a in answered] == ["correct", "wrong_output", "format_error"]
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
    second = start(port, journal, token_file)
    try:
        wait_ready(second, url)
        replayed = httpx.post(f"{url}/v1/evaluate", json=request, headers=headers,
                              timeout=300).json()["results"]
        assert replayed == answered
        metrics = httpx.get(f"{url}/metrics", headers=headers).text
        assert metric(metrics, "kernelrl_verdicts_total") == 0  # nothing was evaluated again
        assert metric(metrics, 'kernelrl_cache_hits_total{source="journal"}') == 3
    finally:
        second.send_signal(signal.SIGTERM)  # drains, then uvicorn ends by the signal it caught
        assert second.wait(timeout=60) in (0, -signal.SIGTERM)


def test_serve_refuses_an_open_address_without_a_token():
    done = subprocess.run([sys.executable, "-m", "kernelrl.cli", "serve", "--host", "0.0.0.0",
                           "--device", "cpu"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "--token-file" in done.stderr


def test_serve_refuses_cpu_actors_without_a_ray_pool(tmp_path):
    command = [sys.executable, "-m", "kernelrl.cli", "serve", "--ray-cpu-actors", "2",
               "--journal", str(tmp_path / "journal.sqlite")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--ray-cpu-actors needs --ray" in done.stderr, done.stderr
