"""What the tiny models' warm starts (``arithmetic``, ``countdown``, ``two_tasks``) share: their
examples, their training loop, their evaluation.

Each script turns its problems into examples with :func:`completion_examples`, ``(input_ids,
labels)`` with the prompt labelled ``IGNORE``, and hands :func:`fit_completions` a function that
returns the next batch of them. The loop then:

1. loads the model folder the script wrote (random weights from the script's seed);
2. minimises next-token cross-entropy on the labelled positions only (:func:`completion_loss`:
   the completion and ``</s>``; prompt and padding carry no loss) with AdamW, linear warmup then
   cosine decay to zero (:func:`lr_factor`), gradient clipping at 1;
3. saves the weights back into the folder (float32 ``model.safetensors``).

It is deterministic: ``torch.manual_seed(seed)``, a fixed thread count and
``torch.use_deterministic_algorithms`` while it runs; the caller's RNG state, thread count and
determinism flag are restored afterwards. The batches must come from seeded generators of their
own (never the global RNG), so that the same arguments give bit-identical weights.

:func:`evaluate_task` scores a trained folder on a task's test problems with the project's
evaluation runner, as the model cards report it.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class WarmStart:
    """One model's warm start as ``python -m scripts.warmstart <model>`` runs it."""

    description: str
    steps: int
    """Default optimizer steps (the packaged model's)."""
    threads: int
    """Default torch CPU threads."""
    evaluates: str
    """What ``--evaluate`` scores (for ``--help``)."""
    shown: tuple[str, ...]
    """The summary keys printed after an evaluation (a key ending ``/``: every key it starts)."""
    add_arguments: Callable[[argparse.ArgumentParser], None]
    """Adds the model's own options."""
    train: Callable[..., Path]
    """``train(output, steps, seed, batch_size=, lr=, threads=, progress=, **own options)``;
    returns the model folder."""
    evaluate: Callable[[Path, argparse.Namespace], dict[str, dict[str, float]]]
    """``{task: summary}`` of a trained folder."""
    batch_size: int = 128
    lr: float = 3e-3


IGNORE = -100
"""Label of positions that carry no loss (``F.cross_entropy``'s ``ignore_index``)."""

Example = tuple[list[int], list[int]]
"""One training sequence: ``(input_ids, labels)``, the labels ``IGNORE`` where no loss is taken."""


def completion_examples(module: Any, rows: list[dict[str, Any]], texts: list[str]) -> list[Example]:
    """``(input_ids, labels)`` per row: prompt + ``texts[i]`` + EOS, the prompt labelled ``IGNORE``.

    ``module`` is a :class:`~es_lightning.module.ReasoningModule` on the rows' task: its ``encode``
    makes the prompt ids, so training prompts are exactly what rollouts feed the model.
    """
    tokenizer = module.tokenizer
    targets = tokenizer(texts, add_special_tokens=False)["input_ids"]
    examples = []
    for prompt, target in zip(module.encode(rows), targets, strict=True):
        completion = [*target, tokenizer.eos_token_id]
        examples.append(([*prompt, *completion], [IGNORE] * len(prompt) + completion))
    return examples


