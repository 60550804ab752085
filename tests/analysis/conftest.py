"""Tiny checkpoint pairs on disk: the tiny Qwen2 as θ_0 and seeded perturbations of it as θ; run folders."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from es_lightning.analysis.threshold import copy_model_meta
from es_lightning.checkpoint import save_checkpoint
from es_lightning.weight_files import iter_weights, weight_files, write_weights

Perturb = Callable[[str, torch.Tensor, torch.Generator], torch.Tensor]
ES = {
    "name": "es",
    "population_size": 8,
    "sigma": 1e-3,
    "learning_rate": 2e-3,
    "normalization": "zscore",
    "estimator": "one_point",
    "optimizer": "sgd",
}
"""The ``strategy`` block of an ES checkpoint's hparams.yaml."""
GRPO = {"name": "grpo", "group_size": 4, "learning_rate": 1e-6}


def write_checkpoint(
    base: Path,
    folder: Path,
    perturb: Perturb,
    seed: int,
    serving_dtype: torch.dtype = torch.bfloat16,
    master: bool = True,
) -> Path:
    """An es-lightning-style checkpoint: base config/tokenizer, θ = perturb(θ_0) served in
    ``serving_dtype`` and, when ``master``, the fp32 θ in ``es_state/master.safetensors``."""
    generator = torch.Generator().manual_seed(seed)
    copy_model_meta(base, folder)
    weights = ((name, perturb(name, theta0, generator)) for name, theta0 in iter_weights(weight_files(base)))
    write_weights(folder, weights, serving_dtype, folder / "es_state" if master else None)
    return folder


def sparse_noise(scale: float) -> Perturb:
    """θ_0 + N(0, scale²) on 70% of the coordinates, exact zeros elsewhere."""

    def perturb(name: str, theta0: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        delta = torch.randn(theta0.shape, generator=generator) * scale
        delta[torch.rand(theta0.shape, generator=generator) < 0.3] = 0.0
        return theta0 + delta

    return perturb


def tiny_offset(name: str, theta0: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """θ_0 + 1e-6: far below bf16 resolution at the weights' scale."""
    return theta0 + 1e-6


@pytest.fixture(scope="session")
def checkpoints(tiny_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``base`` (the tiny model, fp32), ``es`` (large sparse updates, bf16 + fp32 master), ``grpo``
    (small updates, bf16 + master), ``fine`` (master = θ_0 + 1e-6, bf16 file ≈ θ_0) and ``plain``
    (fp32 served file, no master)."""
    root = tmp_path_factory.mktemp("analysis_checkpoints")
    return {
        "base": tiny_model_path,
        "es": write_checkpoint(tiny_model_path, root / "es", sparse_noise(2e-3), seed=1),
        "grpo": write_checkpoint(tiny_model_path, root / "grpo", sparse_noise(5e-5), seed=2),
        "fine": write_checkpoint(tiny_model_path, root / "fine", tiny_offset, seed=3),
        "plain": write_checkpoint(
            tiny_model_path,
            root / "plain",
            sparse_noise(2e-3),
            seed=4,
            serving_dtype=torch.float32,
            master=False,
        ),
    }


def write_run(
    run: Path,
    model: Path,
    step: int,
    strategy: dict,
    skipped: list[int] | None = None,
    perturb: Perturb | None = None,
) -> Path:
    """A run folder as the trainer writes it: checkpoint ``step`` (θ = ``perturb``(θ_0), default θ_0)
    with ``strategy``'s hparams and, with ``skipped``, a metrics.jsonl in which those updates were
    skipped, each other update's norm 0.1·t, and a callback's records between."""
    generator = torch.Generator().manual_seed(step)
    weights = iter_weights(weight_files(model))
    folder = save_checkpoint(
        run,
        step,
        ((n, perturb(n, t, generator) if perturb else t) for n, t in weights),
        serving_dtype=torch.float32,
        meta_dir=model,
        strategy_name=strategy["name"],
        write_state=lambda folder: None,
        trainer_state={"seed": 0},
        hparams={"strategy": strategy, "model": str(model)},
    )
    if skipped is not None:
        lines = []
        for t in range(1, step + 3):  # two records past the checkpoint (not counted)
            skip = float(t in skipped)
            lines.append({"step": t, "es/skipped": skip, "es/update_norm": 0.0 if skip else 0.1 * t})
            lines.append({"step": t, "drift/rel_l2": 0.5})  # a callback's record: no es/skipped
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    return folder
