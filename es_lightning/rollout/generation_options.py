"""The generation options beyond temperature and top-p (``top_k``, ``min_p``, CTRL's
``repetition_penalty``, ``generation_kwargs``), checked once for every backend."""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from es_lightning.errors import ConfigError

RESERVED_GENERATION_KWARGS = frozenset(
    # the sampling settings themselves, under either backend's name
    "n num_return_sequences temperature do_sample top_p top_k min_p repetition_penalty max_tokens "
    "max_new_tokens seed stop stop_strings logprobs output_logits "
    # what the rollouts pass themselves
    "input_ids attention_mask pad_token_id eos_token_id return_dict_in_generate logits_processor "
    "tokenizer prompt_logprobs".split()
)
"""Keys ``generation_kwargs`` may not hold: a first-class setting or a rollout's own argument."""


def check_generation_options(
    where: str, top_k: Any, min_p: Any, repetition_penalty: Any, generation_kwargs: Any
) -> None:
    """Refuse (ConfigError) a bad generation option, naming it as ``{where}.{option}``."""
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 0:
        raise ConfigError(f"{where}.top_k must be an int >= 0 (0: every token), got {top_k!r}")
    if not isinstance(min_p, numbers.Real) or not 0.0 <= float(min_p) <= 1.0:
        raise ConfigError(f"{where}.min_p must be in [0, 1] (0: off), got {min_p!r}")
    if (
        not isinstance(repetition_penalty, numbers.Real)
        or not math.isfinite(repetition_penalty)
        or repetition_penalty <= 0
    ):
        raise ConfigError(
            f"{where}.repetition_penalty must be a finite number > 0 (1: off), got {repetition_penalty!r}"
        )
    if generation_kwargs is None:
        return
    if not isinstance(generation_kwargs, Mapping) or not all(isinstance(k, str) for k in generation_kwargs):
        raise ConfigError(
            f"{where}.generation_kwargs must be a mapping of keyword names to values, got {generation_kwargs!r}"
        )
    reserved = sorted(set(generation_kwargs) & RESERVED_GENERATION_KWARGS)
    if reserved:
        raise ConfigError(
            f"{where}.generation_kwargs may not set {reserved}: set the sampling options themselves "
            "(temperature, top_p, top_k, min_p, repetition_penalty, max_tokens, seed, stop, n) instead"
        )


def check_known_kwargs(backend: str, generation_kwargs: Mapping[str, Any], known: set[str]) -> None:
    """Refuse ``generation_kwargs`` keys that ``backend`` does not know, naming them and the rest."""
    unknown = sorted(set(generation_kwargs) - known)
    if unknown:
        raise ConfigError(f"generation_kwargs: {backend} knows no {unknown}; its options are {sorted(known)}")
