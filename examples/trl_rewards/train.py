"""Train with TRL-style reward functions on a ``datasets.Dataset``, by ES or by GRPO.

    python examples/trl_rewards/train.py                   # ES, 20 updates
    python examples/trl_rewards/train.py --strategy grpo   # GRPO on the same task
    tensorboard --logdir runs/trl_rewards_es               # train/rewards/digits/mean, train/completion_tokens

The built-in random tiny model learns to answer ``Repeat: 4821`` with digits. The reward functions
(``rewards.py``) are written as TRL documents them, with ``completion_ids``, ``log_metric`` and
``log_extra``; the data is a ``datasets.Dataset`` in memory, as TRL's ``train_dataset``. What they
log goes to ``metrics.jsonl`` (``train/completion_tokens``; each function's reward as
``train/rewards/<name>/mean`` and ``/std``) and to the samples (``samples.jsonl``: each function's
reward, the advantage and ``expected``).
"""

from __future__ import annotations

import argparse

from datasets import Dataset
from rewards import correct, digits

from es_lightning import (
    ESStrategy,
    EvalConfig,
    FunctionTask,
    GRPOStrategy,
    HFRollout,
    ReasoningModule,
    SamplingConfig,
    Trainer,
    TrainerConfig,
)


def repeat_rows(count: int, start: int) -> Dataset:
    """``{"prompt": "Repeat: 4821", "answer": "4821"}`` rows of four-digit numbers."""
    numbers = [str(1000 + (start + 37 * i) % 9000) for i in range(count)]
    return Dataset.from_list([{"prompt": f"Repeat: {n}", "answer": n} for n in numbers])


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strategy", choices=["es", "grpo"], default="es")
    parser.add_argument("--max_steps", type=int, default=20)
    parser.add_argument("--output_dir", default=None, help="default: runs/trl_rewards_<strategy>")
    parser.add_argument("--eval_limit", type=int, default=16, help="test prompts evaluated before and after")
    args = parser.parse_args(argv)
    es = args.strategy == "es"
    task = FunctionTask(
        train=repeat_rows(64, start=0),
        test=repeat_rows(16, start=5000),
        reward_funcs=[correct, digits],
        reward_weights=[1.0, 0.5],
        name="repeat",
    )
    module = ReasoningModule(
        model="es-lightning/tiny-random",
        task=task,
        # ES scores each member on greedy answers; GRPO needs sampled groups to compare
        train_sampling=SamplingConfig(temperature=0.0 if es else 1.0, max_tokens=12),
    )
    strategy = (
        ESStrategy(population_size=8, sigma=0.02, learning_rate=0.05)
        if es
        else GRPOStrategy(group_size=8, learning_rate=1e-3)
    )
    config = TrainerConfig(
        output_dir=args.output_dir or f"runs/trl_rewards_{args.strategy}",
        max_steps=args.max_steps,
        batch_size=8,
        accelerator="cpu",
        overwrite=True,  # run again: start over
        log_samples_every=5,
    )
    evaluation = EvalConfig(num_samples=4, ks=[1, 4], max_tokens=12, limit=args.eval_limit)
    return Trainer(module, strategy, HFRollout(), config, evaluation=evaluation).fit()


if __name__ == "__main__":  # Fabric starts processes that import this file
    main()
