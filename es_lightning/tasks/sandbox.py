"""Run untrusted Python (model-written code plus its tests) in a separate, limited process.

Model code never runs in the calling process. Each run gets:

* a **child process** ``python -I -B <this file>`` (isolated mode: no ``PYTHON*`` variables, no
  user site-packages, no script directory on ``sys.path``; no ``.pyc`` writes) in its own session,
  with stdin closed and a minimal environment (``PATH``, ``HOME``/``TMPDIR`` = the work directory,
  ``LANG``, one BLAS/OpenMP thread);
* a **fresh temporary work directory** as cwd, deleted afterwards;
* a **wall-clock limit**: past ``time_limit_s`` the whole process group gets ``SIGKILL``; the child
  also sets ``RLIMIT_CPU`` to the limit;
* a **memory limit**: ``RLIMIT_AS`` of ``memory_mb`` (soft = hard, so it cannot be raised), plus
  ``RLIMIT_FSIZE`` of ``max_output_kb`` per written file (stdout/stderr included) and no core dumps;
* **no network** when ``unshare -rn`` (or ``unshare -n`` as root) works here: the child runs in an
  empty network namespace (probed once per process; otherwise a warning and no isolation);
* a best-effort **Python-level guard** (an audit hook, :func:`sys.addaudithook`): file writes,
  removals, renames and ``mkdir``/``chmod`` outside the work directory, sockets, subprocesses,
  ``fork``/``exec``/``kill``, and ``ctypes`` symbol look-ups and raw-address access raise
  ``PermissionError``. It stops careless code, not a determined attacker (``os.open(name, flags,
  dir_fd=...)`` and ``ctypes.memmove`` are not checked, for two); reading files outside the work
  directory stays allowed (imports need it), and so does importing ``ctypes`` (numpy needs it).

The child runs the code, then the setup code, then each test statement, in one namespace, and
reports ``<nonce> <passed> <total>`` into a report file. The nonce is random per run and deleted
from disk before model code starts, so code that exits early (``sys.exit(0)``, ``os._exit(0)``)
passes nothing. (Code that digs the nonce out of the runner's frame could forge a pass.)

This module is also the child's entry point, so its top-level imports are standard-library ones the
child needs; the parent-only modules are imported inside the parent functions to keep the
child's start-up fast.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import Any

_JOB = "job.json"
_REPORT = "report.txt"
_TAIL_CHARS = 2000


@dataclass(frozen=True)
class SandboxResult:
    """Outcome of one sandboxed run."""

    passed: int
    """Test statements that ran without raising."""
    total: int
    """Test statements given."""
    timed_out: bool = False
    """The wall-clock limit killed the run."""
    stdout: str = ""
    """The last characters of the run's stdout."""
    stderr: str = ""
    """The last characters of the run's stderr (tracebacks of failing code and tests)."""

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total


