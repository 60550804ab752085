"""The es-lightning command: every recipe parses and builds, overrides work, evaluate scores files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from es_lightning.cli import build_parser
from es_lightning.presets import SUITES, resolve_eval_tasks
from es_lightning.training.command import run_fit
from tests.helpers import run_main, subprocess_env

REPO = Path(__file__).resolve().parents[1]
RECIPES = sorted((REPO / "recipes").glob("*.yaml"))
FIT_RECIPES = [r for r in RECIPES if not r.name.startswith(("eval_", "report_", "tune_"))]
PAPER_PREFIXES = ("easy_", "grpo_", "hard_", "seq_", "popsize_")
PAPER_FIT_RECIPES = [r for r in FIT_RECIPES if r.name.startswith(PAPER_PREFIXES)]
POPSIZE_RECIPES = ["popsize_qwen0p5b.yaml", "popsize_qwen1p5b.yaml", "popsize_qwen3b.yaml"]
CLI = [sys.executable, "-m", "es_lightning"]


def _parse(*argv: str):
    parser = build_parser()
    cfg = parser.parse_args(list(argv))
    return parser, cfg, parser.instantiate(cfg)


def test_recipes_exist_with_launch_commands():
    names = {r.name for r in RECIPES}
    for expected in (
        "easy_qwen1p5b.yaml",
        "easy_llama3b.yaml",
        "easy_qwen7b.yaml",
        "hard_r1distill1p5b.yaml",
        "smoke_cpu.yaml",
    ):
        assert expected in names
        if expected != "smoke_cpu.yaml":
            assert f"grpo_{expected}" in names  # every ES recipe has its GRPO twin
    for expected in (
        "seq_es_grpo_qwen1p5b.yaml",
        "seq_grpo_es_qwen1p5b.yaml",
        "hard_seq_es_grpo_r1distill1p5b.yaml",
        "hard_seq_grpo_es_r1distill1p5b.yaml",
        "smoke_cpu_grpo.yaml",
        "smoke_cpu_es_then_grpo.yaml",
        "demo_cpu.yaml",
        "demo_cpu_grpo.yaml",
        "demo_cpu_es_then_grpo.yaml",
        "demo_cpu_grpo_then_es.yaml",
        *POPSIZE_RECIPES,
    ):
        assert expected in names
    for method in ("es", "grpo", "es_then_grpo", "grpo_then_es"):
        assert f"coverage_cpu_{method}.yaml" in names
    for recipe in RECIPES:  # the leading comment block names the launch command
        lines = recipe.read_text().splitlines()
        header = lines[: next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))]
        assert any(f"--config recipes/{recipe.name}" in line for line in header), recipe.name


@pytest.mark.parametrize("recipe", FIT_RECIPES, ids=lambda p: p.name)
def test_fit_recipe_parses_builds_and_takes_overrides(recipe, tmp_path):
    from es_lightning.module import ReasoningModule
    from es_lightning.strategies import ESStrategy, GRPOStrategy
    from es_lightning.training.config import TrainerConfig

    _, _, init = _parse(
        "fit", "--config", str(recipe), "--trainer.max_steps", "3", "--trainer.output_dir", str(tmp_path)
    )
    fit = init.fit
    assert isinstance(fit.module, ReasoningModule)
    assert isinstance(fit.trainer, TrainerConfig)
    assert fit.trainer.max_steps == 3 and fit.trainer.output_dir == str(tmp_path)
    assert (fit.strategy is None) != (fit.stages is None)
    if recipe.name.startswith(("smoke", "demo")):
        return
    if recipe.name.startswith(
        ("coverage_cpu_", "coverage_arith40_", "forgetting_cpu_")
    ):  # CPU: own sizes, paper's protocol
        assert fit.trainer.batch_size == 64 and fit.module.task.n_test == 200
        assert (fit.evaluation.num_samples, fit.evaluation.temperature, fit.evaluation.ks) == (32, 0.6, None)
        return
    strategies = [fit.strategy] if fit.stages is None else [s.strategy for s in fit.stages]
    for strategy in strategies:
        if isinstance(strategy, ESStrategy):
            settings = strategy
            assert (settings.population_size, settings.sigma, settings.learning_rate) == (32, 1.5e-3, 2.5e-4)
        else:
            assert isinstance(strategy, GRPOStrategy) and strategy.settings.group_size == 8
    if fit.stages is not None:
        assert [s.fraction for s in fit.stages] == [0.5, 0.5]
        assert {s.train_sampling.temperature for s in fit.stages if isinstance(s.strategy, GRPOStrategy)} == {
            1.0
        }
    elif isinstance(fit.strategy, GRPOStrategy):
        assert fit.module.train_sampling.temperature == 1.0
    assert fit.trainer.batch_size == 64
    assert (fit.evaluation.num_samples, fit.evaluation.temperature, fit.evaluation.ks) == (
        32,
        0.6,
        [1, 16, 32],
    )


def test_coverage_recipes_share_one_budget():
    """ES, GRPO and both sequences: same model, task, update budget, batch and evaluation."""
    fits = {}
    for method in ("es", "grpo", "es_then_grpo", "grpo_then_es"):
        _, _, init = _parse("fit", "--config", str(REPO / f"recipes/coverage_cpu_{method}.yaml"))
        fits[method] = init.fit
    for fit in fits.values():
        assert fit.module.model.endswith("tiny-countdown")
        assert (fit.trainer.max_steps, fit.trainer.batch_size) == (120, 64)  # coverage setting v2
        assert type(fit.rollout) is type(fits["es"].rollout)  # one backend for every method
        assert vars(fit.module.task) == vars(fits["es"].module.task)
        assert fit.evaluation == fits["es"].evaluation
    for method in ("es_then_grpo", "grpo_then_es"):
        assert [s.fraction for s in fits[method].stages] == [0.5, 0.5]


def test_paper_settings_per_recipe():
    _, _, easy = _parse("fit", "--config", str(REPO / "recipes/easy_qwen1p5b.yaml"))
    assert (
        easy.fit.module.train_sampling.temperature == 0.0
        and easy.fit.module.train_sampling.max_tokens == 2048
    )
    assert easy.fit.trainer.epochs == 2
    _, _, hard = _parse("fit", "--config", str(REPO / "recipes/hard_r1distill1p5b.yaml"))
    assert (
        hard.fit.module.train_sampling.temperature == 0.6
        and hard.fit.module.train_sampling.max_tokens == 8192
    )
    assert hard.fit.trainer.epochs == 1
    assert hard.fit.eval_tasks == "hard"
    assert list(resolve_eval_tasks(hard.fit.eval_tasks)) == [
        "math500",
        "aime24",
        "aime25",
        "amc23",
        "gpqa",
        "mbpp",
        "commonsense_qa",
        "countdown",
    ]


def test_eval_recipe_parses():
    _, _, init = _parse("evaluate", "--config", str(REPO / "recipes/eval_gsm8k_qwen1p5b.yaml"))
    assert init.evaluate.task == "gsm8k" and init.evaluate.evaluation.num_samples == 32


def test_help_explains_every_trainer_option(capsys):
    result = run_main(capsys, "fit", "--help")
    assert result.returncode == 0
    out = result.stdout
    from dataclasses import fields

    from es_lightning.training.config import TrainerConfig

    for f in fields(TrainerConfig):
        assert f"--trainer.{f.name}" in out
    assert "Run directory" in out  # field docstrings become help text


def test_bad_strategy_setting_is_named():
    with pytest.raises((ValueError, SystemExit)):
        _parse(
            "fit",
            "--config",
            str(REPO / "recipes/smoke_cpu.yaml"),
            "--strategy.init_args.population_size",
            "0",
        )


def test_offline_scoring_of_real_gsm8k_rows(tmp_path, gsm8k_test_file, capsys):
    rows = [json.loads(line) for line in gsm8k_test_file.read_text().splitlines()[:5]]
    with (tmp_path / "samples.jsonl").open("w") as f:
        for i, row in enumerate(rows):
            gold = row["answer"].split("####")[-1].strip()
            # the first two prompts get one right answer out of 2, the rest none
            completions = [f"... #### {gold}", "#### -1"] if i < 2 else ["#### -1", "no idea"]
            f.write(json.dumps({**row, "completions": completions}) + "\n")
    out = tmp_path / "scores.json"
    argv = [
        "evaluate",
        "--task",
        "gsm8k",
        "--completions",
        str(tmp_path / "samples.jsonl"),
        "--output",
        str(out),
    ]
    assert run_main(capsys, *argv).returncode == 0
    scores = json.loads(out.read_text())["gsm8k"]
    assert scores["n_prompts"] == 5 and scores["n_samples"] == 2
    assert scores["pass@1"] == pytest.approx(2 * 0.5 / 5)
    assert scores["pass@2"] == pytest.approx(2 / 5)


@pytest.mark.integration
def test_generation_mode_writes_json_completions_and_plot(tmp_path, tiny_model_path):
    out = tmp_path / "eval.json"
    cmd = [
        *CLI,
        "evaluate",
        "--task",
        "echo",
        "--model",
        str(tiny_model_path),
        "--output",
        str(out),
        "--rollout",
        "es_lightning.rollout.hf.HFRollout",
        "--evaluation.num_samples",
        "4",
        "--evaluation.max_tokens",
        "6",
        "--evaluation.limit",
        "3",
        "--device",
        "cpu",
    ]
    subprocess.run(cmd, check=True, capture_output=True, cwd=tmp_path, env=subprocess_env())
    summary = json.loads(out.read_text())["echo"]
    assert summary["n_prompts"] == 3 and summary["n_samples"] == 4
    assert {f"pass@{k}" for k in range(1, 5)} <= set(summary) and "greedy" in summary
    lines = (tmp_path / "eval_completions.jsonl").read_text().splitlines()
    assert len(lines) == 3 and len(json.loads(lines[0])["completions"]) == 4
    assert (tmp_path / "eval_pass_at_k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "gsm8k"], "exactly one of --model"),
        (["--task", "gsm8k", "--completions", "/nonexistent.jsonl"], "does not exist"),
        (["--task", "no_such_task", "--completions", "x.jsonl"], "no_such_task"),
    ],
)
def test_evaluate_errors_name_the_problem(args, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    proc = run_main(capsys, "evaluate", *args)
    assert proc.returncode != 0
    assert message in proc.stderr


def test_fit_refuses_a_missing_model_folder_before_work(tmp_path, monkeypatch, capsys):
    recipe = (
        (REPO / "recipes/smoke_cpu.yaml")
        .read_text()
        .replace("es-lightning/tiny-random", str(tmp_path / "missing"))
    )
    (tmp_path / "r.yaml").write_text(recipe)
    monkeypatch.chdir(tmp_path)
    proc = run_main(
        capsys, "fit", "--config", str(tmp_path / "r.yaml"), "--trainer.output_dir", str(tmp_path / "o")
    )
    assert proc.returncode != 0 and "missing" in proc.stderr and "config.json" in proc.stderr


@pytest.mark.integration
def test_generation_mode_several_tasks_in_one_engine(tmp_path, tiny_model_path):
    out = tmp_path / "suite.json"
    cmd = [
        *CLI,
        "evaluate",
        "--task",
        "[echo, countdown]",
        "--model",
        str(tiny_model_path),
        "--output",
        str(out),
        "--rollout",
        "es_lightning.rollout.hf.HFRollout",
        "--evaluation.num_samples",
        "2",
        "--evaluation.max_tokens",
        "6",
        "--evaluation.limit",
        "2",
        "--device",
        "cpu",
    ]
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=tmp_path, env=subprocess_env())
    data = json.loads(out.read_text())
    assert set(data) == {"echo", "countdown", "average"}
    assert data["average"]["pass@1"] == pytest.approx(
        (data["echo"]["pass@1"] + data["countdown"]["pass@1"]) / 2
    )
    for name in ("echo", "countdown"):
        assert (tmp_path / f"suite_{name}_completions.jsonl").is_file()
        assert (tmp_path / f"suite_{name}_pass_at_k.png").is_file()
    assert "average" in proc.stdout and "pass@1" in proc.stdout  # the printed table


@pytest.mark.parametrize("recipe", PAPER_FIT_RECIPES, ids=lambda p: p.name)
def test_paper_recipes_name_an_evaluation_suite(recipe):
    _, _, init = _parse("fit", "--config", str(recipe))
    setting = "hard" if "r1distill" in recipe.name else "easy"
    assert init.fit.eval_tasks == setting  # a suite name, not a pasted task list
    tasks = resolve_eval_tasks(init.fit.eval_tasks)
    assert list(tasks) == list(SUITES[setting].tasks)
    assert ("hotpotqa" in tasks) == (setting == "easy")


@pytest.mark.parametrize("recipe", PAPER_FIT_RECIPES, ids=lambda p: p.name)
def test_paper_grpo_recipes_use_the_papers_sequence_mean(recipe):
    """The paper's GRPO objective: −(1/G) Σ_i (1/T_i) Σ_t min(ρ A, clip(ρ) A), i.e. ``sequence_mean``."""
    from es_lightning.strategies import GRPOStrategy

    _, _, init = _parse("fit", "--config", str(recipe))
    fit = init.fit
    strategies = [fit.strategy] if fit.stages is None else [s.strategy for s in fit.stages]
    grpo = [s for s in strategies if isinstance(s, GRPOStrategy)]
    assert bool(grpo) == ("grpo" in recipe.name)
    assert all(s.loss.loss_aggregation == "sequence_mean" for s in grpo)


