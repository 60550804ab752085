"""Seeded, regenerable Gaussian noise: the directions ε of Evolution Strategies.

ES never stores a perturbation. A population member is named by one integer *member seed* ``s``;
its direction ε_s is a standard-normal tensor per parameter, regenerated on demand from
``(s, parameter name)``::

    eps = noise_like(s, "model.layers.0.mlp.up_proj.weight", shape, device)

so the perturbation θ + σ·ε_s in a rollout worker and the update θ ← θ + α/N·Σ c_s·ε_s in the
trainer see the same ε_s without ever sending it, in any process, on any rank.

Determinism contract
--------------------
* :func:`param_seed` mixes the member seed with a *stable* hash of the parameter name
  (BLAKE2b of the UTF-8 bytes). Python's ``hash()`` is never used: it is salted per process
  (``PYTHONHASHSEED``), so two processes would disagree.
* :func:`noise_like` draws float32 ``N(0, 1)`` with a fresh ``torch.Generator`` on the requested
  device seeded with :func:`param_seed`. The result is bit-identical for the same
  ``(seed, name, shape, device type)`` in any process. **CPU and CUDA generators produce different
  numbers for the same seed** (different algorithms: mt19937 vs Philox), so a perturbation and the
  update that consumes it must generate the noise on the same device type. The helpers in
  :mod:`es_lightning.es.update` always generate on the device of the fp32 *master* tensor.
* Tensors with different names get independent noise; the same tensor under different member seeds
  gets independent noise.
* :func:`seed_schedule` derives the N member seeds of update ``t`` as a pure function of
  ``(run_seed, t)``: resuming at step t reproduces the seeds of step t without any saved RNG state.
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
    """Generator seed of parameter ``name`` under member seed ``seed``.

    A 63-bit non-negative int derived from BLAKE2b over (seed, UTF-8 name); identical across
    processes, machines and Python versions.
    """
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
    """Standard-normal float32 noise ε for parameter ``name`` under member seed ``seed``.

    Deterministic per (seed, name, shape, device *type*); CPU and CUDA give different (each
    reproducible) numbers. ``device=None`` means CPU. ``out``: a float32 tensor of that shape on
    that device to fill instead of allocating one (the same numbers; loops that draw many ε of one
    shape reuse one buffer rather than fault in fresh memory for each).
    """
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
    """The ``n`` member seeds of update ``step`` of the run seeded ``run_seed``.

    A pure function: 63-bit non-negative ints from BLAKE2b of (run_seed, step, i). Different steps
    and different members get different seeds (collisions have probability ~n²/2⁶³). Changing this
    function breaks resuming old runs; the test suite pins a known value.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rs, st = _int_bytes(run_seed), _int_bytes(step)
    return [_blake2b_u63(rs, st, _int_bytes(i), person=b"es-seed-sched") for i in range(n)]
