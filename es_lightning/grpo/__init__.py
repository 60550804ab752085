"""GRPO math as pure torch functions: advantages, the clipped surrogate loss, token log-probs, and
the strategy's settings."""

from es_lightning.grpo.advantages import ADVANTAGE_MODES, AdvantageMode, compute_advantages
from es_lightning.grpo.logprobs import pack_sequences, token_logprobs_and_entropy
from es_lightning.grpo.loss import GRPOLoss, LossAggregation, LossStats, grpo_loss, k3_kl

__all__ = [
    "ADVANTAGE_MODES",
    "AdvantageMode",
    "GRPOLoss",
    "LossAggregation",
    "LossStats",
    "compute_advantages",
    "grpo_loss",
    "k3_kl",
    "pack_sequences",
    "token_logprobs_and_entropy",
]
