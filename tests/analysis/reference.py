"""Plain NumPy references for the analysis tests (no torch in the arithmetic)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from es_lightning.analysis.kinds import parameter_kind


def bf16_round(x: np.ndarray) -> np.ndarray:
    """fp32 → the nearest bfloat16 value (ties to even), by hand on the bits; returned as fp32."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    bias = ((bits >> 16) & 1) + 0x7FFF
    return (((bits + bias) >> 16) << 16).astype(np.uint32).view(np.float32)


def load(files: list[str] | list[Path]) -> dict[str, np.ndarray]:
    """Every tensor of safetensors ``files`` as fp32 NumPy (bf16 widened exactly)."""
    from safetensors.torch import load_file

    out = {}
    for f in files:
        out.update({k: v.to(torch.float32).numpy() for k, v in load_file(str(f)).items()})
    return out


def reference(base: dict[str, np.ndarray], ckpt: dict[str, np.ndarray], taus: list[float], k: int) -> dict:
    """rel-L2 (overall, by kind), nonzero, s_τ and the top k by brute force over the whole model."""
    names = sorted(base)
    delta = {n: ckpt[n].astype(np.float32) - base[n].astype(np.float32) for n in names}
    by_kind: dict[str, list[float]] = {}  # kind -> [Σ Δ², Σ θ_0²] in float64
    for n in names:
        sums = by_kind.setdefault(parameter_kind(n), [0.0, 0.0])
        sums[0] += float(np.sum(delta[n].astype(np.float64) ** 2))
        sums[1] += float(np.sum(base[n].astype(np.float64) ** 2))
    flat = np.concatenate([np.abs(delta[n]).ravel() for n in names])
    offsets = np.cumsum([0] + [delta[n].size for n in names])
    nonzero = int((flat > 0).sum())
    order = np.argsort(-flat, kind="stable")
    order = order[flat[order] > 0][:k]
    top = []
    for pos in order:
        i = int(np.searchsorted(offsets, pos, side="right") - 1)
        top.append((names[i], int(pos - offsets[i]), float(flat[pos])))
    kinds = {}
    for name, _, _ in top:
        kinds[parameter_kind(name)] = kinds.get(parameter_kind(name), 0) + 1
    return {
        "rel_l2": math.sqrt(sum(v[0] for v in by_kind.values()) / sum(v[1] for v in by_kind.values())),
        "rel_l2_by_kind": {kind: math.sqrt(v[0] / v[1]) for kind, v in by_kind.items()},
        "nonzero": nonzero,
        "numel": int(flat.size),
        "sparsity": {f"{t:g}": int(((flat > 0) & (flat <= np.float32(t))).sum()) / nonzero for t in taus},
        "top": top,
        "top_k_by_kind": kinds,
    }
