"""Supervised warm start of the built-in ``es-lightning/tiny-countdown`` model (CPU, under an hour).

Run it from the repository's root (``--help`` lists every option)::

    python -m scripts.warmstart countdown --output runs/tiny-countdown --evaluate

(the defaults are the packaged model's settings) or call :func:`train_countdown_model`. What it
does, top to bottom:

1. builds the tiny Qwen2 model and its character tokenizer (:mod:`es_lightning.models.tiny`) with
   random weights drawn from ``seed``;
2. takes the train split of ``CountdownTiny(seed=0, n_test=held_out, n_train=n_problems)``: the
   first ``held_out`` problems of the stream (the task's test split, the default 200 included)
   are never trained on;
3. builds each example as ``prompt + worked solution + </s>``, the prompt made by
   :meth:`ReasoningModule.encode` itself; the worked solution is drawn **afresh each time a
   problem comes round**, uniformly among all of its step sequences
   (:func:`~es_lightning.tasks.countdown_tiny.solutions`), so the model learns a distribution over
   search paths, not one path per problem, and has to guess its way through the search at
   sampling time like a base model that was never taught to backtrack;
4. minimises next-token cross-entropy on the completion and EOS tokens only with AdamW, linear
   warmup then cosine decay to zero, gradient clipping at 1 (the loop every warm start shares,
   :func:`~scripts.warmstart.common.fit_completions`);
5. saves an HF folder (float32 ``model.safetensors``, config, tokenizer) that transformers and vLLM
   both load, plus ``training_config.json`` with the settings used.

The run is deterministic: the same arguments on the same machine and software give bit-identical
weights (seeded initialisation, data order and solution draws, a fixed thread count,
``torch.use_deterministic_algorithms``). Across machines, CPU kernels may round differently.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from es_lightning.models.tiny import TinyConfig, build_tiny_model
from es_lightning.tasks.countdown_tiny import CountdownTiny, Step, classify, solutions, worked_solution
from scripts.warmstart.arithmetic import arithmetic_config
from scripts.warmstart.common import (
    Example,
    WarmStart,
    completion_examples,
    default_warmup,
    epoch_queue,
    evaluate_task,
    fit_completions,
)


def countdown_config(seed: int = 0) -> TinyConfig:
    """The size of ``es-lightning/tiny-countdown``, that of ``tiny-arithmetic``: hidden 128,
    4 layers, 2 heads of 64, 1 KV head, MLP 384 (about 0.8M parameters)."""
    return arithmetic_config(seed)


def training_task(n_problems: int = 30000, held_out: int = 1000, **task_settings: Any) -> CountdownTiny:
    """The task whose train split is ``n_problems`` problems after the first ``held_out`` test
    problems of ``CountdownTiny(seed=0)`` (the same stream, so no test problem is trained on)."""
    return CountdownTiny(n_train=n_problems, n_test=held_out, n_validation=0, seed=0, **task_settings)


def step_sequences(task: CountdownTiny, row: dict[str, Any]) -> tuple[tuple[Step, ...], ...]:
    """Every worked solution (step sequence) of ``row`` under ``task``'s generator rules."""
    nums = tuple(sorted(int(n) for n in row["nums"]))
    return solutions(nums, task.max_value)[int(row["target"])]


def build_examples(module: Any, rows: list[dict[str, Any]], steps: list[tuple[Step, ...]]) -> list[Example]:
    """``(input_ids, labels)`` per row: prompt + the worked solution of its ``steps`` + EOS; prompt
    labels are ``IGNORE``. ``module`` is a :class:`~es_lightning.module.ReasoningModule` on a
    ``countdown_tiny`` task: its ``encode`` makes the prompt ids, so training prompts equal rollout
    prompts."""
    texts = [worked_solution(row["nums"], path) for row, path in zip(rows, steps, strict=True)]
    return completion_examples(module, rows, texts)


