"""A run started from Python records the config.yaml the command line records for the same run:
its objects written back as a recipe and resolved by fit's own parser."""

from __future__ import annotations

import importlib

import yaml

from es_lightning import (
    ESStrategy,
    EvalConfig,
    FunctionTask,
    GRPOStrategy,
    HFRollout,
    ReasoningModule,
    SamplingConfig,
    TrainerConfig,
)
from es_lightning.init_args import recorded_init_args, to_config
from es_lightning.tasks import DataSource, Echo
from es_lightning.training.run_config import python_run_config, write_run_config
from tests.helpers import TINY_ES_RECIPE


def exact(prompts, completions, answer, **kwargs):
    return [float(c == a) for c, a in zip(completions, answer)]


GRPO_FUNCTION_RECIPE = """
module:
  model: es-lightning/tiny-random
  task:
    class_path: es_lightning.tasks.FunctionTask
    init_args:
      train: {path: data/train.jsonl}
      reward_funcs: [tests.training.test_run_config.exact]
      reward_weights: [2.0]
      name: repeat
  train_sampling: {temperature: 1.0, max_tokens: 12}
strategy:
  class_path: es_lightning.strategies.GRPOStrategy
  init_args: {group_size: 4, learning_rate: 1.0e-4}
rollout: {class_path: es_lightning.rollout.hf.HFRollout}
trainer: {output_dir: runs/mine, max_steps: 3, batch_size: 4, accelerator: cpu}
evaluation: {num_samples: 4, ks: [1, 4], max_tokens: 12}
"""


def _cli_config(tmp_path, recipe: str) -> dict:
    """What ``es-lightning fit --config recipe`` writes as config.yaml."""
    from es_lightning.cli import build_parser, dump_resolved

    (tmp_path / "recipe.yaml").write_text(recipe)
    parser = build_parser()
    parsed = parser.parse_args(["fit", "--config", str(tmp_path / "recipe.yaml")])
    fit = parser._subcommands_action._name_parser_map["fit"]
    config = yaml.safe_load(dump_resolved(fit, parsed.fit))
    config.pop("config", None)
    return config


DDP_OPTIONS = {
    "batched_grad_copy",
    "broadcast_buffers",
    "bucket_cap_mb",
    "bucket_cap_mb_list",
    "check_reduction",
    "delay_all_reduce_named_params",
    "device_ids",
    "device_mesh",
    "dim",
    "find_unused_parameters",
    "forward_sync_buffers",
    "gradient_as_bucket_view",
    "init_sync",
    "mixed_precision",
    "output_device",
    "param_to_hook_all_reduce",
    "process_group",
    "skip_all_reduce_unused_params",
    "static_graph",
}
"""torch's DistributedDataParallel options, which the CLI lists for GRPO (its strategy passes them on)."""


def _same(python: object, cli: object, path: str = "") -> list[str]:
    """Where the two configurations differ (class paths compared by the class they import); the
    CLI's extra keys may only be torch's DDP options under a strategy's ``init_args``."""
    if isinstance(python, dict) and isinstance(cli, dict):
        keys = set(python) | set(cli)
        if path == ".strategy.init_args":
            keys -= DDP_OPTIONS - set(python)
        return [
            d
            for key in sorted(keys)
            for d in _same(python.get(key, "<absent>"), cli.get(key, "<absent>"), f"{path}.{key}")
        ]
    if path.endswith(".class_path") and isinstance(python, str) and isinstance(cli, str):
        return [] if _imported(python) is _imported(cli) else [path]
    return [] if python == cli else [f"{path}: {python!r} != {cli!r}"]


