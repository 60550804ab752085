"""``--stages.<name>.<key> VALUE``: a pipeline stage's setting on the command line, wherever it stands."""

from __future__ import annotations

import pytest
import yaml

from es_lightning.cli import main
from es_lightning.errors import ConfigError
from es_lightning.training.command import fit_parser
from es_lightning.training.stage_args import expand_stage_args, split_stage_args
from tests.helpers import REPO

ES_THEN_GRPO = str(REPO / "recipes" / "coverage_cpu_es_then_grpo.yaml")
GRPO_THEN_ES = str(REPO / "recipes" / "coverage_cpu_grpo_then_es.yaml")
ALPHA = "--stages.es.strategy.init_args.learning_rate"


@pytest.fixture(scope="module")
def parser():
    return fit_parser()


def test_stage_arguments_are_split_from_the_others():
    args = ["--config", "x.yaml", ALPHA, "3e-3", "--stages.2.fraction=0.25", "--trainer.seed", "1"]
    args += ["--stages.init_args.fraction", "0.5"]  # jsonargparse's own: the last stage
    rest, found = split_stage_args(args)
    assert rest == ["--config", "x.yaml", "--trainer.seed", "1", "--stages.init_args.fraction", "0.5"]
    assert found == [("es", "strategy.init_args.learning_rate", "3e-3"), ("2", "fraction", "0.25")]
    with pytest.raises(ConfigError, match="give a value"):
        split_stage_args([ALPHA])


def _stages(parser, recipe: str, *args: str) -> list:
    cfg = parser.parse_args(expand_stage_args(parser, ["--config", recipe, *args]))
    return [(s.strategy.class_path.rsplit(".", 1)[1], s.strategy.init_args.learning_rate) for s in cfg.stages]


def test_the_es_stage_is_set_wherever_it_stands(parser):
    assert _stages(parser, ES_THEN_GRPO) == [("ESStrategy", 1e-3), ("GRPOStrategy", 1e-4)]
    assert _stages(parser, ES_THEN_GRPO, ALPHA, "3e-3") == [("ESStrategy", 3e-3), ("GRPOStrategy", 1e-4)]
    assert _stages(parser, GRPO_THEN_ES, ALPHA, "3.0e-3") == [("GRPOStrategy", 1e-4), ("ESStrategy", 3e-3)]
    by_position = _stages(parser, GRPO_THEN_ES, "--stages.1.strategy.init_args.learning_rate=2e-4")
    assert by_position == [("GRPOStrategy", 2e-4), ("ESStrategy", 1e-3)]
    cfg = parser.parse_args(expand_stage_args(parser, ["--config", ES_THEN_GRPO, "--trainer.seed", "4"]))
    assert cfg.trainer.seed == 4  # no stage argument: the arguments as they are


def test_wrong_stage_arguments_are_refused_naming_them(parser, capsys):
    with pytest.raises(
        ConfigError, match=r"--stages.ppo: no stage of that name; the stages are \['es', 'grpo'\]"
    ):
        expand_stage_args(parser, ["--config", ES_THEN_GRPO, "--stages.ppo.fraction", "0.5"])
    with pytest.raises(ConfigError, match=r"--stages.3: the pipeline has stages 1..2"):
        expand_stage_args(parser, ["--config", ES_THEN_GRPO, "--stages.3.fraction", "0.5"])
    single = str(REPO / "recipes" / "coverage_cpu_es.yaml")
    with pytest.raises(ConfigError, match="the recipe has no stages"):
        expand_stage_args(parser, ["--config", single, ALPHA, "3e-3"])
    with pytest.raises(SystemExit) as exited:  # the value is checked as any other
        parser.parse_args(expand_stage_args(parser, ["--config", ES_THEN_GRPO, ALPHA, "fast"]))
    assert exited.value.code == 2 and 'Parser key "learning_rate"' in capsys.readouterr().err


def test_the_command_line_resolves_it(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["fit", "--config", ES_THEN_GRPO, ALPHA, "3e-3", "--print_config"])
    assert exited.value.code == 0
    stages = yaml.safe_load(capsys.readouterr().out)["stages"]
    assert [s["strategy"]["init_args"]["learning_rate"] for s in stages] == [3e-3, 1e-4]
    assert main(["fit", "--config", ES_THEN_GRPO, "--stages.ppo.fraction", "0.5"]) == 2
    assert "es-lightning: error: --stages.ppo: no stage of that name" in capsys.readouterr().err
