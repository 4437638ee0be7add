"""The zygote: a warm, CUDA-free process that forks one sandboxed candidate process per request.

Started by the verdict process (`kernelrl.sandbox.zygote_client.ZygoteClient`) as
`python -m kernelrl.sandbox.zygote SOCKET_FD`. It imports torch, triton, numpy and the stub's modules once and
never initializes CUDA (checked before every fork), so each forked child starts with everything imported and
initializes CUDA itself (fork after CUDA init is impossible, see docs/design.md).

Per request (one JSON message on the Unix socket, with stdout, protocol, control and lifeline fds attached
through SCM_RIGHTS) the zygote forks a *launcher* and answers with the launcher's host PID. The launcher:

1. becomes its own session and process-group leader (the verdict process kills and measures the group);
2. moves the fds into place (stdin /dev/null, stdout+stderr -> the log pipe), closes every other fd (the
   zygote's socket included) and replaces the environment with the request's allowlisted one, cwd included;
3. `unshare(CLONE_NEWPID | CLONE_NEWNS)`, makes every mount private, forks: the grandchild is PID 1 of the new
   namespace, mounts a fresh /proc and enters `kernelrl.sandbox.child.run`, which forks the real stub (the
   candidate never runs as PID 1) and applies the same confinement as the fresh-process path;
4. waits for it, and kills it when the lifeline (a pipe whose write end the verdict process holds) closes,
   so a candidate never outlives its evaluation even when the zygote is restarted meanwhile.

This is what `unshare --pid --fork --mount-proc --kill-child` does for the fresh-process path.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import sys

_CLONE_NEWNS = 0x00020000
_CLONE_NEWPID = 0x20000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
MAX_MESSAGE = 1 << 20
_START_DIR = os.getcwd()


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _warm_imports() -> None:
    """Everything a candidate process would import anyway, without touching CUDA."""
    import numpy  # noqa: F401
    import torch  # noqa: F401

    try:
        import triton  # noqa: F401

        # 0.15 s at a child's first compile or frontend check
        import triton.compiler.code_generator  # noqa: F401
        import triton.language  # noqa: F401
    except ImportError:
        pass
    import kernelrl.problems.input_sets  # noqa: F401
    import kernelrl.sandbox.census  # noqa: F401
    import kernelrl.sandbox.child  # noqa: F401
    import kernelrl.sandbox.cuda_ipc  # noqa: F401 - the module only; the driver library loads in the child
    import kernelrl.sandbox.frontend  # noqa: F401
    import kernelrl.sandbox.kernel_share
    import kernelrl.sandbox.opcensus  # noqa: F401 - the module only; the child installs the census
    import kernelrl.sandbox.tensor_files  # noqa: F401
    import kernelrl.timing.cuda_timer  # noqa: F401

    kernelrl.sandbox.kernel_share.warm_up()  # on the host: CUDA stays untouched
    _warm_device_runtime()
    _warm_dispatch_mode()


def _warm_dispatch_mode() -> None:
    """The first op under any `TorchDispatchMode` imports `torch._dynamo` (torch wraps the mode stack's
    helpers in `_disable_dynamo`): 1.5 s on a 2-core machine, paid by every sandbox's first trial under the op
    census unless the zygote pays it once here. On the host, with a mode of its own: the census is installed
    in the child."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Passthrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with _Passthrough():
        torch.empty_like(torch.ones(2)).fill_(1)


_NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"


def _warm_device_runtime() -> None:
    """What every standby would otherwise do on its own, each time: import `torch.utils.cpp_extension`
    (0.4-0.75 s on an H100 machine), hash Triton's sources into its version key, build or load Triton's CUDA
    utilities. Both libraries ask `torch.cuda.is_available()` on the way, which through the CUDA runtime
    initializes CUDA here and poisons every forked child ("Cannot re-initialize CUDA in forked subprocess",
    measured on an H100, while `torch.cuda.is_initialized()` stays False); asked through NVML it leaves CUDA
    alone. `_assert_children_can_use_cuda` checks the outcome."""
    previous = os.environ.get(_NVML_CHECK)
    os.environ[_NVML_CHECK] = "1"
    try:
        import torch.utils.cpp_extension  # noqa: F401

        try:
            from triton.compiler.compiler import triton_key
            from triton.runtime import driver

            triton_key()
            driver.active.utils  # noqa: B018 - creates the CUDA driver object (no device: raises, skipped)
        except Exception:  # noqa: BLE001 - no Triton or no GPU backend here: each child starts it itself
            pass
    finally:
        if previous is None:
            os.environ.pop(_NVML_CHECK, None)
        else:
            os.environ[_NVML_CHECK] = previous


