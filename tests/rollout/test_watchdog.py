"""The engine-call watchdog on real processes: heartbeat lines, the timeout kill, a dead engine."""

import subprocess
import threading
import time

import pytest

from es_lightning.rollout.watchdog import EngineDiedError, EngineTimeoutError, EngineWatchdog


@pytest.fixture()
def engine():
    """A stand-in engine process (a real child process the watchdog can watch and kill)."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_call_within_its_limit_passes_through(engine):
    watchdog = EngineWatchdog("engine on cpu", lambda: [engine.pid], timeout_s=5.0, heartbeat_s=1.0)
    with watchdog.call("generate"):
        time.sleep(0.1)
    assert engine.poll() is None  # not killed


def test_a_stalled_call_is_killed_woken_and_named(engine, capsys):
    waiting = threading.Event()  # what the stalled call waits on; only `unblock` sets it
    watchdog = EngineWatchdog(
        "engine on cpu", lambda: [engine.pid], timeout_s=1.0, heartbeat_s=0.4, unblock=waiting.set
    )
    start = time.monotonic()
    with pytest.raises(EngineTimeoutError) as raised:
        with watchdog.call("generate"):
            assert waiting.wait(timeout=20)
            raise ConnectionError("engine gone")  # what the woken client raises
    elapsed = time.monotonic() - start
    assert 1.0 <= elapsed < 10.0
    assert engine.wait(timeout=5) != 0  # SIGKILLed
    message = str(raised.value)
    assert "engine on cpu" in message and "'generate'" in message and str(engine.pid) in message
    beats = [line for line in capsys.readouterr().err.splitlines() if "still running after" in line]
    assert beats  # the heartbeat spoke before the timeout, one console warning line each
    assert all(
        line.startswith("es-lightning: warning: engine on cpu: 'generate' still running after ")
        and line.endswith(" s (timeout 1 s)")
        for line in beats
    ), beats


def test_a_call_that_returns_after_the_kill_still_fails(engine):
    watchdog = EngineWatchdog("engine on cpu", lambda: [engine.pid], timeout_s=0.5, heartbeat_s=10.0)
    with pytest.raises(EngineTimeoutError), watchdog.call("es_update"):
        time.sleep(1.5)


def test_a_call_failing_because_the_engine_died_says_so(engine):
    watchdog = EngineWatchdog("engine on cpu", lambda: [engine.pid], timeout_s=None)
    with pytest.raises(EngineDiedError, match="ended during 'generate'"), watchdog.call("generate"):
        engine.kill()
        engine.wait()
        raise RuntimeError("socket closed")


def test_other_errors_pass_unchanged(engine):
    watchdog = EngineWatchdog("engine on cpu", lambda: [engine.pid], timeout_s=None)
    with pytest.raises(ValueError, match="bad prompt"), watchdog.call("generate"):
        raise ValueError("bad prompt")
