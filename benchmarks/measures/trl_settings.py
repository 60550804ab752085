"""One GRPO setting, two trainers: our recipe's GRPO settings and the TRL ``GRPOConfig`` that
carries the same ones (for ``benchmarks/measures/trl_grpo.py``).

The mapping (ours → TRL's ``GRPOConfig``):

    group_size G                  → num_generations
    B prompts × G per update      → per_device_train_batch_size × gradient_accumulation_steps = B·G
                                    (TRL counts completions; one optimizer step per generation)
    micro_batch_size              → per_device_train_batch_size (when it divides B·G)
    learning_rate, lr_schedule    → learning_rate, lr_scheduler_type (warmup 0)
    weight_decay, adam_betas      → weight_decay, adam_beta1/2
    max_grad_norm                 → max_grad_norm
    clip_eps, clip_eps_high, beta → epsilon, epsilon_high, beta
    inner_iterations μ            → num_iterations
    advantage group/batch/none    → scale_rewards group/batch/none
    loss_aggregation              → loss_type: token_mean → dapo (Σ over the batch's response
                                    tokens / their count), sequence_mean → grpo
    train_sampling                → temperature, top_p, top_k, max_completion_length
    trainer.precision 32-true     → bf16=False, use_cpu=True; gradient_checkpointing as ours (False)

One difference stays: TRL's group std is unbiased (ddof=1), ours the population std, so TRL's
advantages are sqrt(G/(G−1)) times ours (1.07× at G = 8); AdamW's step is nearly invariant to it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from es_lightning.grpo.loss import GRPOLoss
from es_lightning.grpo.settings import GRPOSettings

LOSS_TYPES = {"token_mean": "dapo", "sequence_mean": "grpo"}
"""Our loss aggregation → TRL's ``loss_type`` with the same normaliser."""


@dataclass(frozen=True)
class PeerSettings:
    """The GRPO settings both trainers run with, read from one of our recipes."""

    model: str
    group_size: int
    batch_size: int
    """B, prompts per update."""
    learning_rate: float
    lr_schedule: str
    weight_decay: float
    adam_betas: tuple[float, float]
    max_grad_norm: float | None
    clip_eps: float
    clip_eps_high: float | None
    beta: float
    inner_iterations: int
    advantage: str
    loss_aggregation: str
    micro_batch_size: int
    temperature: float
    top_p: float
    top_k: int
    max_tokens: int
    dtype: str


def recipe_settings(recipe: str | Path, batch_size: int | None = None) -> PeerSettings:
    """The GRPO settings of ``recipe`` (our defaults where it is silent); ``batch_size``
    overrides its ``trainer.batch_size``."""
    config = yaml.safe_load(Path(recipe).read_text())
    args = config["strategy"]["init_args"]
    defaults = {f.name: f.default for cls in (GRPOSettings, GRPOLoss) for f in fields(cls)}
    value = lambda name: args.get(name, defaults[name])  # noqa: E731
    sampling = config["module"].get("train_sampling", {})
    return PeerSettings(
        model=config["module"]["model"],
        group_size=value("group_size"),
        batch_size=batch_size or config["trainer"]["batch_size"],
        learning_rate=float(value("learning_rate")),
        lr_schedule=value("lr_schedule"),
        weight_decay=float(value("weight_decay")),
        adam_betas=tuple(value("adam_betas")),  # type: ignore[arg-type]
        max_grad_norm=value("max_grad_norm"),
        clip_eps=float(value("clip_eps")),
        clip_eps_high=value("clip_eps_high"),
        beta=float(value("beta")),
        inner_iterations=value("inner_iterations"),
        advantage=value("advantage"),
        loss_aggregation=value("loss_aggregation"),
        micro_batch_size=value("micro_batch_size"),
        temperature=float(sampling.get("temperature", 1.0)),
        top_p=float(sampling.get("top_p", 1.0)),
        top_k=int(sampling.get("top_k", 0)),
        max_tokens=int(sampling.get("max_tokens", 256)),
        dtype=config["module"].get("dtype", "float32"),
    )


def trl_batching(settings: PeerSettings) -> tuple[int, int]:
    """(per_device_train_batch_size, gradient_accumulation_steps): B·G completions per optimizer
    step, in micro-batches of ``micro_batch_size`` when it divides B·G (else one micro-batch)."""
    completions = settings.batch_size * settings.group_size
    micro = settings.micro_batch_size
    if micro < completions and completions % micro == 0:
        return micro, completions // micro
    return completions, 1


def trl_config_kwargs(settings: PeerSettings, steps: int, seed: int, output_dir: str) -> dict[str, Any]:
    """Keyword arguments of TRL's ``GRPOConfig`` with ``settings`` (see the module docstring)."""
    if settings.loss_aggregation not in LOSS_TYPES:
        raise ValueError(f"no TRL loss_type for loss_aggregation {settings.loss_aggregation!r}")
    per_device, accumulation = trl_batching(settings)
    return dict(
        output_dir=output_dir, max_steps=steps, seed=seed, report_to=[], save_strategy="no",
        logging_steps=1, disable_tqdm=True, use_cpu=True, bf16=False, gradient_checkpointing=False,
        dataloader_num_workers=0, model_init_kwargs={"dtype": settings.dtype},
        num_generations=settings.group_size, per_device_train_batch_size=per_device,
        gradient_accumulation_steps=accumulation, learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_schedule, warmup_steps=0, weight_decay=settings.weight_decay,
        adam_beta1=settings.adam_betas[0], adam_beta2=settings.adam_betas[1],
        max_grad_norm=settings.max_grad_norm or 0.0, epsilon=settings.clip_eps,
        epsilon_high=settings.clip_eps_high, beta=settings.beta, num_iterations=settings.inner_iterations,
        scale_rewards=settings.advantage, loss_type=LOSS_TYPES[settings.loss_aggregation],
        temperature=settings.temperature, top_p=settings.top_p, top_k=settings.top_k,
        max_completion_length=settings.max_tokens,
    )  # fmt: skip


def our_overrides(
    settings: PeerSettings,
    steps: int,
    seed: int,
    output_dir: str,
    callbacks: str = "[]",
    rollout_batch: int | None = None,
) -> list[str]:
    """``es-lightning fit`` arguments that run the recipe with ``settings``' B, ``steps`` updates,
    ``seed``, the transformers rollout (``rollout_batch`` sequences per ``generate`` call; ``None``:
    its default, 64), no evaluation and only ``callbacks`` (only updates are timed)."""
    batching = [] if rollout_batch is None else ["--rollout.batch_size", str(rollout_batch)]
    return batching + [
        "--trainer.output_dir", output_dir, "--trainer.overwrite", "true",
        "--trainer.progress_bar", "false", "--trainer.max_steps", str(steps),
        "--trainer.batch_size", str(settings.batch_size), "--trainer.seed", str(seed),
        "--evaluation", "null", "--callbacks", callbacks, "--rollout", "hf",
    ]  # fmt: skip
