"""A verifier's time limit that holds on any thread: the check runs in a worker process that is
killed at its deadline (``signal.alarm`` works only on the main thread, and no signal interrupts
sympy expanding ``\\boxed{9^{9^{9}}}``). One worker per calling thread; an exception is re-raised.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

T = TypeVar("T")
STARTUP_S = 600.0
"""Seconds a worker may take to start and load a function (imports, on a loaded machine)."""
_local = threading.local()


def serve_fd(fd: int) -> None:
    """A worker's entry point (``python -c``): serve the ``load`` and ``call`` messages that arrive
    on the socket ``fd``, each answered ``(ok, result or error)``."""
    conn = Connection(fd)
    while True:
        try:
            kind, function, args = conn.recv()
        except (EOFError, OSError):  # the parent has gone
            return
        try:
            result = function(*args) if args is not None else None
            conn.send((True, result))
        except Exception as error:  # the caller re-raises it
            conn.send((False, error))


def _start() -> tuple[subprocess.Popen, Connection]:
    """A worker process: a fresh interpreter (not ``__main__`` again), this import path, one socket."""
    parent, child = socket.socketpair()
    code = f"from es_lightning.tasks.bounded import serve_fd; serve_fd({child.fileno()})"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with child:
        process = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=(child.fileno(),), env=env, stdin=subprocess.DEVNULL
        )
    return process, Connection(parent.detach())


def _worker(function: Callable[..., Any], warm: tuple[Any, ...] | None) -> Connection:
    """This thread's worker, started (and ``function`` loaded, warmed on ``warm``) if need be."""
    worker = getattr(_local, "worker", None)
    if worker is None or worker[0].poll() is not None:
        worker = _local.worker = (*_start(), set())
    process, conn, loaded = worker
    key = f"{function.__module__}.{function.__qualname__}"
    if key not in loaded:
        conn.send(("load", function, warm))
        _answer(conn, STARTUP_S, "start")
        loaded.add(key)
    return conn


def _answer(conn: Connection, seconds: float, what: str) -> Any:
    if not conn.poll(seconds):
        stop_worker()
        raise TimeoutError(f"the verifier's worker process did not {what} within {seconds} s")
    ok, value = conn.recv()
    if not ok:
        raise value
    return value


def stop_worker() -> None:
    """End this thread's worker now (it is also ended when the process exits)."""
    worker = getattr(_local, "worker", None)
    _local.worker = None
    if worker is not None:
        process, conn, _ = worker
        process.kill()
        process.wait()
        conn.close()


def call_within(
    seconds: float,
    on_timeout: T,
    function: Callable[..., T],
    *args: Any,
    warm: tuple[Any, ...] | None = None,
) -> T:
    """``function(*args)`` in this thread's worker; ``on_timeout`` (worker killed) past ``seconds``."""
    conn = _worker(function, warm)
    conn.send(("call", function, args))
    try:
        return _answer(conn, seconds, "answer")
    except TimeoutError:
        return on_timeout
