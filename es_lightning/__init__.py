"""es-lightning: post-train LLMs on verifiable reasoning tasks with ES and GRPO on Lightning Fabric.

The Python API is the CLI's ``fit`` objects (README.md shows it); names are imported on first use,
so ``import es_lightning`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"
"""The release (pyproject.toml's ``version``; ``es-lightning --version`` prefers the installed
distribution's metadata)."""

_EXPORTS = {
    "Trainer": "es_lightning.training.trainer",
    "TrainerConfig": "es_lightning.training.config",
    "Stage": "es_lightning.training.pipeline",
    "ReasoningModule": "es_lightning.module",
    "EvalConfig": "es_lightning.evaluation.runner",
    "ESStrategy": "es_lightning.strategies",
    "GRPOStrategy": "es_lightning.strategies",
    "GRPOFSDPStrategy": "es_lightning.strategies",
    "VLLMRollout": "es_lightning.rollout.vllm",
    "HFRollout": "es_lightning.rollout.hf",
    "SamplingConfig": "es_lightning.rollout.base",
    "FunctionTask": "es_lightning.tasks",
    "DataSource": "es_lightning.tasks",
    "Task": "es_lightning.tasks",
    "Score": "es_lightning.tasks",
    "Callback": "es_lightning.training.callbacks",
    "ConfigError": "es_lightning.errors",
    "fit": "es_lightning.training.command",
    "evaluate": "es_lightning.evaluation.command",
}
_ALIASES = {"fit": "run_fit", "evaluate": "run_evaluate"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'es_lightning' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), _ALIASES.get(name, name))
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
