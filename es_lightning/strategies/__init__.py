"""Fabric strategies: ``es`` (and ``grpo``), registered in Fabric's strategy registry by name."""

from lightning.fabric.strategies import STRATEGY_REGISTRY

from es_lightning.strategies.es import ESStrategy
from es_lightning.strategies.grpo import GRPOStrategy

for _strategy in (ESStrategy, GRPOStrategy):
    if _strategy.strategy_name not in STRATEGY_REGISTRY:
        _strategy.register_strategies(STRATEGY_REGISTRY)

__all__ = ["ESStrategy", "GRPOStrategy"]
