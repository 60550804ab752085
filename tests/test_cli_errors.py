"""Every user error ends ``es-lightning`` with one clear message, status 2 and no traceback, before
any engine starts (the recipe's rollout is a tripwire that fails the run if one is set up). The
commands run in this process (:func:`tests.helpers.run_main`): each is refused before any work."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from es_lightning.errors import ConfigError, find_config_error
from tests.helpers import CommandResult, run_main

RECIPE = """
module:
  model: {model}
  task:
    class_path: es_lightning.tasks.GSM8K
    init_args:
      train: {{path: {train}}}
      test: {{path: {test}}}
  dtype: float32
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {{population_size: 4, sigma: 0.01, learning_rate: 0.01}}
rollout:
  class_path: tests.helpers.EngineTripwire
trainer: {{max_steps: 1, batch_size: 2, accelerator: cpu, progress_bar: false}}
evaluation: {{num_samples: 2, max_tokens: 4}}
"""


def _rows(n: int = 5) -> list[dict[str, str]]:
    return [{"question": f"What is {i} + 0?", "answer": f"{i} + 0 = {i}\n#### {i}"} for i in range(n)]


def _write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


@pytest.fixture()
def recipe(tmp_path: Path, tiny_model_path: Path) -> Path:
    good = _write_jsonl(tmp_path / "good.jsonl", [json.dumps(r) for r in _rows()])
    path = tmp_path / "recipe.yaml"
    path.write_text(RECIPE.format(model=tiny_model_path, train=good, test=good))
    return path


Cli = Callable[..., CommandResult]


@pytest.fixture()
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """``es-lightning ARGS`` in ``tmp_path``, offline, without ``ES_LIGHTNING_DEBUG``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # never ask the network
    monkeypatch.delenv("ES_LIGHTNING_DEBUG", raising=False)
    return lambda *args: run_main(capsys, *args)


def _refused(cli: Cli, recipe: Path, *overrides: str) -> str:
    """Run ``fit`` on ``recipe`` with ``overrides``; assert a clean refusal; return its message."""
    out = str(recipe.parent / "run")
    proc = cli("fit", "--config", str(recipe), "--trainer.output_dir", out, *overrides)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "EngineTripwire" not in proc.stderr  # refused before any engine was set up
    errors = [line for line in proc.stderr.splitlines() if line.startswith("es-lightning: error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    return proc.stderr[proc.stderr.index("es-lightning: error: ") :]


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["--strategy.init_args.sigma", "-1"], ["ESStrategy: invalid sigma=-1.0 (must be > 0)"]),
        (
            ["--strategy.init_args.learning_rate", "0"],
            ["ESStrategy: invalid learning_rate=0.0 (must be > 0)"],
        ),
        (["--strategy.init_args.population_size", "1"], ["invalid population_size=1 (must be >= 2"]),
        (["--trainer.batch_size", "0"], ["trainer.batch_size must be >= 1, got 0"]),
        (
            ["--evaluation.ks", "[1, 4]"],
            ["evaluation.ks [4] out of range 1..num_samples=2"],
        ),
    ],
    ids=["sigma", "learning_rate", "population_size", "batch_size", "k_above_m"],
)
def test_nonsensical_settings_are_refused_by_name(cli, recipe, overrides, expected):
    message = _refused(cli, recipe, *overrides)
    for text in expected:
        assert text in message


def test_a_missing_model_folder_is_named(tmp_path, cli, recipe):
    missing = tmp_path / "no_such_model"
    message = _refused(cli, recipe, "--module.model", str(missing))
    assert "module.model" in message and repr(str(missing)) in message and "config.json" in message


def test_a_hub_id_that_is_not_cached_is_named_with_where_it_looked(cli, recipe):
    message = _refused(cli, recipe, "--module.model", "nosuch-org/nosuch-model")
    assert "'nosuch-org/nosuch-model'" in message
    assert "not in the local HF cache" in message and "HF_HUB_OFFLINE" in message


def test_a_missing_data_file_is_named(tmp_path, cli, recipe):
    missing = tmp_path / "nope.jsonl"
    message = _refused(cli, recipe, "--module.task.init_args.train.path", str(missing))
    assert str(missing) in message and "does not exist" in message


def test_an_empty_data_file_is_named(tmp_path, cli, recipe):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    message = _refused(cli, recipe, "--module.task.init_args.train.path", str(empty))
    assert str(empty) in message and "empty" in message


def test_a_row_without_its_answer_names_file_and_line(tmp_path, cli, recipe):
    rows = _rows()
    del rows[2]["answer"]
    data = _write_jsonl(tmp_path / "third_row.jsonl", [json.dumps(r) for r in rows])
    message = _refused(cli, recipe, "--module.task.init_args.train.path", str(data))
    assert f"'{data}' line 3" in message and "['answer']" in message


def test_a_malformed_json_line_names_file_and_line(tmp_path, cli, recipe):
    lines = [json.dumps(r) for r in _rows()]
    lines[3] = lines[3][:-1]  # the closing brace is gone
    data = _write_jsonl(tmp_path / "broken.jsonl", lines)
    message = _refused(cli, recipe, "--module.task.init_args.train.path", str(data))
    assert f"'{data}' line 4: invalid JSON" in message


def test_a_resume_path_that_does_not_exist_is_named(tmp_path, cli, recipe):
    missing = tmp_path / "runs" / "old" / "checkpoints" / "step-000004"
    message = _refused(cli, recipe, "--trainer.resume", str(missing))
    assert "trainer.resume" in message and str(missing) in message and "does not exist" in message
    assert not (tmp_path / "run").exists()  # refused before the run directory is written


def test_an_output_dir_that_is_a_file_is_refused(tmp_path, cli, recipe):
    taken = tmp_path / "taken"
    taken.write_text("not a directory")
    proc = cli("fit", "--config", str(recipe), "--trainer.output_dir", str(taken))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert f"trainer.output_dir '{taken}' is an existing file" in proc.stderr


def test_an_unknown_task_name_lists_the_known_ones(cli):
    proc = cli("evaluate", "--task", "no_such_task", "--completions", "x.jsonl")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "es-lightning: error: unknown task 'no_such_task'; known tasks:" in proc.stderr
    assert "gsm8k" in proc.stderr and "countdown" in proc.stderr


def test_an_unknown_task_class_in_a_recipe_is_a_usage_error(cli, recipe):
    proc = cli("fit", "--config", str(recipe), "--module.task", "no_such_task")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "no_such_task" in proc.stderr and "usage:" not in proc.stderr  # the usage is under --help
    errors = [line for line in proc.stderr.splitlines() if line.startswith("es-lightning: error: ")]
    assert len(errors) == 1 and errors[0].endswith("; see es-lightning fit --help"), proc.stderr[-3000:]


def test_debug_shows_the_traceback(cli, recipe):
    args = ["fit", "--config", str(recipe), "--strategy.init_args.sigma", "-1"]
    with pytest.raises(Exception) as raised:  # not caught: a process shows its traceback
        cli("--debug", *args)
    error = find_config_error(raised.value)  # the ConfigError, or the error whose cause it is
    assert type(error) is ConfigError and str(error) == "ESStrategy: invalid sigma=-1.0 (must be > 0)"
