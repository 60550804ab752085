"""Sampling seeds: one independent random stream per (call seed, prompt, sample).

Prompt i of a call seeded ``seed`` samples as prompt 0 of a call seeded ``seed + i``, so chunks and
shards reproduce one call; response j uses ``sample_seed(seed, i, j) = BLAKE2b(seed + i, j)`` (vLLM's
own fan-out would give neighbouring prompts the same numbers). Streams that must differ get call
seeds :data:`STREAM_STRIDE` apart; streams meant to be shared get one call seed.
"""

from __future__ import annotations

from es_lightning.es.noise import seed63

STREAM_STRIDE = 1 << 32
"""Distance between call seeds that must not share streams: more than any call's prompt count."""


def sample_seed(seed: int, prompt: int, sample: int) -> int:
    """The generator seed of response ``sample`` to ``prompt`` of a call seeded ``seed`` (63 bits)."""
    return seed63(seed + prompt, sample, person=b"es-sample-seed")


def sample_seeds(seed: int | None, n_prompts: int, n: int) -> list[list[int | None]]:
    """``[prompt][sample]`` seeds of a call (all ``None`` when ``seed`` is ``None``)."""
    if n_prompts < 0 or n < 1:
        raise ValueError(f"sample_seeds: need n_prompts >= 0 and n >= 1, got {n_prompts} and {n}")
    return [[None if seed is None else sample_seed(seed, i, j) for j in range(n)] for i in range(n_prompts)]


def chunk_seed(seed: int, first_prompt: int) -> int:
    """The torch seed of the transformers rollout's chunk starting at prompt ``first_prompt``."""
    return seed63(seed + first_prompt, person=b"es-chunk-seed")


def spaced_seeds(base: int, count: int) -> list[int]:
    """``count`` call seeds whose streams never meet: ``base + k·STREAM_STRIDE``."""
    if count < 0:
        raise ValueError(f"spaced_seeds: count must be >= 0, got {count}")
    return [base + k * STREAM_STRIDE for k in range(count)]
