"""``es-lightning report``: run (or reuse) every method and ablation, then write the report.

    es-lightning report --config recipes/report_cpu.yaml --quick --output_dir runs/report_quick

Running the same command again reuses every finished run, analysis and evaluation.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from es_lightning.errors import ConfigError
from es_lightning.report.config import (
    FORGETTING,
    Ablation,
    CurveSettings,
    DriftSettings,
    ForgettingSettings,
    ReportPlan,
    SharpeningSettings,
    TrajectorySettings,
    VerdictSettings,
    split_overrides,
)
from es_lightning.report.output import report_command, write_report

if TYPE_CHECKING:
    from es_lightning.report.runs import RunOutcome

RunDirs = dict[str, dict[int, Path]]
"""``{method: {seed: run folder}}``."""


def build_plan(
    methods: dict[str, str],
    output_dir: Path,
    quick: bool = False,
    seeds: int | None = None,
    first_seed: int = 0,
    overrides: list[str] | None = None,
    quick_overrides: list[str] | None = None,
    **settings: Any,
) -> ReportPlan:
    """The resolved plan: ``seeds`` defaults to 3 (1 with ``quick``)."""
    count = seeds if seeds is not None else (1 if quick else 3)
    if count < 1:
        raise ConfigError(f"report: seeds must be >= 1, got {count}")
    settings = {k: v for k, v in settings.items() if v is not None}
    return ReportPlan(
        output_dir=Path(output_dir),
        methods=dict(methods),
        seeds=[first_seed + i for i in range(count)],
        overrides=split_overrides(overrides),
        quick=quick,
        quick_overrides=split_overrides(quick_overrides) if quick else [],
        **settings,
    )


def _finished(outcomes: list[RunOutcome]) -> tuple[RunDirs, dict[str, RunDirs]]:
    """The finished runs: ``({method: {seed: dir}}, {ablation: {label: {seed: dir}}})``."""
    methods: RunDirs = {}
    ablations: dict[str, RunDirs] = {}
    for outcome in outcomes:
        spec = outcome.spec
        if not outcome.ok or spec.group == "base":
            continue
        if spec.label is None:
            methods.setdefault(spec.group, {})[spec.seed] = spec.run_dir
        else:
            ablations.setdefault(spec.group, {}).setdefault(spec.label, {})[spec.seed] = spec.run_dir
    return methods, ablations


def _stages(methods: RunDirs) -> dict[str, list[dict[str, Any]]]:
    """``{method: [{"name", "updates"}, ...]}`` of the pipelines (their first seed's plan)."""
    from es_lightning.report.readers import stages

    out = {}
    for method, dirs in methods.items():
        plan = stages(next(iter(dirs.values())))
        if len(plan) > 1:
            out[method] = [{"name": d.name.split("_", 1)[1], "updates": u} for d, u in plan]
    return out


def build_report(
    plan: ReportPlan,
    outcomes: list[RunOutcome],
    analyses: list[dict[str, Any]],
    trajectory_runs: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Collect every number from the finished runs and judge the claims (no files written)."""
    from es_lightning.report.claims import judge
    from es_lightning.report.collect import (
        choose_task,
        collect_ablations,
        collect_curves,
        collect_evaluations,
        collect_outcome_block,
        collect_pareto,
    )
    from es_lightning.report.compute import collect_compute
    from es_lightning.report.diversity import collect_diversity
    from es_lightning.report.forgetting import collect_forgetting
    from es_lightning.report.readers import run_updates
    from es_lightning.report.sharpening import collect_sharpening
    from es_lightning.report.signal import collect_signal
    from es_lightning.report.trajectory import collect_trajectory
    from es_lightning.report.weight_drift import collect_drift

    methods, ablations = _finished(outcomes)
    forgetting_runs = ablations.pop(FORGETTING, {})
    base = next((o.spec.run_dir for o in outcomes if o.spec.group == "base" and o.ok), None)
    task = choose_task(
        plan, {**methods, **{f"{a}/{v}": d for a, vs in ablations.items() for v, d in vs.items()}}
    )
    config = asdict(plan) | {"output_dir": str(plan.output_dir)}
    runs = [o.to_json() for o in outcomes] + analyses + (trajectory_runs or [])
    report: dict[str, Any] = {
        "command": report_command(),
        "config": config,
        "runs": runs,
        "failures": [r for r in runs if r["status"] in ("failed", "missing", "busy")],
        "budgets": {m: run_updates(next(iter(d.values()))) for m, d in methods.items()},
        "stages": _stages(methods),
    }
    report["trajectory"], points = collect_trajectory(plan, methods, task, report["budgets"])
    report["sharpening"], sharpened = collect_sharpening(plan, methods, task)
    report["evaluations"] = collect_evaluations(plan, methods, base, task)
    report["outcomes"] = collect_outcome_block(plan, methods, base, task, {**points, **sharpened})
    report["pareto"] = collect_pareto(plan, report["evaluations"])
    report["curves"] = collect_curves(plan, methods)
    report["drift"] = collect_drift(plan, methods)
    report["ablations"] = collect_ablations(plan, ablations, task, plan.ablation_ks)
    report["compute"] = collect_compute(methods)
    report["forgetting"] = collect_forgetting(plan, forgetting_runs)
    report["signal"] = collect_signal(methods, forgetting_runs, ablations)
    report["diversity"] = collect_diversity(methods, forgetting_runs, plan.verdicts.permuted_control)
    report.update(judge(report))
    return report


def run_report(
    methods: dict[str, str] | None = None,
    output_dir: Path = Path("runs/report"),
    quick: bool = False,
    seeds: int | None = None,
    first_seed: int = 0,
    base: str | None = None,
    task: str | None = None,
    overrides: list[str] | None = None,
    quick_overrides: list[str] | None = None,
    ks: list[int] | None = None,
    pareto_ks: list[int] | None = None,
    ablation_ks: list[int] | None = None,
    frontier_methods: list[str] | None = None,
    es_variants: list[str] | None = None,
    reward_window: int = 5,
    curves: CurveSettings = CurveSettings(),  # noqa: B008  (jsonargparse lists its fields in --help)
    drift: DriftSettings = DriftSettings(),  # noqa: B008
    ablations: dict[str, Ablation] | None = None,
    method_overrides: dict[str, list[str]] | None = None,
    trajectory: TrajectorySettings = TrajectorySettings(),  # noqa: B008
    verdicts: VerdictSettings = VerdictSettings(),  # noqa: B008
    forgetting: ForgettingSettings = ForgettingSettings(),  # noqa: B008
    sharpening: SharpeningSettings = SharpeningSettings(),  # noqa: B008
    launch: bool = True,
    run_timeout_s: float | None = None,
    from_json: Path | None = None,
    summaries_dir: Path | None = None,
) -> dict[str, Any]:
    """Compare base, ES, GRPO and the sequential pipelines on one budget and write REPORT.md.

    Args:
        methods: ``{name: es-lightning fit recipe}``; the report expects ``es``, ``grpo``,
            ``es_then_grpo``, ``grpo_then_es`` (others are tabulated and plotted too).
        output_dir: where ``REPORT.md``, ``report.json``, the PNG figures, ``runs/`` and
            ``analysis/`` go; finished runs already there are reused.
        quick: one seed and the ``quick_overrides`` / ``quick_values`` (reduced sizes).
        seeds: seeds per method and ablation value (default 3; 1 with ``quick``).
        first_seed: the seeds are ``first_seed, first_seed + 1, ...`` (``--trainer.seed``).
        base: an ``es-lightning evaluate`` recipe for the starting model; default: the runs'
            own ``eval/before.json``.
        task: the evaluated task reported (default: the first in the evaluation files).
        overrides: CLI overrides for every run, e.g. ``["--trainer.accelerator cpu"]``.
        quick_overrides: CLI overrides added with ``quick``, e.g. ``["--trainer.max_steps 6",
            "--evaluation.limit 50"]``: last for methods and forgetting runs (after their
            ``method_overrides``: the quick sizes win), before an ablation's own overrides.
        ks: the K of the Pass@K table (default 1, 2, 4, 8, 16, 32; those evaluated are shown).
        pareto_ks: one Pareto plot of Pass@1 against Pass@K per K (default 16, 32).
        ablation_ks: the Pass@K reported per ablation value (default 1, 16).
        frontier_methods: the single-optimizer points whose frontier is dashed (default base,
            es, grpo); the other methods are the sequential ones, but for ``es_variants`` and
            the permuted control.
        es_variants: methods that are ES with another setting (e.g. ``es_lowrank``): asked ES's
            coverage claims and whether they keep ES's Pass@K, not judged as sequential runs.
        reward_window: an ablation run's final reward is the mean of its last this many
            ``train/reward_mean`` values.
        curves: which methods and ``k`` the entropy and held-out curves show.
        drift: ``es-lightning analyze`` settings (τ values, top-k, the sparsity curve).
        ablations: ``{name: ablation}``, each a recipe swept over a parameter's values or over
            named variants (see :class:`~es_lightning.report.config.Ablation`).
        method_overrides: CLI overrides for one method's runs, after ``overrides``, e.g.
            ``{es_permuted: ["--strategy.init_args.reward_control permuted"]}`` (ES's recipe with
            the rewards shuffled among the members: the control ES's premise is checked against).
        trajectory: GRPO's path (``{method: grpo, every: k}``): its checkpoints every ``k``
            updates evaluated with the final protocol, against which ES and the sequential runs
            are judged at matched Pass@1 (see :mod:`~es_lightning.report.trajectory`).
        verdicts: the interval level, bootstrap resamples and seed, the non-inferiority margins
            and the permuted-reward control ES's premise is checked against.
        forgetting: the forgetting setting (``{methods: {es: recipe, grpo: recipe}, in_domain,
            out_of_domain, margin}``): each method post-trains a two-skill model on one task, both
            tasks are evaluated before and after; "ES's held-out skill does not collapse" is
            judged on it (see :mod:`~es_lightning.report.forgetting`); ``trajectory: {method:
            grpo, steps: [...]}`` evaluates that method's checkpoints on both tasks.
        sharpening: the base model evaluated with the final protocol at other temperatures
            (``{temperatures: [0.4, 0.5, 0.55, 0.6]}``): its temperature path, entering the
            outcomes as ``base@T0.4``, ... (see :mod:`~es_lightning.report.sharpening`).
        launch: run what is missing (``false``: only report on the finished runs found).
        run_timeout_s: a run taking longer is stopped and recorded as failed.
        from_json: a saved ``report.json``: judge its data again with these rules and write
            ``REPORT.md``, ``report.json`` and the figures into ``output_dir``; nothing is run.
            Verdicts that need data the file lacks say ``insufficient data``.
        summaries_dir: after every finished run (and its analysis and trajectory evaluations,
            which read its checkpoints and so run at once), copy the small summaries of
            ``output_dir`` there (:mod:`~es_lightning.report.summaries`: no weights), e.g.
            ``results/report_cpu_v2``: a report spread over machines continues from that folder.

    Returns:
        The report (the content of ``report.json``).
    """
    if from_json is not None:
        from es_lightning.report.rerender import rerender

        return rerender(Path(from_json), Path(output_dir), verdicts=verdicts)
    if not methods:
        raise ConfigError("report: give `methods` ({name: fit recipe}) or --from_json OLD/report.json")
    plan = build_plan(
        methods, output_dir, quick, seeds, first_seed, overrides, quick_overrides,
        base=base, task=task, ks=ks, pareto_ks=pareto_ks, ablation_ks=ablation_ks,
        frontier_methods=frontier_methods, es_variants=es_variants, reward_window=reward_window, curves=curves, drift=drift,
        ablations=ablations, method_overrides=method_overrides, trajectory=trajectory,
        verdicts=verdicts, forgetting=forgetting, sharpening=sharpening,
    )  # fmt: skip
    from es_lightning.report.runs import plan_runs, run_all

    print(f"[report] {len(plan.seeds)} seed(s), output {plan.output_dir}", flush=True)

    def settle(outcomes: list[RunOutcome]) -> None:  # each finished run analysed at once
        _analyse(plan, outcomes, launch)
        if summaries_dir is not None:
            from es_lightning.report.summaries import export_summaries

            written = export_summaries(plan.output_dir, Path(summaries_dir))
            print(f"[report] summaries: {len(written)} files -> {summaries_dir}", flush=True)

    outcomes = run_all(plan_runs(plan), launch=launch, timeout_s=run_timeout_s, after_each=settle)
    analyses, path_runs = _analyse(plan, outcomes, launch)
    report = build_report(plan, outcomes, analyses, path_runs)
    path = write_report(report, plan.output_dir)
    failed = len(report["failures"])
    note = f" ({failed} run(s) or analyses failed or not run; see REPORT.md)" if failed else ""
    print(f"[report] written: {path}{note}", flush=True)
    return report


def _analyse(
    plan: ReportPlan, outcomes: list[RunOutcome], launch: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Analyses and checkpoint evaluations of the finished runs (reusing what is written)."""
    from es_lightning.report.collect import choose_task
    from es_lightning.report.forgetting import run_forgetting_path
    from es_lightning.report.sharpening import run_sharpening
    from es_lightning.report.trajectory import run_trajectory
    from es_lightning.report.weight_drift import run_analyses

    finished, groups = _finished(outcomes)
    analyses = run_analyses(plan, finished, launch)
    task = choose_task(plan, finished)
    evaluations = run_trajectory(plan, finished, task, launch) + run_sharpening(plan, finished, task, launch)
    evaluations += run_forgetting_path(plan, groups.get(FORGETTING, {}), launch)
    return analyses, evaluations


def report_parser() -> Any:
    """The ``report`` subcommand's parser: ``--config`` plus :func:`run_report`'s arguments."""
    from jsonargparse import ActionConfigFile, ActionYesNo, ArgumentParser, set_parsing_settings

    set_parsing_settings(docstring_parse_attribute_docstrings=True)  # dataclass field docstrings -> --help
    parser = ArgumentParser(description=run_report.__doc__.split("\n")[0])
    parser.add_argument("--config", action=ActionConfigFile, help="Report recipe (recipes/report_*.yaml).")
    parser.add_function_arguments(run_report, fail_untyped=False, skip={"quick"})
    parser.add_argument(
        "--quick", action=ActionYesNo, default=False, help="One seed and the quick overrides / values."
    )
    return parser
