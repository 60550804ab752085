"""A reward function that fails mid-run (raises, or returns NaN) ends ``es-lightning fit`` with one
line naming it, status 2 and no traceback; nothing of the run is left running and the checkpoint it
wrote before stays intact."""

from __future__ import annotations

import json
import subprocess

import psutil
import pytest

from es_lightning.checkpoint import latest_checkpoint
from es_lightning.checkpoint_manifest import verify_checkpoint
from tests.helpers import CLI, subprocess_env

pytestmark = pytest.mark.integration

REWARDS = '''
import os
from pathlib import Path

FIRST_CHECKPOINT = Path(os.environ["RUN_DIR"]) / "checkpoints" / "step-000001"


def digits(completions, answer, **kwargs):
    """Good until the run has checkpointed once, then {fault}."""
    if FIRST_CHECKPOINT.is_dir():
        {fault_code}
    return [sum(a == b for a, b in zip(c, ans)) / len(ans) for c, ans in zip(completions, answer)]
'''
FAULTS = {
    "raises": ("raises", 'raise ZeroDivisionError("scale is zero")'),
    "nan": ("returns NaN", 'return [float("nan") for _ in completions]'),
}
RECIPE = """
module:
  model: es-lightning/tiny-random
  task:
    class_path: es_lightning.tasks.FunctionTask
    init_args:
      train: {{path: {data}}}
      reward_funcs: [run_rewards.digits]
  train_sampling: {{temperature: 0.0, max_tokens: 4}}
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {{population_size: 4, sigma: 0.05, learning_rate: 0.05}}
rollout: {{class_path: es_lightning.rollout.hf.HFRollout}}
trainer: {{batch_size: 4, seed: 3, accelerator: cpu, progress_bar: false, max_steps: 4, checkpoint_every: 1}}
evaluation: null
"""


def _fit_until_it_fails(tmp_path, source: str, recipe: str, *overrides: str):
    """``es-lightning fit`` of ``recipe`` with ``source`` as ``run_rewards.py``, noting every process it
    starts; returns its exit status, stderr, run folder and the processes still alive 15 s after."""
    (tmp_path / "run_rewards.py").write_text(source)
    data = tmp_path / "train.jsonl"
    data.write_text(
        "".join(json.dumps({"prompt": f"Say {n:04d}", "answer": f"{n:04d}"}) + "\n" for n in range(8))
    )
    (tmp_path / "recipe.yaml").write_text(recipe.format(data=data))
    out = tmp_path / "run"
    env = subprocess_env() | {"RUN_DIR": str(out)}
    env.pop("ES_LIGHTNING_DEBUG", None)
    proc = subprocess.Popen(
        [*CLI, "fit", "--config", "recipe.yaml", "--trainer.output_dir", str(out), *overrides],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    children: list[psutil.Process] = []
    try:
        while proc.poll() is None:  # note what it starts while it runs
            children = list({*children, *psutil.Process(proc.pid).children(recursive=True)})
            try:
                proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    _, alive = psutil.wait_procs(children, timeout=15)
    return proc.returncode, stderr, out, alive


def _the_one_error(returncode: int, stderr: str) -> str:
    assert returncode == 2, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("es-lightning: error: ")]
    assert len(errors) == 1, stderr[-3000:]
    return errors[0]


def _kept_first_checkpoint(out) -> None:
    kept = latest_checkpoint(out)
    assert kept is not None and kept.name == "step-000001"
    verdict = verify_checkpoint(kept)
    assert verdict.intact and verdict.verified


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_failing_reward_function_ends_the_run_in_one_line_and_keeps_the_checkpoint(tmp_path, fault):
    what, code = FAULTS[fault]
    source = REWARDS.replace("{fault}", what).replace("{fault_code}", code)
    returncode, stderr, out, alive = _fit_until_it_fails(tmp_path, source, RECIPE)
    error = _the_one_error(returncode, stderr)
    file = tmp_path / "run_rewards.py"
    fault_line = next(i for i, line in enumerate(source.splitlines(), 1) if code in line)
    if fault == "raises":
        assert error.startswith(
            f"es-lightning: error: run_rewards.digits ({file}:{fault_line}) raised ZeroDivisionError: "
            "scale is zero on row 0 (prompt: 'Say "
        ), error
    else:
        def_line = next(i for i, line in enumerate(source.splitlines(), 1) if line.startswith("def digits"))
        assert error == (
            f"es-lightning: error: run_rewards.digits ({file}:{def_line}) returned nan on row 0; rewards "
            "must be finite numbers (None where the function does not apply)"
        )
    assert not alive, f"processes outlived the run: {alive}"
    _kept_first_checkpoint(out)


GRPO = """  class_path: es_lightning.strategies.GRPOStrategy
  init_args: {{group_size: 2, learning_rate: 1.0e-3, micro_batch_size: 4}}
"""


@pytest.mark.parametrize("strategy", ["es", "grpo"])
def test_a_reward_function_failing_on_one_rank_ends_every_rank_in_one_line(tmp_path, strategy):
    """Rank 1's reward function raises; rank 0's does not. Without the ranks agreeing on it, rank 0
    would wait in the update's collective for rank 1 (a traceback from the transport, or a hang)."""
    code = 'if os.environ.get("LOCAL_RANK") == "1":\n            raise ZeroDivisionError("scale is zero")'
    source = REWARDS.replace("{fault}", "raises on rank 1").replace("{fault_code}", code)
    recipe = RECIPE
    if strategy == "grpo":  # G = 2 sampled responses per prompt
        recipe = recipe.replace(recipe.split("strategy:\n")[1].split("rollout:")[0], GRPO)
        recipe = recipe.replace("temperature: 0.0", "temperature: 1.0")
    returncode, stderr, out, alive = _fit_until_it_fails(tmp_path, source, recipe, "--trainer.devices", "2")
    error = _the_one_error(returncode, stderr)
    assert (
        error.startswith("es-lightning: error: run_rewards.digits (") and "raised ZeroDivisionError" in error
    )
    assert not alive, f"processes outlived the run: {alive}"
    _kept_first_checkpoint(out)
