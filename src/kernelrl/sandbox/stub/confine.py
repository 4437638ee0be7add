"""Phase 1: confinement. The first part runs while the process is single-threaded and before torch is
imported; the second after the device has started (CUDA start-up needs what it takes away) and, for a standby,
after its candidate was assigned."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from kernelrl.sandbox import isolation, problem_data
from kernelrl.sandbox.protocol import Event, SandboxRequest, StandbyRequest, TerminatedEvent


def confine_process(request: SandboxRequest | StandbyRequest, send: Callable[[Event], None]
                    ) -> tuple[list[str], bool]:
    """Die with the parent, become the PID namespace's reaper (the stub goes on in a forked child), cut the
    network and set the file-size and core limits; returns what was applied and whether this process is in a
    PID namespace of its own."""
    isolation.die_with_parent()
    in_pid_namespace = os.getpid() == 1
    if in_pid_namespace:
        _init_process(send)
        isolation.die_with_parent()
    applied = ["process-group", "private-tmpdir", "env-allowlist"]
    network = isolation.isolate_network() if request.isolate_network else None
    if network:
        applied.append(network)
    import resource

    isolation.set_limit(resource.RLIMIT_CORE, 0)
    if isolation.set_limit(resource.RLIMIT_FSIZE, request.max_file_bytes):
        applied.append("rlimit-fsize")
    if isolation.no_new_privs():
        applied.append("no-new-privs")
    return applied, in_pid_namespace


def lock_down(request: SandboxRequest, applied: list[str], in_pid_namespace: bool, marks: dict[str, float],
              clock: Callable[[], float]) -> bytes | None:
    """After the device started: the address-space cap (CPU mode), the problem's source read and then hidden,
    the read-only filesystem, the candidate's own uid, no capabilities, seccomp last. Returns the problem's
    source, read before the file is hidden (`problem_data`)."""
    import importlib.util
    import resource

    if not request.gpu and request.memory_limit_bytes:
        # address-space caps break CUDA start-up (see docs/design.md); on GPU the parent's RSS watchdog caps
        # memory. The cap is what the candidate may add: a CUDA build of torch maps ~4 GB before any candidate
        # code (H100 host), and an absolute 4 GiB cap there left no room to start a thread
        if isolation.set_limit(resource.RLIMIT_AS, isolation.mapped_bytes() + request.memory_limit_bytes):
            applied.append("rlimit-as")
    problem_source = problem_data.read_source(request.problem_path)  # before the file is hidden below
    if in_pid_namespace and request.readonly_fs:
        # after CUDA start-up; the Triton, Inductor and CUDA-extension caches live in the writable paths
        if isolation.readonly_filesystem(request.writable_paths):
            applied.append("readonly-fs")
            # the candidate reads the problem neither at its path nor from a bytecode cache beside it
            hidden = [request.problem_path, importlib.util.cache_from_source(request.problem_path)]
            if isolation.hide_files(hidden):
                applied.append("problem-hidden")
    marks["readonly_fs"] = clock()
    uid = request.candidate_uid
    if (uid is not None and "readonly-fs" in applied
            and isolation.expose_to(uid, _import_roots(), request.writable_paths)):
        if isolation.switch_user(uid, request.writable_paths):  # needs capabilities: before they are dropped
            applied.append("separate-uid")
    if isolation.drop_capabilities():  # after CUDA start-up, which may need them
        applied.append("no-capabilities")
    if in_pid_namespace:
        applied.append("pidns")
    if isolation.seccomp_filter():  # last: after CUDA start-up, the read-only remount and the capabilities
        applied.append("seccomp")
    marks["capabilities"] = clock()
    return problem_source


def _import_roots() -> list[str]:
    """Where this interpreter imports from and what it compiles against: they must stay readable to the
    candidate's uid (`isolation.expose_to`)."""
    import sysconfig

    return [p for p in (*sys.path, sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix,
                        sysconfig.get_paths().get("include", "")) if p]


def _init_process(send: Callable[[Event], None]) -> None:
    """PID 1 of the sandbox's PID namespace: fork the real stub and reap. PID 1 ignores signals it has no
    handler for (abort() would not end it), so candidate code must never run as PID 1. When this process
    exits, the kernel kills everything left in the namespace."""
    isolation.make_undumpable()
    child = os.fork()
    if child == 0:
        return
    while True:
        pid, status = os.waitpid(-1, 0)  # also reaps orphans the candidate leaves behind
        if pid == child:
            if os.WIFSIGNALED(status):
                send(TerminatedEvent(signal=os.WTERMSIG(status)))
            else:
                send(TerminatedEvent(exit_code=os.WEXITSTATUS(status)))
            os._exit(0)
