"""The coverage report: base, ES, GRPO, ES→GRPO and GRPO→ES on one budget, figures and a reading.

``es-lightning report --config recipes/report_cpu.yaml --output_dir DIR`` calls :func:`run_report`:

- ``config.py``: the report recipe's grouped settings (ablations, curves, drift, trajectory,
  sharpening, forgetting, verdicts) and the resolved plan;
- ``runs.py``: one ``es-lightning fit`` subprocess per method, seed and ablation value, reused when finished;
- ``analysis.py``: ``es-lightning analyze`` on the final checkpoints (drift, s_τ, attribution, the null);
- ``trajectory.py``: GRPO's checkpoints at chosen updates, evaluated with the final protocol;
  ``sharpening.py``: the base at other temperatures; ``forgetting.py``, ``forgetting_path.py``: the
  forgetting setting and its trajectory;
- ``readers.py``, ``outcomes.py``: reading run folders and the per-problem correct counts;
- ``collect.py``, ``compute.py``: the numbers; ``stats.py``: mean ± sd over seeds;
- ``bootstrap.py``, ``intervals.py``, ``matched.py``: the paired bootstrap over problems, t and
  update intervals, Pass@K at matched Pass@1 on GRPO's trajectory; ``pareto.py``: dominance;
- ``verdicts.py``: the rules; ``claims/``: the paper's claims judged by them;
- ``figures*.py``, ``markdown.py``, ``tables.py``: the PNGs and ``REPORT.md``; ``command.py``:
  :func:`run_report`; ``rerender.py``: ``--from_json``.
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