@pytest.mark.parametrize("recipe", POPSIZE_RECIPES)
def test_population_size_recipes_sweep_n(recipe, tmp_path):
    text = (REPO / "recipes" / recipe).read_text()
    stem = recipe.removesuffix(".yaml")
    for n in (8, 16, 32, 64):  # the header lists the four launch commands
        command = (
            f"es-lightning fit --config recipes/{recipe} --strategy.init_args.population_size {n} "
            f"--trainer.output_dir runs/{stem}_n{n}"
        )
        assert command in text
    _, _, init = _parse(
        "fit",
        "--config",
        str(REPO / "recipes" / recipe),
        "--strategy.init_args.population_size",
        "8",
        "--trainer.output_dir",
        str(tmp_path),
    )
    settings = init.fit.strategy
    assert settings.population_size == 8 and init.fit.trainer.output_dir == str(tmp_path)
    assert (settings.sigma, settings.learning_rate) == (1.5e-3, 2.5e-4)


def test_eval_tasks_take_a_suite_name_or_a_list_of_them():
    recipe = str(REPO / "recipes/easy_qwen1p5b.yaml")
    _, _, init = _parse("fit", "--config", recipe, "--eval_tasks", "[hard_math, easy_heldout]")
    assert init.fit.eval_tasks == ["hard_math", "easy_heldout"]
    assert list(resolve_eval_tasks(init.fit.eval_tasks)) == [
        "math500",
        "aime24",
        "aime25",
        "amc23",
        "commonsense_qa",
        "hotpotqa",
        "countdown",
        "gpqa",
        "mbpp",
    ]


