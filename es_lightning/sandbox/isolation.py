"""Starting, containing and ending one sandboxed child (:mod:`es_lightning.sandbox.child`).

``bwrap`` (the default, :func:`bwrap_argv`): no network, own namespaces, read-only system libraries
and base interpreter only, a private ``/tmp``, uid/gid 65534 without capabilities, every process
killed at the end through a pidfd. ``process`` is a plain child: **not a security boundary**.
Both set the rlimits.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

SANDBOX_UID = SANDBOX_GID = 65534
CHILD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
_INSIDE_SCRIPT = "/es_sandbox_child.py"
_TAIL_CHARS = 2000


@dataclass(frozen=True)
class Limits:
    time_limit_s: float
    memory_bytes: int
    output_bytes: int
    max_processes: int
    scratch_bytes: int

    def rlimits(self) -> dict[str, int]:
        cpu = int(self.time_limit_s) + 1
        return {"memory": self.memory_bytes, "cpu": cpu, "fsize": self.output_bytes, "core": 0,
                "nproc": self.max_processes}  # fmt: skip


@dataclass(frozen=True)
class Backend:
    """A working bubblewrap set-up: its executable and how the user namespace is mapped."""

    bwrap: str
    mapped: bool
    """The parent writes the id maps (root parent): the sandbox runs as host uid 65534."""


@dataclass(frozen=True)
class ChildRun:
    timed_out: bool
    report: bytes
    stdout: str
    stderr: str


def interpreter() -> tuple[str, str]:
    """The real base interpreter (not a virtualenv's link to it) and its prefix."""
    exe = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    return exe, os.path.realpath(sys.base_prefix)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _ancestors(path: str) -> list[str]:
    """``/a/b/c`` -> ``["/a", "/a/b"]``."""
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _inside_env(home: str) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8"}
    return env | {n: "1" for n in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def bwrap_argv(backend: Backend, info_fd: int, block_fd: int, limits: Limits) -> list[str]:
    """The bubblewrap command line (the module docstring explains each part)."""
    exe, prefix = interpreter()
    argv = [backend.bwrap, "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session",
            "--hostname", "sandbox", "--cap-drop", "ALL", "--info-fd", str(info_fd)]  # fmt: skip
    if backend.mapped:
        argv += ["--userns-block-fd", str(block_fd), "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--disable-userns"]
    argv += ["--ro-bind", "/usr", "/usr"]
    for path in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    argv += ["--perms", "0755", "--dir", "/etc", "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    for path in (prefix, *([] if _under(exe, prefix) else [os.path.dirname(exe)])):
        if not _under(path, "/usr"):  # its parents readable by all (bwrap makes them 0700)
            argv += [a for p in _ancestors(path) for a in ("--perms", "0755", "--dir", p)]
            argv += ["--ro-bind", path, path]
    site = sysconfig.get_path("purelib", vars={"base": prefix, "platbase": prefix})
    if site and _under(site, prefix) and os.path.isdir(site):  # hide installed packages
        argv += ["--perms", "0555", "--size", "4096", "--tmpfs", site]
    argv += ["--ro-bind", CHILD_SCRIPT, _INSIDE_SCRIPT, "--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(limits.scratch_bytes), "--tmpfs", "/tmp",
             "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/tmp", "--clearenv"]  # fmt: skip
    for name, value in _inside_env("/tmp").items():
        argv += ["--setenv", name, value]
    return [*argv, "--", exe, "-I", "-S", "-B", _INSIDE_SCRIPT]


def run_child(job: dict[str, Any], limits: Limits, backend: Backend | None) -> ChildRun:
    """Run one child on ``job`` under ``backend`` (``None``: process isolation) within the limits."""
    with tempfile.TemporaryDirectory(prefix="es_sandbox_io_", ignore_cleanup_errors=True) as io_dir:
        paths = {name: os.path.join(io_dir, name) for name in ("job", "out", "err", "report")}
        fds = {name: os.open(paths[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
               for name in ("out", "err", "report")}  # fmt: skip
        try:
            job = {**job, "report_fd": fds["report"], "limits": limits.rlimits()}
            if backend is not None:
                job |= {"uid": SANDBOX_UID, "gid": SANDBOX_GID}
            with open(paths["job"], "w", encoding="utf-8") as f:
                json.dump(job, f)
            fds["job"] = os.open(paths["job"], os.O_RDONLY)
            if backend is None:
                timed_out = _run_process(fds, limits)
            else:
                timed_out, note = _run_bwrap(backend, fds, limits)
                if note:
                    os.write(fds["err"], f"\nsandbox: {note}\n".encode())
        finally:
            for fd in fds.values():
                os.close(fd)
        with open(paths["report"], "rb") as f:
            report = f.read(limits.output_bytes + 1)
        return ChildRun(timed_out, report, _tail(paths["out"]), _tail(paths["err"]))


def _run_process(fds: dict[str, int], limits: Limits) -> bool:
    with tempfile.TemporaryDirectory(prefix="es_sandbox_", ignore_cleanup_errors=True) as workdir:
        proc = subprocess.Popen(
            [interpreter()[0], "-I", "-S", "-B", CHILD_SCRIPT],
            cwd=workdir, env=_inside_env(workdir), stdin=fds["job"], stdout=fds["out"], stderr=fds["err"],
            pass_fds=(fds["report"],), start_new_session=True,
        )  # fmt: skip
        exited = _wait(proc, time.monotonic() + limits.time_limit_s)
        _kill_group(proc)
        return not exited


def _run_bwrap(backend: Backend, fds: dict[str, int], limits: Limits) -> tuple[bool, str]:
    """Run bwrap; returns (timed out, a note on a set-up failure)."""
    deadline = time.monotonic() + limits.time_limit_s
    info_r, info_w = os.pipe()
    block_r, block_w = os.pipe()
    init_fd, note = -1, ""
    try:
        proc = subprocess.Popen(
            bwrap_argv(backend, info_w, block_r, limits),
            cwd="/", env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, stdin=fds["job"],
            stdout=fds["out"], stderr=fds["err"], pass_fds=(fds["report"], info_w, block_r),
            start_new_session=True,
        )  # fmt: skip
        os.close(info_w)
        os.close(block_r)
        info_w = block_r = -1
        init_pid = 0
        try:
            init_pid = int(_read_info(info_r, deadline)["child-pid"])
            init_fd = _pidfd(init_pid)
            if backend.mapped:  # bwrap waits on block_r for these maps
                for name, inside in (("uid_map", SANDBOX_UID), ("gid_map", SANDBOX_GID)):
                    with open(f"/proc/{init_pid}/{name}", "w", encoding="ascii") as f:
                        f.write(f"0 0 1\n{inside} {inside} 1\n")
                os.write(block_w, b"1")
            exited = _wait(proc, deadline)
        except (OSError, KeyError, TypeError, ValueError) as error:
            exited, note = False, f"bwrap set-up failed: {error}"
        # Kill the sandbox's pid 1, and with it every process in its pid namespace: on timeout, and
        # also after a normal exit, as bwrap may exit before its pid 1 has finished tearing down.
        if init_fd >= 0:
            with suppress(ProcessLookupError):
                signal.pidfd_send_signal(init_fd, signal.SIGKILL)
            select.select([init_fd], [], [], 5.0)  # readable once it (so the namespace) is gone
        elif not exited and init_pid > 0 and not _exited(proc):  # bwrap has not reaped it: still its pid
            with suppress(ProcessLookupError):
                os.kill(init_pid, signal.SIGKILL)
        if not exited:
            _wait(proc, time.monotonic() + 5.0)
        _kill_group(proc)
        return not exited and not note, note
    finally:
        for fd in (info_r, info_w, block_r, block_w, init_fd):
            if fd >= 0:
                os.close(fd)


def _pidfd(pid: int) -> int:
    """A pidfd of ``pid`` (-1 where pidfds are unavailable or it has gone)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


def _read_info(fd: int, deadline: float) -> dict[str, Any]:
    """bwrap's ``--info-fd`` JSON (it holds the sandbox's pid-1 host pid)."""
    data = b""
    while time.monotonic() < deadline:
        if not select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        try:
            return json.loads(data)
        except ValueError:
            continue
    raise ValueError("bwrap did not report its sandbox in time")


def _wait(proc: subprocess.Popen, deadline: float) -> bool:
    """Wait until ``proc`` exits (without reaping it) or ``deadline``; whether it exited."""
    pidfd = _pidfd(proc.pid)
    if pidfd < 0:  # no pidfds: poll
        while time.monotonic() < deadline:
            if _exited(proc):
                return True
            time.sleep(0.005)
        return False
    try:
        return bool(select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))[0])
    finally:
        os.close(pidfd)


def _exited(proc: subprocess.Popen) -> bool:
    return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _kill_group(proc: subprocess.Popen) -> None:
    """``SIGKILL`` ``proc``'s process group (its own session), then reap it."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - _TAIL_CHARS))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
