"""Engine processes that end with the trainer, however the trainer ends: a thread in each engine
process polls the trainer (pid and start time, from ``ES_LIGHTNING_TRAINER``) and SIGKILLs the
engine when it is gone."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

ENV = "ES_LIGHTNING_TRAINER"
"""``"<pid>:<start time>"`` of the process that owns the engines (start time: :func:`_start_time`)."""


def _start_time(pid: int) -> float | None:
    """When process ``pid`` started (``None`` if gone), in ticks since boot: no wall-clock steps."""
    if os.path.exists("/proc/self/stat"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()  # the name may hold spaces and ")"
            return float(fields[19])  # field 22, counted from the pid
        except (OSError, IndexError, ValueError):
            return None
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return None


def mark_trainer() -> None:
    """Record this process as the owner of the engines it creates from now on."""
    os.environ[ENV] = f"{os.getpid()}:{_start_time(os.getpid())!r}"


def owner() -> tuple[int, float] | None:
    """The ``(pid, start time)`` recorded by :func:`mark_trainer`, if any."""
    value = os.environ.get(ENV, "")
    pid, _, started = value.partition(":")
    try:
        return int(pid), float(started)
    except ValueError:
        return None


def owner_alive(pid: int, started: float) -> bool:
    """Whether the process ``pid`` that started at ``started`` still runs (not a zombie)."""
    import psutil

    try:
        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return False
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    now = _start_time(pid)
    return now is not None and abs(now - started) < 1e-3


def _kill_engine_tree(trainer_pid: int) -> None:
    """SIGKILL the ``VLLM::`` ancestors of this process below the trainer, its children, itself."""
    import psutil

    me = psutil.Process()
    victims = []
    for parent in me.parents():
        if parent.pid in (trainer_pid, 1) or not parent.name().startswith("VLLM"):
            break
        victims.append(parent)
    victims += me.children(recursive=True)
    for process in victims:
        with contextlib.suppress(psutil.Error):
            process.kill()
    os.kill(os.getpid(), signal.SIGKILL)


def start_lifeline(poll_s: float = 0.5) -> threading.Thread | None:
    """Start the watching thread in an engine process (see the module docstring); idempotent."""
    recorded = owner()
    if recorded is None or recorded[0] == os.getpid():
        return None
    for thread in threading.enumerate():
        if thread.name == "es-lightning-lifeline":
            return thread
    pid, started = recorded

    def watch() -> None:
        while owner_alive(pid, started):
            time.sleep(poll_s)
        print(
            f"es-lightning lifeline: trainer {pid} (started {started!r}) is gone; "
            f"engine process {os.getpid()} ends its engine",
            file=sys.stderr,
            flush=True,
        )
        _kill_engine_tree(pid)

    thread = threading.Thread(target=watch, name="es-lightning-lifeline", daemon=True)
    thread.start()
    return thread