def _imported(path: str) -> object:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def test_the_tiny_es_recipe_from_python_is_the_clis_config(tmp_path):
    module = ReasoningModule(
        model="es-lightning/tiny-random",
        task=Echo(length=4, n_train=12, n_test=4),
        train_sampling=SamplingConfig(temperature=0.0, max_tokens=6),
    )
    python = python_run_config(
        module,
        ESStrategy(population_size=4, sigma=0.05, learning_rate=0.05),
        rollout=HFRollout(),
        trainer=TrainerConfig(batch_size=4, seed=3, accelerator="cpu", progress_bar=False),
    )
    assert _same(python, _cli_config(tmp_path, TINY_ES_RECIPE)) == []
    assert python["strategy"]["init_args"]["signal_window"] == 20  # defaults filled, as the CLI's


def test_a_grpo_reward_function_recipe_from_python_is_the_clis_config(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.jsonl").write_text('{"prompt": "Repeat: 1", "answer": "1"}\n')
    task = FunctionTask(
        train=DataSource(path="data/train.jsonl"), reward_funcs=[exact], reward_weights=[2.0], name="repeat"
    )
    python = python_run_config(
        ReasoningModule(
            model="es-lightning/tiny-random",
            task=task,
            train_sampling=SamplingConfig(temperature=1.0, max_tokens=12),
        ),
        GRPOStrategy(group_size=4, learning_rate=1e-4),
        rollout=HFRollout(),
        trainer=TrainerConfig(output_dir="runs/mine", max_steps=3, batch_size=4, accelerator="cpu"),
        evaluation=EvalConfig(num_samples=4, ks=[1, 4], max_tokens=12),
    )
    assert _same(python, _cli_config(tmp_path, GRPO_FUNCTION_RECIPE)) == []


def test_data_in_memory_is_described_and_the_rest_still_resolved(tmp_path):
    from datasets import Dataset

    task = FunctionTask(train=Dataset.from_list([{"prompt": "p", "answer": "1"}]), reward_funcs=[exact])
    python = python_run_config(ReasoningModule(model="es-lightning/tiny-random", task=task), ESStrategy())
    task_args = python["module"]["init_args"]["task"]["init_args"]
    assert task_args["train"] == "a Dataset in memory (1 rows, columns ['prompt', 'answer'])"
    assert task_args["prompt_column"] == "prompt" and task_args["reward_weights"] is None  # defaults filled
    assert task_args["reward_funcs"] == ["tests.training.test_run_config.exact"]
    path = write_run_config(tmp_path, python)
    assert yaml.safe_load(path.read_text()) == python


def test_recorded_arguments_by_name():
    echo = Echo(length=4, n_train=8, n_test=2)
    assert recorded_init_args(echo) == {"length": 4, "n_train": 8, "n_test": 2}
    module = ReasoningModule("es-lightning/tiny-random", echo, dtype="float32")  # positional by name
    assert recorded_init_args(module) == {
        "model": "es-lightning/tiny-random",
        "task": echo,
        "dtype": "float32",
    }
    assert recorded_init_args(ESStrategy(8, 0.01)) == {"population_size": 8, "sigma": 0.01}
    task = FunctionTask(reward_funcs=["tests.training.test_run_config.exact"], system_prompt="Be brief.")
    assert recorded_init_args(task) == {
        "reward_funcs": ["tests.training.test_run_config.exact"],
        "system_prompt": "Be brief.",
    }
    echo_config = to_config(echo)  # every argument, the defaults filled (those of GeneratedTask, Task too)
    assert echo_config["class_path"] == "es_lightning.tasks.Echo"
    assert echo_config["init_args"] == {
        **{"length": 4, "n_train": 8, "n_test": 2, "seed": 0, "format_weight": 0.5, "n_validation": 64},
        **{"train": None, "test": None, "validation": None, "system_prompt": None, "prompt_template": None},
    }
    assert to_config(exact) == "tests.training.test_run_config.exact"
    assert isinstance(to_config(task.train), type(None))
    assert (
        to_config(FunctionTask(train=[{"prompt": "p"}], reward_funcs=[exact]).train)
        == "a list in memory (1 rows)"
    )
