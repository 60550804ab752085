"""Student's t quantile, for intervals over a few units: updates of one run, or seeds.

The per-update ES diagnostics (:mod:`es_lightning.es.run_signal`) and the report's intervals over
seeds (:mod:`es_lightning.report.stats`) both need it, and neither may pull in scipy for it.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["t_quantile"]


def t_quantile(level: float, df: int) -> float:
    """The ``level`` quantile of Student's t with ``df`` degrees of freedom.

    Exact for ``df`` 1 and 2 (``tan(π(p − ½))`` and ``(2p − 1)/√(2p(1 − p))``); for ``df ≥ 3`` the
    Cornish–Fisher expansion in the normal quantile ``z`` to the ``1/df³`` term (within 0.3 % of the
    tables at ``df = 3``, closer above).

    >>> round(t_quantile(0.95, 1), 3), round(t_quantile(0.95, 2), 3), round(t_quantile(0.95, 10), 2)
    (6.314, 2.92, 1.81)
    """
    if df < 1:
        raise ValueError(f"t_quantile: df must be >= 1, got {df}")
    if df == 1:
        return math.tan(math.pi * (level - 0.5))
    if df == 2:
        return (2 * level - 1) / math.sqrt(2 * level * (1 - level))
    z = NormalDist().inv_cdf(level)
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3
