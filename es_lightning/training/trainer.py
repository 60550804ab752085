"""The training loop: Fabric launches the ranks, the strategy (ES or GRPO) does each update.

Reads top to bottom::

    rows = task's training rows                         # checked before anything expensive
    fabric.launch(); rollout engine on this rank's device
    strategy.prepare(fabric, module, rollout, resume)   # ES: fp32 master in the engine; GRPO: model + AdamW
    evaluate before
    for step in range(start, max_steps):
        batch = batch_rows(rows, B, seed, step)         # pure function of (seed, step)
        metrics = strategy.training_step(fabric, module, rollout, batch, step, seed)
        log (TensorBoard + metrics.jsonl), callbacks, checkpoint, periodic evaluation
    checkpoint, evaluate after, print the before/after table

Callbacks are plain objects; any of ``on_fit_start(trainer)``, ``on_train_batch_end(trainer,
step, metrics)``, ``on_evaluate_end(trainer, step, tag, results)``, ``on_checkpoint(trainer,
step, path)``, ``on_fit_end(trainer, results)`` they define is called (via ``fabric.call``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from lightning.fabric import Fabric
from lightning.fabric.loggers import TensorBoardLogger
from lightning.fabric.strategies import Strategy
from tqdm.auto import tqdm

from es_lightning.evaluation.runner import EvalConfig, evaluate_rows
from es_lightning.evaluation.summary import average_over_tasks, metric_names
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import Rollout
from es_lightning.tasks.base import Task
from es_lightning.training.batches import batch_rows, steps_for_epochs
from es_lightning.training.checkpoint import load_state, resolve_resume, save_checkpoint, write_model_meta
from es_lightning.training.config import TrainerConfig
from es_lightning.training.loggers import JSONLLogger
from es_lightning.training.report import print_before_after, write_eval_outputs


class Trainer:
    """Fit a :class:`ReasoningModule` with an ES or GRPO Fabric strategy."""

    def __init__(
        self,
        module: ReasoningModule,
        strategy: str | Strategy,
        rollout: Rollout,
        config: TrainerConfig | None = None,
        evaluation: EvalConfig | None = None,
        eval_tasks: dict[str, Task] | None = None,
        callbacks: list[Any] | None = None,
    ) -> None:
        self.module = module
        self.strategy = strategy
        self.rollout = rollout
        self.config = config or TrainerConfig()
        self.evaluation = evaluation
        self.eval_tasks = dict(eval_tasks or {module.task.name: module.task})
        self.callbacks = list(callbacks or [])
        self.output_dir = Path(self.config.output_dir)
        self.fabric: Fabric | None = None
        self.step = 0
        self.results: dict[str, Any] = {}

    def fit(self) -> dict[str, Any]:
        cfg = self.config
        self.module.check_model_source()
        rows = self.module.task.load("train")[: cfg.train_limit]
        if not rows:
            raise ValueError(f"{self.module.task.name}: the training split is empty")
        eval_sets = self._eval_sets()
        max_steps = (
            cfg.max_steps
            if cfg.max_steps is not None
            else steps_for_epochs(len(rows), cfg.batch_size, cfg.epochs)
        )

        fabric = self.fabric = Fabric(
            accelerator=cfg.accelerator,
            devices=cfg.devices,
            num_nodes=cfg.num_nodes,
            strategy=self.strategy,
            loggers=[
                TensorBoardLogger(self.output_dir, name="tensorboard", version=""),
                JSONLLogger(self.output_dir),
            ],
            callbacks=self.callbacks,
        )
        fabric.launch()
        strategy = fabric.strategy
        if not hasattr(strategy, "training_step"):
            raise TypeError(
                f"trainer: strategy {type(strategy).__name__} is not an es-lightning strategy (es, grpo)"
            )

        resume_from = resolve_resume(cfg.resume, self.output_dir)
        dtype = self.module.torch_dtype(fabric.device)
        self.rollout.setup(str(resume_from or self.module.model), fabric.device, dtype)
        if hasattr(self.rollout, "start"):
            self.rollout.start()  # engines start before any torch work in this process
        state_dir = None if resume_from is None else str(resume_from / strategy.state_folder)
        strategy.prepare(fabric, self.module, self.rollout, state_dir)
        self.step = load_state(resume_from)["step"] if resume_from else 0
        meta_dir = self.output_dir / ".model_meta"
        if fabric.is_global_zero:
            write_model_meta(self.module.model, self.module.tokenizer, dtype, meta_dir)
        fabric.barrier()

        fabric.call("on_fit_start", trainer=self)
        if cfg.eval_before and self.step == 0 and self.evaluation is not None:
            self.results["before"] = self.evaluate(eval_sets, tag="before")

        bar = tqdm(
            total=max_steps,
            initial=self.step,
            desc=f"{strategy.strategy_name} updates",
            disable=not (cfg.progress_bar and fabric.is_global_zero),
            dynamic_ncols=True,
        )
        saved_at = self.step if resume_from else -1
        while self.step < max_steps:
            t0 = time.perf_counter()
            batch = batch_rows(rows, cfg.batch_size, cfg.seed, cfg.data_offset + self.step)
            metrics = strategy.training_step(fabric, self.module, self.rollout, batch, self.step, cfg.seed)
            self.step += 1
            metrics["time/step"] = time.perf_counter() - t0
            fabric.log_dict(metrics, step=self.step)
            fabric.call("on_train_batch_end", trainer=self, step=self.step, metrics=metrics)
            bar.set_postfix(reward=f"{metrics['train/reward_mean']:.3f}")
            bar.update(1)
            if cfg.checkpoint_every and self.step % cfg.checkpoint_every == 0:
                self.save(meta_dir)
                saved_at = self.step
            if (
                cfg.eval_every
                and self.step % cfg.eval_every == 0
                and self.step < max_steps
                and self.evaluation
            ):
                self.evaluate(eval_sets, tag=f"step-{self.step:06d}")
        bar.close()

        if saved_at != self.step:
            self.save(meta_dir)
        if cfg.eval_after and self.evaluation is not None:
            self.results["after"] = self.evaluate(eval_sets, tag="after")
            if fabric.is_global_zero and "before" in self.results:
                print_before_after(self.results["before"], self.results["after"])
        fabric.call("on_fit_end", trainer=self, results=self.results)
        for logger in fabric.loggers:
            logger.finalize("success")
        self.rollout.close()
        return self.results

    def _eval_sets(self) -> list[tuple[str, Task, list[dict[str, Any]]]]:
        if self.evaluation is None:
            return []
        bad = [name for name in self.eval_tasks if not name or "/" in name or name == "average"]
        if bad:
            raise ValueError(f"eval_tasks: names {bad} are not usable in metric keys (no '/', not 'average')")
        return [
            (name, task, task.load("test")[: self.evaluation.limit]) for name, task in self.eval_tasks.items()
        ]

    def save(self, meta_dir: Path) -> Path | None:
        """Checkpoint the current centre/model (rank 0 writes; all ranks wait)."""
        fabric, path = self.fabric, None
        if fabric.is_global_zero:
            state = {
                "seed": self.config.seed,
                "strategy": fabric.strategy.strategy_name,
                "source_model": self.module.model,
            }
            path = save_checkpoint(
                self.output_dir, self.step, lambda d: fabric.strategy.save(self.rollout, d), meta_dir, state
            )
        fabric.barrier()
        fabric.call("on_checkpoint", trainer=self, step=self.step, path=path)
        return path

    def evaluate(
        self, eval_sets: list[tuple[str, Task, list[dict[str, Any]]]], tag: str
    ) -> dict[str, dict[str, float]]:
        """Evaluate the current centre on every evaluation task (rank 0), log and write it."""
        fabric, summaries = self.fabric, {}
        if fabric.is_global_zero:
            for name, task, rows in eval_sets:
                result = evaluate_rows(self.module.with_task(task), self.rollout, rows, self.evaluation)
                summaries[name] = result.summary
                write_eval_outputs(self.output_dir / "eval", tag, name, result)
                fabric.log_dict(metric_names(name, result.summary), step=self.step)
            if len(summaries) > 1:
                summaries = average_over_tasks(summaries)
                fabric.log_dict(metric_names("average", summaries["average"]), step=self.step)
        fabric.barrier()
        fabric.call("on_evaluate_end", trainer=self, step=self.step, tag=tag, results=summaries)
        return summaries