def test_an_unknown_suite_in_a_recipe_is_named_before_any_work(tmp_path):
    recipe = (
        (REPO / "recipes/easy_qwen1p5b.yaml").read_text().replace("eval_tasks: easy ", "eval_tasks: esay ")
    )
    (tmp_path / "r.yaml").write_text(recipe)
    _, _, init = _parse("fit", "--config", str(tmp_path / "r.yaml"), "--trainer.output_dir", str(tmp_path))
    kwargs = {k: v for k, v in init.fit.items() if k != "config"}
    with pytest.raises(ValueError, match="unknown evaluation suite 'esay'") as err:
        run_fit(**kwargs)  # fails on the name, before any model, engine or data is touched
    assert all(name in str(err.value) for name in SUITES)


def test_strategy_choices_are_the_reasoning_strategies_only():
    from es_lightning.cli import build_parser

    fit_help = build_parser()._subcommands_action._name_parser_map["fit"].format_help()
    listed = fit_help.split("\n  --strategy STRATEGY", 1)[1].split("--stages", 1)[0]
    for name in ("ESStrategy", "GRPOStrategy", "GRPOFSDPStrategy"):
        assert name in listed
    assert "DDPStrategy" not in listed and "DeepSpeed" not in listed
    with pytest.raises(SystemExit):
        build_parser().parse_args(
            ["fit", "--module", "{}", "--strategy", "lightning.fabric.strategies.DDPStrategy"]
        )


