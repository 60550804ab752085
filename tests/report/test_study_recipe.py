"""recipes/report_study_cpu.yaml plans the study it describes: every run resolves to the settings
its header promises (nothing is run)."""

from __future__ import annotations

import functools

import pytest
import yaml

from es_lightning.report.command import build_plan, report_parser
from es_lightning.report.runs import plan_runs, resolved_key
from es_lightning.training import command
from tests.helpers import REPO

RECIPE = REPO / "recipes" / "report_study_cpu.yaml"
PATH = [1, 2, 3, 5, 7, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110]


def _plan(tmp_path, quick: bool = False):
    cfg = report_parser().parse_args(["--config", str(RECIPE), "--output_dir", str(tmp_path)])
    init = report_parser().instantiate(cfg)
    keys = ("methods", "overrides", "quick_overrides")
    settings = {k: init[k] for k in ("ks", "pareto_ks", "frontier_methods", "trajectory", "sharpening")}
    settings |= {k: init[k] for k in ("forgetting", "curves", "drift", "method_overrides")}
    return build_plan(*(init[k] for k in keys[:1]), tmp_path, quick, None, 0, init["overrides"],
                      init["quick_overrides"], **settings)  # fmt: skip


@pytest.fixture(scope="module")
def resolved(tmp_path_factory):
    """Every run's resolved configuration. One ``fit`` parser resolves them all: a fresh parser
    per run (what ``resolved_key`` builds) rebuilds each strategy's, task's and rollout's argument
    parser from its signature and docstrings, three times the work for the same text."""
    tmp = tmp_path_factory.mktemp("study")
    specs = plan_runs(_plan(tmp))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(command, "fit_parser", functools.cache(command.fit_parser))
        return {spec.name: yaml.safe_load(resolved_key(spec)) for spec in specs}


def _lr(config: dict) -> float:
    return config["strategy"]["init_args"]["learning_rate"]


@pytest.mark.slow
def test_every_run_of_the_study_is_planned_and_resolves(resolved):
    names = [n.rsplit("/", 1)[0] for n in resolved if n.endswith("seed0")]
    assert names == ["es", "grpo", "es_permuted", "grpo_t06", "es_then_grpo", "grpo_then_es",
                     "forgetting/es", "forgetting/es_permuted", "forgetting/grpo"]  # fmt: skip
    assert len(resolved) == 27 and all(config is not None for config in resolved.values())


@pytest.mark.slow
def test_methods_get_the_study_settings(resolved):
    es, control = resolved["es/seed0"], resolved["es_permuted/seed1"]
    assert _lr(es) == _lr(control) == 6e-3 and es["strategy"]["init_args"]["sigma"] == 3e-3
    assert control["strategy"]["init_args"]["reward_control"] == "permuted"
    for name in ("es_then_grpo/seed0", "grpo_then_es/seed2"):
        stages = {s["strategy"]["class_path"].rsplit(".", 1)[1]: s for s in resolved[name]["stages"]}
        assert _lr(stages["ESStrategy"]) == 6e-3 and _lr(stages["GRPOStrategy"]) == 1e-4
    for config in (resolved[f"{m}/seed0"] for m in ("es", "grpo", "grpo_t06", "es_then_grpo")):
        assert config["evaluation"]["num_samples"] == 64 and config["evaluation"]["temperature"] == 0.6
        assert config["evaluation"].get("ks") is None and config["evaluation"]["greedy"] is True
    assert resolved["grpo/seed0"]["module"]["init_args"]["train_sampling"]["temperature"] == 1.0
    assert resolved["grpo_t06/seed0"]["module"]["init_args"]["train_sampling"]["temperature"] == 0.6
    for method in ("grpo", "grpo_t06"):
        config = resolved[f"{method}/seed0"]
        assert config["trainer"]["checkpoint_steps"] == PATH and config["trainer"]["checkpoint_every"] == 10
        entropy = config["callbacks"][0]["init_args"]
        measured = {
            t for t in range(1, 121) if t % entropy["every_n_updates"] == 0 or t in entropy["at_steps"]
        }
        assert measured == set(PATH) | {120}  # token entropy at the path's updates
        assert [c["class_path"].rsplit(".", 1)[1] for c in config["callbacks"]] == [
            "TokenEntropy", "HeldOutPassAtK", "ParameterDrift", "LayerAttribution", "PopulationDiversity"
        ]  # fmt: skip
    assert resolved["es/seed0"]["trainer"]["checkpoint_steps"] == []


@pytest.mark.slow
def test_the_forgetting_setting_has_the_control_and_the_path(resolved):
    es, control, grpo = (resolved[f"forgetting/{m}/seed0"] for m in ("es", "es_permuted", "grpo"))
    assert (
        _lr(es) == _lr(control) == 6e-3 and control["strategy"]["init_args"]["reward_control"] == "permuted"
    )
    assert {c["evaluation"]["num_samples"] for c in (es, control, grpo)} == {32}
    assert grpo["trainer"]["checkpoint_steps"] == [1, 2, 3, 5, 7, 10, 15, 20, 30, 60]


def test_quick_mode_keeps_every_block_at_tiny_sizes(tmp_path):
    plan = _plan(tmp_path, quick=True)
    assert plan.seeds == [0] and plan.sharpening.temperatures == [0.4, 0.5, 0.55, 0.6]
    grpo = next(s for s in plan_runs(plan) if s.name == "grpo/seed0")
    quick = yaml.safe_load(resolved_key(grpo))
    assert quick["trainer"]["max_steps"] == 3 and quick["evaluation"]["greedy"] is True
    assert quick["callbacks"][0]["init_args"]["num_prompts"] == 8  # the quick callbacks win over the method's
    assert plan.trajectory.points(3) == [1, 2]
