"""Fair tuning: each method's grid on the validation split, one budget, a rule fixed beforehand
(``es-lightning tune``, :func:`run_tune`).
"""

from es_lightning.tune.command import run_tune
from es_lightning.tune.config import Selection, TuneMethod

__all__ = ["Selection", "TuneMethod", "run_tune"]
