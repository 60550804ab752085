"""The coverage report: base, ES, GRPO, ES→GRPO and GRPO→ES on one budget, figures and a reading.

``es-lightning report --config recipes/report_cpu.yaml --output_dir DIR`` calls
:func:`~es_lightning.report.command.run_report`, which plans and launches the runs (``runs.py``),
analyses and evaluates their checkpoints, collects the numbers, judges the paper's claims by the
rule modules (``verdicts.py``, ``claims/``) and writes the figures, ``report.json`` and ``REPORT.md``.
"""

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
