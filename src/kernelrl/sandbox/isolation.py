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


def mapped_bytes() -> int:
    """This process's address space now (/proc/self/statm), 0 where unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")  # as group_rss_bytes counts pages
    except (OSError, ValueError, IndexError):
        return 0


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
    (each bind-mounted onto itself first). Needs CAP_SYS_ADMIN in a private mount namespace (the PID-namespace
    wrapper gives one); returns False, changing nothing further, when that is not available. /proc, /sys and
    /dev stay as they are (device nodes are writable on read-only mounts anyway)."""
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


def hide_files(paths: list[str]) -> bool:
    """Bind /dev/null over each existing file of `paths`, so this process's mount namespace reads them empty.
    Only after `readonly_filesystem` made every mount private (a bind would otherwise reach the host's
    namespace); needs CAP_SYS_ADMIN. True when every existing one now reads empty."""
    libc = _libc()
    ms_bind = 4096
    for path in paths:
        real = os.path.realpath(path)
        if not os.path.isfile(real):
            continue
        if libc.mount(b"/dev/null", real.encode(), None, ms_bind, None) != 0:
            return False
        try:
            with open(real, "rb") as f:
                if f.read(1):
                    return False
        except OSError:  # unreadable is hidden too (a nodev /dev)
            pass
    return True


def _closed_to(uid: int, directory: str) -> bool:
    """Whether `uid` (its group the same number, no others) may not pass through `directory`."""
    st = os.stat(directory)
    if st.st_uid == uid:
        return not st.st_mode & 0o100
    return not st.st_mode & (0o010 if st.st_gid == uid else 0o001)


def expose_to(uid: int, roots: list[str], writable: list[str]) -> bool:
    """Make `roots` (the interpreter's import roots) and the `writable` directories reachable for `uid` where
    a directory above them is closed to it (Python under /root/.pyenv with /root 0700): in this mount
    namespace a tmpfs (0755, then read-only) covers each such directory and the needed subtrees are bound back
    at their own paths, read-only except the writable ones; nothing else under the covered directory stays in
    view. After `readonly_filesystem` and `hide_files` (private mounts; bound back with their submounts);
    needs CAP_SYS_ADMIN. Raises OSError once a directory is covered and its subtrees cannot be bound back."""
    if os.geteuid() != 0 or uid <= 0:  # `switch_user` could not follow
        return False
    libc = _libc()
    ms_rdonly, ms_remount, ms_bind, ms_rec = 1, 32, 4096, 16384
    wanted = {os.path.realpath(p): p in writable for p in [*roots, *writable] if os.path.exists(p)}
    wanted = {p if os.path.isdir(p) else os.path.dirname(p): w for p, w in wanted.items()}
    handed = [os.path.realpath(p) for p in writable]  # `switch_user` gives these (and all under them) to uid

    def closed(directory: str) -> bool:
        return (not any(directory == h or directory.startswith(h + "/") for h in handed)
                and _closed_to(uid, directory))

    covers: dict[str, list[str]] = {}
    for path in sorted(wanted):
        parts = path.split("/")
        top = next((d for d in ("/".join(parts[:i]) for i in range(2, len(parts))) if closed(d)), None)
        if top is not None:
            covers.setdefault(top, []).append(path)
    for top, paths in covers.items():
        # read-only roots inside another root come with it; writable ones are bound on top of it
        keep = [p for p in paths
                if wanted[p] or not any(p.startswith(q + "/") and not wanted[q] for q in paths)]
        # the subtrees, before they are covered
        held = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in keep}
        umask = os.umask(0o022)  # the directories made on the tmpfs: 0755 on the way down
        try:
            if libc.mount(b"tmpfs", top.encode(), b"tmpfs", 0, b"mode=0755") != 0:
                return False
            for path in sorted(keep, key=len):
                os.makedirs(path, mode=0o755, exist_ok=True)
                target = path.encode()
                if libc.mount(f"/proc/self/fd/{held[path]}".encode(), target, None,
                              ms_bind | ms_rec, None) != 0:
                    raise OSError(ctypes.get_errno(), f"could not bind {path} back over the tmpfs on {top}")
                if not wanted[path]:
                    libc.mount(None, target, None, ms_remount | ms_bind | ms_rdonly, None)
            libc.mount(None, top.encode(), None, ms_remount | ms_rdonly, None)
        finally:
            os.umask(umask)
            for fd in held.values():
                os.close(fd)
    return True


