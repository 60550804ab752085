"""Fabric strategies: ``es`` (and ``grpo``), registered in Fabric's strategy registry by name."""

from lightning.fabric.strategies import STRATEGY_REGISTRY

from es_lightning.strategies.es import ESStrategy
from es_lightning.strategies.grpo import GRPOFSDPStrategy, GRPOStrategy

for _strategy, _name in ((ESStrategy, "es"), (GRPOStrategy, "grpo"), (GRPOFSDPStrategy, "grpo_fsdp")):
    if _name not in STRATEGY_REGISTRY:
        _strategy.register_strategies(STRATEGY_REGISTRY)

__all__ = ["ESStrategy", "GRPOFSDPStrategy", "GRPOStrategy"]
