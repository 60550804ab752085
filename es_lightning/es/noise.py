"""Seeded, regenerable Gaussian noise: the directions ε of Evolution Strategies.

A member is one integer *member seed* ``s``; its ε_s is regenerated per parameter from
``(s, name)``, so a rollout worker and the trainer see the same ε_s without sending it. The name is
hashed with BLAKE2b (never the salted ``hash()``); **CPU and CUDA generators draw different
numbers**, so the update draws on the fp32 master's device. :func:`seed_schedule` makes update
``t``'s seeds a pure function of ``(run_seed, t)``, so resuming needs no RNG state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch


def blake2b_u64(*parts: int | bytes, person: bytes) -> int:
    """64 bits of BLAKE2b over ``parts``, an int as its decimal digits (any int, negative too),
    every part length-prefixed so ("ab", "c") and ("a", "bc") hash differently."""
    h = hashlib.blake2b(digest_size=8, person=person)
    for part in parts:
        data = part if isinstance(part, bytes) else str(int(part)).encode("ascii")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return int.from_bytes(h.digest(), "little")


def seed63(*parts: int | bytes, person: bytes) -> int:
    """A generator seed from ``parts``: the low 63 bits of :func:`blake2b_u64`."""
    return blake2b_u64(*parts, person=person) & ((1 << 63) - 1)


def param_seed(seed: int, name: str) -> int:
    """Generator seed of parameter ``name`` under ``seed``: 63 bits of BLAKE2b over (seed, name)."""
    if not isinstance(name, str):
        raise TypeError(f"parameter name must be a str, got {type(name).__name__}")
    return seed63(seed, name.encode("utf-8"), person=b"es-param-seed")


def noise_like(
    seed: int,
    name: str,
    shape: Sequence[int] | torch.Size,
    device: torch.device | str | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Standard-normal float32 ε of parameter ``name`` under ``seed``, into ``out`` when given."""
    device = torch.device("cpu") if device is None else torch.device(device)
    gen = torch.Generator(device=device)
    gen.manual_seed(param_seed(seed, name))
    if out is not None:
        if out.dtype != torch.float32 or tuple(out.shape) != tuple(shape) or out.device.type != device.type:
            raise ValueError(
                f"noise_like: out is {out.dtype} {tuple(out.shape)} on {out.device}, "
                f"expected float32 {tuple(shape)} on {device}"
            )
        return torch.randn(tuple(shape), generator=gen, out=out)
    return torch.randn(tuple(shape), generator=gen, device=device, dtype=torch.float32)


def seed_schedule(run_seed: int, step: int, n: int) -> list[int]:
    """The ``n`` member seeds of update ``step`` (BLAKE2b of (run_seed, step, i)); pinned by a test,
    since changing it breaks resuming old runs."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return [seed63(run_seed, step, i, person=b"es-seed-sched") for i in range(n)]
