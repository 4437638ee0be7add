"""OS-level confinement the sandbox stub applies to its own process (stdlib only: runs before torch loads)."""

from __future__ import annotations

import ctypes
import os
import resource
import signal

_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NO_NEW_PRIVS = 38


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, value: int) -> bool:
    return _libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0


def die_with_parent() -> bool:
    """SIGKILL this process when the process that started it dies."""
    return _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def make_undumpable() -> bool:
    """Same-uid processes can no longer ptrace this one or read /proc/PID/mem (keeps references private)."""
    return _prctl(_PR_SET_DUMPABLE, 0)


def no_new_privs() -> bool:
    return _prctl(_PR_SET_NO_NEW_PRIVS, 1)


def isolate_network() -> str | None:
    """Move into an empty network namespace (only loopback, down). Must run while single-threaded.

    Returns how it was done, or None when the kernel or container refuses both ways.
    """
    libc = _libc()
    if libc.unshare(_CLONE_NEWNET) == 0:
        return "netns"
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0:
        try:  # keep our own uid inside the new user namespace
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            with open("/proc/self/uid_map", "w") as f:
                f.write(f"{uid} {uid} 1")
            with open("/proc/self/gid_map", "w") as f:
                f.write(f"{gid} {gid} 1")
        except OSError:
            pass
        return "userns+netns"
    return None


def set_limit(which: int, value: int) -> bool:
    try:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY and value > hard:
            value = hard
        resource.setrlimit(which, (value, value if hard == resource.RLIM_INFINITY else hard))
        return True
    except (ValueError, OSError):
        return False


def rss_bytes(pid: int) -> int:
    """Resident memory of a process (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0
