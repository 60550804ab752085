"""What the report's figures share: an Agg figure, a colour per method, the base's line and noise
band, percentage axes inside [0, 100] with a least span, and no spread for one seed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

COLORS = {
    "base": "black",
    "es": "tab:blue",
    "grpo": "tab:red",
    "es_then_grpo": "tab:purple",
    "grpo_then_es": "tab:orange",
    "es_permuted": "tab:gray",
    "es_lowrank": "tab:cyan",
}
BAND = {"color": "0.6", "alpha": 0.25}


def spread(sd: float | None, n: int | None) -> float | None:
    """The error bar of a mean over ``n`` seeds: ``sd`` for two seeds or more, else ``None``."""
    return sd if sd is not None and n is not None and n >= 2 and math.isfinite(sd) else None


def color(name: str, i: int) -> str:
    return COLORS.get(name, f"C{(i + 5) % 10}")


def new_figure(n_panels: int = 1, width: float = 6.4, height: float = 4.4) -> tuple[Figure, list[Any]]:
    cols = min(n_panels, 3)
    rows = -(-n_panels // cols)
    fig = Figure(figsize=(width * cols * 0.8 if cols > 1 else width, height * rows), dpi=110)
    FigureCanvasAgg(fig)
    return fig, [fig.add_subplot(rows, cols, i + 1) for i in range(n_panels)]


def save(fig: Figure, path: Path) -> Path:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")
    return path


def base_line(ax: Any, value: float, low: float, high: float, label: str) -> None:
    """The base's value as a horizontal line with its noise band."""
    ax.axhline(value, color="black", linewidth=1, linestyle=":")
    ax.axhspan(low, high, label=label, **BAND)


def level_label(report: dict[str, Any]) -> str:
    level = (report["config"].get("verdicts") or {}).get("level", 0.95)
    return f"one-sided {100 * level:g}%"
