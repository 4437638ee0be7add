"""The verdict process's handle on the judge worker (stdlib only; the judge imports torch, we do not).

`call(PrepareRequest(...))` sends a typed request and returns its typed reply (kernelrl.sandbox.protocol);
`request("prepare", **fields)` sends the same message built from keywords and returns the reply's dict."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

from kernelrl.sandbox.judge_wire import JudgeHello, JudgeReply, JudgeRequest, parse_judge_request
from kernelrl.sandbox.wire import ProtocolError


class JudgeError(RuntimeError):
    """The judge failed a request (the problem's reference raised, or the worker died or hung)."""


def python_env() -> dict[str, str]:
    """Environment for kernelrl's worker processes: kernelrl importable even when run from a source tree."""
    # the directory that holds the kernelrl package (this file is kernelrl/sandbox/judge_client.py)
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": src + (os.pathsep + path if path else "")}


class JudgeClient:
    def __init__(self, device: str, timeout_s: float, extra_env: dict[str, str] | None = None,
                 popen: Callable[..., subprocess.Popen] = subprocess.Popen) -> None:
        self.device = device
        self._popen = popen  # the evaluator's ProcessOwner.popen: the judge outlives the calling thread
        self.extra_env = extra_env or {}
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None
        self.info: dict = {}
        self.hello: JudgeHello | None = None
        self._stderr = None
        # one request at a time: concurrent evaluations (Evaluator.evaluate_many) share this judge
        self._lock = threading.RLock()
        self.lock = self._lock  # held by the device gate while a run is timed (no judge work meanwhile)

    def _start(self) -> None:
        self.info = {}  # not ready until this judge's hello
        self._stderr = tempfile.TemporaryFile()
        self.proc = self._popen(
            [sys.executable, "-m", "kernelrl.sandbox.judge", self.device],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env={**python_env(), **self.extra_env},
        )
        hello = self._read(self.timeout_s)
        if not hello.get("ok"):
            self.close()
            raise JudgeError(f"the judge process could not start: {hello.get('error')}")
        try:
            self.hello = JudgeHello.from_dict(hello)
        except ProtocolError as exc:
            self.close()
            raise JudgeError(f"the judge process could not start: {exc}") from None
        self.info = {k: v for k, v in hello.items() if k != "ok"}

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ready(self) -> bool:
        """Running and its hello read (a judge still starting is not ready)."""
        return self.running() and bool(self.info)

    def ensure_started(self) -> dict:
        with self._lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            return self.info

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - 3000))
        return self._stderr.read().decode(errors="replace")

    def _read(self, timeout_s: float) -> dict:
        assert self.proc is not None and self.proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + timeout_s
            while not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    self.close()
                    raise JudgeError(f"the judge did not answer within {timeout_s:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            tail = self._stderr_tail()
            self.close()
            raise JudgeError(f"the judge process died; its last output:\n{tail}")
        return json.loads(line)

    def request(self, op: str, timeout_s: float | None = None, **fields) -> dict:
        """Send op with `fields` (checked against the op's request type first); the reply's dict."""
        try:
            message = parse_judge_request({"op": op, **fields})
        except ProtocolError as exc:
            raise JudgeError(f"malformed judge request: {exc}") from None
        with self._lock:
            return self._request(message, timeout_s)

    def call(self, message: JudgeRequest, timeout_s: float | None = None) -> JudgeReply:
        """Send a typed request; its typed reply (JudgeError when the judge failed it or answered
        nonsense)."""
        with self._lock:
            response = self._request(message, timeout_s)
        try:
            return message.reply.from_dict(response, f"reply to {message.op}")
        except ProtocolError as exc:
            raise JudgeError(f"malformed reply from the judge: {exc}") from None

    def _request(self, message: JudgeRequest, timeout_s: float | None = None) -> dict:
        self.ensure_started()
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((message.to_json() + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:
            tail = self._stderr_tail()
            self.close()
            raise JudgeError(f"the judge process died; its last output:\n{tail}") from None
        response = self._read(timeout_s or self.timeout_s)
        if not response.get("ok"):
            raise JudgeError(response.get("traceback") or response.get("error") or "judge request failed")
        return response

    def close(self) -> None:
        with self._lock:
            self._close()

    def abort(self) -> None:
        """Kill the process now, without waiting for a request or a start in progress (which then fails at
        once); `close` cleans up after."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()

    def _close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream:
                    stream.close()
            self.proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
