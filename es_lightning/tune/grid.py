"""A method's grid as trials: every combination of its values, in the order given, the last
parameter varying fastest. A trial's label (its folder) names each parameter by its last dotted
part, or the whole path where two share it: ``sigma=0.001_learning_rate=0.0005``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from es_lightning.tune.config import GridValue


@dataclass(frozen=True)
class GridPoint:
    """One combination of a grid's values."""

    settings: tuple[tuple[str, GridValue], ...]
    """``(parameter, value)`` pairs, in the grid's parameter order."""
    label: str
    """The folder name of the trial, e.g. ``sigma=0.001_learning_rate=0.0005``."""

    def overrides(self) -> list[str]:
        """The CLI tokens that set the point: ``["--strategy.init_args.sigma", "0.001", ...]``."""
        return [token for parameter, value in self.settings for token in (f"--{parameter}", cli_value(value))]


def cli_value(value: GridValue) -> str:
    """How a value is written on the command line (``true``/``false`` for booleans)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def short_names(parameters: list[str]) -> dict[str, str]:
    """Each parameter's name in labels: its last dotted part, unless another shares it."""
    last = [p.rsplit(".", 1)[-1] for p in parameters]
    return {p: (short if last.count(short) == 1 else p) for p, short in zip(parameters, last)}


def expand(grid: dict[str, list[GridValue]]) -> list[GridPoint]:
    """Every combination of ``grid``'s values (their product, the last parameter fastest)."""
    names = short_names(list(grid))
    points = []
    for values in itertools.product(*grid.values()):
        settings = tuple(zip(grid, values))
        label = "_".join(f"{names[p]}={cli_value(v)}" for p, v in settings).replace("/", "_")
        points.append(GridPoint(settings, label))
    return points
