"""The tune's trials, planned and checked before any of them runs: each method's recipe set up for
the validation split (no callback that might read a test split), plus budget, overrides and grid
values, parsed by the parser the run uses (:func:`check_trial`).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.report.runs import RunSpec, command_line
from es_lightning.tune.config import Selection, TuneMethod
from es_lightning.tune.grid import GridPoint, expand

FORCED_TOKENS = (
    "--evaluation.split",
    "validation",
    "--trainer.eval_before",
    "true",
    "--trainer.eval_after",
    "true",
)
"""Appended to every trial's command line (the last word on these settings)."""
HELD_OUT_CALLBACK = "es_lightning.callbacks.heldout.HeldOutPassAtK"
SAFE_CALLBACKS = (
    "es_lightning.callbacks.drift.ParameterDrift",
    "es_lightning.callbacks.attribution.LayerAttribution",
    "es_lightning.callbacks.diversity.PopulationDiversity",
)
"""Callbacks that read no evaluation split (weights, the update's own population, or train and
validation probe prompts): kept in trials as they are."""
RUN_DIR = "RUN_DIR"
"""The run folder in a trial's recorded settings (so that they compare across folders)."""


@dataclass(frozen=True)
class Trial:
    """One run of the tune: a method's grid point with one seed."""

    method: str
    point: GridPoint
    spec: RunSpec
    """What :mod:`es_lightning.report.runs` launches (group: the method, label: the point)."""
    settings: str
    """The trial's resolved ``fit`` configuration (run folder aside), as YAML."""


class FitParser:
    """``es-lightning fit``'s parser, built once, with parse errors turned into ConfigErrors."""

    def __init__(self) -> None:
        from es_lightning.training.command import fit_parser

        self.fit = fit_parser()

    def parse(self, argv: list[str], where: str) -> Any:
        """The ``fit`` namespace of ``fit argv...``; ConfigError naming ``where`` otherwise."""
        errors = io.StringIO()
        try:
            with contextlib.redirect_stderr(errors):
                return self.fit.parse_args(argv)
        except SystemExit:
            lines = [line.strip() for line in errors.getvalue().splitlines() if line.strip()]
            found = [line for line in lines if line.startswith(("error:", "- ", "Option", "Problem"))]
            raise ConfigError(f"tune: {where} does not parse: {' '.join(found or lines[-3:])}") from None

    def dump(self, cfg: Any) -> str:
        """``cfg`` as the YAML ``fit`` writes to a run's ``config.yaml`` (``null`` values kept)."""
        with warnings.catch_warnings():  # skip_none, as the CLI dumps it (deprecated in jsonargparse)
            warnings.simplefilter("ignore", DeprecationWarning)
            return self.fit.dump(cfg, skip_none=False)


def class_of(class_path: str) -> type:
    """The class a ``class_path`` names."""
    module, _, name = class_path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _full_name(class_path: str) -> str:
    cls = class_of(class_path)
    return f"{cls.__module__}.{cls.__qualname__}"


def validation_recipe(
    parser: FitParser, method: str, recipe: str, path: Path, keep_callbacks: bool = True
) -> list[str]:
    """Write ``recipe`` set up for the validation split as ``path``; the callbacks removed."""
    if not Path(recipe).is_file():
        raise ConfigError(f"tune: method {method}: recipe {recipe} not found (cwd {Path.cwd()})")
    cfg = parser.parse(["--config", recipe], f"method {method}'s recipe {recipe}")
    if cfg.evaluation is None:
        raise ConfigError(
            f"tune: method {method}: recipe {recipe} sets evaluation: null; the selection reads the "
            "trials' before/after evaluations (give an evaluation block)"
        )
    cfg.evaluation.split = "validation"
    cfg.trainer.eval_before = cfg.trainer.eval_after = True
    kept, removed = [], []
    for callback in cfg.callbacks or []:
        name = _full_name(callback.class_path)
        if name == HELD_OUT_CALLBACK:
            callback.init_args.split = "validation"
        if keep_callbacks and (name == HELD_OUT_CALLBACK or name in SAFE_CALLBACKS):
            kept.append(callback)
        else:
            removed.append(callback.class_path)
    cfg.callbacks = kept
    path.parent.mkdir(parents=True, exist_ok=True)
    header = f"# {recipe} for es-lightning tune (method {method}): evaluates the validation split.\n"
    path.write_text(header + parser.dump(cfg))
    return removed


