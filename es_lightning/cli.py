"""The ``es-lightning`` command: ``fit`` and ``evaluate``, built on jsonargparse.

Every option comes from a typed signature below (or the dataclasses/classes it names), and the
docstrings become ``--help``. Recipes are YAML files of the same keys::

    es-lightning fit --config recipes/easy_qwen1p5b.yaml --trainer.max_steps 10
    es-lightning fit --config recipes/smoke_cpu.yaml --print_config
    es-lightning evaluate --task gsm8k --completions samples.jsonl --output scores.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from lightning.fabric.strategies import Strategy

from es_lightning.evaluation.runner import EvalConfig
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import Rollout
from es_lightning.tasks.base import Task
from es_lightning.training.config import TrainerConfig
from es_lightning.training.pipeline import Stage


def _default_rollout() -> Rollout:
    from es_lightning.rollout.vllm import VLLMRollout, vllm_available

    if vllm_available():
        return VLLMRollout()
    from es_lightning.rollout.hf import HFRollout

    return HFRollout()


def run_fit(
    module: ReasoningModule,
    strategy: Strategy | None = None,
    stages: list[Stage] | None = None,
    rollout: Rollout | None = None,
    trainer: TrainerConfig = TrainerConfig(),  # noqa: B008  (jsonargparse lists its fields in --help)
    evaluation: EvalConfig | None = None,
    eval_tasks: dict[str, Task] | None = None,
    callbacks: list[Any] | None = None,
) -> dict[str, Any]:
    """Post-train a model with ES or GRPO and evaluate it before and after.

    Args:
        module: the model, its prompt format and the task it is trained on.
        strategy: the optimizer as a Fabric strategy, e.g. ``class_path: es_lightning.strategies.ESStrategy``
            with its ``init_args`` (population_size, sigma, learning_rate, ...), or ``GRPOStrategy``.
        stages: instead of ``strategy``: optimizers run in order on one model, each with a
            ``fraction`` of the update budget (e.g. ES then GRPO, half each).
        rollout: the generation backend; default: vLLM when installed, else transformers.
        trainer: run length, batch size, output directory, devices, checkpoints, resume.
        evaluation: Pass@K evaluation settings (``null`` skips evaluation).
        eval_tasks: tasks evaluated before/after training, by the name used in metric keys
            (``eval/{name}/pass@k``); default: the training task's test split.
        callbacks: objects with hooks such as ``on_train_batch_end(trainer, step, metrics)``.
    """
    from es_lightning.training.pipeline import run_pipeline
    from es_lightning.training.trainer import Trainer

    if (strategy is None) == (stages is None):
        raise ValueError("fit: give exactly one of `strategy` or `stages`")
    if stages is not None:
        return run_pipeline(
            module, stages, rollout or _default_rollout(), trainer, evaluation, eval_tasks, callbacks
        )
    trainer_obj = Trainer(
        module=module,
        strategy=strategy,
        rollout=rollout or _default_rollout(),
        config=trainer,
        evaluation=evaluation,
        eval_tasks=eval_tasks,
        callbacks=callbacks,
    )
    return trainer_obj.fit()


def run_evaluate(
    task: str | Task,
    model: str | None = None,
    completions: Path | None = None,
    output: Path = Path("eval.json"),
    evaluation: EvalConfig | None = None,
    rollout: Rollout | None = None,
    device: str = "auto",
    dtype: str = "auto",
) -> dict[str, Any]:
    """Score saved completions (``--completions``) or generate and score (``--model``).

    Args:
        task: a registered task name (gsm8k, math, countdown, multiple_choice, commonsense_qa, gpqa,
            hotpotqa, mbpp) or a task config with class_path/init_args.
        model: HF id or folder to sample from (generation mode).
        completions: JSONL of dataset rows plus ``"completions": [str, ...]`` (offline mode).
        output: JSON file written with ``{task: {n_prompts, n_samples, pass@1.., maj@1..}}``.
        evaluation: M, temperature, K values, greedy pass, prompt limit (generation mode).
        rollout: generation backend (generation mode); default vLLM when installed, else transformers.
        device: ``cpu``, ``cuda``, ``cuda:1`` or ``auto``.
        dtype: weights' dtype in generation mode (``auto``: bf16 on CUDA, fp32 on CPU).
    """
    from es_lightning.evaluation.offline import score_completions_file
    from es_lightning.tasks.registry import get_task

    task_obj = get_task(task) if isinstance(task, str) else task
    if (model is None) == (completions is None):
        raise ValueError("evaluate: give exactly one of --model (generate) or --completions (score a file)")
    evaluation = evaluation or EvalConfig()
    output = Path(output)
    if completions is not None:
        if not Path(completions).is_file():
            raise FileNotFoundError(f"evaluate: --completions file {completions} does not exist")
        summary = score_completions_file(task_obj, completions, ks=evaluation.ks)
        _write_json(output, {task_obj.name: summary})
        return {task_obj.name: summary}

    import torch

    from es_lightning.evaluation.plots import plot_pass_at_k
    from es_lightning.evaluation.runner import evaluate_rows

    rows = task_obj.load("test")
    module = ReasoningModule(model=model, task=task_obj, dtype=dtype)
    module.check_model_source()
    target = (
        torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if device == "auto"
        else torch.device(device)
    )
    rollout = rollout or _default_rollout()
    rollout.setup(model, target, module.torch_dtype(target))
    if hasattr(rollout, "start"):
        rollout.start()
    try:
        result = evaluate_rows(module, rollout, rows, evaluation)
    finally:
        rollout.close()
    _write_json(output, {task_obj.name: result.summary})
    stem = output.with_suffix("")
    result.write_completions(f"{stem}_completions.jsonl")
    curve = {int(k[5:]): v for k, v in result.summary.items() if k.startswith("pass@")}
    plot_pass_at_k(
        {Path(model).name or model: curve}, f"{stem}_pass_at_k.png", title=f"{task_obj.name}: Pass@K"
    )
    return {task_obj.name: result.summary}


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    print(json.dumps(data, indent=2))


def build_parser():
    from jsonargparse import ActionConfigFile, ArgumentParser, set_parsing_settings

    set_parsing_settings(docstring_parse_attribute_docstrings=True)  # dataclass field docstrings -> --help

    parser = ArgumentParser(
        prog="es-lightning", description="Post-train LLMs with Evolution Strategies and GRPO."
    )
    subcommands = parser.add_subcommands(dest="subcommand")

    fit_parser = ArgumentParser(description=run_fit.__doc__.split("\n")[0])
    fit_parser.add_argument("--config", action=ActionConfigFile, help="YAML recipe (see recipes/).")
    fit_parser.add_function_arguments(run_fit, fail_untyped=False)
    subcommands.add_subcommand("fit", fit_parser, help="Post-train a model (ES or GRPO strategy).")

    eval_parser = ArgumentParser(description=run_evaluate.__doc__.split("\n")[0])
    eval_parser.add_argument("--config", action=ActionConfigFile, help="YAML with the same keys.")
    eval_parser.add_function_arguments(run_evaluate, fail_untyped=False)
    subcommands.add_subcommand(
        "evaluate", eval_parser, help="Pass@K / Maj@K of a model or of saved completions."
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    import es_lightning.strategies  # noqa: F401  (registers `es` with Fabric)

    parser = build_parser()
    cfg = parser.parse_args(argv if argv is not None else sys.argv[1:])
    name = cfg.subcommand
    init = parser.instantiate(cfg)
    kwargs = {k: v for k, v in init[name].items() if k != "config"}
    if name == "fit":
        out_dir = Path(kwargs["trainer"].output_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        sub = parser._subcommands_action._name_parser_map["fit"]
        (out_dir / "config.yaml").write_text(sub.dump(cfg[name], skip_none=False))
        run_fit(**kwargs)
    else:
        run_evaluate(**kwargs)
    return 0
