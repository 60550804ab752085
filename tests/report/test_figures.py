"""The report's figures cannot mislead: no spread for one seed, Pass@K axes inside [0, 100] and
never narrower than 10 points (the base's noise band drawn instead)."""

from __future__ import annotations

import pytest
from matplotlib.container import ErrorbarContainer

from es_lightning.report.canvas import new_figure, spread
from es_lightning.report.figures import draw_pareto, draw_pass_at_k


def _row(means: dict[str, float], sd: float, n: int) -> dict[str, dict[str, float]]:
    return {k: {"mean": m, "sd": sd, "n": n} for k, m in means.items()}


def _report(n: int, sd: float = 0.0) -> dict:
    rows = {
        "es": _row({"1": 0.4770, "4": 0.70}, sd, n),
        "grpo": _row({"1": 0.4778, "4": 0.99}, sd, n),
    }
    band = {k: {"low": v - 0.03, "high": v + 0.03, "estimate": v} for k, v in (("1", 0.47), ("4", 0.69))}
    return {
        "config": {"verdicts": {"level": 0.95}},
        "evaluations": {"task": "arithmetic", "pass_at_k": rows, "per_seed": {}},
        "intervals": {"pass_at_k": {"base": band}},
        "pareto": {"4": {"points": {"es": (0.4770, 0.70), "grpo": (0.4778, 0.99)}, "non_dominated": ["grpo"],
                         "frontier_line": []}},
    }  # fmt: skip


def test_spread_needs_two_seeds():
    assert spread(0.1, 1) is None and spread(0.0, 1) is None and spread(0.1, None) is None
    assert spread(0.1, 2) == 0.1 and spread(float("nan"), 3) is None


def test_pass_at_k_with_one_seed_draws_no_spread_and_keeps_the_axis_honest():
    report = _report(n=1)
    _, (ax,) = new_figure()
    draw_pass_at_k(ax, report, report["evaluations"]["pass_at_k"])
    (band,) = ax.collections  # the base's sampling band only: no ± sd band of zero width
    assert band.get_label().startswith("base: sampling band")
    assert ax.get_title() == "arithmetic: Pass@K, one seed each (no spread)"
    low, high = ax.get_ylim()
    assert 0.0 <= low and high <= 100.0 and high - low >= 10.0


def test_pass_at_k_spread_is_clamped_to_100():
    report = _report(n=3, sd=0.05)  # grpo's pass@4 = 99 % ± 5: the band stops at 100
    _, (ax,) = new_figure()
    draw_pass_at_k(ax, report, report["evaluations"]["pass_at_k"])
    assert len(ax.collections) == 3 and "mean ± sd over seeds" in ax.get_title()
    assert max(max(c.get_paths()[0].vertices[:, 1]) for c in ax.collections) == 100.0
    assert ax.get_ylim()[1] == 100.0


@pytest.mark.parametrize(("n", "bars"), [(1, False), (2, True)])
def test_pareto_error_bars_only_for_two_seeds_or_more(n, bars):
    report = _report(n=n, sd=0.02)
    _, (ax,) = new_figure()
    draw_pareto(ax, report, "4")
    containers = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(containers) == 2
    assert all(c.has_xerr is bars and c.has_yerr is bars for c in containers)
    low, high = ax.get_xlim()  # Pass@1 0.08 points apart: not magnified
    assert high - low >= 10.0 and 0.0 <= low and high <= 100.0


def _point(pass1: float, pass4: float) -> dict[str, dict[str, float]]:
    return {"1": {"estimate": pass1}, "4": {"estimate": pass4}}


def test_pareto_draws_every_trajectory_and_the_base_temperature_path_dotted():
    report = _report(n=1)
    intervals = report["intervals"]["pass_at_k"]
    intervals |= {
        "grpo@5": _point(0.55, 0.80),
        "grpo_t06@5": _point(0.52, 0.85),
        "base@T0.4": _point(0.52, 0.60),
    }
    intervals |= {"grpo": _point(0.4778, 0.99), "grpo_t06": _point(0.50, 0.90)}
    paths = {
        "grpo": {"steps": [0, 5, 10], "points": ["base", "grpo@5", "grpo"]},
        "grpo_t06": {"steps": [0, 5, 10], "points": ["base", "grpo_t06@5", "grpo_t06"]},
    }
    report["trajectory"] = {"method": "grpo", **paths["grpo"], "paths": paths}
    report["sharpening"] = {"temperatures": [0.6, 0.4], "points": ["base", "base@T0.4"]}
    _, (ax,) = new_figure()
    draw_pareto(ax, report, "4")
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert {"grpo trajectory", "grpo_t06 trajectory", "base at T (sharpening)"} <= set(lines)
    sharpening = lines["base at T (sharpening)"]
    assert sharpening.get_linestyle() == ":"
    assert sharpening.get_xydata().tolist() == [[47.0, 69.0], [52.0, 60.0]]  # base, then T = 0.4
    assert {t.get_text() for t in ax.texts} >= {"T=0.6", "T=0.4", "0", "5", "10"}


def test_each_trajectory_has_its_end_points_colour():
    report = _report(n=1)
    report["pareto"]["4"]["points"]["grpo_t06"] = (0.50, 0.90)  # a method without a colour of its own
    report["evaluations"]["pass_at_k"]["grpo_t06"] = _row({"1": 0.50, "4": 0.90}, 0.0, 1)
    intervals = report["intervals"]["pass_at_k"]
    intervals |= {"grpo_t06@5": _point(0.52, 0.85), "grpo_t06": _point(0.50, 0.90)}
    path = {"steps": [0, 5, 10], "points": ["base", "grpo_t06@5", "grpo_t06"]}
    report["trajectory"] = {"method": "grpo_t06", **path, "paths": {"grpo_t06": path}}
    _, (ax,) = new_figure()
    draw_pareto(ax, report, "4")
    (line,) = [line for line in ax.get_lines() if line.get_label() == "grpo_t06 trajectory"]
    (marker,) = [c for c in ax.containers if c.get_label() == "grpo_t06"]
    assert line.get_color() == marker.lines[0].get_color()