def default_warmup(steps: int, warmup_steps: int | None) -> int:
    """``warmup_steps``, or 5% of ``steps`` (at least 1) when it is ``None``."""
    return warmup_steps if warmup_steps is not None else max(1, steps // 20)


def collate(examples: list[Example], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad a batch: ``input_ids`` (B, T) padded with ``pad_id``, ``labels`` (B, T) with ``IGNORE``."""
    width = max(len(ids) for ids, _ in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    for i, (ids, lab) in enumerate(examples):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        labels[i, : len(lab)] = torch.tensor(lab)
    return input_ids, labels


def completion_loss(model: torch.nn.Module, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over the positions whose label is not ``IGNORE``.

    No attention mask is needed: padding sits only at the right end, and causal attention never lets
    a real token see a later one; padded positions carry no loss.
    """
    logits = model(input_ids=input_ids).logits  # (B, T, V)
    # token t is predicted from position t - 1
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=IGNORE)


def lr_factor(step: int, steps: int, warmup_steps: int) -> float:
    """Linear warmup over ``warmup_steps``, then cosine decay to 0 at ``steps``."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, steps - warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def fit_completions(
    folder: Path,
    next_batch: Callable[[], list[Example]],
    steps: int,
    seed: int,
    *,
    pad_id: int,
    lr: float,
    warmup_steps: int,
    weight_decay: float,
    threads: int,
    device: str = "cpu",
    progress: bool = True,
) -> list[float]:
    """Train the HF model in ``folder`` for ``steps`` AdamW steps on ``next_batch()`` batches and
    save it there; returns the loss of every step (module docstring).

    Args:
        folder: an HF model folder (its weights are replaced by the trained ones).
        next_batch: called once per step, returns that step's examples; it must draw from its own
            seeded generators.
        steps: optimizer steps.
        seed: the global torch seed while training.
        pad_id: the padding token id.
        lr: peak AdamW learning rate.
        warmup_steps: linear warmup steps.
        weight_decay: AdamW weight decay.
        threads: torch CPU threads while training.
        device: where to train; ``"cuda"`` rounds differently from CPU.
        progress: show a tqdm progress bar.
    """
    from tqdm.auto import tqdm
    from transformers import Qwen2ForCausalLM

    losses: list[float] = []
    deterministic, saved_threads = torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_num_threads(threads)
    try:
        cuda = [torch.device(device)] if torch.device(device).type == "cuda" else []
        with torch.random.fork_rng(devices=cuda):  # leave the caller's RNG state alone
            torch.manual_seed(seed)
            model = Qwen2ForCausalLM.from_pretrained(folder, dtype=torch.float32).to(device)
            model.train()
            optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
            schedule = torch.optim.lr_scheduler.LambdaLR(
                optimizer, lambda s: lr_factor(s, steps, warmup_steps)
            )
            bar = tqdm(range(steps), desc="sft", disable=not progress)
            for _ in bar:
                input_ids, labels = (t.to(device) for t in collate(next_batch(), pad_id))
                loss = completion_loss(model, input_ids, labels)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                losses.append(loss.item())
                bar.set_postfix(loss=f"{losses[-1]:.4f}", refresh=False)
    finally:
        torch.use_deterministic_algorithms(deterministic)
        torch.set_num_threads(saved_threads)
    model.cpu().save_pretrained(folder, safe_serialization=True)
    return losses


def epoch_queue(size: int, generator: torch.Generator) -> Callable[[int], list[int]]:
    """A function ``take(n)`` that returns the next ``n`` indices of epochs over ``range(size)``,
    each epoch a fresh ``torch.randperm`` from ``generator`` (an epoch is topped up only when
    fewer than ``n`` indices are left)."""
    queue: list[int] = []

    def take(n: int) -> list[int]:
        nonlocal queue
        while len(queue) < n:  # epochs over the problems, reshuffled each time
            queue.extend(torch.randperm(size, generator=generator).tolist())
        taken, queue = queue[:n], queue[n:]
        return taken

    return take


def evaluate_task(
    folder: Path,
    task: Any,
    num_samples: int,
    temperature: float,
    seed: int = 1234,
    rollout: Any = None,
    threads: int | None = None,
) -> Any:
    """The evaluation runner's result (``.summary``: Pass@K, maj@K, greedy; ``.rows``,
    ``.completions``) of the model in ``folder`` on ``task``'s test problems, at most 64 new tokens.

    Args:
        rollout: a set-up rollout to generate with; ``None``: ``HFRollout(batch_size=512)`` on CPU.
        threads: torch CPU threads while that transformers rollout generates (then restored);
            ``None``: as they are.
    """
    from es_lightning.evaluation.runner import EvalConfig, evaluate_rows
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.hf import HFRollout

    module = ReasoningModule(model=str(folder), task=task)
    config = EvalConfig(num_samples=num_samples, temperature=temperature, max_tokens=64, seed=seed)
    if rollout is not None:
        return evaluate_rows(module, rollout, task.load("test"), config)
    saved_threads = torch.get_num_threads()
    torch.set_num_threads(threads or saved_threads)
    try:
        with HFRollout(batch_size=512) as hf:
            hf.setup(module.model, torch.device("cpu"), torch.float32)
            return evaluate_rows(module, hf, task.load("test"), config)
    finally:
        torch.set_num_threads(saved_threads)
