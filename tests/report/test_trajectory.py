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
    for steps in ([0, 5], [5, 5]):
        with pytest.raises(ConfigError, match="trajectory.steps must be distinct updates >= 1"):
            TrajectorySettings(steps=steps)
    with pytest.raises(ConfigError, match="trajectory.steps need via: checkpoints"):
        TrajectorySettings(steps=[1], via="eval_every")
    with pytest.raises(ConfigError, match="trajectory.methods repeats"):
        TrajectorySettings(methods=["grpo", "grpo"])
    with pytest.raises(ConfigError, match=r"\['grpo_t06'\] are not one of the methods"):
        build_plan(
            {"grpo": "g.yaml"},
            Path("/tmp/x"),
            trajectory=TrajectorySettings(methods=["grpo", "grpo_t06"], steps=[1]),
        )
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
    block, points = collect_trajectory(plan, finished, TASK, {"grpo": 15})
    assert block["steps"] == [0, 5, 10, 15] and block["points"] == ["base", "grpo@5", "grpo@10", "grpo"]
    assert collect_trajectory(plan, finished, TASK, None)[0] == block  # an epochs-sized run
    assert points["grpo@5"][0].counts == points["grpo@10"][0].counts == [3, 0, 4, 1]
    assert block["per_seed"]["0"]["5"]["1"] == pytest.approx(counts.mean() / 4)


def test_a_path_is_its_steps_and_every_kth_update():
    settings = TrajectorySettings(every=10, steps=[1, 2, 3, 5, 7, 15, 30])
    assert settings.points(40) == [1, 2, 3, 5, 7, 10, 15, 20, 30]  # 40 itself is the method's end
    assert TrajectorySettings(steps=[7, 2]).points(5) == [2]  # a step past the run is not there
    assert TrajectorySettings(every=5).points(15) == [5, 10]
    assert not TrajectorySettings().enabled and TrajectorySettings(steps=[3]).enabled
    assert TrajectorySettings(method="x").paths == ["x"]  # the one-path shorthand
    assert TrajectorySettings(method="x", methods=["grpo", "grpo_t06"]).primary == "grpo"


def test_every_path_keeps_its_steps_and_the_others_keep_theirs(tmp_path):
    settings = TrajectorySettings(methods=["grpo", "grpo_t06"], steps=[3, 1, 2])
    plan = build_plan(
        {m: f"{m}.yaml" for m in ("es", "grpo", "grpo_t06")}, tmp_path, seeds=1, trajectory=settings
    )
    overrides = {s.group: s.overrides for s in plan_runs(plan)}
    assert overrides["grpo"] == overrides["grpo_t06"] == ("--trainer.checkpoint_steps", "[1, 2, 3]")
    assert overrides["es"] == ()  # the others keep what the report gives every run
    both = TrajectorySettings(every=10, steps=[1, 5])
    assert both.run_overrides() == [
        "--trainer.checkpoint_steps", "[1, 5]", "--trainer.checkpoint_every", "10", "--trainer.keep_last", "null"
    ]  # fmt: skip
    parsed = build_parser().parse_args(
        ["fit", "--config", "recipes/coverage_cpu_grpo.yaml", *both.run_overrides()]
    )
    assert parsed.fit.trainer.checkpoint_steps == [1, 5] and parsed.fit.trainer.keep_last is None


def test_several_paths_are_evaluated_and_listed_the_primary_one_also_at_the_top(tmp_path):
    settings = TrajectorySettings(methods=["grpo", "grpo_t06"], steps=[1, 2], every=5)
    plan = build_plan({"grpo": "g.yaml", "grpo_t06": "t.yaml"}, tmp_path, seeds=1, trajectory=settings)
    grpo = _grpo_run(tmp_path, [1, 2, 5, 10, 15])
    t06 = _grpo_run(tmp_path / "t06", [1, 2, 3, 5, 10, 12])  # 3: a checkpoint_every 3 the path does not want
    finished = {"grpo": {0: grpo}, "grpo_t06": {0: t06}}
    records = run_trajectory(plan, finished, TASK, launch=False)
    names = [r["name"] for r in records if r["status"] == "missing"]
    assert names == [
        *(f"trajectory/grpo/seed0/step-{s:06d}" for s in (1, 2, 5, 10)),
        *(f"trajectory/grpo_t06/seed0/step-{s:06d}" for s in (1, 2, 5, 10)),
    ]
    counts = np.array([1, 2, 0, 4])
    for method, step in (("grpo", 2), ("grpo_t06", 10)):
        out = point_file(plan, 0, step, method)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({TASK: counts_summary(counts, 4)}))
        write_outcomes(out.parent, out.stem, counts, m=4)
    block, points = collect_trajectory(plan, finished, TASK, {"grpo": 15, "grpo_t06": 12})
    assert block["method"] == "grpo" and block["at_steps"] == [1, 2] and block["every"] == 5
    assert block["steps"] == [0, 1, 2, 5, 10, 15] and block["points"][-1] == "grpo"
    assert block["paths"]["grpo"]["points"] == block["points"]
    assert block["paths"]["grpo_t06"]["steps"] == [0, 1, 2, 5, 10, 12]
    assert block["paths"]["grpo_t06"]["points"] == [
        "base",
        "grpo_t06@1",
        "grpo_t06@2",
        "grpo_t06@5",
        "grpo_t06@10",
        "grpo_t06",
    ]
    assert points["grpo@2"][0].counts == points["grpo_t06@10"][0].counts == [1, 2, 0, 4]
    assert (
        points["grpo@1"][0] is None and block["paths"]["grpo_t06"]["per_seed"]["0"]["10"]["4"] == 0.75
    )  # 3 of 4 solved
