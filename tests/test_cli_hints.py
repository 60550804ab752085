"""Short names on the command line and parse errors that name the values that parse (the CLI's
``main`` in this process: these command lines print and exit before any work)."""

from __future__ import annotations

import pytest
import yaml

from es_lightning.cli_hints import ALIASES, hint
from tests.helpers import REPO, CommandResult, run_main


def test_short_names_in_a_recipe_expand_to_their_classes_and_take_init_args(tmp_path):
    from es_lightning.evaluation.command import evaluate_parser
    from es_lightning.training.command import fit_parser

    recipe = tmp_path / "short.yaml"
    recipe.write_text("strategy: grpo\nrollout: hf\n")
    smoke = str(REPO / "recipes" / "smoke_cpu.yaml")
    cfg = fit_parser().parse_args(
        ["--config", smoke, "--config", str(recipe), "--strategy.init_args.learning_rate", "0.001"]
    )
    assert cfg.strategy.class_path == ALIASES["strategy"]["grpo"]
    assert cfg.strategy.init_args.learning_rate == 0.001
    assert cfg.rollout.class_path == ALIASES["rollout"]["hf"]
    cfg = fit_parser().parse_args(
        ["--config", smoke, "--strategy", "es", "--strategy.init_args.sigma", "0.01"]
    )
    assert (cfg.strategy.class_path, cfg.strategy.init_args.sigma) == (ALIASES["strategy"]["es"], 0.01)
    recipe.write_text("rollout: hf\nmodel: es-lightning/tiny-random\ntask: arithmetic\n")
    assert (
        evaluate_parser().parse_args(["--config", str(recipe)]).rollout.class_path == ALIASES["rollout"]["hf"]
    )


def test_a_name_that_is_not_short_is_left_to_the_type_check(tmp_path):
    from es_lightning.training.command import fit_parser

    recipe = tmp_path / "bad.yaml"
    recipe.write_text("strategy: evolution\n")
    with pytest.raises(SystemExit):
        fit_parser().parse_args(
            ["--config", str(REPO / "recipes" / "smoke_cpu.yaml"), "--config", str(recipe)]
        )


def test_hint_names_the_key_jsonargparse_complains_about():
    assert "grpo_fsdp" in hint('Parser key "strategy":\n  Expected a dot import path string: foo')
    assert "--rollout vllm | hf" in hint('Parser key "rollout": bad')
    assert "es_lightning.tasks.GSM8K" in hint('Parser key "module":\n  Parser key "task": bad')
    assert "CSVLogger" in hint('Parser key "loggers": bad')
    assert hint('Parser key "trainer": something else') is None and hint("no key") is None


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> CommandResult:
    return run_main(
        capsys, "fit", "--config", str(REPO / "recipes" / "smoke_cpu.yaml"), *args, "--print_config"
    )


@pytest.mark.parametrize(
    ("args", "key", "class_path"),
    [
        (["--strategy", "grpo"], "strategy", "es_lightning.strategies.GRPOStrategy"),
        (["--strategy=grpo_fsdp"], "strategy", "es_lightning.strategies.GRPOFSDPStrategy"),
        (["--rollout", "hf"], "rollout", "es_lightning.rollout.hf.HFRollout"),
        (["--rollout", "HFRollout"], "rollout", "es_lightning.rollout.hf.HFRollout"),
    ],
)
def test_short_names_parse_to_their_classes(args, key, class_path, capsys):
    proc = _cli(capsys, *args)
    assert proc.returncode == 0, proc.stderr
    got = yaml.safe_load(proc.stdout)[key]["class_path"]  # jsonargparse may print a shorter path
    assert _resolve(got) is _resolve(class_path)


@pytest.mark.parametrize("name", ["hf", "vllm"])
def test_every_command_with_a_rollout_takes_the_same_short_names(name):
    """fit, evaluate and analyze parse ``--rollout hf`` (``vllm``) alike (in process: no engine)."""
    from es_lightning.cli import build_parser
    from es_lightning.cli_hints import ALIASES

    parser = build_parser()
    commands = {
        "fit": ["--module.model", "m", "--module.task", "es_lightning.tasks.Echo", "--strategy", "es"],
        "evaluate": ["--model", "m", "--task", "echo"],
        "analyze": ["--base", "b", "--checkpoint", "c", "--output", "o.json"],
    }
    for command, args in commands.items():
        cfg = parser.parse_args([command, *args, "--rollout", name])
        got = cfg[command].rollout.class_path
        assert _resolve(got) is _resolve(ALIASES["rollout"][name]), command


def _resolve(path: str) -> type:
    import importlib

    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_a_bad_strategy_or_rollout_error_lists_values_that_parse(capsys):
    proc = _cli(capsys, "--strategy", "foo")
    assert proc.returncode == 2
    assert "use: --strategy es | grpo | grpo_fsdp" in proc.stderr
    proc = _cli(capsys, "--rollout", "vlm")
    assert proc.returncode == 2 and "use: --rollout vllm | hf" in proc.stderr


def test_es_help_lists_no_ddp_options(capsys):
    proc = run_main(capsys, "fit", "--strategy.help", "ESStrategy")
    assert proc.returncode == 0, proc.stderr
    assert "--strategy.population_size" in proc.stdout and "--strategy.sigma" in proc.stdout
    for ddp_option in ("find_unused_parameters", "bucket_cap_mb", "gradient_as_bucket_view", "static_graph"):
        assert ddp_option not in proc.stdout
