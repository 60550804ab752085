"""ParameterDrift: how far the weights moved from the start, overall and per parameter kind.

    D_rel = ‖θ_t − θ_0‖₂ / ‖θ_0‖₂

from the current fp32 weights (the ES centre streamed out of the rollout engine, or GRPO's model)
against θ_0 read back tensor by tensor from the starting model's files, so no second copy of the
model is held anywhere; per kind (embedding, attention, mlp, norm, lm_head, other) as in
:mod:`es_lightning.analysis.kinds`. The numbers equal ``es-lightning analyze`` on the same weights.
Logged as ``drift/rel_l2`` and ``drift/rel_l2/<kind>``. In a pipeline, θ_0 stays the first stage's
starting model, so the curve spans the stages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from es_lightning.analysis.drift import DriftAccumulator
from es_lightning.errors import ConfigError
from es_lightning.training.callbacks import Callback
from es_lightning.weight_files import WeightIndex, weight_files

if TYPE_CHECKING:
    from es_lightning.training.trainer import Trainer


class ParameterDrift(Callback):
    """Relative L2 drift of the weights from θ_0 (``drift/rel_l2``, ``drift/rel_l2/<kind>``).

    Args:
        every_n_updates: measure after every this many updates (and after the last).
        reference: the model θ_0 is read from (default: the run's starting model).
    """

    def __init__(self, every_n_updates: int = 10, reference: str | None = None) -> None:
        if every_n_updates < 1:
            raise ConfigError(f"ParameterDrift: every_n_updates must be >= 1, got {every_n_updates}")
        self.every_n_updates = every_n_updates
        self.reference = reference
        self.history: list[dict[str, Any]] = []
        self._index: WeightIndex | None = None

    def on_fit_start(self, trainer: Trainer) -> None:
        self.reference, self._index = reference_weights(self.reference or trainer.module.model)
        self._measured = trainer.step if trainer.step > 0 else -1

    def on_train_batch_end(self, trainer: Trainer, step: int, metrics: dict[str, float]) -> None:
        if step % self.every_n_updates == 0:
            self.measure(trainer)

    def on_fit_end(self, trainer: Trainer, results: dict[str, Any]) -> None:
        if self._measured != trainer.step:
            self.measure(trainer)

    def measure(self, trainer: Trainer) -> dict[str, Any] | None:
        """Stream the current weights (every rank), compare with θ_0 and log (rank 0)."""
        self._measured = trainer.step
        weights = trainer.named_weights()
        if not trainer.fabric.is_global_zero:
            for _ in weights:
                pass
            return None
        drift = DriftAccumulator()
        for name, theta in weights:
            if name not in self._index:
                raise KeyError(f"ParameterDrift: {name!r} is not in the reference model {self.reference}")
            drift.add(name, self._index.get(name), theta.detach().float().cpu())
        result = drift.result()
        metrics = {"drift/rel_l2": result["rel_l2"]}
        metrics.update({f"drift/rel_l2/{k}": v for k, v in result["rel_l2_by_kind"].items() if v is not None})
        trainer.log(metrics)
        self.history.append({"step": trainer.step, **metrics})
        return result

    def state_dict(self) -> dict[str, Any]:
        return {"reference": self.reference, "history": list(self.history)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.reference = self.reference or state.get("reference")
        self.history = list(state.get("history", []))


def reference_weights(model: str) -> tuple[str, WeightIndex]:
    """θ_0 by name, one tensor at a time, from ``model`` (a folder, built-in name or cached hub id)."""
    from es_lightning.models.registry import resolve_model

    return model, WeightIndex(weight_files(resolve_model(model)))
