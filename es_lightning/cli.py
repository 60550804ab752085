"""The ``es-lightning`` command: ``fit``, ``evaluate``, ``analyze``, ``report``, ``compare`` and ``tune``, built on jsonargparse.

Every option comes from a typed signature below (or the dataclasses/classes it names), and the
docstrings become ``--help``. Recipes are YAML files of the same keys::

    es-lightning fit --config recipes/easy_qwen1p5b.yaml --trainer.max_steps 10
    es-lightning fit --config recipes/smoke_cpu.yaml --print_config
    es-lightning evaluate --task gsm8k --completions samples.jsonl --output scores.json
    es-lightning analyze --base BASE --checkpoint runs/es/checkpoints/step-000030 --output es.json
    es-lightning report --config recipes/report_cpu.yaml --quick --output_dir runs/report
    es-lightning compare runs/demo_cpu runs/demo_cpu_grpo --output runs/compare
    es-lightning tune --config recipes/tune_cpu.yaml --output_dir runs/tune_cpu

A wrong setting, path or data file (:class:`~es_lightning.errors.ConfigError`) ends the command
with one line, ``es-lightning: error: <message>``, and exit status 2, before anything expensive
starts; ``es-lightning --debug ...`` (or ``ES_LIGHTNING_DEBUG=1``) shows its traceback instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from lightning.fabric.loggers import Logger

from es_lightning.errors import ConfigError, MissingPathError, find_config_error
from es_lightning.evaluation.runner import EvalConfig
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import Rollout
from es_lightning.strategies.base import ReasoningStrategy
from es_lightning.tasks.base import Task
from es_lightning.training.callbacks import Callback
from es_lightning.training.config import TrainerConfig
from es_lightning.training.pipeline import Stage

DEBUG_ENV = "ES_LIGHTNING_DEBUG"
"""``ES_LIGHTNING_DEBUG=1`` is ``--debug``: errors in the settings show their traceback."""
USER_ERROR_STATUS = 2
"""Exit status of a run refused for a wrong setting, path or data file (as for a parse error)."""
ENGINE_ERROR_STATUS = 1
"""Exit status of a run ended by its rollout engine (a call past its timeout, engine processes
that died); a run stopped by SIGTERM/SIGINT exits with 128 + the signal's number."""


def _default_rollout() -> Rollout:
    from es_lightning.rollout.vllm import VLLMRollout, vllm_available

    if vllm_available():
        return VLLMRollout()
    from es_lightning.rollout.hf import HFRollout

    return HFRollout()


