"""``es-lightning tune``: each method's grid on the validation split, one budget, a fixed rule::

    es-lightning tune --config recipes/tune_cpu.yaml --output_dir runs/tune_cpu

Running again reuses finished trials; the rule recorded in the folder may not change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.report.config import split_overrides
from es_lightning.report.output import report_command
from es_lightning.tune.config import Selection, TuneMethod, check_overrides
from es_lightning.tune.grid import GridPoint, expand


def run_tune(
    methods: dict[str, TuneMethod],
    selection: Selection,
    budget: list[str] | None = None,
    validation_overrides: list[str] | None = None,
    seeds: list[int] | None = None,
    output_dir: Path = Path("runs/tune"),
    trial_callbacks: bool = True,
    launch: bool = True,
    trial_timeout_s: float | None = None,
) -> dict[str, Any]:
    """Tune each method's settings on the validation split with one budget and a fixed rule.

    Args:
        methods: ``{name: {recipe: fit recipe, grid: {dotted.parameter: [values]}}}``; one trial
            per grid point and seed.
        selection: the metric and the rule that choose each method's configuration (fixed here,
            before any trial runs).
        budget: CLI overrides applied to every trial of every method and to the chosen recipes,
            e.g. ``["--trainer.max_steps 40", "--trainer.batch_size 64"]``: the same for every
            method, that is what equal budget means.
        validation_overrides: CLI overrides of the trials' validation evaluation only, e.g.
            ``["--evaluation.limit 200", "--evaluation.num_samples 16"]`` (not in the chosen
            recipes, which keep their own evaluation of the test split).
        seeds: the trials' ``--trainer.seed`` values (default ``[0]``); a configuration's score
            is its mean over them.
        output_dir: where ``tune.json``, ``TUNE.md``, ``chosen/``, ``recipes/`` and ``trials/``
            go; finished trials already there are reused.
        trial_callbacks: keep the recipes' callbacks in the trials (``HeldOutPassAtK`` set to the
            validation split; those that may read the test split are removed either way);
            ``false`` removes them all (faster; the selection reads only the evaluations).
        launch: run what is missing (``false``: only choose among the finished trials found).
        trial_timeout_s: a trial taking longer is stopped and recorded as failed.

    Returns:
        The content of ``tune.json``.
    """
    from es_lightning.tune.launch import run_trial
    from es_lightning.tune.page import render
    from es_lightning.tune.trials import FitParser, plan_trials

    if not methods:
        raise ConfigError("tune: no methods given")
    seeds = list(seeds if seeds is not None else [0])
    if not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(f"tune: seeds must be distinct and at least one, got {seeds}")
    budget_tokens, validation_tokens = split_overrides(budget), split_overrides(validation_overrides)
    check_overrides(budget_tokens, "the budget")
    check_overrides(validation_tokens, "validation_overrides")
    output_dir = Path(output_dir)
    config = {
        "methods": {m: {"recipe": s.recipe, "grid": s.grid} for m, s in methods.items()},
        "selection": selection.record(),
        "budget": budget_tokens,
        "validation_overrides": validation_tokens,
        "seeds": seeds,
        "trial_callbacks": trial_callbacks,
        "output_dir": str(output_dir),
    }
    trials, removed = plan_trials(
        methods, selection, budget_tokens, validation_tokens, seeds, output_dir, trial_callbacks
    )
    plan = output_dir / "tune_plan.json"
    earlier = json.loads(plan.read_text()).get("selection") if plan.is_file() else config["selection"]
    if earlier != config["selection"]:
        raise ConfigError(
            f"tune: {output_dir} was tuned with selection {earlier}, not {config['selection']}: the "
            "rule is fixed before the trials run; use another output_dir for another rule"
        )
    output_dir.mkdir(parents=True, exist_ok=True)
    plan.write_text(json.dumps({k: v for k, v in config.items() if k != "output_dir"}, indent=2))
    print(
        f"[tune] {len(trials)} trials ({', '.join(methods)}; seeds {seeds}), output {output_dir}", flush=True
    )

    results = [run_trial(trial, launch, trial_timeout_s) for trial in trials]
    records = [result.to_json(selection) for result in results]
    parser = FitParser()
    summaries = {
        method: _method_summary(
            parser, method, spec, removed[method], records, budget_tokens, output_dir, selection
        )
        for method, spec in methods.items()
    }
    tune = {"command": report_command(), "config": config, "trials": records, "methods": summaries}
    (output_dir / "tune.json").write_text(json.dumps(tune, indent=2))
    (output_dir / "TUNE.md").write_text(render(tune))
    chosen = {m: (s["chosen"] or {}).get("label") for m, s in summaries.items()}
    print(f"[tune] chosen: {chosen}; written: {output_dir / 'TUNE.md'}", flush=True)
    return tune


def _method_summary(
    parser: Any,
    method: str,
    spec: TuneMethod,
    removed: list[str],
    records: list[dict[str, Any]],
    budget: list[str],
    output_dir: Path,
    selection: Selection,
) -> dict[str, Any]:
    """A method's configurations, their scores and intervals, and the chosen one (its recipe written)."""
    from es_lightning.tune.selection import candidates_of, choose, control_pairs, delta_interval, over_control

    points = {point.label: point for point in expand(spec.grid)}
    mine = [r for r in records if r["method"] == method]
    pairs = control_pairs(points, selection.control) if selection.rule == "over_control" else {}
    if pairs:
        mine = over_control(mine, pairs)
    key = selection.key
    candidates = candidates_of(mine)
    intervals = {
        c.label: delta_interval([r for r in mine if r["label"] == c.label], key) if c.eligible else None
        for c in candidates
    }
    summary: dict[str, Any] = {
        "recipe": spec.recipe,
        "grid": spec.grid,
        "removed_callbacks": removed,
        "candidates": [
            {
                "label": c.label,
                "settings": dict(points[c.label].settings),
                "score": c.score,
                "eligible": c.eligible,
                "delta_interval": intervals[c.label],
                "learned": None if intervals[c.label] is None else intervals[c.label]["low"] > 0,
                **({"control": pairs[c.label]} if pairs else {}),
            }
            for c in candidates
        ],
        "chosen": None,
        "unfinished": [c.label for c in candidates if not c.eligible],
    }
    # The choice waits for the whole grid: a rule applied to part of it would pick among the
    # configurations that happened to run first (a configuration whose trial fails is retried by
    # the next run; one that cannot finish must leave the grid).
    floor = selection.min_score if selection.rule == "over_control" else None
    eligible = [c for c in candidates if floor is None or (c.score is not None and c.score >= floor)]
    best = None if summary["unfinished"] else choose(eligible)
    if floor is not None and not summary["unfinished"] and best is None:
        summary["below_min_score"] = floor
    if best is not None:  # its recipe written into output_dir/chosen
        point = points[best.label]
        summary["chosen"] = _chosen(parser, method, spec.recipe, point, best.score, budget, output_dir)
    return summary


