"""A low-rank ES population in one vLLM ``generate`` call (``VLLMRollout.es_generate_population``):
each member is a LoRA adapter (``lora_A = B_sᵀ``, ``lora_B = sign·σ/√r · A_s``) built in the workers
from the seeds. vLLM serves LoRA on linear layers only, so this needs ``lowrank_targets: linear``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from es_lightning.errors import ConfigError

VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The ``max_lora_rank`` values vLLM accepts."""
IN_MEMORY = "es-lightning:in-memory"
"""The ``lora_path`` of a member's ``LoRARequest``: its adapter is built in the workers, not read."""


def lora_slot_rank(rank: int) -> int:
    """The smallest ``max_lora_rank`` vLLM accepts that holds adapters of rank ``rank``."""
    for allowed in VLLM_LORA_RANKS:
        if allowed >= rank:
            return allowed
    raise ConfigError(
        f"VLLMRollout: low-rank ES rank {rank} is above vLLM's largest LoRA rank {VLLM_LORA_RANKS[-1]}"
    )


def use_lowrank_in_worker(worker: Any, rank: int | None, fixed: Sequence[str]) -> list[str]:
    """In a worker: low-rank noise (or full rank again); the matrices vLLM cannot serve as LoRA."""
    from es_lightning.es.lowrank import LowRankNoise

    es = worker._es
    es.noise = noise = None if rank is None else LowRankNoise(rank, frozenset(fixed))
    if noise is None:
        return []
    servable = lora_modules(worker)
    return [
        name
        for name, m in es.master.items()
        if noise.moves(name, m.shape) and _module_of(name) not in servable
    ]


def _module_of(name: str) -> str:
    """The layer's own name (``q_proj``) of a weight name (``model.layers.0.self_attn.q_proj.weight``)."""
    return name.removesuffix(".weight").rsplit(".", 1)[-1] if name.endswith(".weight") else ""


def lora_modules(worker: Any) -> set[str]:
    """The layer names the engine adapts (empty without LoRA)."""
    manager = getattr(getattr(worker.model_runner, "lora_manager", None), "_adapter_manager", None)
    if manager is None:
        return set()
    names: set[str] = set()
    for module in manager.supported_lora_modules:
        names.update(manager.packed_modules_mapping.get(module, [module]))
    return names


def load_population_in_worker(worker: Any, members: Sequence[tuple[int, float]], sigma: float) -> list[int]:
    """In a worker: member m's adapter under id m + 1; returns the ids."""
    from vllm.lora.lora_model import LoRAModel
    from vllm.lora.peft_helper import PEFTHelper

    runner = worker.model_runner
    manager = getattr(getattr(runner, "lora_manager", None), "_adapter_manager", None)
    if manager is None:
        raise RuntimeError("VLLMRollout: the engine was started without LoRA (es_reserve_population)")
    es, noise = worker._es, worker._es.noise
    if noise is None:
        raise RuntimeError("VLLMRollout: es_use_lowrank(rank) before generating a low-rank population")
    moving = {n: m for n, m in es.master.items() if noise.moves(n, m.shape)}
    peft = PEFTHelper(
        r=noise.rank, lora_alpha=noise.rank, target_modules=sorted({_module_of(n) for n in moving})
    )
    mapper = getattr(manager.model, "hf_to_vllm_mapper", None)
    dtype = runner.lora_manager.lora_config.lora_dtype
    ids = []
    for m, member in enumerate(members):
        tensors: dict[str, torch.Tensor] = {}
        for name, master in moving.items():
            # drawn on the master's device, as the update draws them: (1, d_out, r), (1, d_in, r)
            a, b = noise.member_factors([member], name, master.shape, sigma, master.device)
            module = "base_model.model." + name.removesuffix(".weight")
            tensors[f"{module}.lora_A.weight"] = b[0].T.contiguous().cpu()
            tensors[f"{module}.lora_B.weight"] = a[0].contiguous().cpu()
        lora = LoRAModel.from_lora_tensors(
            m + 1,
            tensors,
            peft,
            device="cpu",
            dtype=dtype,
            weights_mapper=None if mapper is None else mapper.get_rename_mapper(),
        )
        manager.remove_adapter(m + 1)
        manager.add_adapter(lora)
        ids.append(m + 1)
    return ids
