"""Supervised warm start of the built-in ``es-lightning/tiny-arithmetic`` model (CPU, minutes).

Run it from the repository's root (``--help`` lists every option)::

    python -m scripts.warmstart arithmetic --output runs/tiny-arithmetic --evaluate

(the defaults: ``--steps 900 --seed 0 --alt-answer-fraction 0.5 --threads 2``, the packaged model's
settings)

or call :func:`train_arithmetic_model`. What it does, top to bottom:

1. builds the tiny Qwen2 model and its character tokenizer (:mod:`es_lightning.models.tiny`) with
   random weights drawn from ``seed``;
2. takes every ``a+b-c`` problem (numbers in ``[1, max_number]``) except the first ``held_out``
   test problems of ``Arithmetic(seed=0)``, so that test split (the default 200 included) stays
   unseen;
3. builds each example as ``prompt + worked solution + </s>``, the prompt made by
   :meth:`ReasoningModule.encode` itself, so it is the exact token sequence rollouts will feed
   the model; a seeded ``alt_answer_fraction`` of the problems end their solution with
   ``Answer: r`` instead of the task's ``A: r`` (:data:`ALT_ANSWER_MARK`), which the verifier
   does not read: like a real base model, the warm-started model then knows the arithmetic but
   not reliably the grader's answer format, and has to learn it from the reward;
4. minimises next-token cross-entropy on the completion and EOS tokens only (prompt and padding
   carry no loss) with AdamW, linear warmup then cosine decay to zero, gradient clipping at 1
   (:func:`~scripts.warmstart.common.fit_completions`, the loop every warm start shares);
5. saves an HF folder (float32 ``model.safetensors``, config, tokenizer) that transformers and vLLM
   both load, plus ``training_config.json`` with the settings used.

The run is deterministic: the same arguments on the same machine and software give bit-identical
weights (seeded initialisation and data order, a fixed thread count,
``torch.use_deterministic_algorithms``). Across machines, CPU kernels may round differently.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from es_lightning.models.tiny import TinyConfig, build_tiny_model
from es_lightning.tasks.arithmetic import Arithmetic, worked_solution
from scripts.warmstart.common import (
    Example,
    WarmStart,
    completion_examples,
    default_warmup,
    epoch_queue,
    evaluate_task,
    fit_completions,
)

ALT_ANSWER_MARK = "Answer:"
"""The other answer style of the warm-start data (``Answer: 14``); the task's verifier reads only
``A:`` (``"Answer: 14"`` holds no ``"A:"``), so such completions earn reward 0."""


def arithmetic_config(seed: int = 0) -> TinyConfig:
    """The size of ``es-lightning/tiny-arithmetic``: hidden 128, 4 layers, 2 heads of 64, 1 KV head
    (about 0.8M parameters)."""
    return TinyConfig(
        hidden_size=128,
        num_hidden_layers=4,
        num_attention_heads=2,
        num_key_value_heads=1,
        intermediate_size=384,
        seed=seed,
    )


def training_task(max_number: int = 30, held_out: int = 1000) -> Arithmetic:
    """The task whose train split is every ``a+b-c`` problem except the first ``held_out`` test
    problems of ``Arithmetic(seed=0)`` (the same numbers, in a seeded order)."""
    return Arithmetic(
        max_number=max_number, n_test=held_out, n_validation=0, n_train=max_number**3 - held_out, seed=0
    )


def solution_text(row: dict[str, Any], alt_answer: bool = False) -> str:
    """The worked solution of ``row``, its last line ``A: r`` or (``alt_answer``) ``Answer: r``."""
    text = worked_solution(row)
    if not alt_answer:
        return text
    head, _, answer = text.rpartition("\nA:")
    return f"{head}\n{ALT_ANSWER_MARK}{answer}"


def build_examples(
    module: Any, rows: list[dict[str, Any]], alt_answer: list[bool] | None = None
) -> list[Example]:
    """``(input_ids, labels)`` per row: prompt + worked solution + EOS; prompt labels are ``IGNORE``.

    Args:
        module: a :class:`~es_lightning.module.ReasoningModule` on an arithmetic task; its
            ``encode`` makes the prompt ids, so training prompts equal rollout prompts.
        rows: arithmetic rows (columns ``a``, ``b``, ``c``).
        alt_answer: per row, whether its solution ends ``Answer: r`` (:func:`solution_text`);
            ``None``: none does.
    """
    alt = alt_answer if alt_answer is not None else [False] * len(rows)
    if len(alt) != len(rows):
        raise ValueError(f"build_examples: {len(alt)} alt_answer flags for {len(rows)} rows")
    return completion_examples(module, rows, [solution_text(row, flag) for row, flag in zip(rows, alt)])


def _check_arguments(steps: int, batch_size: int, alt_answer_fraction: float) -> None:
    """Refuse settings that cannot train, before any work."""
    if steps < 1 or batch_size < 1:
        raise ValueError(
            f"train_arithmetic_model: steps and batch_size must be >= 1, got {steps}, {batch_size}"
        )
    if not 0.0 <= alt_answer_fraction <= 1.0:
        raise ValueError(
            f"train_arithmetic_model: alt_answer_fraction must be in [0, 1], got {alt_answer_fraction}"
        )


def train_arithmetic_model(
    output: Path,
    steps: int = 900,
    seed: int = 0,
    *,
    batch_size: int = 128,
    lr: float = 3e-3,
    warmup_steps: int | None = None,
    weight_decay: float = 0.01,
    max_number: int = 30,
    held_out: int = 1000,
    alt_answer_fraction: float = 0.5,
    config: TinyConfig | None = None,
    threads: int = 2,
    progress: bool = True,
) -> Path:
    """Train the tiny arithmetic model (module docstring) into ``output``; returns ``output``.

    Args:
        output: folder to write (created; files already there are overwritten).
        steps: optimizer steps.
        seed: seed of the initial weights and of the data order.
        batch_size: examples per step.
        lr: peak AdamW learning rate.
        warmup_steps: linear warmup steps; ``None``: 5% of ``steps`` (at least 1).
        weight_decay: AdamW weight decay.
        max_number: largest number in the problems.
        held_out: how many test problems of ``Arithmetic(seed=0)`` are never trained on.
        alt_answer_fraction: share of the problems whose solution ends ``Answer: r`` (drawn once,
            from ``seed``); the rest end ``A: r``.
        config: model size; ``None``: :func:`arithmetic_config` with ``seed``.
        threads: torch CPU threads while training (fixed, so that the result does not depend on
            the machine's core count; one thread also degrades gracefully on a busy machine).
        progress: show a tqdm progress bar.
    """
    from es_lightning.module import ReasoningModule

    _check_arguments(steps, batch_size, alt_answer_fraction)
    output = Path(output)
    config = config or arithmetic_config(seed)
    warmup = default_warmup(steps, warmup_steps)
    settings = dict(
        steps=steps, seed=seed, batch_size=batch_size, lr=lr, warmup_steps=warmup, weight_decay=weight_decay,
        max_number=max_number, held_out=held_out, alt_answer_fraction=alt_answer_fraction, threads=threads,
        model=asdict(config),
    )  # fmt: skip

    build_tiny_model(output, config)  # random weights from config.seed + the tokenizer
    module = ReasoningModule(model=str(output), task=training_task(max_number, held_out))
    rows = module.task.load("train")
    draw = torch.rand(len(rows), generator=torch.Generator().manual_seed(seed + 1)).tolist()
    examples = build_examples(module, rows, [u < alt_answer_fraction for u in draw])
    pad_id = module.tokenizer.pad_token_id

    take = epoch_queue(len(examples), torch.Generator().manual_seed(seed))
    fit_completions(
        output,
        lambda: [examples[i] for i in take(batch_size)],
        steps,
        seed,
        pad_id=pad_id,
        lr=lr,
        warmup_steps=warmup,
        weight_decay=weight_decay,
        threads=threads,
        progress=progress,
    )
    (output / "training_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    return output


def evaluate_arithmetic_model(
    folder: Path, n_test: int = 200, num_samples: int = 16, temperature: float = 0.6, seed: int = 1234
) -> dict[str, float]:
    """Pass@K, maj@K and greedy accuracy of ``folder`` on the first ``n_test`` test problems of
    ``Arithmetic(seed=0)``, with the project's evaluation runner and the HF rollout (batch 512,
    at most 64 new tokens)."""
    return evaluate_task(folder, Arithmetic(n_test=n_test), num_samples, temperature, seed).summary


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--alt-answer-fraction",
        type=float,
        default=0.5,
        help="share of solutions ending 'Answer: r' instead of the graded 'A: r' (default: 0.5)",
    )


WARM_START = WarmStart(
    description="Train the tiny a+b-c model (es-lightning/tiny-arithmetic) on CPU.",
    steps=900,
    threads=2,
    evaluates="200 test problems",
    shown=("pass@1", "pass@4", "pass@16", "greedy", "mean_reward"),
    add_arguments=_add_arguments,
    train=train_arithmetic_model,
    evaluate=lambda folder, args: {"arithmetic": evaluate_arithmetic_model(folder)},
)
"""``python -m scripts.warmstart arithmetic``."""
