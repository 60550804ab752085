"""Fabric strategies: ``es`` (and ``grpo``), registered in Fabric's strategy registry by name."""

from lightning.fabric.strategies import STRATEGY_REGISTRY

from es_lightning.strategies.es import ESStrategy

if "es" not in STRATEGY_REGISTRY:
    ESStrategy.register_strategies(STRATEGY_REGISTRY)

__all__ = ["ESStrategy"]
