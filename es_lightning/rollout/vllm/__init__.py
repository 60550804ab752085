"""The vLLM backend: one vLLM engine per device behind the rollout contract, holding the ES centre.

* :mod:`~es_lightning.rollout.vllm.rollout`: :class:`VLLMRollout` (generation, scoring, weight loads);
* :mod:`~es_lightning.rollout.vllm.engine`: the engine's settings, start, watched calls and end;
* :mod:`~es_lightning.rollout.vllm.es_centre`: the rollout's ``es``, a proxy to the ES centre in the workers;
* :mod:`~es_lightning.rollout.vllm.worker`: the code that runs inside each vLLM worker process;
* :mod:`~es_lightning.rollout.vllm.placement` and :mod:`~es_lightning.rollout.vllm.lifeline`: the
  cores and GPU an engine gets, and engine processes that end with their trainer.

Recipes name it ``es_lightning.rollout.vllm.VLLMRollout`` (or ``--rollout vllm``); vLLM itself is
imported only when an engine starts.
"""

from es_lightning.rollout.vllm.engine import vllm_available
from es_lightning.rollout.vllm.rollout import VLLMRollout

__all__ = ["VLLMRollout", "vllm_available"]