def train_countdown_model(
    output: Path,
    steps: int = 2000,
    seed: int = 0,
    *,
    batch_size: int = 128,
    lr: float = 3e-3,
    warmup_steps: int | None = None,
    weight_decay: float = 0.01,
    n_problems: int = 30000,
    held_out: int = 1000,
    config: TinyConfig | None = None,
    threads: int = 1,
    device: str = "cpu",
    progress: bool = True,
    **task_settings: Any,
) -> Path:
    """Train the tiny countdown model (module docstring) into ``output``; returns ``output``.

    Args:
        output: folder to write (created; files already there are overwritten).
        steps: optimizer steps.
        seed: seed of the initial weights, the data order and the solution draws.
        batch_size: examples per step.
        lr: peak AdamW learning rate.
        warmup_steps: linear warmup steps; ``None``: 5% of ``steps`` (at least 1).
        weight_decay: AdamW weight decay.
        n_problems: training problems (the task's train split).
        held_out: how many test problems of ``CountdownTiny(seed=0)`` are never trained on.
        config: model size; ``None``: :func:`countdown_config` with ``seed``.
        threads: torch CPU threads while training (fixed, so the result does not depend on the
            machine's core count; one thread also stays fast on a busy machine: the model card
            has the times).
        device: where to train; ``"cuda"`` is faster but rounds differently from the CPU run
            that made the packaged model.
        progress: show a tqdm progress bar.
        task_settings: generator settings of :class:`CountdownTiny` (``max_number``, ...) other
            than its defaults, which are the packaged model's.
    """
    from es_lightning.module import ReasoningModule

    if steps < 1 or batch_size < 1 or n_problems < 1:
        raise ValueError(
            "train_countdown_model: steps, batch_size and n_problems must be >= 1, "
            f"got {steps}, {batch_size}, {n_problems}"
        )
    output = Path(output)
    config = config or countdown_config(seed)
    warmup = default_warmup(steps, warmup_steps)
    task = training_task(n_problems, held_out, **task_settings)
    settings = dict(
        steps=steps, seed=seed, batch_size=batch_size, lr=lr, warmup_steps=warmup, weight_decay=weight_decay,
        n_problems=n_problems, held_out=held_out, threads=threads, model=asdict(config),
        task=_task_settings(task),
    )  # fmt: skip

    build_tiny_model(output, config)  # random weights from config.seed + the tokenizer
    module = ReasoningModule(model=str(output), task=task)
    next_batch = _batch_sampler(module, task, batch_size, seed)
    pad_id = module.tokenizer.pad_token_id
    fit_completions(
        output,
        next_batch,
        steps,
        seed,
        pad_id=pad_id,
        lr=lr,
        warmup_steps=warmup,
        weight_decay=weight_decay,
        threads=threads,
        device=device,
        progress=progress,
    )
    (output / "training_config.json").write_text(json.dumps(settings, indent=2) + "\n")
    return output


def _task_settings(task: CountdownTiny) -> dict[str, Any]:
    """The generator settings of the training task, as recorded in ``training_config.json``."""
    return dict(
        max_number=task.max_number, max_target=task.max_target, max_value=task.max_value,
        four_number_fraction=task.four_number_fraction, min_solutions=task.min_solutions, seed=0,
    )  # fmt: skip


def _batch_sampler(
    module: Any, task: CountdownTiny, batch_size: int, seed: int
) -> Callable[[], list[Example]]:
    """``next_batch()``: ``batch_size`` training problems in a seeded epoch order (``seed``), each with
    one of its worked solutions drawn at random (``seed + 1``)."""
    rows = task.load("train")
    paths = [step_sequences(task, row) for row in rows]
    take = epoch_queue(len(rows), torch.Generator().manual_seed(seed))
    pick = torch.Generator().manual_seed(seed + 1)

    def next_batch() -> list[Example]:
        indices = take(batch_size)
        draws = [int(torch.randint(len(paths[i]), (1,), generator=pick)) for i in indices]
        return build_examples(
            module, [rows[i] for i in indices], [paths[i][d] for i, d in zip(indices, draws)]
        )

    return next_batch


