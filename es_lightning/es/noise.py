"""Seeded, regenerable Gaussian noise: the directions ε of Evolution Strategies.

ES never stores a perturbation. A member is named by one integer *member seed* ``s``; its direction
ε_s is a standard-normal tensor per parameter, regenerated on demand from ``(s, parameter name)``,
so a rollout worker and the trainer see the same ε_s without ever sending it.

Determinism contract: :func:`param_seed` hashes the name with BLAKE2b (never the per-process salted
``hash()``); :func:`noise_like` draws float32 N(0, 1) from a fresh ``torch.Generator`` and is
bit-identical for the same ``(seed, name, shape, device type)``. **CPU and CUDA generators produce
different numbers**, so the update always draws on the device of the fp32 master tensor.
:func:`seed_schedule` makes the seeds of update ``t`` a pure function of ``(run_seed, t)``, so a
resumed run needs no saved RNG state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch

__all__ = ["param_seed", "noise_like", "seed_schedule"]

_MASK63 = (1 << 63) - 1


def _blake2b_u63(*parts: bytes, person: bytes) -> int:
    h = hashlib.blake2b(digest_size=8, person=person)
    for part in parts:
        # Length-prefix every part so ("ab", "c") and ("a", "bc") hash differently.
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return int.from_bytes(h.digest(), "little") & _MASK63


def _int_bytes(x: int) -> bytes:
    """Canonical bytes of an arbitrary (possibly negative) Python int."""
    return str(int(x)).encode("ascii")


def param_seed(seed: int, name: str) -> int:
    """Generator seed of parameter ``name`` under member seed ``seed``: 63 bits of BLAKE2b over
    (seed, UTF-8 name), the same in every process, machine and Python version."""
    if not isinstance(name, str):
        raise TypeError(f"parameter name must be a str, got {type(name).__name__}")
    return _blake2b_u63(_int_bytes(seed), name.encode("utf-8"), person=b"es-param-seed")


def noise_like(
    seed: int,
    name: str,
    shape: Sequence[int] | torch.Size,
    device: torch.device | str | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Standard-normal float32 ε for parameter ``name`` under member seed ``seed`` (CPU when
    ``device`` is ``None``); ``out``: a buffer of that shape and device to fill instead."""
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
    """The ``n`` member seeds of update ``step``: 63-bit ints from BLAKE2b of (run_seed, step, i).

    Changing this function breaks resuming old runs; the test suite pins a known value.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rs, st = _int_bytes(run_seed), _int_bytes(step)
    return [_blake2b_u63(rs, st, _int_bytes(i), person=b"es-seed-sched") for i in range(n)]
