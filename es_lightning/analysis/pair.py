"""Drift, sparsity and top-k of one checkpoint against its starting model, streamed tensor by
tensor, θ_0 read back by name, so a pair of models needs about one model's memory::

    results = analyze_pair(weight_files(base), iter_weights(weight_files(ckpt)), taus, top_k=100,
                           views=("stored", "bf16"))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch

from es_lightning.analysis.delta import View, in_view, weight_delta
from es_lightning.analysis.drift import DriftAccumulator
from es_lightning.analysis.sparsity import SparsityAccumulator
from es_lightning.analysis.topk import TopKAccumulator
from es_lightning.errors import ConfigError
from es_lightning.weight_files import WeightIndex

TensorSpec = tuple[tuple[int, ...], str]
"""A tensor's shape and safetensors dtype (``"BF16"``, ``"F32"``), read from the file header."""


class PairAnalyzer:
    """Drift, sparsity and top-k of the updates of one view, fed tensor by tensor.

    Args:
        taus: thresholds τ of s_τ (each > 0).
        top_k: how many of the largest updates to keep (>= 1).
        view: ``stored`` (weights as given, fp32) or ``bf16`` (both sides rounded to bfloat16 first).
    """

    def __init__(self, taus: Sequence[float], top_k: int, view: View = "stored") -> None:
        in_view(torch.zeros(0), view)  # refuses an unknown view
        self.view = view
        self.drift = DriftAccumulator()
        self.sparsity = SparsityAccumulator(taus)
        self.top = TopKAccumulator(top_k)

    def add(self, name: str, theta0: torch.Tensor, theta: torch.Tensor) -> None:
        """Add tensor ``name``: its starting value ``theta0`` and current value ``theta``."""
        theta0, theta = in_view(theta0, self.view), in_view(theta, self.view)
        delta = weight_delta(theta0, theta, name)
        if not bool(torch.isfinite(delta).all()):
            raise ValueError(f"{name}: the update θ − θ_0 has NaN or infinite values")
        for accumulator in (self.drift, self.sparsity, self.top):
            accumulator.add(name, theta0, theta, delta)

    def merge(self, other: PairAnalyzer) -> PairAnalyzer:
        """Add ``other``'s tensors (another shard of the same model, same settings); returns ``self``."""
        self.drift.merge(other.drift)
        self.sparsity.merge(other.sparsity)
        self.top.merge(other.top)
        return self

    def result(self) -> dict[str, Any]:
        """The fields of the three accumulators in one dict, plus ``"view"``."""
        return {"view": self.view, **self.drift.result(), **self.sparsity.result(), **self.top.result()}


def analyze_pair(
    base: Sequence[str] | WeightIndex,
    weights: Iterable[tuple[str, torch.Tensor]],
    taus: Sequence[float],
    top_k: int,
    views: Sequence[View] = ("stored",),
    progress: Any = None,
) -> dict[str, dict[str, Any]]:
    """Compare the streamed ``weights`` (θ) with ``base`` (θ_0) in each of ``views`` from one pass;
    ValueError naming a tensor missing, repeated, reshaped or with a non-finite update."""
    index = base if isinstance(base, WeightIndex) else WeightIndex(base)
    analyzers = {view: PairAnalyzer(taus, top_k, view) for view in views}
    seen: set[str] = set()
    for name, theta in progress(weights) if progress else weights:
        if name in seen:
            raise ValueError(f"{name}: given twice in the checkpoint's weights")
        if name not in index:
            raise ValueError(f"{name}: in the checkpoint but not in the base model")
        seen.add(name)
        theta0 = index.get(name)
        for analyzer in analyzers.values():
            analyzer.add(name, theta0, theta)
    missing = sorted(set(index.keys()) - seen)
    if missing:
        raise ValueError(f"{len(missing)} tensors of the base model are not in the checkpoint: {missing[:5]}")
    return {view: analyzer.result() for view, analyzer in analyzers.items()}


def tensor_specs(files: Sequence[str]) -> dict[str, TensorSpec]:
    """``{name: (shape, dtype)}`` of every tensor in ``files``, from the headers (no data read)."""
    from safetensors import safe_open

    specs: dict[str, TensorSpec] = {}
    for f in files:
        with safe_open(f, framework="pt", device="cpu") as handle:
            for name in handle.keys():
                piece = handle.get_slice(name)
                specs[name] = (tuple(piece.get_shape()), piece.get_dtype())
    return specs


def check_pair(
    base: dict[str, TensorSpec], other: dict[str, TensorSpec], base_label: str, label: str
) -> None:
    """Refuse (ValueError), before any tensor is read, a pair whose names or shapes differ."""
    only_base, only_other = sorted(set(base) - set(other)), sorted(set(other) - set(base))
    if only_other:
        raise ConfigError(
            f"{len(only_other)} tensors of {label} are not in {base_label}, e.g. {only_other[:3]}"
        )
    if only_base:
        raise ConfigError(
            f"{len(only_base)} tensors of {base_label} are not in {label}, e.g. {only_base[:3]}"
        )
    for name, (shape, _) in other.items():
        if shape != base[name][0]:
            raise ConfigError(
                f"{name}: shape {list(shape)} in {label} but {list(base[name][0])} in {base_label}"
            )
