"""The training loop: Fabric launches the ranks, the strategy (ES or GRPO) does each update.

Reads top to bottom::

    fabric.launch(); rollout engine on this rank's device
    strategy.prepare(fabric, module, rollout, resume)
    evaluate before
    for step in range(start, max_steps):
        batch = batch_rows(rows, B, seed, step)         # pure function of (seed, step)
        result = strategy.training_step(fabric, module, rollout, batch, step, seed)
        log, text samples, callbacks, checkpoint, evaluation
    checkpoint, evaluate after, write the checkpoint's model card
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from lightning.fabric import Fabric
from lightning.fabric.loggers import Logger
from lightning.fabric.strategies import Strategy
from lightning.fabric.utilities.rank_zero import rank_zero_info
from tqdm.auto import tqdm

from es_lightning.checkpoint import (
    Checkpoint,
    latest_checkpoint,
    resolve_resume,
    save_checkpoint,
    write_model_meta,
)
from es_lightning.checkpoint_space import check_checkpoint_space
from es_lightning.console import launched_rank, say
from es_lightning.errors import ConfigError
from es_lightning.evaluation.columns import print_table
from es_lightning.evaluation.runner import EvalConfig
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import Rollout
from es_lightning.strategies.base import ReasoningStrategy, require_strategy
from es_lightning.tasks.base import Task
from es_lightning.tasks.reward_context import reward_context
from es_lightning.training.batches import batch_rows, steps_for_epochs
from es_lightning.training.callbacks import callbacks_state, check_callbacks, load_callbacks_state
from es_lightning.training.config import TrainerConfig
from es_lightning.training.eval_sets import EvalSet, evaluate_sets, load_eval_sets
from es_lightning.training.loggers import JSONLLogger, log_hyperparams, tensorboard_logger, truncate_metrics
from es_lightning.training.model_card import write_model_card
from es_lightning.training.resume import check_resume_compatible, finished_message
from es_lightning.training.reward_progress import RewardProgress
from es_lightning.training.run_config import record_trainer_run
from es_lightning.training.run_dir import hold_run_lock, prepare_run_dir, prune_checkpoints
from es_lightning.training.samples import log_samples, truncate_samples
from es_lightning.training.signals import RunInterrupted, StopSignals, stop_requested_by_callback
from es_lightning.training.user_hooks import call_hook, log_metrics


class Trainer:
    """Fit a :class:`ReasoningModule` with an ES or GRPO Fabric strategy."""

    should_stop: bool = False

    def __init__(
        self,
        module: ReasoningModule,
        strategy: str | Strategy,
        rollout: Rollout,
        config: TrainerConfig | None = None,
        evaluation: EvalConfig | None = None,
        eval_tasks: dict[str, Task] | None = None,
        callbacks: list[Any] | None = None,
        hparams: dict[str, Any] | None = None,
        loggers: list[Logger] | None = None,
        step_offset: int | None = None,
    ) -> None:
        self.module = module
        self.step_offset = step_offset
        self.loggers = list(loggers or [])
        self.strategy = strategy
        self.rollout = rollout
        self.config = config or TrainerConfig()
        self.evaluation = evaluation
        self.eval_tasks = dict(eval_tasks or {module.task.name: module.task})
        self.eval_tasks_given = eval_tasks  # config.yaml records the argument (None: the task's test split)
        self.callbacks = check_callbacks(callbacks)
        self.hparams = hparams
        self.output_dir = Path(self.config.output_dir)
        self.fabric: Fabric | None = None
        self.step = 0
        self.results: dict[str, Any] = {}

    def fit(self) -> dict[str, Any]:
        """Train, evaluate and checkpoint, holding the run folder's lock; returns the evaluations."""
        with hold_run_lock(self.output_dir, enabled=launched_rank() == 0):
            return self._fit()

    def _fit(self) -> dict[str, Any]:
        cfg = self.config
        prepare_run_dir(self.output_dir, cfg.resume, cfg.overwrite, python=True)  # one run per folder
        if self.hparams is None and launched_rank() == 0:  # from Python: config.yaml as the CLI's
            self.hparams = record_trainer_run(self)
        self.module.check_model_source()
        rows = self.module.task.load("train")[: cfg.train_limit]
        if not rows:
            raise ConfigError(f"{self.module.task.name}: the training split is empty")
        eval_sets = load_eval_sets(self.evaluation, self.eval_tasks)
        max_steps = (
            cfg.max_steps
            if cfg.max_steps is not None
            else steps_for_epochs(len(rows), cfg.batch_size, cfg.epochs)
        )
        # a strategy given by name is checked when Fabric builds it (require_strategy)
        strategy = self.strategy if isinstance(self.strategy, ReasoningStrategy) else None
        if strategy is not None:
            strategy.total_updates = max_steps  # learning-rate schedules run over the run's length
        resume_path = resolve_resume(cfg.resume, self.output_dir)
        resume = Checkpoint(resume_path) if resume_path is not None else None
        if resume is not None and strategy is not None:  # before any engine starts: settings must match
            allowed = check_resume_compatible(
                resume, strategy.strategy_name, strategy.hparams(), cfg, task_name=self.module.task.name
            )
            for change in allowed:
                rank_zero_info(f"trainer.resume: allowed change {change}")
        evaluates_after = bool(cfg.eval_after and self.evaluation is not None and self.eval_tasks)
        finished = finished_message(resume, max_steps, self.output_dir, evaluates_after)
        if finished is not None:  # resuming a finished run changes nothing
            say(finished)
            return self.results

        if strategy is not None:  # the last check before any engine starts
            strategy.check_rollout(self.rollout)
        fabric = self._launch(resume)
        stop = StopSignals()
        with stop, stop.deferred() if fabric.world_size > 1 else nullcontext():
            try:
                self._train(stop, rows, eval_sets, max_steps, resume)
            except RunInterrupted as stopped:
                self._stop_cleanly(stopped)
                raise
            finally:
                self.rollout.close()  # engines end with the run, however it ends
        return self.results

    def _launch(self, resume: Checkpoint | None) -> Fabric:
        """Fabric with the run's loggers and callbacks, launched; on resume the logs cut back."""
        cfg = self.config
        fabric = self.fabric = Fabric(
            accelerator=cfg.accelerator,
            devices=cfg.devices,
            num_nodes=cfg.num_nodes,
            strategy=self.strategy,
            precision=cfg.resolved_precision(),
            loggers=[
                tensorboard_logger(self.output_dir, self.global_step(resume.step + 1 if resume else 0)),
                JSONLLogger(self.output_dir, step_offset=self.step_offset),
                *self.loggers,
            ],
            callbacks=self.callbacks,
        )
        try:
            fabric.launch()
        except torch.distributed.DistNetworkError as err:  # e.g. a MASTER_PORT another process holds
            where = f"{os.environ.get('MASTER_ADDR', '?')}:{os.environ.get('MASTER_PORT', '?')}"
            raise ConfigError(
                f"the process group could not start at MASTER_ADDR:MASTER_PORT {where} "
                f"({str(err).splitlines()[0]}); unset MASTER_PORT or give a free port"
            ) from None
        if self.hparams and fabric.is_global_zero:
            log_hyperparams(fabric.loggers, self.hparams)
        if resume is not None and fabric.is_global_zero:  # logs continue after the checkpoint, no repeats
            truncate_metrics(self.output_dir / "metrics.jsonl", after_step=resume.step)
            truncate_samples(self.output_dir, fabric.loggers, resume.step, self.step_offset)
        return fabric

    def _train(
        self,
        stop: StopSignals,
        rows: list[dict[str, Any]],
        eval_sets: list[EvalSet],
        max_steps: int,
        resume: Checkpoint | None,
    ) -> None:
        """Start, evaluate before, update until ``max_steps``, then checkpoint and evaluate after."""
        strategy = require_strategy(self.fabric.strategy)
        self._start(strategy, resume)
        self.progress = RewardProgress(self.fabric, self.config, len(rows), max_steps, self.step_offset)
        with reward_context(self.progress.at(self.step)):
            self._call("on_fit_start", trainer=self)
            if self.config.eval_before and self.step == 0 and self.evaluation is not None:
                self.results["before"] = self.evaluate(eval_sets, tag="before")
            self._updates(strategy, stop, rows, eval_sets, max_steps)
            self._finish(eval_sets)

    def _start(self, strategy: ReasoningStrategy, resume: Checkpoint | None) -> None:
        """This rank's engine, the strategy prepared, callbacks' state restored, model files written."""
        fabric, module = self.fabric, self.module
        dtype = module.torch_dtype(fabric.device)
        model_path = str(resume.path if resume else module.model)
        self.rollout.setup(model_path, fabric.device, dtype, module.loading)
        self.rollout.start()  # engines start before any torch work in this process
        strategy.prepare(fabric, module, self.rollout, resume)
        self.step = resume.step if resume is not None else 0
        if resume is not None:
            load_callbacks_state(self.callbacks, resume.callbacks_state())
        self._meta_dir = self.output_dir / ".model_meta"
        if fabric.is_global_zero:
            write_model_meta(module.model, module.tokenizer, dtype, self._meta_dir, module.loading)
        fabric.barrier()
        self._saved_at = self.step if resume is not None else -1  # -1: the end saves even at 0 updates

    def _updates(
        self,
        strategy: ReasoningStrategy,
        stop: StopSignals,
        rows: list[dict[str, Any]],
        eval_sets: list[EvalSet],
        max_steps: int,
    ) -> None:
        """Updates until ``max_steps`` or ``should_stop``, with checkpoints, signals and evaluations."""
        cfg, fabric = self.config, self.fabric
        bar = tqdm(
            total=max_steps,
            initial=self.step,
            desc=f"{strategy.strategy_name} updates",
            disable=not (cfg.progress_bar and fabric.is_global_zero),
            dynamic_ncols=True,
        )
        while self.step < max_steps and not stop_requested_by_callback(self, max_steps):
            with stop.deferred():  # a first SIGTERM/SIGINT lets the update and its checkpoint finish
                metrics = self._update(strategy, rows)
                bar.set_postfix(reward=f"{metrics['train/reward_mean']:.3f}")
                bar.update(1)
                every = cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0
                if every or self.step in cfg.checkpoint_steps:
                    self.save(self._meta_dir)
            signum = stop.requested(fabric)
            if signum is not None:
                raise RunInterrupted(signum, at_boundary=True)
            if (
                cfg.eval_every
                and self.step % cfg.eval_every == 0
                and self.step < max_steps
                and self.evaluation
            ):
                self.evaluate(eval_sets, tag=f"step-{self.step:06d}")
        bar.close()

    def _update(self, strategy: ReasoningStrategy, rows: list[dict[str, Any]]) -> dict[str, float]:
        """One update, then its metrics, text samples and hooks."""
        cfg, fabric = self.config, self.fabric
        t0 = time.perf_counter()
        batch = batch_rows(rows, cfg.batch_size, cfg.seed, cfg.data_offset + self.step)
        with self.progress.update(self.step) as rewards_log:  # TRL's trainer_state and log_metric
            result = strategy.training_step(fabric, self.module, self.rollout, batch, self.step, cfg.seed)
        self.step += 1
        self.progress.at(self.step)
        logged = self.progress.logged(rewards_log, result.metrics)
        metrics = {**result.metrics, **logged, "time/step": time.perf_counter() - t0}
        self.log(metrics)
        if cfg.log_samples_every and self.step % cfg.log_samples_every == 0 and fabric.is_global_zero:
            samples = result.samples[: cfg.log_samples]
            log_samples(self.output_dir, fabric.loggers, samples, self.step, self.step_offset)
        if result.population is not None:
            self._call("on_population_end", trainer=self, step=self.step, population=result.population)
        self._call("on_train_batch_end", trainer=self, step=self.step, metrics=metrics)
        return metrics

    def _finish(self, eval_sets: list[EvalSet]) -> None:
        """The last checkpoint, the final evaluation, ``on_fit_end``, the loggers closed, the card."""
        fabric = self.fabric
        if self._saved_at != self.step:
            self.save(self._meta_dir)
        if self.config.eval_after and self.evaluation is not None:
            self.results["after"] = self.evaluate(eval_sets, tag="after")
            if fabric.is_global_zero and "before" in self.results:
                print_table(self.results, difference="change")  # {before, after}
        self._call("on_fit_end", trainer=self, results=self.results)
        for logger in fabric.loggers:
            logger.finalize("success")
        if fabric.is_global_zero:
            latest = latest_checkpoint(self.output_dir)
            if latest is not None:  # the final checkpoint's model card, its evaluation included
                write_model_card(latest, self.output_dir)
            say(
                f"done; {self.output_dir}: metrics.jsonl, tensorboard/ "
                f"(tensorboard --logdir {self.output_dir}), eval/, trained model {latest}"
            )

    def _stop_cleanly(self, stopped: RunInterrupted) -> None:
        """After a signal: checkpoint the last finished update, close the loggers, say where it is."""
        name = signal.Signals(stopped.signum).name
        saved_at = getattr(self, "_saved_at", None)
        if stopped.at_boundary and saved_at is not None and self.step not in (0, saved_at):
            self.save(self._meta_dir)
        for logger in self.fabric.loggers:
            logger.finalize("interrupted")
        if self.fabric.is_global_zero:
            latest = latest_checkpoint(self.output_dir)
            where = f"the newest checkpoint is {latest}" if latest else "no checkpoint was written"
            say(f"stopped by {name} after update {self.step}; {where}")

    # -- what callbacks use ---------------------------------------------------------------------
    @property
    def reasoning_strategy(self) -> ReasoningStrategy:
        return require_strategy(self.fabric.strategy)

    def named_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """The current fp32 weights, streamed (call it on every rank)."""
        return self.reasoning_strategy.named_weights(self.rollout)

    def global_step(self, step: int | None = None) -> int:
        """``step`` (default: the current update) on the loggers' axis: a pipeline's, see ``step_offset``."""
        return (self.step if step is None else step) + (self.step_offset or 0)

    def log(self, metrics: dict[str, float], step: int | None = None) -> None:
        """Log ``metrics`` to every logger at update ``step`` (default: the current one)."""
        log_metrics(self.fabric, metrics, self.global_step(step))  # your logger failing: one line

    def _call(self, hook: str, **kwargs: Any) -> None:
        """Every callback's ``hook`` (your callback failing: one line, :mod:`.user_hooks`)."""
        call_hook(self.fabric, self.callbacks, hook, **kwargs)

    # -- checkpoints and evaluation -------------------------------------------------------------
    def _hparams(self, strategy: ReasoningStrategy) -> dict[str, Any]:
        return {
            "strategy": {"name": strategy.strategy_name, **strategy.hparams()},
            "trainer": asdict(self.config),
            "model": self.module.model,
            "model_loading": self.module.loading.hparams(),
            "task": self.module.task.name,
            **({"run_config": self.hparams} if self.hparams else {}),
        }

    def save(self, meta_dir: Path) -> Path:
        """Checkpoint the current weights and states (every rank takes part; rank 0 writes)."""
        fabric = self.fabric
        strategy = self.reasoning_strategy
        name, keep_last = f"step-{self.step:06d}", self.config.keep_last  # room for it, else one line:
        check_checkpoint_space(fabric, self.output_dir / "checkpoints", name, keep_last)
        path = save_checkpoint(
            self.output_dir,
            self.step,
            strategy.named_weights(self.rollout),
            serving_dtype=self.rollout.dtype,
            meta_dir=meta_dir,
            strategy_name=strategy.strategy_name,
            write_state=lambda folder: strategy.save_state(fabric, self.rollout, folder),
            trainer_state={"seed": self.config.seed, "source_model": self.module.model},
            hparams=self._hparams(strategy),
            callbacks_state=callbacks_state(self.callbacks),
            is_writer=fabric.is_global_zero,
            keep_last=keep_last,
        )
        self._saved_at = self.step
        if fabric.is_global_zero:
            prune_checkpoints(self.output_dir, self.config.keep_last, self.config.checkpoint_steps)
        fabric.barrier()
        self._call("on_checkpoint", trainer=self, step=self.step, path=path)
        return path

    def evaluate(self, eval_sets: list[EvalSet], tag: str) -> dict[str, dict[str, float]]:
        """Evaluate the current weights on every evaluation task (call it on every rank)."""
        summaries = self.evaluate_sets(eval_sets, tag, prefix="eval")
        self.fabric.barrier()
        self._call("on_evaluate_end", trainer=self, step=self.step, tag=tag, results=summaries)
        return summaries

    def evaluate_sets(
        self, eval_sets: list[EvalSet], tag: str, prefix: str = "eval", config: EvalConfig | None = None
    ) -> dict[str, dict[str, float]]:
        """Evaluate ``sets`` on every rank's engine, write and log them; rank 0 returns the summaries."""
        config = config or self.evaluation
        if config is None:
            raise ConfigError("Trainer.evaluate_sets: no evaluation settings (give config or evaluation)")
        return evaluate_sets(self, eval_sets, tag, prefix, config)
