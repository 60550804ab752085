"""Low-rank ES on the rollout: what the strategy checks before the engine starts and tells it after."""

from __future__ import annotations

import torch

from es_lightning.errors import ConfigError
from es_lightning.es.lowrank import embedding_weight_names
from es_lightning.models.loading import ModelLoading
from es_lightning.rollout.base import PopulationEngine, Rollout
from es_lightning.strategies.es_settings import ESSettings


def check_lowrank_rollout(settings: ESSettings, rollout: Rollout) -> None:
    """Refuse a rollout that cannot serve low-rank members, and reserve room in one that can."""
    if settings.perturbation != "lowrank":
        return
    if not isinstance(rollout, PopulationEngine):
        raise ConfigError(
            f"ESStrategy: perturbation: lowrank needs a rollout that serves low-rank members "
            f"(es_lightning.rollout.hf.HFRollout, es_lightning.rollout.vllm.VLLMRollout); "
            f"{type(rollout).__name__} serves perturbation: full only. Use one of them or perturbation: full"
        )
    if settings.lowrank_targets not in rollout.lowrank_targets_served:
        raise ConfigError(
            f"ESStrategy: {type(rollout).__name__} serves low-rank members with lowrank_targets: "
            f"{' or '.join(rollout.lowrank_targets_served)}, not {settings.lowrank_targets} (vLLM "
            "serves LoRA on linear layers only, not on the embedding or the output head). Set "
            "--strategy.init_args.lowrank_targets linear, or use --rollout es_lightning.rollout.hf.HFRollout"
        )
    rollout.es_reserve_population(settings.population_size, settings.rank)


def use_lowrank(settings: ESSettings, model_path: str, loading: ModelLoading, rollout: Rollout) -> None:
    """After ``es_init``: make the centre perturb, serve and update with the run's directions."""
    if not isinstance(rollout, PopulationEngine):
        return
    if settings.perturbation != "lowrank":
        rollout.es_use_lowrank(None)
        return
    fixed = embedding_names(model_path, loading) if settings.lowrank_targets == "linear" else frozenset()
    rollout.es_use_lowrank(settings.rank, fixed)


def embedding_names(model_path: str, loading: ModelLoading) -> frozenset[str]:
    """The embedding and output head weight names of the model at ``model_path`` (meta device)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(model_path, **loading.hub_kwargs(model_path))
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config, trust_remote_code=loading.trust_remote_code)
    return embedding_weight_names(model)
