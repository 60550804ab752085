"""A verifier's time limit that holds on any thread: the check runs in a worker process that is
killed at its deadline (``signal.alarm`` works only on the main thread, and no signal interrupts
sympy expanding ``\\boxed{9^{9^{9}}}``). One worker per calling thread; an exception is re-raised.
"""

from __future__ import annotations

import os
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


def _serve(conn: _Duplex) -> None:
    """The worker's loop: ``load`` and ``call`` messages, each answered ``(ok, result or error)``."""
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


def serve_fds(read_fd: int, write_fd: int) -> None:
    """A worker's entry point (``python -c``): serve the calls that arrive on ``read_fd``."""
    inbox, outbox = Connection(read_fd, writable=False), Connection(write_fd, readable=False)
    _serve(_Duplex(inbox, outbox))


class _Duplex:
    """Two one-way pipes as one connection: ``recv`` from the first, ``send`` and ``poll`` as named."""

    def __init__(self, inbox: Connection, outbox: Connection) -> None:
        self.inbox, self.outbox = inbox, outbox

    def recv(self) -> Any:
        return self.inbox.recv()

    def send(self, obj: Any) -> None:
        self.outbox.send(obj)

    def poll(self, seconds: float) -> bool:
        return self.inbox.poll(seconds)

    def close(self) -> None:
        self.inbox.close()
        self.outbox.close()


def _start() -> tuple[subprocess.Popen, _Duplex]:
    """A worker process: a fresh interpreter (not ``__main__`` again), this import path, two pipes."""
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    code = f"from es_lightning.tasks.bounded import serve_fds; serve_fds({to_worker_r}, {from_worker_w})"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    process = subprocess.Popen(
        [sys.executable, "-c", code], pass_fds=(to_worker_r, from_worker_w), env=env, stdin=subprocess.DEVNULL
    )
    os.close(to_worker_r)
    os.close(from_worker_w)
    conn = _Duplex(Connection(from_worker_r, writable=False), Connection(to_worker_w, readable=False))
    return process, conn


def _worker(function: Callable[..., Any], warm: tuple[Any, ...] | None) -> _Duplex:
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


def _answer(conn: _Duplex, seconds: float, what: str) -> Any:
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