def _chosen(
    parser: Any, method: str, recipe: str, point: GridPoint, score: float | None, budget: list[str], out: Path
) -> dict[str, Any]:
    """Writes the chosen configuration's recipe to ``out/chosen/{method}.yaml``; returns its summary."""
    overrides, path = point.overrides(), out / "chosen" / f"{method}.yaml"
    cfg = parser.parse(["--config", recipe, *budget, *overrides], f"method {method}'s chosen configuration")
    header = (
        f"# {method}: {recipe} with the configuration es-lightning tune chose on the validation\n"
        f"# split ({' '.join(overrides)}) and the tuning budget ({' '.join(budget) or 'none'}).\n"
        f"# Launch: es-lightning fit --config {path}\n"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + parser.dump(cfg))
    return {
        "label": point.label,
        "settings": dict(point.settings),
        "score": score,
        "overrides": overrides,
        "recipe": str(path),
    }


def tune_parser() -> Any:
    """The ``tune`` subcommand's parser: ``--config`` plus :func:`run_tune`'s arguments."""
    from jsonargparse import ActionConfigFile, ArgumentParser, set_parsing_settings

    set_parsing_settings(docstring_parse_attribute_docstrings=True)  # dataclass field docstrings -> --help
    parser = ArgumentParser(description=run_tune.__doc__.split("\n")[0])
    parser.add_argument("--config", action=ActionConfigFile, help="Tune recipe (recipes/tune_*.yaml).")
    parser.add_function_arguments(run_tune, fail_untyped=False)
    return parser
