"""Engine processes end with their trainer, even on SIGKILL (real processes, no vLLM needed)."""

import os
import signal
import subprocess
import sys
import time

import psutil

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


def test_engine_dies_with_a_killed_trainer():
    code = TRAINER.replace("ENGINE", repr(ENGINE))
    trainer = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    engine_pid = int(trainer.stdout.readline())
    engine = psutil.Process(engine_pid)
    time.sleep(0.5)
    assert engine.is_running()
    os.kill(trainer.pid, signal.SIGKILL)
    trainer.wait()
    gone, _ = psutil.wait_procs([engine], timeout=10)
    assert gone, "the engine outlived its trainer"


def test_owner_is_pid_and_start_time(monkeypatch):
    monkeypatch.delenv(lifeline.ENV, raising=False)
    assert lifeline.owner() is None
    assert lifeline.start_lifeline() is None  # not an engine process: nothing to watch
    lifeline.mark_trainer()
    pid, started = lifeline.owner()
    assert pid == os.getpid() and lifeline.owner_alive(pid, started)
    assert not lifeline.owner_alive(pid, started + 10.0)  # same pid, other process: not the owner
    assert lifeline.start_lifeline() is None  # the trainer itself does not watch itself