_WORKING_LINE = re.compile(r"(\d+)([+\-*/])(\d+)=(\d+)")


def diagnose(completion: str, row: dict[str, Any]) -> str:
    """The verifier's verdict (:func:`~es_lightning.tasks.countdown_tiny.classify`), with a wrong
    value split by what the working lines (``a op b = r``) show:

    * ``wrong_value/forced_target``: every working line is right but the last, which claims the
      target with false arithmetic (``68/5=32`` for target 32): a wrong path through the search,
      closed as if it had reached the target;
    * ``wrong_value/arithmetic``: another miscalculated (``15*8=110``) or unreadable line;
    * ``wrong_value/numbers``: the lines are right but use a number that is not available (given,
      or made by an earlier line, and not used yet);
    * ``wrong_value/missed_target``: correct lines over the available numbers that end on another
      value than the target: a wrong path through the search;
    * ``wrong_value/transcription``: correct lines that reach the target, but an answer expression
      that does not say what they did.
    """
    verdict = classify(completion, row)
    if verdict != "wrong_value":
        return verdict
    working = completion[: completion.rfind("A:")].strip().splitlines()
    pool, result = Counter(int(n) for n in row["nums"]), None
    for at, line in enumerate(working):
        match = _WORKING_LINE.fullmatch(line.strip())
        if match is None:
            return "wrong_value/arithmetic"
        a, op, b, result = int(match[1]), match[2], int(match[3]), int(match[4])
        if {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else None}[op] != result:
            forced = at == len(working) - 1 and result == int(row["target"])
            return "wrong_value/forced_target" if forced else "wrong_value/arithmetic"
        used = Counter([a, b])
        if any(pool[n] < k for n, k in used.items()):
            return "wrong_value/numbers"
        pool = pool - used + Counter([result])
    if result != int(row["target"]):
        return "wrong_value/missed_target"
    return "wrong_value/transcription"


def error_profile(rows: list[dict[str, Any]], completions: list[list[str]]) -> dict[str, float]:
    """Share of all samples per :func:`diagnose` verdict."""
    verdicts = Counter(diagnose(text, row) for row, texts in zip(rows, completions) for text in texts)
    total = sum(verdicts.values())
    return {verdict: count / total for verdict, count in sorted(verdicts.items())}


def evaluate_countdown_model(
    folder: Path,
    n_test: int = 200,
    num_samples: int = 32,
    temperature: float = 0.6,
    seed: int = 1234,
    rollout: Any = None,
    threads: int = 1,
) -> dict[str, float]:
    """Pass@K (K = 1..``num_samples``), maj@K and greedy accuracy of ``folder`` on the first
    ``n_test`` test problems of ``CountdownTiny(seed=0)``, with the project's evaluation runner
    (at most 64 new tokens), plus the :func:`error_profile` of the samples as ``errors/<verdict>``.

    Args:
        rollout: a set-up rollout to generate with; ``None``: ``HFRollout(batch_size=512)`` on CPU.
        threads: torch CPU threads while the transformers rollout generates (then restored): on a
            busy 2-core machine one thread is the faster (the model card has the times).
    """
    task = CountdownTiny(n_test=n_test, seed=0)
    result = evaluate_task(folder, task, num_samples, temperature, seed, rollout, threads)
    errors = error_profile(result.rows, result.completions)
    return result.summary | {f"errors/{verdict}": share for verdict, share in errors.items()}


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n-problems", type=int, default=30000, help="training problems (default: 30000)")


WARM_START = WarmStart(
    description="Train the tiny countdown model (es-lightning/tiny-countdown) on CPU.",
    steps=2000,
    threads=1,
    evaluates="200 test problems (with the error profile)",
    shown=("pass@1", "pass@4", "pass@16", "pass@32", "greedy", "errors/"),
    add_arguments=_add_arguments,
    train=train_countdown_model,
    evaluate=lambda folder, args: {"countdown_tiny": evaluate_countdown_model(folder)},
)
"""``python -m scripts.warmstart countdown``."""
