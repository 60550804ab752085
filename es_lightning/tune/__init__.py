"""Fair tuning: each method's grid on the validation split, one budget, a rule fixed beforehand.

``es-lightning tune --config recipes/tune_cpu.yaml`` (:func:`run_tune`) runs every trial with
``es-lightning fit`` on the validation split (never the test split), chooses each method's
configuration by the rule in the config and writes ``tune.json``, ``TUNE.md`` and recipes of the
chosen configurations for ``es-lightning report``.
"""

from es_lightning.tune.command import run_tune
from es_lightning.tune.config import Selection, TuneMethod

__all__ = ["Selection", "TuneMethod", "run_tune"]
