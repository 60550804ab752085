"""Tasks that fail the run the moment anything reads their test split (for recipes in the tests).

Their generators still keep the other splits apart from the test problems (through
``split_rows``, not ``load``): only a reader of the test split trips them.
"""

from __future__ import annotations

from typing import Any

from es_lightning.tasks import Arithmetic, Echo

ARITHMETIC_WITHOUT_TEST = "{class_path: tests.tune.tripwire.ArithmeticWithoutTest, init_args: {n_train: 32, n_validation: 8, n_test: 8}}"
TINY_TUNE_RECIPE = f"""
module:
  model: es-lightning/tiny-arithmetic
  task: {ARITHMETIC_WITHOUT_TEST}
  train_sampling: {{temperature: 0.6, max_tokens: 32}}
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {{population_size: 2, sigma: 0.01, learning_rate: 0.01}}
rollout: {{class_path: es_lightning.rollout.hf.HFRollout}}
trainer: {{batch_size: 4, seed: 0, accelerator: cpu, progress_bar: false, max_steps: 5}}
evaluation: {{num_samples: 2, temperature: 0.6, max_tokens: 32, ks: [1, 2], greedy: false}}
callbacks:
  - class_path: es_lightning.callbacks.TokenEntropy       # reads test prompts: the tune removes it
    init_args: {{num_prompts: 2, max_tokens: 4}}
  - class_path: es_lightning.callbacks.HeldOutPassAtK     # the tune sets it to the validation split
    init_args:
      tasks: {{arith: {ARITHMETIC_WITHOUT_TEST}}}
      every_n_updates: 1
      evaluation: {{num_samples: 1, max_tokens: 32, ks: [1], limit: 2, greedy: false}}
"""
"""A tiny ES recipe on the built-in arithmetic model whose task trips on its test split: transformers
rollouts, 2 members, 4 prompts per update, a validation evaluation of 2 samples per prompt."""


class _NoTestSplit:
    def load(self, split: str = "train") -> list[dict[str, Any]]:
        if split == "test":
            raise RuntimeError(f"{self.name}: the test split was read")  # type: ignore[attr-defined]
        return super().load(split)  # type: ignore[misc]


class EchoWithoutTest(_NoTestSplit, Echo):
    """``echo`` whose test split must never be read."""


class ArithmeticWithoutTest(_NoTestSplit, Arithmetic):
    """``arithmetic`` whose test split must never be read."""
