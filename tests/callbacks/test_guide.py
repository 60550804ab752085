"""callbacks/README.md's worked example, copied from the guide and attached to a real ES run, beside a
hook that takes fewer arguments than the trainer passes (``fabric.call`` drops the others)."""

from __future__ import annotations

import re

import pytest

from es_lightning.training.loggers import read_metrics
from tests.helpers import REPO, fit

pytestmark = pytest.mark.integration

FEWER_ARGUMENTS = '''

class UpdateCounter(Callback):
    """on_train_batch_end without `step` and `metrics`: Fabric filters the keywords per hook."""

    def on_train_batch_end(self, trainer):
        trainer.log({"train/hook_step": float(trainer.step)})
'''
RECIPE = """
module:
  model: es-lightning/tiny-random
  task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 16, n_test: 8}}
  train_sampling: {temperature: 1.0, max_tokens: 6}
rollout: {class_path: es_lightning.rollout.hf.HFRollout}
trainer: {batch_size: 4, seed: 3, accelerator: cpu, progress_bar: false}
evaluation: null
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {population_size: 4, sigma: 0.05, learning_rate: 0.05}
callbacks:
  - {class_path: guide_example.RewardEMA, init_args: {decay: 0.5}}
  - {class_path: guide_example.UpdateCounter}
"""


def guide_example() -> str:
    """The first Python block of the guide's "Writing your own callback" section."""
    section = (REPO / "callbacks" / "README.md").read_text().split("## Writing your own callback", 1)[1]
    return re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]


def test_the_guides_example_runs_attached_to_a_fit(tmp_path):
    (tmp_path / "guide_example.py").write_text(guide_example() + FEWER_ARGUMENTS)
    out = fit(tmp_path, "run", "--trainer.max_steps", "3", recipe=RECIPE)
    rows = read_metrics(out / "metrics.jsonl")
    rewards = [r["train/reward_mean"] for r in rows if "train/reward_mean" in r]
    expected, ema = [], None
    for r in rewards:  # the moving average by hand, decay 0.5
        ema = r if ema is None else 0.5 * ema + 0.5 * r
        expected.append(ema)
    assert len(rewards) == 3
    assert [r["train/reward_ema"] for r in rows if "train/reward_ema" in r] == pytest.approx(expected)
    assert [(r["step"], r["train/hook_step"]) for r in rows if "train/hook_step" in r] == [
        (1, 1.0),
        (2, 2.0),
        (3, 3.0),
    ]
