"""Engine processes end with their trainer, even on SIGKILL (real processes, no vLLM needed)."""

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from es_lightning.rollout.vllm import lifeline

# A "trainer" marks itself, starts an "engine" child that runs the lifeline, prints its pid, waits.
TRAINER = """
import subprocess, sys, time
from es_lightning.rollout.vllm.lifeline import mark_trainer
mark_trainer()
engine = subprocess.Popen([sys.executable, "-c", ENGINE])
print(engine.pid, flush=True)
time.sleep(120)
"""
ENGINE = "from es_lightning.rollout.vllm.lifeline import start_lifeline; import time; start_lifeline(0.1); time.sleep(120)"


@pytest.mark.integration
def test_engine_dies_with_a_killed_trainer():
    code = TRAINER.replace("ENGINE", repr(ENGINE))
    trainer = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    engine_pid = int(trainer.stdout.readline())
    engine = psutil.Process(engine_pid)
    time.sleep(0.5)
    assert engine.is_running()
    os.kill(trainer.pid, signal.SIGKILL)
    trainer.wait()
    gone, _ = psutil.wait_procs([engine], timeout=10)
    assert gone, "the engine outlived its trainer"
    said = trainer.stderr.read()  # the engine's stderr is the trainer's, still open in the engine
    assert f"trainer {trainer.pid} " in said and f"engine process {engine_pid} ends" in said


def test_owner_is_pid_and_start_time(monkeypatch):
    monkeypatch.delenv(lifeline.ENV, raising=False)
    assert lifeline.owner() is None
    assert lifeline.start_lifeline() is None  # not an engine process: nothing to watch
    lifeline.mark_trainer()
    pid, started = lifeline.owner()
    assert pid == os.getpid() and lifeline.owner_alive(pid, started)
    assert not lifeline.owner_alive(pid, started + 10.0)  # same pid, other process: not the owner
    assert lifeline.start_lifeline() is None  # the trainer itself does not watch itself


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_a_stepped_wall_clock_does_not_make_the_trainer_look_dead(monkeypatch):
    """psutil's create time moves with /proc/stat's boot time when the wall clock is stepped (NTP, a
    VM resumed from a snapshot); the lifeline's start time must not, or it kills a living trainer's
    engine."""
    monkeypatch.delenv(lifeline.ENV, raising=False)
    lifeline.mark_trainer()
    pid, started = lifeline.owner()
    before = psutil.Process(pid).create_time()
    stepped = psutil.boot_time() + 1.0
    monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: stepped)  # the clock jumped 1 s
    assert abs(psutil.Process(pid).create_time() - before - 1.0) < 1e-6  # what psutil now says
    assert lifeline.owner_alive(pid, started)


@pytest.mark.integration
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")
def test_start_time_reads_a_process_whose_name_has_spaces_and_parentheses(tmp_path):
    odd = tmp_path / "a) b (c"
    odd.symlink_to(sys.executable)
    child = subprocess.Popen([str(odd), "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(0.2)
        ticks = lifeline._start_time(child.pid)
        since_boot = psutil.Process(child.pid).create_time() - psutil.boot_time()
        assert ticks is not None and abs(ticks / os.sysconf("SC_CLK_TCK") - since_boot) < 0.05
        assert lifeline.owner_alive(child.pid, ticks) and not lifeline.owner_alive(child.pid, ticks + 1)
    finally:
        child.kill()
        child.wait()
    assert lifeline._start_time(child.pid) is None and not lifeline.owner_alive(child.pid, ticks)
