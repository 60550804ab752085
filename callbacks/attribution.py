"""LayerAttribution: where the largest updates |Δθ| = |θ − θ_0| of each checkpoint live.

At every checkpoint, the top-k coordinates of |Δθ| over the whole model (the checkpoint's fp32
master against θ_0, both read from disk tensor by tensor) are counted per parameter kind and per
layer, as ``es-lightning analyze`` does. The paper finds ES's largest updates in LayerNorm and the
attention projections, GRPO's in the embedding and lm_head. Logs ``attribution/top_k/<kind>``
(counts), a markdown table in TensorBoard's text tab, and writes
``{output_dir}/analysis/attribution-step-NNNNNN.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from es_lightning.analysis.topk import TopKAccumulator
from es_lightning.callbacks.drift import reference_weights
from es_lightning.checkpoint import Checkpoint
from es_lightning.errors import ConfigError
from es_lightning.training.callbacks import Callback

if TYPE_CHECKING:
    from es_lightning.training.trainer import Trainer


class LayerAttribution(Callback):
    """Top-k |Δθ| per kind and per layer at every checkpoint.

    Args:
        top_k: how many of the largest coordinates to attribute.
        reference: the model θ_0 is read from (default: the run's starting model).
    """

    def __init__(self, top_k: int = 100, reference: str | None = None) -> None:
        if top_k < 1:
            raise ConfigError(f"LayerAttribution: top_k must be >= 1, got {top_k}")
        self.top_k = top_k
        self.reference = reference

    def on_fit_start(self, trainer: Trainer) -> None:
        self.reference, self._index = reference_weights(self.reference or trainer.module.model)

    def on_checkpoint(self, trainer: Trainer, step: int, path: Path) -> None:
        if not trainer.fabric.is_global_zero:
            return
        top = TopKAccumulator(self.top_k)
        for name, theta in Checkpoint(path).named_weights("stored"):
            top.add(name, self._index.get(name), theta)
        result = top.result()
        by_layer: dict[str, int] = {}
        for entry in result["top_k"]:
            key = "none" if entry["layer"] is None else str(entry["layer"])
            by_layer[key] = by_layer.get(key, 0) + 1
        record = {
            "step": step,
            "checkpoint": str(path),
            "reference": self.reference,
            **result,
            "top_k_by_layer": by_layer,
        }
        out = trainer.output_dir / "analysis" / f"attribution-step-{step:06d}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(record, indent=2))
        trainer.log(
            {f"attribution/top_k/{k}": float(v) for k, v in result["top_k_by_kind"].items()}, step=step
        )
        _log_text(trainer, step, markdown_table(result["top_k_by_kind"], by_layer, self.top_k))


def markdown_table(by_kind: dict[str, int], by_layer: dict[str, int], k: int) -> str:
    """The counts as a markdown table (kind rows, then layer rows)."""
    lines = [f"| top-{k} \\|Δθ\\| in | count |", "|---|---|"]
    lines += [f"| {kind} | {n} |" for kind, n in by_kind.items()]
    lines += [
        f"| layer {layer} | {n} |"
        for layer, n in sorted(by_layer.items(), key=lambda kv: (kv[0] == "none", kv[0].zfill(4)))
    ]
    return "\n".join(lines)


def _log_text(trainer: Trainer, step: int, text: str) -> None:
    from lightning.fabric.loggers import TensorBoardLogger

    for logger in trainer.fabric.loggers:
        if isinstance(logger, TensorBoardLogger):
            logger.experiment.add_text("attribution/top_k", text, global_step=trainer.global_step(step))
