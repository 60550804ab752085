"""The ``es-lightning`` command: ``fit``, ``evaluate``, ``analyze`` and ``report``, built on jsonargparse.

Every option comes from a typed signature below (or the dataclasses/classes it names), and the
docstrings become ``--help``. Recipes are YAML files of the same keys::

    es-lightning fit --config recipes/easy_qwen1p5b.yaml --trainer.max_steps 10
    es-lightning fit --config recipes/smoke_cpu.yaml --print_config
    es-lightning evaluate --task gsm8k --completions samples.jsonl --output scores.json
    es-lightning analyze --base BASE --checkpoint runs/es/checkpoints/step-000030 --output es.json
    es-lightning report --config recipes/report_cpu.yaml --quick --output_dir runs/report
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from lightning.fabric.strategies import Strategy

from es_lightning.callbacks.base import Callback
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
    eval_tasks: dict[str, Task] | str | list[str] | None = None,
    callbacks: list[Callback | Any] | None = None,
    hparams: dict[str, Any] | None = None,
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
            (``eval/{name}/pass@k``), or a named suite (``easy``, ``easy_heldout``, ``hard``,
            ``hard_math``, ``hard_heldout``) or a list of suite names; default: the training task's test split.
        callbacks: ``es_lightning.callbacks`` instances (TokenEntropy, ParameterDrift,
            LayerAttribution, HeldOutPassAtK, PopulationDiversity, your own), or objects with hooks
            such as ``on_train_batch_end(trainer, step, metrics)``; see callbacks/README.md.
        hparams: the run's resolved configuration, recorded in every checkpoint (the CLI fills it).
    """
    from es_lightning.evaluation.suites import resolve_eval_tasks
    from es_lightning.training.pipeline import run_pipeline
    from es_lightning.training.trainer import Trainer

    eval_tasks = resolve_eval_tasks(eval_tasks)  # a suite name or names -> {metric name: Task}
    if (strategy is None) == (stages is None):
        raise ValueError("fit: give exactly one of `strategy` or `stages`")
    if stages is not None:
        return run_pipeline(
            module, stages, rollout or _default_rollout(), trainer, evaluation, eval_tasks, callbacks, hparams
        )
    trainer_obj = Trainer(
        module=module,
        strategy=strategy,
        rollout=rollout or _default_rollout(),
        config=trainer,
        evaluation=evaluation,
        eval_tasks=eval_tasks,
        callbacks=callbacks,
        hparams=hparams,
    )
    return trainer_obj.fit()


def run_evaluate(
    task: str | Task | list[str | Task],
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
            hotpotqa, mbpp, arithmetic, echo), a task config with class_path/init_args, or a list of
            them (generation mode: one engine for all, plus their average).
        model: HF id, local folder or built-in name to sample from (generation mode).
        completions: JSONL of dataset rows plus ``"completions": [str, ...]`` (offline mode).
        output: JSON file written with ``{task: {n_prompts, n_samples, pass@1.., maj@1..}}``.
        evaluation: M, temperature, K values, greedy pass, prompt limit (generation mode).
        rollout: generation backend (generation mode); default vLLM when installed, else transformers.
        device: ``cpu``, ``cuda``, ``cuda:1`` or ``auto``.
        dtype: weights' dtype in generation mode (``auto``: bf16 on CUDA, fp32 on CPU).
    """
    import torch

    from es_lightning.evaluation.offline import score_completions_file
    from es_lightning.evaluation.suite import evaluate_model, write_summary
    from es_lightning.tasks.registry import get_task

    if (model is None) == (completions is None):
        raise ValueError("evaluate: give exactly one of --model (generate) or --completions (score a file)")
    given = task if isinstance(task, list) else [task]
    tasks = [get_task(t) if isinstance(t, str) else t for t in given]
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ValueError(f"evaluate: tasks {names} repeat a name; evaluate such variants in separate runs")
    evaluation = evaluation or EvalConfig()
    output = Path(output)
    if completions is not None:
        if len(tasks) != 1:
            raise ValueError("evaluate: --completions scores one task; give a single --task")
        if not Path(completions).is_file():
            raise FileNotFoundError(f"evaluate: --completions file {completions} does not exist")
        summaries = {names[0]: score_completions_file(tasks[0], completions, ks=evaluation.ks)}
        write_summary(output, summaries)
        return summaries
    cuda = torch.cuda.is_available()
    target = torch.device("cuda" if cuda else "cpu") if device == "auto" else torch.device(device)
    return evaluate_model(
        model, dict(zip(names, tasks)), evaluation, rollout or _default_rollout(), output, target, dtype
    )


def build_parser():
    from jsonargparse import ActionConfigFile, ArgumentParser, set_parsing_settings

    set_parsing_settings(docstring_parse_attribute_docstrings=True)  # dataclass field docstrings -> --help

    parser = ArgumentParser(
        prog="es-lightning", description="Post-train LLMs with Evolution Strategies and GRPO."
    )
    subcommands = parser.add_subcommands(dest="subcommand")

    fit_parser = ArgumentParser(description=run_fit.__doc__.split("\n")[0])
    fit_parser.add_argument("--config", action=ActionConfigFile, help="YAML recipe (see recipes/).")
    fit_parser.add_function_arguments(run_fit, fail_untyped=False, skip={"hparams"})
    subcommands.add_subcommand("fit", fit_parser, help="Post-train a model (ES or GRPO strategy).")

    eval_parser = ArgumentParser(description=run_evaluate.__doc__.split("\n")[0])
    eval_parser.add_argument("--config", action=ActionConfigFile, help="YAML with the same keys.")
    eval_parser.add_function_arguments(run_evaluate, fail_untyped=False)
    subcommands.add_subcommand(
        "evaluate", eval_parser, help="Pass@K / Maj@K of a model or of saved completions."
    )
    from es_lightning.analysis.command import run_analyze
    from es_lightning.report.command import report_parser

    analyze_parser = ArgumentParser(description=run_analyze.__doc__.split("\n")[0])
    analyze_parser.add_argument("--config", action=ActionConfigFile, help="YAML with the same keys.")
    analyze_parser.add_function_arguments(run_analyze, fail_untyped=False)
    subcommands.add_subcommand(
        "analyze", analyze_parser, help="Drift, update sparsity and layer attribution of a checkpoint."
    )

    subcommands.add_subcommand(
        "report", report_parser(), help="Run or reuse base/ES/GRPO/sequential runs and write REPORT.md."
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
        dumped = sub.dump(cfg[name], skip_none=False)
        (out_dir / "config.yaml").write_text(dumped)
        run_fit(**kwargs, hparams=yaml.safe_load(dumped))
    elif name == "report":
        from es_lightning.report import run_report

        run_report(**kwargs)
    elif name == "analyze":
        from es_lightning.analysis.command import run_analyze

        run_analyze(**kwargs)
    else:
        run_evaluate(**kwargs)
    return 0
