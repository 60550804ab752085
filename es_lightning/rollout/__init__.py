"""Rollout backends: generation behind one contract, holding the ES centre where they generate."""

from __future__ import annotations

from es_lightning.rollout.base import Rollout


def default_rollout() -> Rollout:
    """The rollout a command uses when none is given: a VLLMRollout when vLLM is installed, else an
    HFRollout, with their default settings."""
    from es_lightning.rollout.vllm import VLLMRollout, vllm_available

    if vllm_available():
        return VLLMRollout()
    from es_lightning.rollout.hf import HFRollout

    return HFRollout()
