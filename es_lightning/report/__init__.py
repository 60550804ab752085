"""The coverage report: base, ES, GRPO, ES→GRPO and GRPO→ES on one budget, figures and a reading.

``es-lightning report --config recipes/report_cpu.yaml --output_dir DIR`` calls :func:`run_report`:

- ``config.py``: the report recipe's grouped settings (ablations, curves, drift) and the resolved plan;
- ``runs.py``: one ``es-lightning fit`` subprocess per method, seed and ablation value, reused when finished;
- ``analysis.py``: ``es-lightning analyze`` on the final checkpoints (drift, s_τ, layer attribution);
- ``readers.py``: reading run folders; ``stats.py``: mean ± sd over seeds; ``pareto.py``: dominance;
- ``collect.py``: the numbers; ``claims.py``: the paper's claims judged against them;
- ``figures.py``, ``markdown.py``: the PNGs and ``REPORT.md``; ``command.py``: :func:`run_report`.
"""

from es_lightning.report.command import run_report
from es_lightning.report.config import Ablation, CurveSettings, DriftSettings

__all__ = ["run_report", "Ablation", "CurveSettings", "DriftSettings"]
