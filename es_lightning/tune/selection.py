"""Choosing each method's configuration by the rule fixed in the tune's config.

``delta_last``: for configuration c and seed s, with m the selection metric on the validation split,

    Δ(c, s) = m_after(c, s) − m_before(c, s)

averaged over seeds; the largest wins (the first in grid order on a tie), among configurations
whose every seed finished::

    >>> choose([Candidate("a", {0: Point(0.2, 0.3)}), Candidate("b", {0: Point(0.2, 0.35)})]).label
    'b'

``over_control`` scores c against its control c₀ (the same grid point with ``selection.control``'s
value, e.g. permuted rewards), S(c, s) = m_after(c, s) − m_after(c₀, s), so a random walk of c's
step size counts nothing; the largest score at or above ``min_score`` wins, else none.

The rule always chooses, so for a ``pass@k`` metric each configuration also gets the paired
bootstrap over validation problems of its score and ``learned`` (the 95 % lower bound above 0),
which says whether the choice learned anything; it does not change the choice.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.report.intervals import ProblemBootstrap
from es_lightning.report.outcomes import run_outcomes
from es_lightning.report.readers import read_after, read_before
from es_lightning.tune.config import Selection

LEVEL = 0.95
"""One-sided level of the ``learned`` reading."""
RESAMPLES = 2000

TIE = 1e-9
"""Scores closer than this are equal (the first in grid order wins)."""


@dataclass(frozen=True)
class Point:
    """The metric of one trial before its first and after its last update."""

    before: float
    after: float

    @property
    def delta(self) -> float:
        return self.after - self.before


@dataclass
class Candidate:
    """One configuration (grid point) of a method, over the seeds it was run with."""

    label: str
    points: dict[int, Point | None]
    """Per seed: the trial's metric, ``None`` when the trial did not finish or lacks it."""

    @property
    def eligible(self) -> bool:
        """Every seed finished with the metric recorded."""
        return bool(self.points) and all(p is not None for p in self.points.values())

    @property
    def score(self) -> float | None:
        """The mean Δ over the seeds (``None`` when not :attr:`eligible`)."""
        if not self.eligible:
            return None
        return sum(p.delta for p in self.points.values() if p is not None) / len(self.points)


def metric_value(evaluation: dict[str, Any] | None, selection: Selection) -> float | None:
    """``evaluation[task][key]`` of the selection metric, or ``None`` when it is absent."""
    value = ((evaluation or {}).get(selection.task) or {}).get(selection.key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def trial_point(run_dir: Path, selection: Selection) -> Point | None:
    """The metric of a finished trial before and after, or ``None`` when either is missing."""
    before = metric_value(read_before(run_dir), selection)
    after = metric_value(read_after(run_dir), selection)
    return None if before is None or after is None else Point(before, after)


def choose(candidates: list[Candidate]) -> Candidate | None:
    """The eligible candidate with the largest score (the first within :data:`TIE`), or ``None``."""
    best: Candidate | None = None
    for candidate in candidates:
        score = candidate.score
        if score is not None and (best is None or score > best.score + TIE):  # type: ignore[operator]
            best = candidate
    return best


def candidates_of(records: list[dict[str, Any]]) -> list[Candidate]:
    """One method's configurations, in the order of its trial records."""
    by_label: dict[str, dict[int, Point | None]] = {}
    for record in records:
        point = None if record["before"] is None else Point(record["before"], record["after"])
        by_label.setdefault(record["label"], {})[record["seed"]] = point
    return [Candidate(label, points) for label, points in by_label.items()]


def control_pairs(points: dict[str, Any], control: dict[str, Any]) -> dict[str, str]:
    """``{label: its control's label}`` for every grid point that is not a control."""
    ((parameter, value),) = control.items()
    by_settings = {point.settings: label for label, point in points.items()}
    pairs = {}
    for label, point in points.items():
        settings = dict(point.settings)
        if parameter not in settings:
            raise ConfigError(f"tune: selection.control parameter {parameter!r} is not in the grid")
        if str(settings[parameter]) == str(value):
            continue
        twin = tuple((p, value if p == parameter else v) for p, v in point.settings)
        if twin not in by_settings:
            raise ConfigError(
                f"tune: grid point {label} has no control ({parameter} = {value} is not in the grid)"
            )
        pairs[label] = by_settings[twin]
    return pairs


def over_control(records: list[dict[str, Any]], pairs: dict[str, str]) -> list[dict[str, Any]]:
    """Records of configuration − control, so Δ is S(c, s)."""
    found = {(r["label"], r["seed"]): r for r in records}
    out = []
    for label, twin in pairs.items():
        for seed in sorted({r["seed"] for r in records}):
            mine, theirs = found.get((label, seed)), found.get((twin, seed))
            done = mine and theirs and mine["before"] is not None and theirs["before"] is not None
            outcomes = None
            if done and mine.get("outcomes") and theirs.get("outcomes"):
                a, b = mine["outcomes"], theirs["outcomes"]
                if a["problems"] == b["problems"] and a["m"] == b["m"]:
                    outcomes = {**a, "before": b["after"]}  # the control's after stands as the before
            before, after = (theirs["after"], mine["after"]) if done else (None, None)
            out.append({"label": label, "seed": seed, "before": before, "after": after, "outcomes": outcomes})
    return out


def trial_outcomes(run_dir: Path, task: str) -> dict[str, Any] | None:
    """A trial's per-problem correct counts before and after, or ``None``."""
    before, after = run_outcomes(run_dir, "before", task), run_outcomes(run_dir, "after", task)
    if before is None or after is None or before.m != after.m or before.problems != after.problems:
        return None
    return {"problems": before.problems, "m": before.m, "before": before.counts, "after": after.counts}


def delta_interval(records: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The paired bootstrap interval of a configuration's Δ ``pass@k`` over its seeds, or ``None``."""
    match = re.fullmatch(r"pass@(\d+)", key)
    found = [r.get("outcomes") for r in records]
    if match is None or not found or any(o is None for o in found):
        return None
    first = found[0]
    if any(o["problems"] != first["problems"] or o["m"] != first["m"] for o in found):
        return None
    counts = {tag: {str(r["seed"]): r["outcomes"][tag] for r in records} for tag in ("before", "after")}
    block = {"m": first["m"], "problems": first["problems"], "counts": counts}
    k = int(match[1])
    boot = ProblemBootstrap(block, LEVEL, RESAMPLES, seed=0)
    interval = boot.difference("after", "before", k) if 1 <= k <= boot.m else None
    return None if interval is None else interval.to_json()
