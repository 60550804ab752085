"""The report recipes parse through the report's parser; ablation settings are validated."""

from __future__ import annotations

from pathlib import Path

import pytest

from es_lightning.report import Ablation
from es_lightning.report.command import build_plan, report_parser
from es_lightning.report.runs import plan_runs

ROOT = Path(__file__).resolve().parents[2]


def _parse(*argv: str) -> dict:
    parser = report_parser()
    init = parser.instantiate(parser.parse_args(list(argv)))
    return {k: v for k, v in init.items() if k != "config"}


def test_cpu_recipe_quick_plan():
    kwargs = _parse("--config", str(ROOT / "recipes/report_cpu.yaml"), "--quick", "--output_dir", "/tmp/r")
    assert kwargs["quick"] is True and kwargs["seeds"] is None  # 1 seed with --quick, else 3
    assert list(kwargs["methods"]) == [
        "es",
        "grpo",
        "es_then_grpo",
        "grpo_then_es",
        "es_permuted",
        "es_lowrank",
    ]
    assert all(r.startswith("recipes/coverage_cpu_") for r in kwargs["methods"].values())
    assert kwargs["methods"]["es_permuted"] == kwargs["methods"]["es"]  # ES's recipe, rewards shuffled
    assert kwargs["methods"]["es_lowrank"] == kwargs["methods"]["es"]  # ES's recipe, rank-4 directions
    assert kwargs["trajectory"].method == "grpo" and kwargs["trajectory"].every == 10
    assert kwargs["verdicts"].permuted_control == "es_permuted" and kwargs["verdicts"].pass_margin == 0.01
    assert set(kwargs["ablations"]) == {"population_size", "normalization", "estimator", "kappa_pair"}
    assert kwargs["ablations"]["kappa_pair"].reference == {
        "common_sigma1e-3": 1.9870,
        "independent_sigma1e-3": 2.7847,
        "common_sigma1e-4": 0.8194,
    }
    plan = build_plan(
        **{k: v for k, v in kwargs.items() if k not in ("launch", "run_timeout_s", "from_json")}
    )
    assert plan.seeds == [0]
    specs = plan_runs(plan)
    # methods, then the quick subsets: N, normalisation, estimator, κ variants, then forgetting
    assert len(specs) == 6 + 2 + 2 + 2 + 3 + 2
    assert [(s.group, s.label) for s in specs[-2:]] == [("forgetting", "es"), ("forgetting", "grpo")]
    assert kwargs["forgetting"].out_of_domain == "arithmetic" and kwargs["forgetting"].margin == 0.05
    quick = ("--trainer.max_steps", "6", "--evaluation.limit", "50", "--evaluation.greedy", "false")
    assert all(s.overrides[-6:] == quick for s in specs[:6])  # last: the quick sizes win
    by_method = {s.group: s.overrides[:-6] for s in specs[:6]}
    assert by_method["es_permuted"][-2:] == ("--strategy.init_args.reward_control", "permuted")
    lowrank = ("--strategy.init_args.perturbation", "lowrank", "--strategy.init_args.rank", "4")
    assert by_method["es_lowrank"][-4:] == lowrank
    assert by_method["grpo"][-4:] == ("--trainer.checkpoint_every", "10", "--trainer.keep_last", "null")
    assert specs[0].overrides == (
        "--trainer.checkpoint_every",  # every run checkpoints, so an interrupted one continues
        "10",
        "--trainer.keep_last",
        "2",
        "--trainer.max_steps",
        "6",
        "--evaluation.limit",
        "50",
        "--evaluation.greedy",
        "false",
    )
    kappa = next(s for s in specs if s.group == "kappa_pair" and s.label == "independent_sigma1e-3")
    tokens = kappa.overrides
    assert tokens[tokens.index("--strategy.init_args.estimator") + 1] == "antithetic"
    assert tokens[-4:] == (
        "--strategy.init_args.member_sampling_seeds",
        "independent",
        "--strategy.init_args.sigma",
        "1.0e-3",
    )


def test_seeds_default_to_three(tmp_path):
    assert build_plan({"es": "es.yaml"}, tmp_path).seeds == [0, 1, 2]


def test_method_overrides_name_methods(tmp_path):
    with pytest.raises(ValueError, match="method_overrides name methods that are not run"):
        build_plan({"es": "es.yaml"}, tmp_path, method_overrides={"es_permuted": ["--x 1"]})


def test_cpu_recipe_seeds_from_the_command_line():
    kwargs = _parse("--config", str(ROOT / "recipes/report_cpu.yaml"), "--seeds", "2")
    assert kwargs["quick"] is False and kwargs["seeds"] == 2


def test_paper_recipe_names_existing_recipes():
    kwargs = _parse("--config", str(ROOT / "recipes/report_paper_easy.yaml"))
    assert kwargs["task"] == "gsm8k" and kwargs["ablations"] == {}
    for recipe in kwargs["methods"].values():
        assert (ROOT / recipe).is_file(), recipe


def test_help_lists_the_grouped_settings(capsys):
    with pytest.raises(SystemExit):
        report_parser().parse_args(["--help"])
    out = capsys.readouterr().out
    assert "--quick, --no_quick" in out and "--drift.ratio" in out and "rel-L2(a) / rel-L2(b)" in out


def test_ablation_validation():
    with pytest.raises(ValueError, match="give `values`"):
        Ablation(recipe="r.yaml")
    with pytest.raises(ValueError, match="need a `parameter`"):
        Ablation(recipe="r.yaml", values=[1])
    with pytest.raises(ValueError, match="labels repeat"):
        Ablation(recipe="r.yaml", parameter="p", values=[8], variants={"8": []})
    with pytest.raises(ValueError, match="not in `variants`"):
        Ablation(recipe="r.yaml", variants={"a": []}, quick_variants=["b"]).runs(quick=True)
    runs = Ablation(
        recipe="r.yaml",
        parameter="--strategy.init_args.sigma",
        values=[1e-3],
        variants={"v": ["--a 1 --b 2"]},
    ).runs(False)
    assert runs == {"0.001": ["--strategy.init_args.sigma", "0.001"], "v": ["--a", "1", "--b", "2"]}


def test_plan_validation(tmp_path):
    with pytest.raises(ValueError, match="not a method name"):
        build_plan({"base": "b.yaml"}, tmp_path)
    with pytest.raises(ValueError, match="both as method and ablation"):
        build_plan(
            {"es": "es.yaml"}, tmp_path, ablations={"es": Ablation(recipe="r", parameter="p", values=[1])}
        )
    with pytest.raises(ValueError, match="seeds must be >= 1"):
        build_plan({"es": "es.yaml"}, tmp_path, seeds=0)
