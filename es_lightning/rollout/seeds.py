"""Sampling seeds: one independent random stream per (call seed, prompt, sample).

The contract of both built-in rollouts: prompt i of a call seeded ``seed`` is sampled as if it
were prompt 0 of a call seeded ``seed + i``, so a call over prompts k.. seeded ``seed + k``
reproduces those prompts' samples (the evaluation runner's chunks and shards rely on it,
:mod:`es_lightning.evaluation.runner`).

Within a prompt the responses must not share random numbers with other prompts' responses.
vLLM's ``n > 1`` fan-out seeds child j of a request ``seed + j``
(``vllm/v1/engine/parallel_sampling.py``), so with ``seed + i`` per prompt, sample j of prompt i
and sample j − 1 of prompt i + 1 drew the same numbers and their rewards correlated (measured with
``benchmarks/measures/sample_streams.py``, BENCHMARKS.md). Instead::

    sample_seed(seed, i, j) = BLAKE2b(seed + i, j) mod 2⁶³

and the vLLM rollout sends each response as its own request (``n = 1``) with that seed. The
transformers rollout samples a chunk of prompts in one ``generate`` call from the torch
generator (its rows draw different numbers); the chunk starting at prompt k is seeded
:func:`chunk_seed` = BLAKE2b(seed + k). Hashing also matters because torch's CPU generator keeps
only the low 32 bits of a seed (seeds 5 and 5 + 2³² give the same numbers).

Streams that must differ across calls — ES members with independent sampling seeds, GRPO's ranks —
get call seeds :data:`STREAM_STRIDE` apart (:func:`spaced_seeds`), so their prompt keys
``seed + i`` never meet for fewer than 2³² prompts. Two distinct streams then coincide only by a
hash collision (on CPU generators: of 32 bits, about (streams)²/2³³ pairs per update, ~0.1 pair
among 32k responses). Streams meant to be shared stay shared: ES members with common sampling
seeds get one call seed, so each (prompt, sample) has the same stream in every member — common
random numbers.
"""

from __future__ import annotations

import hashlib

__all__ = ["STREAM_STRIDE", "chunk_seed", "sample_seed", "sample_seeds", "spaced_seeds"]

_MASK63 = (1 << 63) - 1

STREAM_STRIDE = 1 << 32
"""Distance between call seeds that must not share streams: more than any call's prompt count."""


def _hash63(*parts: int, person: bytes) -> int:
    h = hashlib.blake2b(digest_size=8, person=person)
    for part in parts:
        data = str(int(part)).encode("ascii")
        h.update(len(data).to_bytes(8, "little"))  # length prefix: (1, 23) ≠ (12, 3)
        h.update(data)
    return int.from_bytes(h.digest(), "little") & _MASK63


def sample_seed(seed: int, prompt: int, sample: int) -> int:
    """The generator seed of response ``sample`` to prompt ``prompt`` of a call seeded ``seed``:
    a 63-bit non-negative int of (``seed + prompt``, ``sample``), the same in every process."""
    return _hash63(seed + prompt, sample, person=b"es-sample-seed")


def sample_seeds(seed: int | None, n_prompts: int, n: int) -> list[list[int | None]]:
    """``[prompt][sample]`` seeds of a call with ``n_prompts`` prompts and ``n`` responses each
    (all ``None`` when ``seed`` is ``None``: unseeded sampling)."""
    if n_prompts < 0 or n < 1:
        raise ValueError(f"sample_seeds: need n_prompts >= 0 and n >= 1, got {n_prompts} and {n}")
    return [[None if seed is None else sample_seed(seed, i, j) for j in range(n)] for i in range(n_prompts)]


def chunk_seed(seed: int, first_prompt: int) -> int:
    """The torch seed of the transformers rollout's chunk that starts at prompt ``first_prompt``
    (a function of ``seed + first_prompt`` only, as the contract above asks)."""
    return _hash63(seed + first_prompt, person=b"es-chunk-seed")


def spaced_seeds(base: int, count: int) -> list[int]:
    """``count`` call seeds whose streams never meet: ``base + k·STREAM_STRIDE``."""
    if count < 0:
        raise ValueError(f"spaced_seeds: count must be >= 0, got {count}")
    return [base + k * STREAM_STRIDE for k in range(count)]
