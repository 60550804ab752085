"""The verifier time limit on a real worker process: a C computation no signal interrupts (a big
integer power) is cut off at the deadline from any thread, the worker is killed, the next call works."""

from __future__ import annotations

import os
import threading
import time

import pytest

from es_lightning.tasks import bounded
from es_lightning.tasks.bounded import call_within, stop_worker


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.integration
def test_a_stuck_call_is_cut_off_on_any_thread_and_the_worker_killed():
    answers: dict[str, object] = {}

    def work(name: str) -> None:
        assert call_within(60, None, pow, 3, 4) == 81  # the worker started (outside the limit)
        pid = bounded._local.worker[0].pid
        start = time.monotonic()
        answers[name] = call_within(1.0, "late", pow, 9, 9**9)  # 9^387420489: minutes of C
        answers[f"{name} seconds"] = time.monotonic() - start
        answers[f"{name} alive"] = _alive(pid)
        answers[f"{name} after"] = call_within(60, None, pow, 2, 10)
        stop_worker()

    helper = threading.Thread(target=work, args=("thread",))
    helper.start()
    helper.join(600)
    work("main")
    for name in ("thread", "main"):
        assert answers[name] == "late"
        assert answers[f"{name} seconds"] < 10  # 1 s and the kill, on a busy machine
        assert answers[f"{name} alive"] is False
        assert answers[f"{name} after"] == 1024


def test_an_error_in_the_worker_is_raised_in_the_caller():
    with pytest.raises(ValueError, match="invalid literal"):
        call_within(60, None, int, "seven")
    assert call_within(60, None, int, "7") == 7  # the worker survived its error
    stop_worker()