def switch_user(uid: int, writable: list[str]) -> bool:
    """Go on as `uid` (its group the same number, no supplementary groups), after handing it the `writable`
    directories (the evaluation's own and its compile caches): files only root may read (0600 keys, the
    evaluator's caches) are then closed to the candidate wherever the mount namespace still shows them, and
    root's processes unsignalable. Needs CAP_SETUID, CAP_SETGID and CAP_CHOWN, so it comes before
    `drop_capabilities`; False where the switch did not happen."""
    if os.geteuid() != 0 or uid <= 0:
        return False
    try:
        for top in writable:
            os.lchown(top, uid, uid)
            for root, dirs, files in os.walk(top):
                for name in dirs + files:
                    os.lchown(os.path.join(root, name), uid, uid)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    except OSError:
        return False
    return os.getuid() == os.geteuid() == uid


def drop_capabilities() -> bool:
    """Empty this process's capability sets (a no-op for non-root). Root without CAP_SYS_PTRACE cannot read
    an undumpable process's memory, and without CAP_KILL cannot signal other users' processes."""
    libc = _libc()
    for cap in range(64):  # the bounding set first, so no execve can bring capabilities back
        # PR_CAPBSET_DROP; EINVAL: no such cap
        if libc.prctl(24, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:
            break

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

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


# syscalls a candidate has no use for and that widen what it can reach: other processes' memory, new
# namespaces (a user namespace brings back every capability inside it), mounts, kernel modules and keys, eBPF,
# perf counters, io_uring and userfaultfd (large kernel attack surfaces). Numbers per architecture
# (asm/unistd_64.h, asm-generic/unistd.h); the kernel's io_uring and mount-API calls share their numbers.
_DENIED_SYSCALLS = {
    "x86_64": (0xC000003E, {"ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "unshare": 272,
                            "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
                            "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250,
                            "add_key": 248, "request_key": 249, "kexec_load": 246, "kexec_file_load": 320,
                            "init_module": 175, "finit_module": 313, "delete_module": 176,
                            "open_by_handle_at": 304, "name_to_handle_at": 303}, 56),
    "aarch64": (0xC00000B7, {"ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "unshare": 97,
                             "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
                             "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "keyctl": 219,
                             "add_key": 217, "request_key": 218, "kexec_load": 104, "kexec_file_load": 294,
                             "init_module": 105, "finit_module": 273, "delete_module": 106,
                             "open_by_handle_at": 265, "name_to_handle_at": 264}, 220),
}
_SHARED_DENIED = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
                  "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "mount_setattr": 442}
_CLONE3 = 435  # its flags sit behind a pointer the filter cannot read: ENOSYS, and libc falls back to clone
_CLONE_NAMESPACES = 0x7E020080  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME
_EPERM, _ENOSYS = 1, 38


def denied_syscalls() -> list[str]:
    """The syscalls `seccomp_filter` refuses on this machine's architecture (plus clone into new
    namespaces)."""
    table = _DENIED_SYSCALLS.get(os.uname().machine)
    return sorted([*table[1], *_SHARED_DENIED, "clone3"]) if table else []


def seccomp_filter() -> bool:
    """Install a seccomp filter on this process and everything it starts: the syscalls of `denied_syscalls`,
    clone into a new namespace and the other architectures' ABIs (x32 included) fail with EPERM; the rest is
    allowed. Needs no_new_privs. After CUDA start-up (a filter before it broke CUDA's, docs/design.md); the
    Triton and CUDA-extension compilers it starts only fork and exec. False where it cannot be installed."""
    table = _DENIED_SYSCALLS.get(os.uname().machine)
    if table is None:
        return False
    arch, numbers, clone = table
    ld, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06  # BPF_LD|W|ABS, JMP|JEQ/JGE/JSET|K, RET|K
    allow, deny, nosys = 0x7FFF0000, 0x00050000 | _EPERM, 0x00050000 | _ENOSYS  # SECCOMP_RET_ALLOW / ERRNO
    denied = sorted({*numbers.values(), *_SHARED_DENIED.values()})
    prog = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, deny),  # seccomp_data.arch: only the native ABI
            (ld, 0, 0, 0), (jge, 0, 1, 0x40000000), (ret, 0, 0, deny),  # .nr; x32 calls have bit 30 set
            (jeq, 0, 1, _CLONE3), (ret, 0, 0, nosys)]
    for nr in denied:  # a hit falls through onto its RET; a miss skips it
        prog += [(jeq, 0, 1, nr), (ret, 0, 0, deny)]
    # clone: denied when its flags (args[0], low word) ask for a new namespace
    prog += [(jeq, 0, 3, clone), (ld, 0, 0, 16), (jset, 0, 1, _CLONE_NAMESPACES), (ret, 0, 0, deny),
             (ret, 0, 0, allow)]

    class Instruction(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Instruction))]

    instructions = (Instruction * len(prog))(*[Instruction(*i) for i in prog])
    program = Program(len(prog), instructions)
    return _libc().prctl(22, 2, ctypes.byref(program), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
