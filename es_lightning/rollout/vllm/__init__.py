"""The vLLM backend: one vLLM engine per device behind the rollout contract, holding the ES centre;
vLLM itself is imported only when an engine starts."""

from es_lightning.rollout.vllm.engine import vllm_available
from es_lightning.rollout.vllm.rollout import VLLMRollout

__all__ = ["VLLMRollout", "vllm_available"]