def test_tune_recipe_plans_every_trial_on_the_validation_split(tmp_path):
    """recipes/tune_cpu.yaml: ES 2 σ x 2 α and GRPO 4 learning rates, one budget, validation only."""
    from es_lightning.tune.trials import plan_trials

    _, _, init = _parse("tune", "--config", str(REPO / "recipes/tune_cpu.yaml"))
    tune = init.tune
    assert tune.selection.metric == "eval/countdown_tiny/pass@1" and tune.selection.rule == "delta_last"
    assert tune.budget == [
        "--trainer.max_steps 30",
        "--trainer.batch_size 64",
        "--rollout es_lightning.rollout.hf.HFRollout",
    ]
    assert tune.seeds == [0]
    methods = {name: method for name, method in tune.methods.items()}
    assert methods["es"].grid == {
        "strategy.init_args.sigma": [1e-2, 3e-3],
        "strategy.init_args.learning_rate": [2e-3, 1e-3],
    }
    assert methods["grpo"].grid == {"strategy.init_args.learning_rate": [1e-5, 3e-5, 1e-4, 3e-4]}
    budget = [t for item in tune.budget for t in item.split()]
    validation = [t for item in tune.validation_overrides for t in item.split()]
    trials, removed = plan_trials(
        methods, tune.selection, budget, validation, tune.seeds, tmp_path, tune.trial_callbacks
    )
    assert [t.method for t in trials] == ["es"] * 4 + ["grpo"] * 4  # as many settings per method
    assert removed["es"][0] == "es_lightning.callbacks.TokenEntropy"  # trial_callbacks: false drops all
    import yaml

    for trial in trials:
        settings = yaml.safe_load(trial.settings)
        assert settings["callbacks"] == [] and settings["trainer"]["output_dir"] == "RUN_DIR"
        assert (settings["trainer"]["max_steps"], settings["trainer"]["batch_size"]) == (30, 64)
        evaluation = settings["evaluation"]
        assert evaluation["split"] == "validation" and evaluation["limit"] == 200
        assert (evaluation["num_samples"], evaluation["temperature"], evaluation["ks"]) == (16, 0.6, None)
        task = settings["module"]["init_args"]["task"]["init_args"]
        assert (task["n_test"], task["n_validation"], task["seed"]) == (200, 200, 0)
    lrs = [yaml.safe_load(t.settings)["strategy"]["init_args"]["learning_rate"] for t in trials[4:]]
    assert lrs == [1e-5, 3e-5, 1e-4, 3e-4]
    assert all(yaml.safe_load(t.settings)["rollout"]["class_path"].endswith("HFRollout") for t in trials)


def test_tune_help_and_a_refused_setting(tmp_path, capsys):
    from es_lightning.cli import main

    help_ = run_main(capsys, "tune", "--help")
    assert help_.returncode == 0
    out = help_.stdout
    for option in ("--selection.metric", "--selection.rule", "--budget", "--validation_overrides", "--seeds"):
        assert option in out
    assert "Δ = metric after the last update" in out  # field docstrings become help text
    config = tmp_path / "tune.yaml"
    config.write_text(
        "methods: {es: {recipe: recipes/coverage_cpu_es.yaml, grid: {evaluation.split: [test]}}}\n"
        "selection: {metric: eval/countdown_tiny/pass@1}\n"
        f"output_dir: {tmp_path / 'out'}\n"
    )
    assert main(["tune", "--config", str(config)]) == 2
    assert (
        "es-lightning: error: tune: the grid of recipes/coverage_cpu_es.yaml sets 'evaluation.split'"
        in capsys.readouterr().err
    )
    assert not (tmp_path / "out").exists()
