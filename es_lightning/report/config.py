"""The report's settings: the grouped blocks of a report recipe (their field docstrings are the
``--help``), and :class:`ReportPlan`, the resolved form every other module reads.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from es_lightning.errors import ConfigError

AblationValue = int | float | str

DEFAULT_TAUS = [1e-4, 5e-4, 1e-3, 1.5e-3, 5e-3]

FORGETTING = "forgetting"
"""The run group (``runs/forgetting/<method>/seed<k>/``) of the forgetting setting."""


@dataclass
class Ablation:
    """One swept setting: a recipe, a parameter path and its values (and/or named variants)."""

    recipe: str
    """The ``es-lightning fit`` recipe every run of the ablation starts from."""
    parameter: str | None = None
    """The swept option as a CLI path, e.g. ``strategy.init_args.population_size``."""
    values: list[AblationValue] = field(default_factory=list)
    """Values of ``parameter``; run ``v`` adds ``--{parameter} {v}`` and is labelled ``v``."""
    variants: dict[str, list[str]] = field(default_factory=dict)
    """Named sets of CLI overrides (several options at once), e.g. ``{common_sigma1e-3:
    ["--strategy.init_args.sigma 1e-3"]}``; run ``name`` is labelled ``name``."""
    overrides: list[str] = field(default_factory=list)
    """CLI overrides added to every run of this ablation (after the report-wide ones)."""
    quick_values: list[AblationValue] | None = None
    """Values run in ``--quick`` mode (default: all of ``values``)."""
    quick_variants: list[str] | None = None
    """Variant names run in ``--quick`` mode (default: all of ``variants``)."""
    seeds: int | None = None
    """Seeds per value (default: the report's ``seeds``)."""
    reference: dict[str, float] = field(default_factory=dict)
    """The paper's value per label (e.g. κ_pair 1.9870), shown next to the measured one."""

    def __post_init__(self) -> None:
        if not self.values and not self.variants:
            raise ConfigError(f"ablation on {self.recipe}: give `values` (with `parameter`) or `variants`")
        if self.values and not self.parameter:
            raise ConfigError(f"ablation on {self.recipe}: `values` need a `parameter` to set")
        labels = [value_label(v) for v in self.values] + list(self.variants)
        if len(set(labels)) != len(labels):
            raise ConfigError(f"ablation on {self.recipe}: labels repeat: {labels}")
        if self.seeds is not None and self.seeds < 1:
            raise ConfigError(f"ablation on {self.recipe}: seeds must be >= 1, got {self.seeds}")

    def runs(self, quick: bool) -> dict[str, list[str]]:
        """``{label: CLI override tokens}`` of the runs, in order (``quick`` keeps the quick subset)."""
        values = self.values if not quick or self.quick_values is None else self.quick_values
        variants = self.variants if not quick or self.quick_variants is None else self.quick_variants
        flag = "--" + (self.parameter or "").lstrip("-")
        out = {value_label(v): [flag, value_label(v)] for v in values}
        for name in variants:
            if name not in self.variants:
                raise ConfigError(f"ablation on {self.recipe}: quick variant {name!r} is not in `variants`")
            out[name] = split_overrides(self.variants[name])
        return out


@dataclass
class CurveSettings:
    """Token entropy and held-out Pass@K over training, from the runs' ``metrics.jsonl``."""

    methods: list[str] = field(default_factory=lambda: ["es", "grpo"])
    """Methods drawn in ``entropy.png`` and ``heldout.png`` (the permuted control, when run, is read too)."""
    heldout_ks: list[int] = field(default_factory=lambda: [1, 16])
    """The ``k`` of the ``heldout/<task>/pass@<k>`` curves drawn."""


@dataclass
class DriftSettings:
    """Weight drift from ``es-lightning analyze`` on each run's final checkpoint."""

    enabled: bool = True
    """Run ``es-lightning analyze`` (its JSON is reused when present)."""
    methods: list[str] = field(default_factory=lambda: ["es", "grpo", "es_then_grpo", "grpo_then_es"])
    """Methods whose final checkpoints are analysed against the starting model (and the permuted
    control, when run: ES's drift and sparsity are judged against it)."""
    ratio: list[str] = field(default_factory=lambda: ["es", "grpo"])
    """``[a, b]``: report rel-L2(a) / rel-L2(b) per seed (the paper: ES ≈ 40× GRPO)."""
    taus: list[float] = field(default_factory=lambda: list(DEFAULT_TAUS))
    """τ of the s_τ table (share of parameters with |Δ| ≤ τ)."""
    top_k: int = 100
    """Largest updates attributed to layer kinds."""
    base_model: str | None = None
    """The starting model analysed against (default: ``module.model`` of the run's config.yaml)."""
    sparsity_curve_methods: list[str] = field(default_factory=lambda: ["es"])
    """Methods whose thresholded exports are evaluated (needs ``export_thresholded`` and ``evaluate``)."""
    export_thresholded: list[float] = field(default_factory=list)
    """τ at which small updates are zeroed, exported and evaluated (the sparsity curve)."""
    evaluate: str | None = None
    """Task the thresholded exports are evaluated on."""
    quick_sparsity_curve: bool = False
    """Also evaluate thresholded exports in ``--quick`` mode."""
    extra_args: list[str] = field(default_factory=list)
    """More ``es-lightning analyze`` arguments, e.g. ``["--device cpu"]``."""


@dataclass
class TrajectorySettings:
    """GRPO's path: its checkpoints at ``steps`` and every ``every`` updates, evaluated at the end."""

    method: str = "grpo"
    """The method whose path the others are judged against (a name in ``methods``); the shorthand
    of ``methods: [method]``."""
    methods: list[str] = field(default_factory=list)
    """Several paths (e.g. ``[grpo, grpo_t06]``), each method's checkpoints evaluated alike; the
    first is the one the claims are judged on (default: ``[method]``)."""
    every: int = 0
    """Evaluate its checkpoints every this many updates (0: none but ``steps``); the half budget of
    the sequential runs should be a point of the path."""
    steps: list[int] = field(default_factory=list)
    """Also the checkpoints after exactly these updates (e.g. ``[1, 2, 3, 5, 7, 10, 15, 20, 30]``):
    the runs keep them (``--trainer.checkpoint_steps``); those past a run's end are not there."""
    via: Literal["checkpoints", "eval_every"] = "checkpoints"
    """``checkpoints``: the runs keep a checkpoint at every point and the report evaluates each
    with ``es-lightning evaluate``; ``eval_every``: the runs evaluate themselves every ``every``
    updates (no checkpoints kept; no ``steps``)."""
    extra_args: list[str] = field(default_factory=list)
    """More ``es-lightning evaluate`` arguments for the checkpoints, e.g. ``["--device cpu"]``."""

    def __post_init__(self) -> None:
        if self.every < 0:
            raise ConfigError(f"trajectory.every must be >= 0, got {self.every}")
        if self.via not in ("checkpoints", "eval_every"):
            raise ConfigError(f"trajectory.via must be checkpoints or eval_every, got {self.via!r}")
        if any(step < 1 for step in self.steps) or len(set(self.steps)) != len(self.steps):
            raise ConfigError(f"trajectory.steps must be distinct updates >= 1, got {self.steps}")
        if self.steps and self.via == "eval_every":
            raise ConfigError("trajectory.steps need via: checkpoints (eval_every evaluates every k updates)")
        if len(set(self.methods)) != len(self.methods):
            raise ConfigError(f"trajectory.methods repeats a method: {self.methods}")

    @property
    def paths(self) -> list[str]:
        """The methods whose paths are measured, the primary one first."""
        return list(self.methods) or [self.method]

    @property
    def primary(self) -> str:
        """The path the claims are judged on."""
        return self.paths[0]

    @property
    def enabled(self) -> bool:
        return bool(self.every or self.steps)

    def wants(self, step: int) -> bool:
        """Whether update ``step`` is a point of the path."""
        return step in self.steps or bool(self.every and step > 0 and step % self.every == 0)

    def points(self, updates: int) -> list[int]:
        """The path's updates strictly between 0 and ``updates`` (the base and the method's end)."""
        return [step for step in range(1, updates) if self.wants(step)]

    def run_overrides(self) -> list[str]:
        """CLI tokens added to the path methods' runs: what makes them save (or evaluate) the points."""
        tokens = ["--trainer.checkpoint_steps", str(sorted(self.steps))] if self.steps else []
        if not self.every:
            return tokens
        if self.via == "eval_every":
            return ["--trainer.eval_every", str(self.every)]
        return [*tokens, "--trainer.checkpoint_every", str(self.every), "--trainer.keep_last", "null"]


@dataclass
class SharpeningSettings:
    """The sharpening reference: the base model evaluated with the runs' final protocol at other
    sampling temperatures (its temperature path: sharpening without training)."""

    temperatures: list[float] = field(default_factory=list)
    """Temperatures of the base's evaluations, e.g. ``[0.4, 0.5, 0.55, 0.6]``; the protocol's own
    is the base itself (none: no reference)."""
    extra_args: list[str] = field(default_factory=list)
    """More ``es-lightning evaluate`` arguments for these evaluations, e.g. ``["--device cpu"]``."""

    def __post_init__(self) -> None:
        if any(not t > 0 for t in self.temperatures) or len(set(self.temperatures)) != len(self.temperatures):
            raise ConfigError(f"sharpening.temperatures must be distinct and > 0, got {self.temperatures}")


@dataclass
class ForgettingSettings:
    """The forgetting setting: methods post-train a model that has two skills on one of them, and
    both tasks' test splits are evaluated before and after (``eval_tasks`` of the recipes)."""

    methods: dict[str, str] = field(default_factory=dict)
    """``{name: es-lightning fit recipe}``, e.g. ``{es: recipes/forgetting_cpu_es.yaml, grpo:
    recipes/forgetting_cpu_grpo.yaml}``; one run per seed of the report (none: no setting)."""
    in_domain: str = "countdown_tiny"
    """The trained task's ``eval_tasks`` name: a method must raise its Pass@1 before its
    held-out task is judged (a method that learned nothing forgets nothing)."""
    out_of_domain: str = "arithmetic"
    """The held-out skill's ``eval_tasks`` name (never trained on after the warm start)."""
    ks: list[int] = field(default_factory=lambda: [1, 16, 32])
    """Pass@K shown before and after for both tasks (those evaluated)."""
    margin: float = 0.05
    """"Does not collapse": the held-out Pass@1 change's lower bound must lie above −margin
    (0.05: 5 points), judged for every method that learned its training task."""
    method_overrides: dict[str, list[str]] = field(default_factory=dict)
    """CLI overrides for one forgetting method's runs, e.g. ``{es_permuted:
    ["--strategy.init_args.reward_control permuted"]}`` (ES's control in this setting)."""
    overrides: list[str] = field(default_factory=list)
    """CLI overrides for every forgetting run, after the report-wide ones (e.g.
    ``["--evaluation.num_samples 32"]`` where the methods' evaluations draw more)."""
    trajectory: TrajectorySettings = field(default_factory=TrajectorySettings)
    """A method's path in this setting (``{method: grpo, steps: [1, 2, 3, 5, ...]}``): its runs keep
    those checkpoints, each evaluated on the in-domain and the held-out task, entering the
    per-task outcomes as ``grpo@<step>`` (none by default)."""

    def __post_init__(self) -> None:
        if self.margin < 0:
            raise ConfigError(f"forgetting.margin must be >= 0, got {self.margin}")
        absent = [m for m in self.trajectory.paths if m not in self.methods]
        if self.trajectory.enabled and absent:
            raise ConfigError(f"forgetting.trajectory names methods that are not run: {absent}")
        if self.in_domain == self.out_of_domain:
            raise ConfigError(f"forgetting: in_domain and out_of_domain are both {self.in_domain!r}")
        unknown = sorted(set(self.method_overrides) - set(self.methods))
        if unknown:
            raise ConfigError(f"forgetting.method_overrides name methods that are not run: {unknown}")


@dataclass
class VerdictSettings:
    """How claims are judged: the interval's level and resamples, margins, the ES premise."""

    level: float = 0.95
    """One-sided confidence of every bound (a direction claim with no effect behind it is called
    reproduced in at most 1 − level of evaluations)."""
    bootstrap_resamples: int = 2000
    """Resamples of the two-level bootstrap (seeds, then problems within each seed, paired across
    methods)."""
    bootstrap_seed: int = 0
    """Seed of the resamples (the same data give the same intervals)."""
    pass_margin: float = 0.01
    """Non-inferiority margin δ of "keeps" claims on Pass@K, as a fraction (0.01: 1 point)."""
    entropy_margin: float = 0.005
    """Non-inferiority margin δ of "ES keeps its entropy" (nats: the change over training must
    not fall below −δ)."""
    permuted_control: str = "es_permuted"
    """The method that runs ES's recipe with ``--strategy.init_args.reward_control permuted``
    (the empirical null); without it ES-relative claims say so."""
    primary_k: int | None = None
    """K of the primary claim "ES covers more than GRPO at Pass@K at matched Pass@1" (default: the
    largest of ``pareto_ks``)."""
    primary_margin: float = 0.02
    """δ of the matched-Pass@1 claims: reproduced above 0, not reproduced when the upper bound lies
    below δ (ES is not meaningfully above the path), as a fraction (0.02: 2 points)."""
    drift_margin: float = 0.05
    """"ES drifts further than GRPO" needs ES's rel-L2 above its permuted control's by more than this
    fraction (0.05: 5 %): drift that the rewards caused, not the random walk α sets."""
    sparsity_margin: float = 0.01
    """"Most ES updates are tiny" needs ES's s_τ above its permuted control's by more than this
    (0.01: 1 point of the parameters): an update sparser than its random walk."""
    preregistration: str | None = None
    """The pre-registration this report's rules must match (``docs/report/PREREGISTRATION.md``):
    REPORT.md calls itself pre-registered only when they do (:mod:`~es_lightning.report.preregistration`)."""

    def __post_init__(self) -> None:
        if not 0.5 < self.level < 1.0:
            raise ConfigError(f"verdicts.level must be in (0.5, 1), got {self.level}")
        if self.bootstrap_resamples < 100:
            raise ConfigError(f"verdicts.bootstrap_resamples must be >= 100, got {self.bootstrap_resamples}")
        if self.primary_k is not None and self.primary_k < 1:
            raise ConfigError(f"verdicts.primary_k must be >= 1, got {self.primary_k}")
        for name in ("pass_margin", "entropy_margin", "primary_margin", "drift_margin", "sparsity_margin"):
            if getattr(self, name) < 0:
                raise ConfigError(f"verdicts.{name} must be >= 0, got {getattr(self, name)}")


def value_label(value: AblationValue) -> str:
    """The label (and folder name) of an ablation value: ``8``, ``0.001``, ``zscore``."""
    return str(value).replace("/", "_")


def split_overrides(overrides: list[str] | None) -> list[str]:
    """``["--trainer.max_steps 6", "--evaluation.limit 50"]`` → CLI tokens (shell quoting kept)."""
    return [token for item in overrides or [] for token in shlex.split(str(item))]


@dataclass
class ReportPlan:
    """The resolved report: what to run, where, and how to read it."""

    output_dir: Path
    methods: dict[str, str]
    seeds: list[int]
    overrides: list[str]
    quick: bool = False
    quick_overrides: list[str] = field(default_factory=list)
    """CLI tokens of ``--quick`` (empty without it): after a method's own overrides, before an
    ablation's."""
    base: str | None = None
    task: str | None = None
    ks: list[int] = field(default_factory=lambda: [1, 2, 4, 8, 16, 32])
    pareto_ks: list[int] = field(default_factory=lambda: [16, 32])
    ablation_ks: list[int] = field(default_factory=lambda: [1, 16])
    frontier_methods: list[str] = field(default_factory=lambda: ["base", "es", "grpo"])
    es_variants: list[str] = field(default_factory=list)
    reward_window: int = 5
    curves: CurveSettings = field(default_factory=CurveSettings)
    drift: DriftSettings = field(default_factory=DriftSettings)
    ablations: dict[str, Ablation] = field(default_factory=dict)
    method_overrides: dict[str, list[str]] = field(default_factory=dict)
    trajectory: TrajectorySettings = field(default_factory=TrajectorySettings)
    verdicts: VerdictSettings = field(default_factory=VerdictSettings)
    forgetting: ForgettingSettings = field(default_factory=ForgettingSettings)
    sharpening: SharpeningSettings = field(default_factory=SharpeningSettings)

    def with_control(self, methods: list[str]) -> list[str]:
        """``methods`` and, when the report runs it, ES's permuted-reward control."""
        control = self.verdicts.permuted_control
        return list(dict.fromkeys([*methods, *([control] if control in self.methods else [])]))

    def __post_init__(self) -> None:
        if "base" in self.methods:
            raise ConfigError("report: `base` is not a method name (it is the starting model)")
        if not self.seeds:
            raise ConfigError("report: at least one seed")
        if self.reward_window < 1:
            raise ConfigError(f"report: reward_window must be >= 1, got {self.reward_window}")
        clash = set(self.methods) & set(self.ablations)
        if FORGETTING in self.ablations or FORGETTING in self.methods:
            raise ConfigError(
                f"report: {FORGETTING!r} names the forgetting setting's runs, not a method or ablation"
            )
        if clash:
            raise ConfigError(f"report: names used both as method and ablation: {sorted(clash)}")
        absent = [m for m in self.trajectory.paths if m not in self.methods]
        if self.trajectory.enabled and absent:
            raise ConfigError(
                f"report: trajectory.method(s) {absent} are not one of the methods {sorted(self.methods)}"
            )
        unknown = sorted(set(self.method_overrides) - set(self.methods))
        if unknown:
            raise ConfigError(f"report: method_overrides name methods that are not run: {unknown}")
        odd = sorted(set(self.es_variants) - set(self.methods)) + sorted(
            set(self.es_variants) & {"es", *self.frontier_methods, self.verdicts.permuted_control}
        )
        if odd:
            raise ConfigError(
                f"report: es_variants must be methods other than es, the frontier's and the permuted control: {odd}"
            )
        if any("@" in name for name in self.methods):
            raise ConfigError("report: method names may not contain '@' (it names trajectory points)")

    @property
    def runs_dir(self) -> Path:
        return self.output_dir / "runs"

    @property
    def analysis_dir(self) -> Path:
        return self.output_dir / "analysis"
