"""The supervised warm-start loop shared by the tiny models' scripts (``arithmetic``, ``countdown``,
``two_tasks``).

Each script builds its own examples, ``(input_ids, labels)`` with the prompt labelled ``IGNORE``,
and hands :func:`fit_completions` a function that returns the next batch of them. The loop then:

1. loads the model folder the script wrote (random weights from the script's seed);
2. minimises next-token cross-entropy on the labelled positions only (:func:`completion_loss`:
   the completion and ``</s>``; prompt and padding carry no loss) with AdamW, linear warmup then
   cosine decay to zero (:func:`lr_factor`), gradient clipping at 1;
3. saves the weights back into the folder (float32 ``model.safetensors``).

It is deterministic: ``torch.manual_seed(seed)``, a fixed thread count and
``torch.use_deterministic_algorithms`` while it runs; the caller's RNG state, thread count and
determinism flag are restored afterwards. The batches must come from seeded generators of their
own (never the global RNG), so that the same arguments give bit-identical weights.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F

IGNORE = -100
"""Label of positions that carry no loss (``F.cross_entropy``'s ``ignore_index``)."""

Example = tuple[list[int], list[int]]
"""One training sequence: ``(input_ids, labels)``, the labels ``IGNORE`` where no loss is taken."""


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


def sft_parser(
    prog: str,
    description: str,
    steps: int,
    threads: int,
    evaluate: str,
    batch_size: int = 128,
    lr: float = 3e-3,
) -> argparse.ArgumentParser:
    """The options every warm-start script takes (each adds its own)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--output", type=Path, required=True, help="folder to write the HF model to")
    parser.add_argument("--steps", type=int, default=steps, help=f"optimizer steps (default: {steps})")
    parser.add_argument("--seed", type=int, default=0, help="seed of weights and data order (default: 0)")
    parser.add_argument(
        "--batch-size", type=int, default=batch_size, help=f"examples per step (default: {batch_size})"
    )
    parser.add_argument("--lr", type=float, default=lr, help=f"peak AdamW learning rate (default: {lr:g})")
    parser.add_argument(
        "--threads", type=int, default=threads, help=f"torch CPU threads for training (default: {threads})"
    )
    parser.add_argument("--evaluate", action="store_true", help=evaluate)
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser
