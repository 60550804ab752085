"""The forgetting setting: its runs, its numbers read from run folders, its section of REPORT.md."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from es_lightning.errors import ConfigError
from es_lightning.report.claims import judge
from es_lightning.report.command import build_plan
from es_lightning.report.config import ForgettingSettings, TrajectorySettings
from es_lightning.report.forgetting import collect_forgetting, forgetting_point_file, run_forgetting_path
from es_lightning.report.markdown import render
from es_lightning.report.runs import plan_runs
from es_lightning.report.trajectory import evaluate_config

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


def _path_settings(**kwargs) -> ForgettingSettings:
    methods = {"es": "f_es.yaml", "es_permuted": "f_es.yaml", "grpo": "f_grpo.yaml"}
    return ForgettingSettings(
        methods=methods,
        ks=[1, 8],
        method_overrides={"es_permuted": ["--strategy.init_args.reward_control permuted"]},
        overrides=["--evaluation.num_samples 8"],
        trajectory=TrajectorySettings(method="grpo", steps=[1, 2, 5, 30]),
        **kwargs,
    )


def test_the_control_and_the_path_are_planned(tmp_path):
    plan = build_plan({"es": "es.yaml"}, tmp_path, seeds=1, overrides=["--x 1"], forgetting=_path_settings())
    tail = {s.label: s.overrides for s in plan_runs(plan) if s.group == "forgetting"}
    assert tail["es"] == ("--x", "1", "--evaluation.num_samples", "8")
    assert tail["es_permuted"] == (*tail["es"], "--strategy.init_args.reward_control", "permuted")
    assert tail["grpo"] == (*tail["es"], "--trainer.checkpoint_steps", "[1, 2, 5, 30]")
    with pytest.raises(ConfigError, match=r"forgetting.trajectory names methods that are not run: \['ppo'\]"):
        ForgettingSettings(methods={"es": "a.yaml"}, trajectory=TrajectorySettings(method="ppo", steps=[1]))


def test_the_paths_checkpoints_are_evaluated_on_both_tasks_and_enter_each_tasks_outcomes(tmp_path):
    plan = build_plan({"es": "es.yaml"}, tmp_path, seeds=1, forgetting=_path_settings())
    run_dir = tmp_path / "runs" / "forgetting" / "grpo" / "seed0"
    (run_dir / "config.yaml").parent.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(
        "module: {model: m}\ntrainer: {max_steps: 10}\neval_tasks: {countdown_tiny: c, arithmetic: a}\n"
    )
    for step in (1, 2, 5, 8, 10):  # 8: a checkpoint_every the path does not want; 10: the end (eval/after)
        (run_dir / "checkpoints" / f"step-{step:06d}").mkdir(parents=True)
        (run_dir / "checkpoints" / f"step-{step:06d}" / "trainer_state.json").write_text("{}")
    (run_dir / "checkpoints" / "latest").write_text("step-000010")
    for task in TASKS:
        for tag in ("before", "after"):
            _write(run_dir / "eval", tag, task, [1, 2, 3])
    records = run_forgetting_path(plan, {"grpo": {0: run_dir}}, launch=False)
    names = [(r["name"].rsplit("/", 1)[1], r["status"]) for r in records]
    assert names == [
        ("step-000001", "missing"),
        ("step-000002", "missing"),
        ("step-000005", "missing"),
    ]  # 8 and the end (10) are not steps of the path; 30 lies past the run
    out = forgetting_point_file(plan, "grpo", 0, 2)
    assert out == tmp_path / "trajectory" / "forgetting" / "grpo" / "seed0" / "step-000002.json"
    for task, counts in zip(TASKS, ([4, 4, 4], [0, 1, 0])):
        _write(out.parent, out.stem, task, counts)  # es-lightning evaluate of two tasks: {stem}_{task}_...
    block = collect_forgetting(plan, {"grpo": {0: run_dir}})
    assert block["trajectory"] == {
        "grpo": {
            "steps": [0, 1, 2, 5, 10],
            "points": ["grpo/before", "grpo@1", "grpo@2", "grpo@5", "grpo/after"],
        }
    }
    assert block["outcomes"]["countdown_tiny"]["counts"]["grpo@2"] == {"0": [4, 4, 4]}
    assert block["outcomes"]["arithmetic"]["counts"]["grpo@2"] == {"0": [0, 1, 0]}
    assert "grpo@1" in block["outcomes"]["arithmetic"]["missing"]  # not evaluated yet
    config = evaluate_config(run_dir, run_dir / "checkpoints" / "step-000002", list(TASKS), out)
    assert config["task"] == ["c", "a"]  # the run's eval_tasks entries, one engine
