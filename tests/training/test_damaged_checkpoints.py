"""Damaged checkpoints met for real by ``es-lightning fit``: a resume of the newest falls back to the
newest intact one and says so, continuing bit for bit as the uninterrupted run did; a damaged
checkpoint named explicitly is refused in one line before anything is written."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from safetensors.torch import load

from es_lightning.checkpoint import STATE_FILE
from es_lightning.training.loggers import read_metrics
from tests.helpers import CLI, TINY_ES_RECIPE, assert_bit_identical, fit, subprocess_env

pytestmark = pytest.mark.integration


def _ckpt(out: Path, step: int) -> Path:
    return out / "checkpoints" / f"step-{step:06d}"


def _weights(out: Path, step: int) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """(fp32 master, served weights) of checkpoint ``step``, read into memory (``load_file`` maps
    the file, whose bytes the test then damages)."""
    folder = _ckpt(out, step)
    return tuple(
        load((folder / name).read_bytes()) for name in ("es_state/master.safetensors", "model.safetensors")
    )


def _cli(tmp_path: Path, out: Path, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "fit", "--config", str(tmp_path / "run.yaml"), "--trainer.output_dir", str(out), *overrides],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _truncate(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)


def test_resume_skips_a_damaged_newest_checkpoint_and_continues_bit_exact(tmp_path):
    out = fit(
        tmp_path, "run", "--trainer.max_steps", "4", "--trainer.checkpoint_every", "2", recipe=TINY_ES_RECIPE
    )
    master, served = _weights(out, 4)  # the uninterrupted run's final weights
    resume = ("--trainer.max_steps", "4", "--trainer.checkpoint_every", "2", "--trainer.resume", "true")
    damages = {
        "es_state/master.safetensors": lambda f: _truncate(f),
        "model.safetensors": lambda f: _truncate(f),
        STATE_FILE: lambda f: f.unlink(),
    }
    for name, damage in damages.items():
        size = (_ckpt(out, 4) / name).stat().st_size
        damage(_ckpt(out, 4) / name)
        proc = _cli(tmp_path, out, *resume)
        assert proc.returncode == 0, proc.stderr[-3000:]
        said = [line for line in proc.stderr.splitlines() if line.startswith("es-lightning: ")]
        what = "is missing" if name == STATE_FILE else f"is {size // 2} bytes, the manifest says {size}"
        assert said[:-1] == [
            f"es-lightning: warning: checkpoint {_ckpt(out, 4)} is damaged ({name} {what}); skipped",
            f"es-lightning: resuming from {_ckpt(out, 2)} (files match its manifest)",
        ], proc.stderr[-3000:]
        assert said[-1].startswith("es-lightning: done; "), said  # status lines on stderr, not stdout
        again_master, again_served = _weights(out, 4)
        assert_bit_identical(master, again_master)  # updates 3 and 4 redone exactly
        assert_bit_identical(served, again_served)
        steps = [m["step"] for m in read_metrics(out / "metrics.jsonl") if "train/reward_mean" in m]
        assert steps == [1, 2, 3, 4], name  # the log continues after step 2, no repeats


def _files(out: Path) -> dict[Path, tuple[int, int]]:
    """Every file of the run but the lock (which records the pid of each process that takes it)."""
    files = [p for p in out.rglob("*") if p.is_file() and p.name != ".es-lightning.lock"]
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in files}


def _one_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("es-lightning: error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    return errors[0]


def test_refused_and_finished_resumes_write_nothing(tmp_path, es_two_updates_run):
    """A finished run resumed is a no-op that says so; a resume with a changed setting, or from a
    damaged checkpoint named explicitly, is refused in one line; none of them writes a file."""
    (tmp_path / "run.yaml").write_text(TINY_ES_RECIPE)  # its recipe: 2 updates, checkpoint_every 1
    out = tmp_path / "run"
    shutil.copytree(es_two_updates_run, out)  # a finished run of this test's own, to damage
    target = _ckpt(out, 2)
    before = _files(out)

    done = _cli(tmp_path, out, "--trainer.max_steps", "2", "--trainer.resume", "true")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        f"es-lightning: {out} is finished: step-000002 is at update 2 (trainer.max_steps 2); nothing to do"
        in done.stderr
    )
    assert "Loading weights" not in done.stdout + done.stderr  # nothing loaded or started
    assert _files(out) == before

    changed = _cli(
        tmp_path,
        out,
        "--trainer.max_steps",
        "4",
        "--trainer.resume",
        "true",
        "--strategy.init_args.sigma",
        "0.5",
    )
    assert "strategy.sigma" in changed.stderr and changed.returncode == 2, changed.stderr[-3000:]
    assert "Traceback" not in changed.stderr
    assert _files(out) == before  # config.yaml is not rewritten

    _truncate(target / "model.safetensors")
    before = _files(out)
    proc = _cli(tmp_path, out, "--trainer.max_steps", "4", "--trainer.resume", str(target))
    assert _one_error(proc).startswith(
        f"es-lightning: error: trainer.resume: checkpoint {target} is damaged: model.safetensors is "
    ), proc.stderr[-3000:]
    assert _files(out) == before
