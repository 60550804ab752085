"""The forgetting setting: its runs, its numbers read from run folders, its section of REPORT.md."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from es_lightning.errors import ConfigError
from es_lightning.report.claims import judge
from es_lightning.report.command import build_plan
from es_lightning.report.config import ForgettingSettings
from es_lightning.report.forgetting import collect_forgetting
from es_lightning.report.markdown import render
from es_lightning.report.runs import plan_runs

M = 8
TASKS = ("countdown_tiny", "arithmetic")


def _settings() -> ForgettingSettings:
    return ForgettingSettings(methods={"es": "f_es.yaml", "grpo": "f_grpo.yaml"}, ks=[1, 8])


def test_runs_are_planned_per_method_and_seed_after_everything_else(tmp_path):
    plan = build_plan({"es": "es.yaml"}, tmp_path, seeds=2, overrides=["--x 1"], forgetting=_settings())
    specs = plan_runs(plan)
    tail = [s for s in specs if s.group == "forgetting"]
    assert specs[-len(tail) :] == tail
    assert [(s.label, s.seed) for s in tail] == [("es", 0), ("grpo", 0), ("es", 1), ("grpo", 1)]
    assert tail[0].run_dir == tmp_path / "runs" / "forgetting" / "es" / "seed0"
    assert tail[1].recipe == "f_grpo.yaml" and tail[1].overrides == ("--x", "1")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"margin": -0.1}, "forgetting.margin"),
        ({"in_domain": "arithmetic"}, "both 'arithmetic'"),
        ({"methods": {"es": "a.yaml"}, "method_overrides": {"grpo": ["--x 1"]}}, r"not run: \['grpo'\]"),
    ],
)
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ForgettingSettings(**kwargs)


def test_forgetting_is_not_a_method_name(tmp_path):
    with pytest.raises(ConfigError, match="forgetting"):
        build_plan({"forgetting": "x.yaml"}, tmp_path)


def _write(eval_dir: Path, tag: str, task: str, counts: list[int]) -> None:
    """``{tag}_{task}_completions.jsonl`` as a run's evaluation writes it."""
    eval_dir.mkdir(parents=True, exist_ok=True)
    rows = [
        json.dumps(
            {"question": f"{task}{i}", "completions": ["x"] * M, "rewards": [1.0] * c + [0.0] * (M - c)}
        )
        for i, c in enumerate(counts)
    ]
    (eval_dir / f"{tag}_{task}_completions.jsonl").write_text("\n".join(rows) + "\n")


def test_numbers_are_read_from_the_runs_completions_and_rendered(tmp_path):
    rng = np.random.default_rng(0)
    plan = build_plan({"es": "es.yaml"}, tmp_path, seeds=2, forgetting=_settings())
    runs: dict[str, dict[int, Path]] = {}
    written = {}
    for method in ("es", "grpo"):
        for seed in plan.seeds:
            run_dir = tmp_path / "runs" / "forgetting" / method / f"seed{seed}"
            for task in TASKS:
                for tag in ("before", "after"):
                    counts = rng.integers(0, M + 1, size=30).tolist()
                    _write(run_dir / "eval", tag, task, counts)
                    written[method, seed, task, tag] = counts
            runs.setdefault(method, {})[seed] = run_dir
    block = collect_forgetting(plan, runs)
    assert (
        block["outcomes"]["arithmetic"]["counts"]["grpo/after"]["1"]
        == written["grpo", 1, "arithmetic", "after"]
    )
    report = {"config": {"seeds": plan.seeds, "ks": [1], "pareto_ks": [], "methods": {}, "quick": False}}
    report["config"]["frontier_methods"] = []
    report["forgetting"] = block
    report.update(judge(report))
    after = np.mean([written["es", s, "arithmetic", "after"] for s in plan.seeds]) / M
    before = np.mean([written["es", s, "arithmetic", "before"] for s in plan.seeds]) / M
    assert report["forgetting"]["changes"]["es"]["arithmetic"]["delta@1"]["estimate"] == pytest.approx(
        after - before
    )
    text = render({**report, "evaluations": {}, "runs": [], "budgets": {}})
    assert "## Forgetting" in text and "| es | arithmetic | 1 |" in text


def test_no_setting_no_block(tmp_path):
    assert collect_forgetting(build_plan({"es": "es.yaml"}, tmp_path), {}) is None
