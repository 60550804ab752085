"""The coverage report: base, ES, GRPO, ES→GRPO and GRPO→ES on one budget, figures and a reading
(``es-lightning report``, :func:`~es_lightning.report.command.run_report`)."""

from es_lightning.report.command import run_report
from es_lightning.report.config import (
    Ablation,
    CurveSettings,
    DriftSettings,
    ForgettingSettings,
    SharpeningSettings,
    TrajectorySettings,
    VerdictSettings,
)

__all__ = [
    "run_report",
    "Ablation",
    "CurveSettings",
    "DriftSettings",
    "ForgettingSettings",
    "SharpeningSettings",
    "TrajectorySettings",
    "VerdictSettings",
]