def evaluated_tasks(cfg: Any) -> list[str]:
    """The names under which a ``fit`` configuration's evaluation reports its tasks."""
    from es_lightning.presets import resolve_eval_tasks

    if cfg.eval_tasks is None:
        task = cfg.module.init_args.task
        cls = class_of(task.class_path)
        return [getattr(task.init_args, "name", None) or cls.name]
    if isinstance(cfg.eval_tasks, (str, list)):
        return list(resolve_eval_tasks(cfg.eval_tasks) or {})
    return list(dict(cfg.eval_tasks))


def check_trial(cfg: Any, selection: Selection, where: str) -> None:
    """Refuse a trial that would read a test split or not evaluate the selection metric."""
    evaluation = cfg.evaluation
    if evaluation is None or evaluation.split != "validation":
        raise ConfigError(f"tune: {where} would not evaluate the validation split")
    if not (cfg.trainer.eval_before and cfg.trainer.eval_after):
        raise ConfigError(f"tune: {where} would skip the before or after evaluation the selection reads")
    for callback in cfg.callbacks or []:
        name = _full_name(callback.class_path)
        held_out = name == HELD_OUT_CALLBACK and callback.init_args.split == "validation"
        if not (held_out or name in SAFE_CALLBACKS):
            raise ConfigError(
                f"tune: {where} has callback {callback.class_path}, which may read the test split"
            )
    task = cfg.module.init_args.task.init_args
    validation, test = getattr(task, "validation", None), getattr(task, "test", None)
    if validation is not None and validation == test:
        raise ConfigError(f"tune: {where}: the task's validation source is its test source")
    tasks = evaluated_tasks(cfg)
    if selection.task not in tasks:
        raise ConfigError(
            f"tune: {where} does not evaluate task {selection.task!r} of selection.metric "
            f"{selection.metric} (it evaluates {tasks})"
        )
    kind, _, k = selection.key.partition("@")
    if kind in ("pass", "maj"):
        ks = evaluation.ks or list(range(1, evaluation.num_samples + 1))
        if int(k) not in ks:
            raise ConfigError(
                f"tune: {where} evaluates K in {ks}, not the K={k} of selection.metric {selection.metric}"
            )
    if kind == "greedy" and not evaluation.greedy:
        raise ConfigError(
            f"tune: {where} sets evaluation.greedy false; selection.metric {selection.metric} needs it"
        )


def plan_trials(
    methods: dict[str, TuneMethod],
    selection: Selection,
    budget: list[str],
    validation_overrides: list[str],
    seeds: list[int],
    output_dir: Path,
    keep_callbacks: bool = True,
) -> tuple[list[Trial], dict[str, list[str]]]:
    """Every trial, each checked, and the callbacks removed from each recipe."""
    parser = FitParser()
    trials, removed = [], {}
    for method, spec in methods.items():
        recipe = output_dir / "recipes" / f"{method}.yaml"
        removed[method] = validation_recipe(parser, method, spec.recipe, recipe, keep_callbacks)
        base = ["--config", str(recipe), "--trainer.output_dir", RUN_DIR]
        parser.parse(
            [*base, *budget, *validation_overrides], f"method {method}: the budget and validation_overrides"
        )
        for parameter, values in spec.grid.items():
            value = expand({parameter: values[:1]})[0].overrides()
            parser.parse([*base, *value], f"method {method}: grid parameter {parameter!r}")
        for point in expand(spec.grid):
            overrides = (*budget, *validation_overrides, *point.overrides(), *FORCED_TOKENS)
            for seed in seeds:
                run_dir = output_dir / "trials" / method / point.label / f"seed{seed}"
                run = RunSpec(method, point.label, seed, str(recipe), overrides, run_dir)
                argv = command_line(run)[4:]  # after `python -m es_lightning fit`
                argv[argv.index("--trainer.output_dir") + 1] = RUN_DIR
                where = f"method {method}, trial {point.label}, seed {seed}"
                cfg = parser.parse(argv, where)
                check_trial(cfg, selection, where)
                trials.append(Trial(method, point, run, parser.dump(cfg)))
    return trials, removed
