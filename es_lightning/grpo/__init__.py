"""GRPO math as pure torch functions: advantages, the clipped surrogate loss, token log-probs.

See :mod:`es_lightning.grpo.advantages` (rewards → Â), :mod:`es_lightning.grpo.loss` (the clipped
objective with the k3 KL penalty; :class:`GRPOLoss` holds its settings),
:mod:`es_lightning.grpo.logprobs` (packing and scoring sequences with the policy) and
:mod:`es_lightning.grpo.settings` (the strategy's settings, each checked once).
"""

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
