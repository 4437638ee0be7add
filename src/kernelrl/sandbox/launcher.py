"""Start candidate sandboxes: a standby started ahead of its candidate, a child forked from the warm zygote,
or a fresh Python process, whichever works here, in that order of preference.

The launcher is given everything it needs (`LaunchSettings`, the device gate, the device mode per call) and
never reads an evaluator's state. Stdlib only, like the rest of the verdict process.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernelrl.sandbox.gate import DeviceGate
from kernelrl.sandbox.isolation import pid_namespace_prefix
from kernelrl.sandbox.judge_client import python_env
from kernelrl.sandbox.protocol import (
    SandboxRequest,
    SandboxSettings,
    StandbyAssignment,
    StandbyRequest,
    parse_event,
)
from kernelrl.sandbox.runner import ChildOutcome, SpawnedChild, run_child, spawn_child, watch_child
from kernelrl.sandbox.zygote_client import ZygoteClient, ZygoteError

ENV_ALLOWLIST = (
    "PATH", "LANG", "LC_ALL", "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_MAX_CONNECTIONS", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
    "TRITON_PTXAS_PATH", "TRITON_LIBCUDA_PATH", "CC", "CXX", "TORCH_CUDA_ARCH_LIST", "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
)
POOL_MAX_FAILURES = 3  # consecutive zygote failures after which the launcher stays on fresh processes
# how the log of a fork the zygote could not set up begins (sandbox/zygote.py); no event came, so the launcher
# reruns it fresh
POOL_SETUP_FAILED = ("kernelrl zygote launcher failed", "kernelrl sandbox init failed")


def new_workdir() -> Path:
    """A fresh evaluation directory (in memory where /dev/shm is writable): in/, out/ and the private home."""
    workdir = Path(tempfile.mkdtemp(prefix="kernelrl-",
                                    dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None))
    for name in ("in", "out", "home"):
        (workdir / name).mkdir()
    return workdir


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class LaunchSettings:
    """What a sandbox is started with; the evaluator derives it from its EvaluatorSettings."""

    cache_dir: Path  # per-candidate Triton caches and CUDA-extension builds, the harness's Triton cache
    # over the allowlisted environment, e.g. {"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    device_env: dict[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 120.0
    compile_timeout_s: float = 300.0
    run_timeout_s: float = 120.0
    memory_limit_bytes: int = 16 << 30
    log_limit_bytes: int = 32 * 1024
    max_file_bytes: int = 16 << 30
    isolate_network: bool = True
    isolate_processes: bool = True
    warm_pool: bool = True
    standby_sandboxes: int = 3


@dataclass
class Standby:
    """A sandbox started before its candidate: forked, confined and device-initialized up to the point where
    it reads the candidate's part of the request from its control pipe. `key`: the settings it was started
    with."""

    child: SpawnedChild
    workdir: Path
    key: str

    def alive(self) -> bool:
        # the leader (the zygote's launcher, which supervises the rest); its group exists after its setsid()
        try:
            os.kill(self.child.pgid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True


class SandboxLauncher:
    """Starts and watches sandboxes for one device. Thread-safe: evaluations run on several threads at
    once."""

    def __init__(self, settings: LaunchSettings, gate: DeviceGate,
                 popen: Callable[..., subprocess.Popen] = subprocess.Popen) -> None:
        self.settings = settings
        self.gate = gate
        self._popen = popen  # starts the zygote (the evaluator's ProcessOwner.popen)
        self._prefix: list[str] | None = None  # `unshare` argv for a PID namespace, probed on first use
        self._zygote: ZygoteClient | None = None  # the warm pool, started on first use
        self._zygote_lock = threading.Lock()
        self.pool_failures = 0  # consecutive zygote failures; at POOL_MAX_FAILURES the pool is given up
        self.standbys: list[Standby] = []  # started sandboxes waiting for a candidate
        self._standby_lock = threading.Lock()

    # -- the request's part known before the candidate -------------------------------------------------------
    def sandbox_settings(self, mode: str) -> SandboxSettings:
        """The request's part a sandbox needs before its candidate is known (a standby's whole request)."""
        return SandboxSettings(mode=mode, isolate_network=self.settings.isolate_network,
                               max_file_bytes=self.settings.max_file_bytes)

    def candidate_caches(self, code: str) -> dict[str, str]:
        """This candidate's own compile caches. Triton's for this exact source: a re-evaluated identical
        candidate (common in RL) compiles warm, and no candidate can poison another's cache. CUDA-extension
        builds: an identical CUDA C++ source reuses its build (~0.02 s instead of ~65 s)."""
        caches = {"TRITON_CACHE_DIR": self.settings.cache_dir / "triton" / _sha(code)[:24],
                  "TORCH_EXTENSIONS_DIR": self.settings.cache_dir / "torch_extensions" / _sha(code)[:24]}
        for directory in caches.values():
            directory.mkdir(parents=True, exist_ok=True)
        return {name: str(directory) for name, directory in caches.items()}

    # -- the warm pool ---------------------------------------------------------------------------------------
    def pool_enabled(self) -> bool:
        """The zygote path needs the PID namespace (its forked children unshare one themselves)."""
        s = self.settings
        if not (s.warm_pool and s.isolate_processes) or self.pool_failures >= POOL_MAX_FAILURES:
            return False
        if self._prefix is None:
            self._prefix = pid_namespace_prefix()
        return bool(self._prefix)

    def pool(self, mode: str) -> ZygoteClient:
        with self._zygote_lock:
            if self._zygote is None:
                env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST}
                env.update(self.settings.device_env)
                # the zygote never writes; each child gets its own HOME/TMPDIR
                neutral = tempfile.gettempdir()
                env.update({"PYTHONPATH": python_env()["PYTHONPATH"], "HOME": neutral, "TMPDIR": neutral})
                if mode != "gpu":
                    env["TRITON_INTERPRET"] = "1"
                self._zygote = ZygoteClient(env, self.settings.startup_timeout_s, self._popen)
            return self._zygote

    @property
    def zygote(self) -> ZygoteClient | None:
        return self._zygote

    def warm_up(self, mode: str) -> None:
        """Start the zygote and the standby sandboxes now; a failure only counts against the pool."""
        if not self.pool_enabled():
            return
        try:
            self.pool(mode).ensure_started()
            if self.settings.standby_sandboxes > 0:
                with self._standby_lock:
                    self._fill_standbys(mode, self._standby_key(mode))
        except (ZygoteError, OSError):
            self.pool_failures += 1  # evaluations fall back to fresh processes

    def _standby_key(self, mode: str) -> str:
        return self.sandbox_settings(mode).to_json()

    def take_standby(self, mode: str) -> Standby | None:
        """A waiting standby for this evaluation (started now if none waits), after starting replacements up
        to `standby_sandboxes`; None without the warm pool."""
        if self.settings.standby_sandboxes < 1 or not self.pool_enabled():
            return None
        key = self._standby_key(mode)
        with self._standby_lock:
            taken, waiting = None, []
            for standby in self.standbys:
                if standby.key != key or not standby.alive():
                    self._discard(standby)
                elif taken is None:
                    taken = standby
                else:
                    waiting.append(standby)
            self.standbys = waiting
            try:
                if taken is None:
                    taken = self._start_standby(mode, key)
                self._fill_standbys(mode, key)
            except (ZygoteError, OSError):
                self.pool_failures += 1  # the evaluation goes the usual way, which counts and falls back
        return taken

    def _fill_standbys(self, mode: str, key: str) -> None:
        while len(self.standbys) < self.settings.standby_sandboxes:
            self.standbys.append(self._start_standby(mode, key))

    def _start_standby(self, mode: str, key: str) -> Standby:
        workdir = new_workdir()
        home = workdir / "home"
        harness = self.settings.cache_dir / "triton" / "kernelrl-harness"
        harness.mkdir(parents=True, exist_ok=True)
        # its Triton warm-up compiles into the harness's cache,
        # which no candidate can write (read-only mounts)
        env = {**self.child_env(mode, workdir), "TRITON_CACHE_DIR": str(harness),
               "TORCH_EXTENSIONS_DIR": str(workdir / "torch-extensions")}
        request_path = workdir / "request.json"
        settings = self.sandbox_settings(mode)
        request_path.write_text(StandbyRequest(mode=settings.mode, isolate_network=settings.isolate_network,
                                               max_file_bytes=settings.max_file_bytes).to_json())
        zygote = self.pool(mode)
        message = {"op": "fork", "env": env, "cwd": str(home), "request_path": str(request_path)}
        try:
            child = spawn_child([], env=env, cwd=str(home),
                                spawn=lambda *fds: zygote.spawn(message, list(fds)))
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        self.gate.register(child.pgid)  # stopped while another sandbox times, like any running sandbox
        return Standby(child=child, workdir=workdir, key=key)

    def _discard(self, standby: Standby) -> None:
        self.gate.unregister(standby.child.pgid)
        standby.child.close()
        shutil.rmtree(standby.workdir, ignore_errors=True)

    def close(self) -> None:
        with self._standby_lock:
            for standby in self.standbys:
                self._discard(standby)
            self.standbys = []
        if self._zygote is not None:
            self._zygote.close()

    # -- one sandbox -----------------------------------------------------------------------------------------
    def child_env(self, mode: str, workdir: Path) -> dict[str, str]:
        """An allowlisted environment (no API keys) with a private HOME/TMPDIR and compile caches in
        `workdir`; the caller points TRITON_CACHE_DIR and TORCH_EXTENSIONS_DIR at the candidate's own
        directories."""
        env = {k: v for k, v in os.environ.items() if k in ENV_ALLOWLIST}
        env.update(self.settings.device_env)
        home = workdir / "home"
        env.update({
            "PYTHONPATH": python_env()["PYTHONPATH"],
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
            "HOME": str(home),
            "TMPDIR": str(home),
            "TRITON_CACHE_DIR": str(workdir / "triton-cache"),
            "TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor-cache"),
        })
        if mode != "gpu":
            env["TRITON_INTERPRET"] = "1"
        return env

    def run(self, *, workdir: Path, mode: str, request: SandboxRequest, caches: dict[str, str],
            on_event: Callable[[dict], bool], token_allowed: Callable[[], bool],
            standby: Standby | None = None, cancelled: Callable[[], bool] | None = None,
            limits: dict | None = None, stall: Callable[[], tuple[float, str] | None] | None = None
            ) -> tuple[ChildOutcome, str]:
        """Run the candidate's sandbox: a standby (started ahead, its assignment sent on its control pipe),
        else forked from the zygote when the warm pool is on and works, else a fresh process. Returns the
        outcome and which path ran ('zygote-standby', 'zygote' or 'fresh-process'). The request file is
        written before each start: the stub deletes it once read (it holds the input seeds). `limits`: this
        candidate's `compile_timeout_s`, `run_timeout_s` and `memory_limit_bytes` where they differ from the
        settings'. `stall`: how long the next report may take (`watch_child`)."""
        s = dataclasses.replace(self.settings, **(limits or {}))
        home = workdir / "home"
        child_env = {**self.child_env(mode, workdir), **caches}
        watch = dict(
            timeouts={"start": s.startup_timeout_s, "import": s.compile_timeout_s, "run": s.run_timeout_s},
            memory_limit_bytes=s.memory_limit_bytes, log_limit_bytes=s.log_limit_bytes,
            on_event=on_event, gate=self.gate, token_allowed=token_allowed,
            # typed wire: the events as their dataclasses; malformed -> protocol violation
            validate=parse_event,
            cancelled=cancelled, stall=stall,
        )
        common = dict(env=child_env, cwd=str(home), **watch)
        if standby is not None:
            try:
                standby.child.send((StandbyAssignment(request=request, env=caches).to_json() + "\n").encode())
            except OSError:  # it died waiting
                self.gate.unregister(standby.child.pgid)
                standby.child.close()
            else:
                outcome = watch_child(standby.child, **watch)
                if outcome.events or outcome.timed_out_phase or outcome.cancelled:
                    return outcome, "zygote-standby"
                # it died before it was ready (no candidate code ran): start one the usual way
        request_path = workdir / "request.json"
        if self.pool_enabled():
            request_path.write_text(request.to_json())
            zygote = self.pool(mode)
            message = {"op": "fork", "env": child_env, "cwd": str(home), "request_path": str(request_path)}
            try:
                outcome = run_child([], spawn=lambda *fds: zygote.spawn(message, list(fds)), **common)
            except ZygoteError:  # cannot start or fork here: the fresh-process path below
                self.pool_failures += 1
            else:
                if outcome.events or outcome.timed_out_phase or outcome.cancelled:
                    self.pool_failures = 0
                    return outcome, "zygote"
                # the fork ended before its first event (no candidate code ran: the stub loads it after
                # "ready"): the launcher could not set the sandbox up, or it was killed; rerun fresh
                self.pool_failures += 1
        if self._prefix is None:
            self._prefix = pid_namespace_prefix() if s.isolate_processes else []
        prefix = self._prefix if s.isolate_processes else []
        request_path.write_text(request.to_json())
        argv = [*prefix, sys.executable, "-m", "kernelrl.sandbox.child", str(request_path)]
        return run_child(argv, **common), "fresh-process"
