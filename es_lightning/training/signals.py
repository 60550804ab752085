"""Stopping a run cleanly on SIGTERM and SIGINT.

A first signal during an update is recorded: the update completes, a checkpoint is saved and the
run exits with ``128 + signal``; elsewhere :class:`RunInterrupted` is raised at once. A second
signal raises at once. A callback asks for a clean stop with ``trainer.should_stop = True``.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class RunInterrupted(BaseException):
    """The run was stopped by signal ``signum`` (``at_boundary``: at an update boundary)."""

    def __init__(self, signum: int, at_boundary: bool) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum, self.at_boundary = signum, at_boundary

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


class StopSignals:
    """Installs the SIGTERM/SIGINT handlers while in a ``with`` block (main thread only)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._depth = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        first = self.received is None
        self.received = signum
        if not first:
            raise RunInterrupted(signum, at_boundary=False)
        if self._depth == 0:
            raise RunInterrupted(signum, at_boundary=True)
        name = signal.Signals(signum).name
        print(
            f"\nes-lightning: {name} received: finishing this update, then saving a checkpoint and "
            f"stopping (send {name} again to stop at once)",
            file=sys.stderr,
            flush=True,
        )

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """A block that a first signal does not interrupt (see the module docstring)."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def requested(self, fabric: Any = None) -> int | None:
        """The signal received so far on any rank (an all-reduce when there are several), or None."""
        signum = self.received or 0
        if fabric is not None and fabric.world_size > 1:
            import torch

            signum = int(fabric.all_reduce(torch.tensor(float(signum)), reduce_op="max").item())
        return signum or None


def stop_requested_by_callback(trainer: Any, max_steps: int) -> bool:
    """Whether a callback set ``trainer.should_stop`` on any rank (then set on every rank)."""
    fabric = trainer.fabric
    wanted = bool(getattr(trainer, "should_stop", False))
    if fabric is not None and fabric.world_size > 1:
        import torch

        wanted = bool(fabric.all_reduce(torch.tensor(float(wanted)), reduce_op="max").item())
    if wanted:
        trainer.should_stop = True
        if fabric is None or fabric.is_global_zero:
            print(
                f"\nes-lightning: a callback set trainer.should_stop: stopping after update "
                f"{trainer.step} of {max_steps} (checkpoint and final evaluation follow)",
                file=sys.stderr,
                flush=True,
            )
    return wanted
