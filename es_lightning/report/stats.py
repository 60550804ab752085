"""Numbers over seeds: the mean, the spread (sample standard deviation) and the values themselves.

Every number in the report is a :class:`Stat` over the seeds that produced it. The spread is the
sample standard deviation (``ddof = 1``; 0 for one seed). Differences between two methods are
*paired by seed* (same seed, same data order and populations) before they are averaged.

    >>> stat([0.5, 0.7]).mean, round(stat([0.5, 0.7]).sd, 4)
    (0.6, 0.1414)
    >>> paired_difference({0: 0.7, 1: 0.6}, {0: 0.5, 1: 0.5}).values
    [0.2, 0.1]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from es_lightning.es.student_t import t_quantile as t_quantile  # intervals over seeds
from es_lightning.es.student_t import t_sf as t_sf  # their p-values


@dataclass(frozen=True)
class Stat:
    """A number measured on ``n`` seeds."""

    mean: float
    sd: float
    n: int
    values: list[float]
    seeds: list[int] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mean": self.mean, "sd": self.sd, "n": self.n, "values": self.values}
        if self.seeds is not None:
            out["seeds"] = self.seeds
        return out


def stat(values: Sequence[float] | Mapping[int, float]) -> Stat | None:
    """Mean and sample standard deviation of ``values`` (a list, or ``{seed: value}``); ``None``
    when there are none."""
    seeds = sorted(values) if isinstance(values, Mapping) else None
    xs = [float(values[s]) for s in seeds] if seeds is not None else [float(v) for v in values]
    if not xs:
        return None
    mean = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return Stat(mean=mean, sd=sd, n=len(xs), values=[round(x, 12) for x in xs], seeds=seeds)


def paired_difference(a: Mapping[int, float], b: Mapping[int, float]) -> Stat | None:
    """``a − b`` over the seeds both have (``None`` when they share none)."""
    return stat({s: round(a[s] - b[s], 12) for s in a if s in b})


def paired_ratio(a: Mapping[int, float], b: Mapping[int, float]) -> Stat | None:
    """``a / b`` over the seeds both have with ``b ≠ 0``."""
    return stat({s: a[s] / b[s] for s in a if s in b and b[s] != 0})


def stat_json(value: Stat | None) -> dict[str, Any] | None:
    return None if value is None else value.to_json()


def fmt_number(value: float, scale: float = 1.0, spec: str = ".1f", sign: bool = False) -> str:
    """``value·scale`` in the format ``spec`` (``+`` on positives when ``sign``).

    >>> fmt_number(0.1234, 100), fmt_number(-0.02, 100, sign=True), fmt_number(0.00123, spec=".3g")
    ('12.3', '-2.0', '0.00123')
    """
    return format(value * scale, ("+" if sign else "") + spec)


def fmt_stat(
    data: Mapping[str, Any] | None, scale: float = 1.0, spec: str = ".1f", sign: bool = False
) -> str:
    """``mean ± sd`` of a JSON Stat (only the mean for one seed; ``–`` when absent)."""
    if not data:
        return "–"
    mean = fmt_number(data["mean"], scale, spec, sign)
    return mean if data["n"] < 2 else f"{mean} ± {fmt_number(data['sd'], scale, spec)}"