@dataclass(frozen=True)
class Sandbox:
    """Limits of a sandboxed run (the module docstring says what each enforces).

    Args:
        time_limit_s: wall-clock seconds per run, interpreter start-up included.
        memory_mb: address-space limit of the child, in MiB.
        max_output_kb: largest file (stdout and stderr included) the child may write, in KiB.
        isolate_network: run in an empty network namespace when ``unshare`` allows it.
        guard: install the Python-level audit-hook guard.
    """

    time_limit_s: float = 5.0
    memory_mb: int = 1024
    max_output_kb: int = 1024
    isolate_network: bool = True
    guard: bool = True

    def __post_init__(self) -> None:
        for name in ("time_limit_s", "memory_mb", "max_output_kb"):
            if getattr(self, name) <= 0:
                raise ValueError(f"Sandbox: {name} must be positive, got {getattr(self, name)}")

    def run(self, code: str, tests: list[str], setup: str = "") -> SandboxResult:
        """Run ``code``, then ``setup``, then each test statement in one fresh child process."""
        import secrets
        import subprocess
        import tempfile

        tests = [str(t) for t in tests]
        nonce = secrets.token_hex(16)
        with tempfile.TemporaryDirectory(prefix="es_sandbox_", ignore_cleanup_errors=True) as workdir:
            limits = {
                "memory": self.memory_mb * 2**20,
                "cpu": int(self.time_limit_s) + 1,
                "fsize": self.max_output_kb * 2**10,
                "guard": self.guard,
            }
            job = {"code": code, "setup": setup, "tests": tests, "nonce": nonce, **limits}
            with open(os.path.join(workdir, _JOB), "w", encoding="utf-8") as f:
                json.dump(job, f)
            prefix = network_isolation_prefix() if self.isolate_network else []
            env = {"PATH": "/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "LANG": "C.UTF-8"}
            env |= {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
            out_path, err_path = os.path.join(workdir, "stdout.txt"), os.path.join(workdir, "stderr.txt")
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                proc = subprocess.Popen(
                    [*prefix, sys.executable, "-I", "-B", os.path.abspath(__file__)],
                    cwd=workdir,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
                timed_out = not _wait_then_kill_group(proc, self.time_limit_s)
            passed = _read_report(os.path.join(workdir, _REPORT), nonce, len(tests))
            return SandboxResult(
                passed=0 if timed_out else passed,
                total=len(tests),
                timed_out=timed_out,
                stdout=_tail(out_path),
                stderr=_tail(err_path),
            )

    def run_many(self, jobs: list[tuple[str, list[str], str]], max_workers: int = 4) -> list[SandboxResult]:
        """:meth:`run` over ``(code, tests, setup)`` jobs, at most ``max_workers`` at a time."""
        from concurrent.futures import ThreadPoolExecutor

        if max_workers < 1:
            raise ValueError(f"Sandbox: max_workers must be at least 1, got {max_workers}")
        with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="sandbox") as pool:
            return list(pool.map(lambda job: self.run(*job), jobs))


# -- parent side ------------------------------------------------------------------------------
_PREFIX: list[list[str]] = []
"""Cache of :func:`network_isolation_prefix` (empty until probed)."""
_PROBE_LOCK = threading.Lock()


def network_isolation_prefix() -> list[str]:
    """The command prefix that runs a program without network (``[]`` when none works here).

    Tries ``unshare -rn`` (an unprivileged user + network namespace), then ``unshare -n`` (needs
    root); the first that runs Python successfully is cached for the life of the process.
    """
    import shutil
    import subprocess
    import warnings

    with _PROBE_LOCK:
        if _PREFIX:
            return _PREFIX[0]
        found: list[str] = []
        if shutil.which("unshare"):
            for candidate in (["unshare", "-rn"], ["unshare", "-n"]):
                try:
                    probe = subprocess.run(
                        [*candidate, sys.executable, "-I", "-c", "pass"], capture_output=True, timeout=30
                    )
                except (OSError, subprocess.TimeoutExpired):
                    continue
                if probe.returncode == 0:
                    found = candidate
                    break
        if not found:
            warnings.warn(
                "Sandbox: `unshare -rn` is unavailable here, so sandboxed code keeps network access",
                RuntimeWarning,
                stacklevel=3,
            )
        _PREFIX.append(found)
        return found


def _wait_then_kill_group(proc: Any, time_limit_s: float) -> bool:
    """Wait up to ``time_limit_s`` for ``proc`` to exit, then ``SIGKILL`` its process group.

    The child is observed with ``waitid(WNOWAIT)`` and reaped only after the kill, so its process
    group id cannot have been reused by then. Returns whether it exited within the limit.
    """
    import subprocess
    import time

    if not hasattr(os, "waitid"):  # macOS before Python 3.13: reap first, then kill leftovers
        try:
            proc.wait(timeout=time_limit_s)
            exited = True
        except subprocess.TimeoutExpired:
            exited = False
        _kill_group(proc.pid)
        proc.wait()
        return exited
    deadline = time.monotonic() + time_limit_s
    delay = 0.001
    exited = False
    while time.monotonic() < deadline:
        if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            exited = True
            break
        time.sleep(delay)
        delay = min(2 * delay, 0.02)
    _kill_group(proc.pid)
    proc.wait()
    return exited


def _kill_group(pgid: int) -> None:
    import signal

    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _read_report(path: str, nonce: str, total: int) -> int:
    """Passed tests from the child's report: its last line that starts with ``nonce``, else 0."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read(_TAIL_CHARS * 10).splitlines()
    except OSError:
        return 0
    for line in reversed(lines):
        parts = line.split()
        if len(parts) == 3 and parts[0] == nonce and parts[2] == str(total) and parts[1].isdigit():
            return min(int(parts[1]), total)
    return 0


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - _TAIL_CHARS))
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


# -- child side -------------------------------------------------------------------------------
_PROCESS_EVENTS = (
    "subprocess.Popen os.system os.exec os.posix_spawn os.spawn os.fork os.forkpty os.kill os.killpg "
    "signal.pthread_kill socket.__new__ socket.connect socket.bind socket.sendto socket.sendmsg "
    "socket.getaddrinfo ctypes.dlsym ctypes.cdata ctypes.call_function"
).split()
_PATH_EVENTS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    # event: (positions of paths it changes, positions of dir_fd arguments)
    "os.remove": ((0,), (1,)),
    "os.rmdir": ((0,), (1,)),
    "os.mkdir": ((0,), (2,)),
    "os.rename": ((0, 1), (2, 3)),
    "os.link": ((0, 1), (2, 3)),
    "os.symlink": ((1,), (2,)),
    "os.chmod": ((0,), (2,)),
    "os.chown": ((0,), (3,)),
    "os.utime": ((0,), (3,)),
    "os.truncate": ((0,), ()),
    "shutil.rmtree": ((0,), (1,)),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _guard(root: str) -> Any:
    """The audit hook of the Python-level guard, confining changes to the directory ``root``."""
    root = os.path.realpath(root)

    def inside(path: Any) -> bool:
        if isinstance(path, int):  # an already open file descriptor
            return True
        resolved = os.path.realpath(os.fsdecode(path))
        return resolved in (root, os.devnull) or resolved.startswith(root + os.sep)

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = args
            writes = (flags or 0) & _WRITE_FLAGS or any(c in (mode or "") for c in "wax+")
            if writes and not inside(path):
                raise PermissionError(f"sandbox: writing {path!r} outside the work directory is blocked")
        elif event in _PATH_EVENTS:
            paths, dir_fds = _PATH_EVENTS[event]
            if any(i < len(args) and args[i] not in (None, -1) for i in dir_fds):
                raise PermissionError(f"sandbox: {event} with dir_fd is blocked")
            if not all(inside(args[i]) for i in paths if i < len(args)):
                raise PermissionError(f"sandbox: {event} outside the work directory is blocked")
        elif event in _PROCESS_EVENTS:
            raise PermissionError(f"sandbox: {event} is blocked")

    return hook


def _child_main() -> None:
    """Entry point of the child: apply the limits, run the job, write the report, exit."""
    with open(_JOB, encoding="utf-8") as f:
        job = json.load(f)
    os.unlink(_JOB)
    nonce, tests = job.pop("nonce"), job["tests"]
    for limit, value in (
        (resource.RLIMIT_AS, job["memory"]),
        (resource.RLIMIT_CPU, job["cpu"]),
        (resource.RLIMIT_FSIZE, job["fsize"]),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))
    report = os.open(_REPORT, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    if job["guard"]:
        sys.addaudithook(_guard(os.getcwd()))
    namespace: dict[str, Any] = {"__name__": "solution"}  # skips the code's `if __name__ == "__main__":` demo
    passed = 0
    try:
        exec(compile(job["code"], "<solution>", "exec"), namespace)
        exec(compile(job["setup"], "<setup>", "exec"), namespace)
    except BaseException:  # noqa: B036 - SystemExit and friends in model code are failures too
        traceback.print_exc()
    else:
        for i, test in enumerate(tests):
            try:
                exec(compile(test, f"<test {i}>", "exec"), namespace)
                passed += 1
            except BaseException:  # noqa: B036
                traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: B036 - model code may have replaced or closed the streams
            pass
    os.write(report, f"\n{nonce} {passed} {len(tests)}\n".encode())
    os._exit(0)


if __name__ == "__main__":
    _child_main()
