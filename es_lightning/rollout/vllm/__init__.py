"""The vLLM backend: one vLLM engine per device behind the rollout contract, holding the ES centre.

:class:`VLLMRollout` (``rollout.py``) is built on the engine's life (``engine.py``), the proxy to the
ES centre in the workers (``es_centre.py``), the worker code (``worker.py``) and the engine's cores
and lifeline (``placement.py``, ``lifeline.py``). vLLM itself is imported only when an engine starts.
"""

from es_lightning.rollout.vllm.engine import vllm_available
from es_lightning.rollout.vllm.rollout import VLLMRollout

__all__ = ["VLLMRollout", "vllm_available"]
