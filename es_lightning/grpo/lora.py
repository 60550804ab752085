"""LoRA for GRPO: each targeted layer trains A and B beside its frozen W and serves
W' = W + (α/r)·B·A (Hu et al. 2021); weights leave the strategy merged, so a checkpoint is a normal
HF model, and its state folder holds the adapter in PEFT's format.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from es_lightning.checked import checked, field_values, refuse_invalid
from es_lightning.errors import ConfigError

if TYPE_CHECKING:
    from peft import PeftModel

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The attention and MLP projections of Qwen2 / Llama-style models."""


@dataclass
class LoRASettings:
    """Low-rank adapters for GRPO (``strategy.init_args.lora``)."""

    rank: int = checked(8, lambda rank: isinstance(rank, int) and rank >= 1, "an integer >= 1")
    """r, the rank of each adapter (B·A has rank <= r)."""
    alpha: float = checked(16.0, lambda alpha: math.isfinite(alpha) and alpha > 0, "> 0")
    """α; the adapter's update is scaled by α/r."""
    dropout: float = checked(0.0, lambda dropout: 0 <= dropout < 1, "in [0, 1)")
    """Dropout on the adapters' input during the trainer's forward passes (seeded per update, so a
    resume stays exact); 0 disables it."""
    target_modules: tuple[str, ...] = checked(
        DEFAULT_TARGETS,
        lambda names: bool(names) and all(isinstance(t, str) and t.strip() for t in names),
        "a non-empty list of module names",
    )
    """Names of the linear layers that get adapters (a name matches a module whose full name is it
    or ends with ``.name``); each must match at least one linear layer of the model."""
    seed: int = 0
    """Seed of A's random initialisation (B starts at zero)."""

    def __post_init__(self) -> None:
        self.target_modules = tuple(self.target_modules)
        refuse_invalid("LoRASettings", field_values(self), LoRASettings)


def require_peft() -> None:
    """A clear error when LoRA is asked for and peft is not installed."""
    try:
        import peft  # noqa: F401
    except ImportError as error:
        raise ConfigError(
            'GRPOStrategy: lora needs the peft package; install it with pip install "es-lightning[lora]"'
        ) from error


def wrap_with_lora(model: torch.nn.Module, settings: LoRASettings) -> Any:
    """``model`` wrapped in a ``PeftModel`` with fresh, trainable adapters."""
    require_peft()
    from peft import LoraConfig, TaskType, get_peft_model

    linear = [name for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    missing = [t for t in settings.target_modules if not any(n == t or n.endswith(f".{t}") for n in linear)]
    if missing:
        leaves = sorted({n.rsplit(".", 1)[-1] for n in linear})
        raise ConfigError(
            f"LoRASettings: target_modules {missing} match no linear layer of the model; its linear "
            f"layers are named {leaves}"
        )
    config = LoraConfig(
        task_type=TaskType.CAUSAL_LM,
        r=settings.rank,
        lora_alpha=settings.alpha,  # pyright: ignore[reportArgumentType]  (annotated int; α/r is computed in float)
        lora_dropout=settings.dropout,
        target_modules=list(settings.target_modules),
    )
    with torch.random.fork_rng(devices=[]):  # A's initialisation: reproducible, global RNG untouched
        torch.manual_seed(settings.seed)
        return get_peft_model(model, config)


@torch.no_grad()
def merged_weights(model: torch.nn.Module, adapted_only: bool = False) -> Iterator[tuple[str, torch.Tensor]]:
    """Every parameter of ``model`` under its HF name, fp32, adapters merged (or ``adapted_only``)."""
    from peft.tuners.lora import LoraLayer

    layers = {f"{name}.base_layer.weight": m for name, m in model.named_modules() if isinstance(m, LoraLayer)}
    for name, p in model.named_parameters():
        layer = layers.get(name)
        if ".lora_" in name or (adapted_only and layer is None):
            continue
        weight = p.detach()
        if layer is not None:
            weight = weight.float()
            for adapter in layer.active_adapters:
                # every LoRA layer type defines get_delta_weight; their base class does not declare it
                weight = weight + layer.get_delta_weight(adapter).float()  # pyright: ignore[reportAttributeAccessIssue]
        yield name.removeprefix("base_model.model.").replace(".base_layer.", "."), weight  # the HF name


def engine_holds_frozen_weights(engine_model: str | Path, serving_dtype: torch.dtype) -> bool:
    """Whether an engine started from ``engine_model`` in ``serving_dtype`` already serves the
    frozen weights exactly, so syncing the adapted layers alone is complete."""
    from es_lightning.weight_files import STATE_FILE, master_files

    folder = Path(engine_model)
    if not master_files(folder):
        return True
    state = folder / STATE_FILE
    written = json.loads(state.read_text()).get("serving_dtype") if state.is_file() else None
    return written in (str(torch.float32), str(serving_dtype))


def save_adapter(model: Any, folder: Path) -> None:
    """The adapters in PEFT's format (``adapter_model.safetensors``, ``adapter_config.json``)."""
    model.save_pretrained(str(folder), save_embedding_layers=False)


def seed_dropout(settings: LoRASettings, step: int, rank: int) -> None:
    """Seed the adapters' dropout for update ``step`` on ``rank`` (exact resume); no-op without dropout."""
    if settings.dropout > 0:
        torch.manual_seed((settings.seed * 1_000_003 + step) * 4099 + rank)


class AdaptersOff(torch.nn.Module):
    """The base model inside a PeftModel, adapters disabled: the reference without a second copy."""

    peft_model: PeftModel

    def __init__(self, peft_model: PeftModel) -> None:
        super().__init__()
        self.__dict__["peft_model"] = peft_model  # not a submodule: its parameters are the policy's

    def forward(self, **kwargs: Any) -> Any:
        with self.peft_model.disable_adapter():
            return self.peft_model(**kwargs)
