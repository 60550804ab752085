"""The tuning's settings: the ``methods:`` and ``selection:`` blocks of a tune recipe, whose field
docstrings are the ``--help`` text; everything is checked before any trial runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from es_lightning.errors import ConfigError

GridValue = int | float | str | bool
"""One value a grid parameter takes (written on the command line as ``--parameter value``)."""

FORCED = (
    "config",
    "evaluation",
    "evaluation.split",
    "callbacks",
    "trainer.output_dir",
    "trainer.seed",
    "trainer.eval_before",
    "trainer.eval_after",
    "trainer.resume",
    "trainer.overwrite",
)
"""Options a tune sets itself on every trial (or refuses to let change): the evaluated split, the
callbacks, the before/after evaluations the selection reads, the run folder and the seed."""

_METRIC = re.compile(r"eval/(?P<task>[^/]+)/(?P<key>pass@[1-9][0-9]*|maj@[1-9][0-9]*|greedy|mean_reward)")


def option_name(token: str) -> str | None:
    """The dotted option a CLI token sets (``--trainer.max_steps=4`` → ``trainer.max_steps``)."""
    if not token.startswith("--"):
        return None
    return token[2:].split("=", 1)[0].rstrip("+")


def check_overrides(tokens: list[str], where: str) -> None:
    """Refuse (ConfigError) overrides of the options a tune sets itself (:data:`FORCED`)."""
    for token in tokens:
        name = option_name(token)
        if name is None:
            continue
        clash = next(
            (f for f in FORCED if name == f or (f != "evaluation" and name.startswith(f + "."))), None
        )
        if clash is not None:
            raise ConfigError(
                f"tune: {where} sets {name!r}, which the tune sets itself on every trial "
                f"({', '.join(FORCED)}): trials evaluate the validation split, never the test split"
            )


@dataclass
class TuneMethod:
    """One method's recipe and the grid of settings tried on it."""

    recipe: str
    """The ``es-lightning fit`` recipe every trial of this method starts from."""
    grid: dict[str, list[GridValue]] = field(default_factory=dict)
    """``{dotted.parameter: [value, ...]}``: one trial per combination (their product, in the
    order given), e.g. ``{strategy.init_args.sigma: [1.0e-3, 3.0e-3]}``."""

    def __post_init__(self) -> None:
        where = f"tune: method recipe {self.recipe}"
        if not self.grid:
            raise ConfigError(f"{where}: the grid is empty; give parameters and values")
        for parameter, values in self.grid.items():
            if not values:
                raise ConfigError(f"{where}: grid parameter {parameter!r} has no values")
            labels = [str(v) for v in values]
            if len(set(labels)) != len(labels):
                raise ConfigError(f"{where}: grid parameter {parameter!r} repeats values {values}")
            check_overrides([f"--{parameter.lstrip('-')}"], f"the grid of {self.recipe}")


@dataclass
class Selection:
    """How each method's configuration is chosen: fixed before any trial runs."""

    metric: str
    """The metric compared, ``eval/<task>/<key>`` with key ``pass@k``, ``maj@k``, ``greedy`` or
    ``mean_reward``, read from the trials' validation-split evaluations (``eval/before.json`` and
    ``eval/after.json``); higher is better."""
    rule: Literal["delta_last", "over_control"] = "delta_last"
    """``delta_last``: Δ = metric after the last update − metric before the first, each on the
    validation split, averaged over the seeds; the largest mean Δ wins (a tie: the first in grid
    order). ``over_control``: each configuration is scored against its own control (the grid point
    with the same settings but ``control``'s value): metric after − the control's after, averaged
    over the seeds; the largest score at or above ``min_score`` wins (none: nothing is chosen).
    Only configurations whose every seed finished take part."""
    control: dict[str, GridValue] = field(default_factory=dict)
    """``over_control``: the one grid parameter and value that make a configuration a control, e.g.
    ``{strategy.init_args.reward_control: permuted}`` (the permuted-reward ES of the same σ, α)."""
    min_score: float = 0.0
    """``over_control``: the least score a configuration must reach to be chosen (0.02: 2 points
    of Pass@1 above its control)."""

    def __post_init__(self) -> None:
        if _METRIC.fullmatch(self.metric) is None:
            raise ConfigError(
                f"tune: selection.metric {self.metric!r} is not eval/<task>/<key> with key pass@k, "
                "maj@k, greedy or mean_reward (e.g. eval/countdown_tiny/pass@1)"
            )
        if self.rule not in ("delta_last", "over_control"):
            raise ConfigError(
                f"tune: selection.rule {self.rule!r} is unknown; use delta_last or over_control"
            )
        if (self.rule == "over_control") != bool(self.control):
            raise ConfigError(
                "tune: selection.control names the control's grid parameter and value, which "
                "rule over_control needs and delta_last does not take"
            )
        if len(self.control) > 1:
            raise ConfigError(f"tune: selection.control names one parameter, got {sorted(self.control)}")

    @property
    def task(self) -> str:
        """The evaluated task the metric belongs to."""
        return _METRIC.fullmatch(self.metric)["task"]  # type: ignore[index]

    @property
    def key(self) -> str:
        """The summary key of the metric (``pass@1``)."""
        return _METRIC.fullmatch(self.metric)["key"]  # type: ignore[index]

    def record(self) -> dict[str, Any]:
        """The rule as ``tune.json`` records it."""
        control = {"control": self.control, "min_score": self.min_score} if self.control else {}
        return {"metric": self.metric, "rule": self.rule, **control, "description": self.describe()}

    def describe(self) -> str:
        """The rule in words (for TUNE.md)."""
        if self.rule == "over_control":
            ((parameter, value),) = self.control.items()
            return (
                f"the largest mean over seeds of {self.metric} after the last update minus that of the "
                f"configuration's control (the same settings with {parameter} = {value}), both on the "
                f"validation split, provided it is at least {self.min_score:g} (none: nothing is chosen); "
                "only configurations whose every seed and control finished take part"
            )
        return (
            f"the largest mean over seeds of Δ = {self.metric} after the last update − before the "
            "first, both on the validation split (a tie: the first in grid order); only "
            "configurations whose every seed finished take part"
        )