def run_fit(
    module: ReasoningModule,
    strategy: ReasoningStrategy | None = None,
    stages: list[Stage] | None = None,
    rollout: Rollout | None = None,
    trainer: TrainerConfig = TrainerConfig(),  # noqa: B008  (jsonargparse lists its fields in --help)
    evaluation: EvalConfig | None = None,
    eval_tasks: dict[str, Task] | str | list[str] | None = None,
    callbacks: list[Callback | Any] | None = None,
    loggers: list[Logger] | None = None,
    hparams: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Post-train a model with ES or GRPO and evaluate it before and after.

    Args:
        module: the model, its prompt format and the task it is trained on.
        strategy: the optimizer as a Fabric strategy: ``es``, ``grpo`` or ``grpo_fsdp`` on the
            command line (``--strategy es --strategy.sigma 1e-3``), or ``class_path:
            es_lightning.strategies.ESStrategy`` (``GRPOStrategy``, ``GRPOFSDPStrategy``) with its
            ``init_args`` (population_size, sigma, learning_rate, ...); ``--strategy.help ESStrategy``
            lists a strategy's options.
        stages: instead of ``strategy``: optimizers run in order on one model, each with a
            ``fraction`` of the update budget (e.g. ES then GRPO, half each).
        rollout: the generation backend: ``vllm`` (``es_lightning.rollout.vllm.VLLMRollout``, one
            vLLM engine per device) or ``hf`` (``es_lightning.rollout.hf.HFRollout``, transformers
            ``generate``); default: vLLM when installed, else transformers; ``--rollout.help
            VLLMRollout`` lists a backend's options.
        trainer: run length, batch size, output directory, devices, checkpoints, resume.
        evaluation: Pass@K evaluation settings (``null`` skips evaluation).
        eval_tasks: tasks evaluated before/after training, by the name used in metric keys
            (``eval/{name}/pass@k``), or a named suite (``easy``, ``easy_heldout``, ``hard``,
            ``hard_math``, ``hard_heldout``) or a list of suite names; default: the training task's test split.
        callbacks: ``es_lightning.callbacks`` instances (TokenEntropy, ParameterDrift,
            LayerAttribution, HeldOutPassAtK, PopulationDiversity, your own), or objects with hooks
            such as ``on_train_batch_end(trainer, step, metrics)``; see callbacks/README.md.
        loggers: further Fabric/Lightning loggers by ``class_path`` (e.g.
            ``lightning.pytorch.loggers.CSVLogger``, ``WandbLogger``, ``MLFlowLogger``), added to
            the run's own TensorBoard files and ``metrics.jsonl``; each gets every metric and, once,
            the resolved configuration as hyperparameters.
        hparams: the run's resolved configuration, recorded in every checkpoint (the CLI fills it).
    """
    from es_lightning.evaluation.suites import resolve_eval_tasks
    from es_lightning.training.pipeline import run_pipeline
    from es_lightning.training.trainer import Trainer

    eval_tasks = resolve_eval_tasks(eval_tasks)  # a suite name or names -> {metric name: Task}
    if (strategy is None) == (stages is None):
        raise ConfigError("fit: give exactly one of `strategy` or `stages`")
    if stages is not None:
        return run_pipeline(
            module,
            stages,
            rollout or _default_rollout(),
            trainer,
            evaluation,
            eval_tasks,
            callbacks,
            hparams,
            loggers,
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
        loggers=loggers,
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
    revision: str | None = None,
    trust_remote_code: bool = False,
    model_kwargs: dict[str, Any] | None = None,
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
        revision: branch, tag or commit of a hub ``--model`` (not applied to local folders).
        trust_remote_code: allow a model that ships its own code (``auto_map``) to run it.
        model_kwargs: further ``AutoModelForCausalLM.from_pretrained`` options for the HF rollout
            (e.g. ``{attn_implementation: sdpa}``).
    """
    import torch

    from es_lightning.evaluation.offline import score_completions_file
    from es_lightning.evaluation.suite import evaluate_model, write_summary
    from es_lightning.tasks.registry import get_task

    if (model is None) == (completions is None):
        raise ConfigError("evaluate: give exactly one of --model (generate) or --completions (score a file)")
    given = task if isinstance(task, list) else [task]
    tasks = [get_task(t) if isinstance(t, str) else t for t in given]
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ConfigError(f"evaluate: tasks {names} repeat a name; evaluate such variants in separate runs")
    evaluation = evaluation or EvalConfig()
    output = Path(output)
    if completions is not None:
        if len(tasks) != 1:
            raise ConfigError("evaluate: --completions scores one task; give a single --task")
        if not Path(completions).is_file():
            raise MissingPathError(f"evaluate: --completions file {completions} does not exist")
        summaries = {names[0]: score_completions_file(tasks[0], completions, ks=evaluation.ks)}
        write_summary(output, summaries)
        return summaries
    from es_lightning.models.loading import ModelLoading
    from es_lightning.models.registry import resolve_model
    from es_lightning.models.source import check_model_source

    loading = ModelLoading(revision, trust_remote_code, dict(model_kwargs or {}))
    check_model_source(resolve_model(model), "--model", loading)
    cuda = torch.cuda.is_available()
    target = torch.device("cuda" if cuda else "cpu") if device == "auto" else torch.device(device)
    return evaluate_model(
        model,
        dict(zip(names, tasks)),
        evaluation,
        rollout or _default_rollout(),
        output,
        target,
        dtype,
        loading,
    )


def build_parser():
    from jsonargparse import ActionConfigFile, set_parsing_settings

    set_parsing_settings(docstring_parse_attribute_docstrings=True)  # dataclass field docstrings -> --help

    import es_lightning.rollout.hf  # noqa: F401  (short class names: --rollout HFRollout)
    import es_lightning.rollout.vllm  # noqa: F401  (vllm itself is imported when an engine starts)
    from es_lightning.cli_hints import hinting_parser_class

    ArgumentParser = hinting_parser_class()  # noqa: N806  (parse errors name the values that parse)
    parser = ArgumentParser(
        prog="es-lightning", description="Post-train LLMs with Evolution Strategies and GRPO."
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="Show the traceback of an error in the settings, paths or data (before the subcommand: "
        f"es-lightning --debug fit ...); {DEBUG_ENV}=1 does the same.",
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
    from es_lightning.report.compare import run_compare

    compare_parser = ArgumentParser(description=run_compare.__doc__.split("\n")[0])
    compare_parser.add_argument("runs", nargs="+", type=Path, help="run folders (fit's trainer.output_dir)")
    compare_parser.add_function_arguments(run_compare, fail_untyped=False, skip={"runs"})
    subcommands.add_subcommand("compare", compare_parser, help="The final evaluations of runs side by side.")
    from es_lightning.tune.command import tune_parser

    subcommands.add_subcommand(
        "tune", tune_parser(), help="Each method's grid on the validation split, one budget; writes TUNE.md."
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command; a :class:`~es_lightning.errors.ConfigError` (also one raised while a class
    of the config is built) prints ``es-lightning: error: <message>`` and returns 2."""
    import es_lightning.strategies  # noqa: F401  (registers `es` with Fabric)
    from es_lightning.cli_hints import expand_aliases

    args = expand_aliases(argv if argv is not None else sys.argv[1:])  # --strategy es, --rollout hf
    if "" not in sys.path and os.getcwd() not in sys.path:  # recipes may name your own modules
        sys.path.insert(0, os.getcwd())  # (reward functions, tasks, callbacks), as `python -m` would
    debug = debug_requested(args)
    parser = build_parser()
    cfg = _parse(parser, args, debug)  # a parse error prints the usage and exits with status 2
    from es_lightning.rollout.watchdog import EngineError
    from es_lightning.training.signals import RunInterrupted

    try:
        _run(parser, cfg)
    except RunInterrupted as stopped:  # SIGTERM/SIGINT: the trainer saved and said where
        if debug:
            raise
        return stopped.exit_code
    except EngineError as err:  # a stalled or dead engine: the message names it and its device
        if debug:
            raise
        print(f"es-lightning: error: {err}", file=sys.stderr)
        return ENGINE_ERROR_STATUS
    except Exception as err:
        user_error = find_config_error(err)
        if user_error is None or debug:
            raise
        print(f"es-lightning: error: {user_error}", file=sys.stderr)
        return USER_ERROR_STATUS
    return 0


def _parse(parser: Any, args: list[str], debug: bool) -> Any:
    if not debug:
        return parser.parse_args(args)
    previous = os.environ.get("JSONARGPARSE_DEBUG")
    os.environ["JSONARGPARSE_DEBUG"] = "true"  # --debug: a parse error raises with its traceback
    try:
        return parser.parse_args(args)
    finally:
        if previous is None:
            del os.environ["JSONARGPARSE_DEBUG"]
        else:
            os.environ["JSONARGPARSE_DEBUG"] = previous


def debug_requested(args: Sequence[str]) -> bool:
    """``--debug`` before the subcommand, or ``ES_LIGHTNING_DEBUG`` set to a true value."""
    if os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    subcommands = {"fit", "evaluate", "analyze", "report", "compare", "tune"}
    top_level = next((list(args[:i]) for i, a in enumerate(args) if a in subcommands), list(args))
    return "--debug" in top_level


def _run(parser: Any, cfg: Any) -> None:
    name = cfg.subcommand
    init = parser.instantiate(cfg)
    kwargs = {k: v for k, v in init[name].items() if k != "config"}
    if name == "fit":
        out_dir = prepare_fit(kwargs["trainer"], has_stages=kwargs.get("stages") is not None)
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
    elif name == "compare":
        from es_lightning.report.compare import run_compare

        run_compare(**kwargs)
    elif name == "tune":
        from es_lightning.tune import run_tune

        run_tune(**kwargs)
    else:
        run_evaluate(**kwargs)


def prepare_fit(trainer: TrainerConfig, has_stages: bool = False) -> Path:
    """Checks of a fit's paths before anything is written or started: the run directory can be
    created, and ``trainer.resume`` names a checkpoint (single-strategy runs; a pipeline resumes
    each stage from its own folder). Returns the created run directory.

    Raises:
        ConfigError: ``output_dir`` cannot be created (a file is in the way, no permission), or it
            holds a run and neither ``resume`` nor ``overwrite`` is set.
        MissingPathError: ``resume`` names no checkpoint.
    """
    from es_lightning.checkpoint import resolve_resume
    from es_lightning.training.run_dir import prepare_run_dir

    out_dir = Path(trainer.output_dir)
    if not has_stages:
        resolve_resume(trainer.resume, out_dir)
    prepare_run_dir(out_dir, trainer.resume, trainer.overwrite)  # one run per folder
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"trainer.output_dir {str(out_dir)!r} cannot be created: {err.strerror or err}"
        ) from None
    return out_dir