def _assert_children_can_use_cuda() -> None:
    """Fork a probe: a child of a process that initialized CUDA is in torch's "bad fork" state."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    pid = os.fork()
    if pid == 0:
        os._exit(3 if torch.cuda._is_in_bad_fork() else 0)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("the zygote's imports initialized CUDA: its forked children could not use the GPU")


def _cuda_untouched() -> bool:
    torch = sys.modules.get("torch")
    return torch is None or not torch.cuda.is_initialized()


def _launcher(request: dict, fds: dict[str, int]) -> None:
    """Runs in the forked launcher; never returns."""
    code = 70
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(fds["log"], 1)
        os.dup2(fds["log"], 2)
        keep = {0, 1, 2, fds["proto"], fds["control"], fds["lifeline"]}
        for fd in sorted(int(x) for x in os.listdir("/proc/self/fd")):
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        if sys.path and sys.path[0] == _START_DIR:  # `-m` put the zygote's start directory first; the fresh
            sys.path[0] = request["cwd"]  # path's child has its own cwd (private HOME) there
        import tempfile

        tempfile.tempdir = None  # re-read TMPDIR (the zygote's value must not stick)
        libc = _libc()
        if libc.unshare(_CLONE_NEWPID | _CLONE_NEWNS) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID|CLONE_NEWNS) failed")
        if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:  # nothing propagates to the host
            raise OSError(ctypes.get_errno(), "making mounts private failed")
        init = os.fork()
        if init == 0:
            _namespace_init(request, fds)
        os.close(fds["proto"])
        os.close(fds["control"])
        os.close(1)
        os.close(2)
        code = _supervise(init, fds["lifeline"])
    except BaseException as exc:  # noqa: BLE001 - the launcher reports nothing else; its exit code says it
        try:
            os.write(2, f"kernelrl zygote launcher failed: {exc!r}\n".encode())
        except OSError:
            pass
    os._exit(code)


def _namespace_init(request: dict, fds: dict[str, int]) -> None:
    """PID 1 of the new namespace: private /proc, then the stub (which forks the real stub and reaps)."""
    code = 71
    try:
        from kernelrl.sandbox import isolation

        isolation.die_with_parent()  # --kill-child: the launcher's death ends the namespace
        os.close(fds["lifeline"])
        if _libc().mount(b"proc", b"/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None) != 0:
            raise OSError(ctypes.get_errno(), "mounting /proc failed")
        from kernelrl.sandbox import child

        sys.argv = [child.__file__, request["request_path"]]  # as in the fresh-process path
        child.run(child.read_request(request["request_path"]), fds["proto"], fds["control"])
    except BaseException as exc:  # noqa: BLE001
        try:
            os.write(2, f"kernelrl sandbox init failed: {exc!r}\n".encode())
        except OSError:
            pass
    os._exit(code)


def _supervise(init: int, lifeline: int) -> int:
    """Wait for the namespace's init; SIGKILL it when the verdict process closes the lifeline."""
    while True:
        pid, status = os.waitpid(init, os.WNOHANG)
        if pid == init:
            return os.waitstatus_to_exitcode(status) & 0xFF
        readable, _, _ = select.select([lifeline], [], [], 0.1)
        if readable:
            try:
                os.kill(init, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(init, 0)
            return 137


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def serve(sock: socket.socket) -> None:
    names = ("log", "proto", "control", "lifeline")
    while True:
        _reap()
        readable, _, _ = select.select([sock], [], [], 1.0)
        if not readable:
            continue
        try:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, len(names))
        except OSError:
            return
        if not data:
            return  # the verdict process closed its end
        try:
            request = json.loads(data)
            if request.get("op") != "ping" and len(fds) != len(names):
                raise ValueError(f"expected {len(names)} fds, got {len(fds)}")
            if request.get("op") == "ping":
                reply = {"ok": True, "pid": os.getpid(), "cuda_initialized": not _cuda_untouched()}
            elif not _cuda_untouched():  # a forked child could not initialize CUDA: never fork then
                reply = {"ok": False, "error": "the zygote initialized CUDA; restart it"}
                sock.sendall((json.dumps(reply) + "\n").encode())
                return
            else:
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    sock.close()
                    _launcher(request, dict(zip(names, fds, strict=True)))
                reply = {"ok": True, "pid": pid}
        except Exception as exc:  # noqa: BLE001 - a bad request gets an answer, the zygote lives on
            reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
        finally:
            for fd in fds:
                os.close(fd)
        sock.sendall((json.dumps(reply) + "\n").encode())


def main(argv: list[str]) -> None:
    sock = socket.socket(fileno=int(argv[1]))
    from kernelrl.sandbox import isolation

    isolation.die_with_parent()
    isolation.make_undumpable()
    try:
        _warm_imports()
        assert _cuda_untouched(), "importing torch initialized CUDA"
        _assert_children_can_use_cuda()
    except BaseException as exc:  # noqa: BLE001
        sock.sendall((json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n").encode())
        return
    sock.sendall((json.dumps({"ok": True, "pid": os.getpid()}) + "\n").encode())
    serve(sock)


if __name__ == "__main__":
    main(sys.argv)
