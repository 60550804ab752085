"""Checkpoints: an HF model folder (loadable by transformers and vLLM) plus the trainer's state.

Layout of ``{output_dir}/checkpoints/step-000004/``::

    config.json  generation_config.json  tokenizer files   # from the source model
    model.safetensors                                      # the weights, serving dtype
    es_state/  or  grpo_state/                             # what the optimizer needs to resume exactly
    trainer_state.json                                     # update index, seed, config digest

A checkpoint is written to a temporary folder and renamed into place, so a crash never leaves a
half-written ``step-*`` folder; ``latest`` names the newest complete one.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

STATE_FILE = "trainer_state.json"


def checkpoints_root(output_dir: str | Path) -> Path:
    return Path(output_dir) / "checkpoints"


def write_model_meta(model: str, tokenizer: Any, dtype: torch.dtype, directory: str | Path) -> Path:
    """Config, generation config and tokenizer of ``model`` (dtype set to ``dtype``) into ``directory``."""
    from transformers import AutoConfig, GenerationConfig

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = AutoConfig.from_pretrained(model)
    config.dtype = dtype
    config.save_pretrained(directory)
    try:
        GenerationConfig.from_pretrained(model).save_pretrained(directory)
    except OSError:
        pass  # the model has no generation config
    tokenizer.save_pretrained(directory)
    return directory


def save_checkpoint(
    output_dir: str | Path,
    step: int,
    write_weights: Callable[[str], None],
    meta_dir: str | Path,
    state: dict[str, Any],
) -> Path:
    """Write checkpoint ``step`` atomically; returns its folder."""
    root = checkpoints_root(output_dir)
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step-{step:06d}"
    tmp = root / f".tmp-step-{step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(meta_dir, tmp)
    write_weights(str(tmp))
    (tmp / STATE_FILE).write_text(json.dumps({**state, "step": step}, indent=2))
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    (root / "latest").write_text(final.name + "\n")
    return final


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest complete checkpoint in ``output_dir`` (``None`` when there is none)."""
    root = checkpoints_root(output_dir)
    pointer = root / "latest"
    if pointer.is_file():
        candidate = root / pointer.read_text().strip()
        if (candidate / STATE_FILE).is_file():
            return candidate
    complete = sorted(p for p in root.glob("step-*") if (p / STATE_FILE).is_file())
    return complete[-1] if complete else None


def resolve_resume(resume: bool | str, output_dir: str | Path) -> Path | None:
    """The checkpoint a run continues from, or ``None`` for a fresh run."""
    if resume is False or resume in ("", "false", "False"):
        return None
    if resume is True or resume in ("true", "True", "latest"):
        found = latest_checkpoint(output_dir)
        if found is None:
            raise FileNotFoundError(
                f"trainer.resume: no checkpoint in {checkpoints_root(output_dir)} to resume from"
            )
        return found
    path = Path(str(resume))
    if not (path / STATE_FILE).is_file():
        raise FileNotFoundError(f"trainer.resume: {path} is not a checkpoint folder (no {STATE_FILE})")
    return path


def load_state(checkpoint: str | Path) -> dict[str, Any]:
    return json.loads((Path(checkpoint) / STATE_FILE).read_text())
