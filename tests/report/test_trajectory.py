"""GRPO's trajectory: the runs save the points, each checkpoint's evaluation is planned and reused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from es_lightning.cli import build_parser
from es_lightning.errors import ConfigError
from es_lightning.report.command import build_plan
from es_lightning.report.config import TrajectorySettings
from es_lightning.report.runs import plan_runs
from es_lightning.report.trajectory import collect_trajectory, evaluate_config, point_file, run_trajectory
from tests.report.synthetic import TASK, counts_summary, write_outcomes

RUN_CONFIG = {
    "module": {
        "class_path": "es_lightning.ReasoningModule",
        "init_args": {
            "model": "es-lightning/tiny-arithmetic",
            "task": {"class_path": "es_lightning.tasks.Arithmetic", "init_args": {"n_test": 8}},
            "dtype": "float32",
        },
    },
    "rollout": {"class_path": "es_lightning.rollout.hf.HFRollout", "init_args": {"batch_size": 64}},
    "trainer": {"accelerator": "cpu", "max_steps": 15},
    "evaluation": {"num_samples": 4, "temperature": 0.6, "max_tokens": 16, "ks": [1, 4], "greedy": False},
    "eval_tasks": None,
}


def _plan(tmp_path: Path, every: int = 5, via: str = "checkpoints"):
    return build_plan(
        {"es": "es.yaml", "grpo": "grpo.yaml"},
        tmp_path,
        seeds=2,
        trajectory=TrajectorySettings(method="grpo", every=every, via=via),
    )


def test_only_the_trajectory_method_saves_its_points(tmp_path):
    specs = plan_runs(_plan(tmp_path))
    grpo = [s for s in specs if s.group == "grpo"]
    assert all(
        s.overrides[-4:] == ("--trainer.checkpoint_every", "5", "--trainer.keep_last", "null") for s in grpo
    )
    assert all("--trainer.checkpoint_every" not in s.overrides for s in specs if s.group == "es")
    specs = plan_runs(_plan(tmp_path, via="eval_every"))
    assert next(s for s in specs if s.group == "grpo").overrides[-2:] == ("--trainer.eval_every", "5")
    assert all(s.overrides == () for s in plan_runs(_plan(tmp_path, every=0)))


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="trajectory.every"):
        TrajectorySettings(every=-1)
    with pytest.raises(ConfigError, match="not one of the methods"):
        build_plan({"es": "es.yaml"}, Path("/tmp/x"), trajectory=TrajectorySettings(method="grpo", every=5))


def test_the_evaluation_repeats_the_runs_protocol(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(RUN_CONFIG))
    config = evaluate_config(run, run / "checkpoints" / "step-000005", "arithmetic", tmp_path / "out.json")
    assert config["task"] == RUN_CONFIG["module"]["init_args"]["task"]
    assert config["evaluation"] == RUN_CONFIG["evaluation"] and config["rollout"] == RUN_CONFIG["rollout"]
    assert (config["device"], config["dtype"]) == ("cpu", "float32")
    recipe = tmp_path / "evaluate.yaml"
    recipe.write_text(yaml.safe_dump(config))
    parsed = build_parser().parse_args(["evaluate", "--config", str(recipe)])  # what the subprocess parses
    assert parsed.evaluate.model.endswith("step-000005") and parsed.evaluate.evaluation.num_samples == 4


def _grpo_run(root: Path, steps: list[int]) -> Path:
    run = root / "runs" / "grpo" / "seed0"
    (run / "eval").mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(RUN_CONFIG))
    for step in steps:
        folder = run / "checkpoints" / f"step-{step:06d}"
        folder.mkdir(parents=True)
        (folder / "trainer_state.json").write_text(json.dumps({"step": step}))
    (run / "checkpoints" / "latest").write_text(f"step-{steps[-1]:06d}")
    return run


def test_points_are_reused_planned_or_read_from_in_run_evaluations(tmp_path):
    plan = _plan(tmp_path)
    run = _grpo_run(tmp_path, [5, 10, 15])
    finished = {"grpo": {0: run}}
    counts = np.array([3, 0, 4, 1])
    out = point_file(plan, 0, 5)  # step 5: the report evaluated it already
    out.parent.mkdir(parents=True)
    out.write_text(json.dumps({TASK: counts_summary(counts, 4)}))
    (out.parent / "step-000005_completions.jsonl").write_text(
        write_outcomes(tmp_path / "tmp", "x", counts, m=4).read_text()
    )
    (run / "eval" / "step-000010.json").write_text(json.dumps({TASK: counts_summary(counts, 4)}))  # in-run
    write_outcomes(run / "eval", "step-000010", counts, m=4)
    records = run_trajectory(plan, finished, TASK, launch=False)
    assert [(r["name"].rsplit("/", 1)[1], r["status"]) for r in records] == [
        ("step-000005", "reused"),
        ("step-000010", "missing"),  # no report evaluation yet (launch false): the in-run one is read below
        ("step-000015", "reused"),  # the final checkpoint is the run's own eval/after
    ]
    block, points = collect_trajectory(plan, finished, TASK, updates=15)
    assert block["steps"] == [0, 5, 10, 15] and block["points"] == ["base", "grpo@5", "grpo@10", "grpo"]
    assert collect_trajectory(plan, finished, TASK, updates=None)[0] == block  # an epochs-sized run
    assert points["grpo@5"][0].counts == points["grpo@10"][0].counts == [3, 0, 4, 1]
    assert block["per_seed"]["0"]["5"]["1"] == pytest.approx(counts.mean() / 4)
