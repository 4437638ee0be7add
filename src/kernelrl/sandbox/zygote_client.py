"""The verdict process's handle on a zygote (stdlib only; the zygote imports torch, we do not).

One zygote per device. `spawn` is thread-safe (a lock around each request; the zygote forks in
milliseconds), restarts a zygote that died, and retries the request once on the new one.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable


class ZygoteError(RuntimeError):
    """The zygote could not start or could not fork a child."""


class ZygoteClient:
    def __init__(self, env: dict[str, str], start_timeout_s: float = 120.0,
                 popen: Callable[..., subprocess.Popen] = subprocess.Popen) -> None:
        self._popen = popen  # the evaluator's ProcessOwner.popen: the zygote outlives the calling thread
        # the zygote's whole environment: its children can read it back from /proc/self/environ (the initial
        # environment block survives os.environ.clear()), so it must hold nothing a candidate may not see
        self.env = env
        self.start_timeout_s = start_timeout_s
        self.proc: subprocess.Popen | None = None
        self.sock: socket.socket | None = None
        self.starts = 0  # how many zygotes this client started (restarts = starts - 1)
        self._lock = threading.Lock()
        self._stderr = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ensure_started(self) -> int:
        with self._lock:
            self._ensure()
            assert self.proc is not None
            return self.proc.pid

    def _ensure(self) -> None:
        if self.running() and self.sock is not None:
            return
        self._close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._stderr = tempfile.TemporaryFile()
        try:
            self.proc = self._popen(
                [sys.executable, "-m", "kernelrl.sandbox.zygote", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), cwd=tempfile.gettempdir(), stdin=subprocess.DEVNULL,
                stdout=self._stderr, stderr=self._stderr,
                env={**self.env, "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"},
            )
        finally:
            theirs.close()
        self.sock = ours
        self.starts += 1
        hello = self._read(self.start_timeout_s)
        if not hello.get("ok"):
            self._close()
            raise ZygoteError(f"the zygote could not start: {hello.get('error')}")

    def _tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - 2000))
        return self._stderr.read().decode(errors="replace")

    def _read(self, timeout_s: float) -> dict:
        assert self.sock is not None
        readable, _, _ = select.select([self.sock], [], [], timeout_s)
        if not readable:
            self._close()
            raise ZygoteError(f"the zygote did not answer within {timeout_s:.0f} s")
        data = self.sock.recv(1 << 16)
        if not data:
            tail = self._tail()
            self._close()
            raise ZygoteError(f"the zygote died; its last output:\n{tail}")
        return json.loads(data)

    def spawn(self, message: dict, fds: list[int]) -> int:
        """Ask the zygote to fork a sandboxed child on `fds` (log, protocol, control, lifeline); its host
        PID."""
        data = json.dumps(message).encode()
        with self._lock:
            for attempt in range(2):
                sent = False
                try:
                    self._ensure()
                    assert self.sock is not None
                    socket.send_fds(self.sock, [data], fds)
                    sent = True
                    reply = self._read(30.0)
                except (OSError, ZygoteError) as exc:
                    self._close()
                    # once the zygote had the fds it may have forked a child on them: never a second one on
                    # the same pipes (the caller closes them, and the lifeline's end kills any such child)
                    if attempt or sent:
                        raise ZygoteError(f"the zygote failed: {exc}") from None
                    continue
                if reply.get("ok"):
                    return int(reply["pid"])
                self._close()  # a zygote that refuses (e.g. CUDA touched) is replaced
                if attempt:
                    raise ZygoteError(f"the zygote refused: {reply.get('error')}")
        raise AssertionError("unreachable")

    def ping(self) -> dict:
        with self._lock:
            self._ensure()
            assert self.sock is not None
            self.sock.send(json.dumps({"op": "ping"}).encode())
            return self._read(30.0)

    def _close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def close(self) -> None:
        with self._lock:
            self._close()

    def abort(self) -> None:
        """Kill the process now, without waiting for a request or a start in progress (which then fails at
        once); `close` cleans up after."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
