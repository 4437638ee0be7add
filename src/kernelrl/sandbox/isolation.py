"""OS-level confinement the sandbox stub applies to its own process (stdlib only: runs before torch loads)."""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import subprocess

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


def readonly_filesystem(writable: list[str]) -> bool:
    """Make every mount read-only for this process's mount namespace except the `writable` directories
    (each bind-mounted onto itself first). Needs CAP_SYS_ADMIN in a private mount namespace (the PID-namespace wrapper gives one);
    returns False, changing nothing further, when that is not available. /proc, /sys and /dev stay as they are
    (device nodes are writable on read-only mounts anyway)."""
    libc = _libc()
    ms_rdonly, ms_remount, ms_bind, ms_rec, ms_private = 1, 32, 4096, 16384, 1 << 18
    if libc.mount(None, b"/", None, ms_rec | ms_private, None) != 0:  # never propagate to the host
        return False
    for directory in writable:
        target = directory.encode()
        if libc.mount(target, target, None, ms_bind | ms_rec, None) != 0:
            return False
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for point in points:
        if point in writable or point.startswith(("/proc", "/sys", "/dev")) and point != "/dev/shm":
            continue
        path = point.encode()
        flags = ms_remount | ms_bind | ms_rdonly
        if libc.mount(None, path, None, flags, None) != 0:
            # keep the flags a mount already has (nosuid, nodev, ...) or the kernel refuses with EPERM
            st = os.statvfs(point)
            libc.mount(None, path, None, flags | (st.f_flag & 0x0E), None)  # ST_NOSUID|ST_NODEV|ST_NOEXEC
    return True


def drop_capabilities() -> bool:
    """Empty this process's capability sets (a no-op for non-root). Root without CAP_SYS_PTRACE cannot read
    an undumpable process's memory, and without CAP_KILL cannot signal other users' processes."""
    libc = _libc()
    for cap in range(64):  # the bounding set first, so no execve can bring capabilities back
        if libc.prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:  # PR_CAPBSET_DROP; EINVAL: no such cap
            break

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (Data * 2)()
    return libc.capset(ctypes.byref(header), data) == 0


def pid_namespace_prefix() -> list[str]:
    """A command prefix that starts the sandbox as PID 1 of a new PID namespace with its own /proc, so the
    candidate can neither see nor signal the verdict and judge processes. Empty when not permitted here."""
    tool = shutil.which("unshare")
    if tool is None:
        return []
    prefix = [tool, "--pid", "--fork", "--mount-proc", "--kill-child"]
    try:
        probe = subprocess.run([*prefix, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return prefix if probe.returncode == 0 else []


def group_rss_bytes(pgid: int) -> int:
    """Resident memory of every process in a process group (so forking does not dodge the limit)."""
    total, page = 0, os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:  # fields after the command name: state, ppid, pgrp, ...
                total += int(fields[21]) * page  # rss in pages
        except (OSError, IndexError, ValueError):
            continue
    return total
