"""Magnitude-thresholded checkpoints: θ_τ,i = θ_i if |Δθ_i| > τ else θ_0,i, each coordinate the
checkpoint's or the base's bit for bit, as a plain HF folder with ``thresholded.json``."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

from es_lightning.analysis.delta import View, in_view, weight_delta
from es_lightning.analysis.pair import TensorSpec, tensor_specs
from es_lightning.checkpoint import CALLBACKS_FILE, HPARAMS_FILE, STATE_FILE
from es_lightning.training.model_card import CARD_FILE
from es_lightning.weight_files import WeightIndex, iter_weights, served_files, write_weights

SAFETENSORS_DTYPES = {
    "BF16": torch.bfloat16,
    "F16": torch.float16,
    "F32": torch.float32,
    "F64": torch.float64,
}
_NOT_COPIED = {STATE_FILE, HPARAMS_FILE, CALLBACKS_FILE, CARD_FILE}  # the card describes the checkpoint
_WEIGHT_SUFFIXES = (".safetensors", ".safetensors.index.json", ".bin", ".bin.index.json", ".pt", ".pth")


def served_dtype(specs: dict[str, TensorSpec]) -> torch.dtype:
    """The floating dtype most of a model's served tensors have (``specs`` from their headers)."""
    counts = Counter(dtype for _, dtype in specs.values() if dtype in SAFETENSORS_DTYPES)
    if not counts:
        raise ValueError("no floating-point tensors in the served weights")
    return SAFETENSORS_DTYPES[counts.most_common(1)[0][0]]


def copy_model_meta(source: Path, target: Path) -> None:
    """Copy ``source``'s top-level config and tokenizer files (not weights, not training state)."""
    target.mkdir(parents=True, exist_ok=True)
    for item in sorted(Path(source).iterdir()):
        if item.is_file() and item.name not in _NOT_COPIED and not item.name.endswith(_WEIGHT_SUFFIXES):
            shutil.copy2(item, target / item.name)


def export_thresholded(
    base: WeightIndex,
    checkpoint_files: Sequence[str],
    meta_folder: Path,
    tau: float,
    folder: Path,
    serving_dtype: torch.dtype,
    view: View = "stored",
    provenance: dict[str, Any] | None = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
) -> dict[str, Any]:
    """Write θ_τ (decided in ``view``) to ``folder`` in ``serving_dtype`` and return its counts."""
    if not tau > 0:
        raise ValueError(f"--export_thresholded: τ must be > 0, got {tau}")
    counts = {"numel": 0, "nonzero": 0, "kept": 0}

    def thresholded() -> Iterator[tuple[str, torch.Tensor]]:
        stream = iter_weights(checkpoint_files)
        for name, theta in progress(stream) if progress else stream:
            theta0 = base.get(name)
            magnitude = weight_delta(in_view(theta0, view), in_view(theta, view), name).abs()
            keep = magnitude > torch.tensor(tau, dtype=magnitude.dtype)
            counts["numel"] += magnitude.numel()
            counts["nonzero"] += int((magnitude > 0).sum().item())
            counts["kept"] += int(keep.sum().item())
            yield name, torch.where(keep, theta, theta0)

    folder = Path(folder)
    tmp = folder.with_name(f".tmp-{folder.name}")
    shutil.rmtree(tmp, ignore_errors=True)
    copy_model_meta(meta_folder, tmp)
    write_weights(tmp, thresholded(), serving_dtype, None)
    reverted = counts["nonzero"] - counts["kept"]
    record = {
        "tau": tau,
        "folder": str(folder),
        "view": view,
        **counts,
        "reverted": reverted,
        "s_tau": reverted / counts["nonzero"] if counts["nonzero"] else None,
    }
    written = {**(provenance or {}), **record, "serving_dtype": str(serving_dtype).removeprefix("torch.")}
    (tmp / "thresholded.json").write_text(json.dumps(written, indent=2))
    if folder.exists():
        shutil.rmtree(folder)
    tmp.rename(folder)
    return record


def export_all(
    taus: Sequence[float],
    base: WeightIndex,
    checkpoint_files: Sequence[str],
    checkpoint_folder: Path,
    root: Path,
    view: View = "stored",
    keep: bool = True,
    provenance: dict[str, Any] | None = None,
    bar: Callable[[str], Callable[[Iterable[Any]], Iterable[Any]]] | None = None,
) -> Iterator[dict[str, Any]]:
    """Export θ_τ for each τ lazily, yielding each record; ``keep=False`` deletes each after use."""
    serving = served_dtype(tensor_specs(served_files(checkpoint_folder)))
    for tau in taus:
        folder = Path(root) / f"thresholded-{tau:g}"  # thresholded-0.001 for τ = 1e-3
        progress = bar(f"export τ={tau:g}") if bar else None
        yield export_thresholded(
            base, checkpoint_files, checkpoint_folder, tau, folder, serving, view, provenance, progress
        )
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
