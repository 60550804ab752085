"""The ``fit`` command: :func:`run_fit` (its signature the recipe's schema, its docstring the
``--help``), its parser :func:`fit_parser` and :func:`prepare_fit`, the checks of its paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lightning.fabric.loggers import Logger

from es_lightning.console import launched_rank
from es_lightning.errors import ConfigError
from es_lightning.evaluation.runner import EvalConfig
from es_lightning.module import ReasoningModule
from es_lightning.rollout import default_rollout
from es_lightning.rollout.base import Rollout
from es_lightning.strategies.base import ReasoningStrategy
from es_lightning.tasks.base import Task
from es_lightning.training.callbacks import Callback
from es_lightning.training.config import TrainerConfig
from es_lightning.training.pipeline import Stage


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
        evaluation: Pass@K evaluation settings (``null`` skips evaluation), or a named protocol
            (``evaluation: paper``; ``{protocol: paper, max_tokens: 64}`` changes some fields).
        eval_tasks: tasks evaluated before/after training, by the name used in metric keys
            (``eval/{name}/pass@k``), or a named suite (``easy``, ``easy_heldout``, ``hard``,
            ``hard_math``, ``hard_heldout``) or a list of suite names; default: the training task's test split.
        callbacks: ``es_lightning.callbacks`` instances (TokenEntropy, ParameterDrift,
            LayerAttribution, HeldOutPassAtK, PopulationDiversity, your own), or objects with hooks
            such as ``on_train_batch_end(trainer, step, metrics)``; see callbacks/README.md. Named
            instrument sets stand for their callbacks (``callbacks: paper_instruments``, or names
            among the entries: ``[weight_change, {class_path: ...}]``).
        loggers: further Fabric/Lightning loggers by ``class_path`` (e.g.
            ``lightning.pytorch.loggers.CSVLogger``, ``WandbLogger``, ``MLFlowLogger``), added to
            the run's own TensorBoard files and ``metrics.jsonl``; each gets every metric and, once,
            the resolved configuration as hyperparameters. A ``save_dir`` left at its default goes
            into ``trainer.output_dir``; a logger whose package is missing is refused
            (``pip install 'es-lightning[wandb]'``, ``[mlflow]``).
        hparams: the run's resolved configuration, recorded in every checkpoint (the CLI fills it).
    """
    from es_lightning.presets import resolve_eval_tasks
    from es_lightning.training.pipeline import run_pipeline
    from es_lightning.training.trainer import Trainer

    eval_tasks = resolve_eval_tasks(eval_tasks)  # a suite name or names -> {metric name: Task}
    if (strategy is None) == (stages is None):
        raise ConfigError("fit: give exactly one of `strategy` or `stages`")
    run: dict[str, Any] = dict(
        module=module,
        rollout=rollout or default_rollout(),
        config=trainer,
        evaluation=evaluation,
        eval_tasks=eval_tasks,
        callbacks=callbacks,
        hparams=hparams,
        loggers=loggers,
    )
    if stages is not None:
        return run_pipeline(stages=stages, **run)
    return Trainer(strategy=strategy, **run).fit()


def fit_parser() -> Any:
    """``es-lightning fit``'s parser: ``--config`` and every argument of :func:`run_fit` but ``hparams``."""
    from jsonargparse import ActionConfigFile

    from es_lightning.cli_hints import accept_short_names, command_parser
    from es_lightning.presets import accept_names
    from es_lightning.training.user_loggers import prepare_user_loggers

    parser = command_parser(run_fit.__doc__.split("\n")[0], prog="es-lightning fit")
    parser.add_argument("--config", action=ActionConfigFile, help="YAML recipe (see recipes/).")
    parser.add_function_arguments(run_fit, fail_untyped=False, skip={"hparams"})
    accept_names(parser)  # evaluation: paper, callbacks: paper_instruments
    accept_short_names(parser)  # strategy: es, rollout: hf
    return prepare_user_loggers(parser)  # a missing package named; save_dir into the run folder


def prepare_fit(
    trainer: TrainerConfig,
    has_stages: bool = False,
    strategy: ReasoningStrategy | None = None,
    task_name: str | None = None,
) -> Path:
    """Checks of a fit's paths before anything is written or started (the resumed checkpoint, the
    run directory, its lock); returns the run directory, whose lock this process then holds.

    Raises:
        ConfigError: ``output_dir`` cannot be created, or holds a run without ``resume``/``overwrite``.
        RunLockedError: another live process holds ``output_dir``.
        MissingPathError: ``resume`` names no checkpoint.
        DamagedCheckpointError: ``resume`` names a damaged checkpoint, or all are damaged.
    """
    from es_lightning.checkpoint import Checkpoint, resolve_resume
    from es_lightning.training.resume import check_resume_compatible
    from es_lightning.training.run_dir import acquire_run_lock, prepare_run_dir, release_run_lock

    out_dir = Path(trainer.output_dir)
    resume = None if has_stages else resolve_resume(trainer.resume, out_dir)
    if resume is not None and isinstance(strategy, ReasoningStrategy):  # refused before writing
        check_resume_compatible(
            Checkpoint(resume), strategy.strategy_name, strategy.hparams(), trainer, task_name=task_name
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(
            f"trainer.output_dir {str(out_dir)!r} cannot be created: {err.strerror or err}"
        ) from None
    if launched_rank() > 0:  # the ranks of a launch share rank 0's folder and lock
        return out_dir
    acquire_run_lock(out_dir)  # one run per folder at a time, before anything in it is touched
    try:
        prepare_run_dir(out_dir, trainer.resume, trainer.overwrite)  # one run per folder
    except BaseException:
        release_run_lock(out_dir)
        raise
    return out_dir


def finished_run(trainer: TrainerConfig, evaluates_after: bool) -> str | None:
    """What to say instead of running when the resumed run is already finished, else ``None``."""
    from es_lightning.checkpoint import Checkpoint, resolve_resume
    from es_lightning.training.resume import finished_message

    if trainer.max_steps is None:
        return None
    path = resolve_resume(trainer.resume, trainer.output_dir)
    checkpoint = Checkpoint(path) if path is not None else None
    return finished_message(checkpoint, trainer.max_steps, trainer.output_dir, evaluates_after)
