"""A timeout and a heartbeat for every call into an engine that runs in other processes.

A stalled engine would hang the trainer forever, so :class:`EngineWatchdog` warns on the console
(a heartbeat) while a call runs and, past ``timeout_s``, kills the engine and makes the call raise
:class:`EngineTimeoutError` (the last checkpoint stays); a dead engine raises :class:`EngineDiedError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from es_lightning.console import warn

log = logging.getLogger(__name__)


class EngineError(RuntimeError):
    """The rollout engine failed; the message names the engine and its device."""


class EngineTimeoutError(EngineError):
    """An engine call ran past its timeout."""


class EngineDiedError(EngineError):
    """The engine's processes ended during a call."""


class EngineWatchdog:
    """Watches the calls into one engine (``unblock`` wakes a call left waiting after a kill)."""

    def __init__(
        self,
        name: str,
        pids: Callable[[], list[int]],
        timeout_s: float | None,
        heartbeat_s: float = 60.0,
        unblock: Callable[[], None] | None = None,
    ) -> None:
        self.name, self.pids, self.timeout_s, self.heartbeat_s = name, pids, timeout_s, heartbeat_s
        self.unblock = unblock
        self._lock = threading.Lock()
        self._call: tuple[str, float, float | None] | None = None
        self._expired: tuple[str, float, float, list[int]] | None = None
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def call(self, what: str, timeout_s: float | None | str = "default") -> Iterator[None]:
        """Run the body as the call ``what`` under the heartbeat and a timeout."""
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._watch, name="es-lightning-watchdog", daemon=True)
            self._thread.start()
        if isinstance(timeout_s, str) and timeout_s != "default":
            raise ValueError(f"{self.name}: timeout_s must be seconds, None or 'default', got {timeout_s!r}")
        limit = self.timeout_s if isinstance(timeout_s, str) else timeout_s
        with self._lock:
            self._call, self._expired = (what, time.monotonic(), limit), None
        self._wake.set()
        try:
            yield
        except Exception as error:
            expired = self._finish()
            if expired is not None:
                raise self._timeout_error(*expired) from error
            pids = self.pids()
            if pids and not any(_alive(pid) for pid in pids):
                raise EngineDiedError(
                    f"{self.name}: its processes {pids} ended during {what!r}; the run stops here "
                    "(the last checkpoint is intact; resume with --trainer.resume true)"
                ) from error
            raise
        expired = self._finish()
        if expired is not None:  # the call came back, but only after the engine was killed
            raise self._timeout_error(*expired)

    def _finish(self) -> tuple[str, float, float, list[int]] | None:
        with self._lock:
            self._call = None
            return self._expired

    def _timeout_error(self, what: str, limit: float, elapsed: float, pids: list[int]) -> EngineTimeoutError:
        return EngineTimeoutError(
            f"{self.name} (pids {pids}) did not answer {what!r} within {limit:g} s "
            f"(killed after {elapsed:.0f} s); the last checkpoint is intact. Raise the rollout's "
            "timeout (`call_timeout_s`, `start_timeout_s`) if such calls are expected to take longer."
        )

    def _watch(self) -> None:
        watched, beats = None, 0
        while True:
            with self._lock:
                call, expired = self._call, self._expired
            if call is None:
                self._wake.wait()
                self._wake.clear()
                continue
            if call is not watched:
                watched, beats = call, 0
            what, started, limit = call
            elapsed = time.monotonic() - started
            if expired is not None:  # killed: wake the call if it still waits
                if self.unblock is not None and elapsed - expired[2] >= 2.0 * (beats + 1):
                    beats += 1
                    try:
                        self.unblock()
                    except Exception:  # keep watching; the next try may work
                        log.exception("%s: could not wake the waiting call %r", self.name, what)
            elif limit is not None and elapsed > limit:
                self._expire(call, limit, elapsed)
                beats = 0
            elif elapsed >= (beats + 1) * self.heartbeat_s:
                beats += 1
                shown = f"{limit:g} s" if limit is not None else "no limit"
                warn(
                    f"{self.name}: {what!r} still running after {elapsed:.0f} s (timeout {shown})", once=False
                )
            time.sleep(min(0.2, self.heartbeat_s))

    def _expire(self, call: tuple[str, float, float | None], limit: float, elapsed: float) -> None:
        """Kill the engine under the call ``call`` that ran past its limit ``limit`` (its third item)."""
        pids = self.pids()
        with self._lock:
            if self._call is not call:  # it finished meanwhile
                return
            self._expired = (call[0], limit, elapsed, pids)
        log.error("%s: %r ran past %g s; killing pids %s", self.name, call[0], limit, pids)
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
