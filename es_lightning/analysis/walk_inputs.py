"""What the random-walk null (:mod:`es_lightning.analysis.null`) needs, read from the run folder.

A checkpoint's ``hparams.yaml`` holds α, N and the normalisation; the run's ``metrics.jsonl`` gives

    T_applied = T − Σ_{t ≤ T} es/skipped_t,      Σ_t ‖Δ_t‖² = Σ_{t ≤ T} es/update_norm_t²

A pipeline's ES stages up to the checkpoint add their walks (a GRPO stage's change is noted, not
modelled); a non-ES run gets no null. For a bare model folder give :class:`WalkOptions`
(``--random_walk.learning_rate 2e-3 ...``), which also replace a run's values field by field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from es_lightning.analysis.null import RandomWalk
from es_lightning.checkpoint import STATE_FILE, Checkpoint, latest_checkpoint
from es_lightning.errors import ConfigError


@dataclass
class WalkOptions:
    """ES settings of the random-walk null, for a bare model folder or to replace the run's."""

    learning_rate: float | None = None
    """α of the run (default: the checkpoint's ``hparams.yaml``)."""
    population_size: int | None = None
    """N of the run (default: the checkpoint's ``hparams.yaml``)."""
    applied_updates: int | None = None
    """T_applied, updates that moved the weights (default: the checkpoint's step minus the
    ``es/skipped`` updates in the run's ``metrics.jsonl``)."""
    normalization: Literal["zscore", "rank", "none"] | None = None
    """Reward normalisation (default: the run's, else ``zscore``)."""
    estimator: Literal["one_point", "antithetic"] | None = None
    """ES estimator (default: the run's, else ``one_point``)."""
    optimizer: Literal["sgd", "adam"] | None = None
    """ES optimizer (default: the run's, else ``sgd``)."""

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


@dataclass
class RunWalks:
    """The walks a checkpoint's null adds up, where they were read, or why there is no null."""

    walks: list[RandomWalk] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reason: str | None = None
    """Why there is no null (``n/a: not an ES run``, no settings); ``None`` when there is one."""

    def describe(self) -> dict[str, Any]:
        """The ``inputs`` of the JSON ``null`` block."""
        return {"walks": [vars(w).copy() for w in self.walks], "sources": self.sources, "notes": self.notes}


def read_walks(folder: str | Path, base: str | None = None, options: WalkOptions | None = None) -> RunWalks:
    """The random walks behind the weights in ``folder``; ConfigError when α, N or T stay unknown."""
    folder = Path(folder)
    given = (options or WalkOptions()).given()
    if not (folder / STATE_FILE).is_file():
        if not given:
            return RunWalks(reason="n/a: not a training checkpoint; give --random_walk.* to model one")
        missing = [k for k in ("learning_rate", "population_size", "applied_updates") if k not in given]
        if missing:
            raise ConfigError(
                f"--random_walk: {folder} is not an es-lightning checkpoint, so "
                f"{', '.join('--random_walk.' + m for m in missing)} must be given"
            )
        return RunWalks([RandomWalk(**given)], [f"--random_walk options ({folder})"])
    out = RunWalks()
    chain = _stage_chain(Checkpoint(folder))
    for i, checkpoint in enumerate(chain):
        _add_stage(out, checkpoint, given if i == len(chain) - 1 else {}, pipeline=len(chain) > 1)
    if not out.walks and out.reason is None:
        out.reason = "n/a: not an ES run"
    if out.walks and base is not None:
        started = chain[0].hparams().get("model")
        if started is not None and _resolved(started) != _resolved(base):
            out.notes.append(
                f"the run started from {started}, not from --base {base}: the null counts only the run's updates"
            )
    return out


def _add_stage(out: RunWalks, checkpoint: Checkpoint, given: dict[str, Any], pipeline: bool) -> None:
    strategy = dict(checkpoint.hparams().get("strategy") or {})
    name = strategy.get("name") or checkpoint.strategy
    label = _label(checkpoint)
    if name != "es":
        if pipeline:
            out.notes.append(f"{label} ({name}): its change is not modelled")
        if not given:
            return
        strategy = {}  # another optimizer's settings say nothing about an ES walk
    skipped, sq_norms = _skipped(checkpoint)
    settings = {
        "learning_rate": strategy.get("learning_rate"),
        "population_size": strategy.get("population_size"),
        "applied_updates": checkpoint.step - (skipped or 0),
        "normalization": strategy.get("normalization", "zscore"),
        "estimator": strategy.get("estimator", "one_point"),
        "optimizer": strategy.get("optimizer", "sgd"),
    }
    settings.update(given)
    missing = [k for k in ("learning_rate", "population_size", "applied_updates") if settings[k] is None]
    if missing:
        raise ConfigError(
            f"--random_walk: {label} does not record {', '.join(missing)}; give "
            + ", ".join(f"--random_walk.{m}" for m in missing)
        )
    overridden = "applied_updates" in given
    walk = RandomWalk(**settings, update_sq_norm_sum=None if overridden else sq_norms)
    out.walks.append(walk)
    source = f"{label}: hparams.yaml"
    if skipped is None:
        out.notes.append(f"{label}: no metrics.jsonl, so skipped updates are unknown (T_applied = T)")
    else:
        source += f", metrics.jsonl (T = {checkpoint.step}, {skipped} skipped)"
    if given:
        source += f"; replaced by --random_walk {sorted(given)}"
    out.sources.append(source)


def _skipped(checkpoint: Checkpoint) -> tuple[int | None, float | None]:
    """(skipped updates, Σ‖Δ_t‖²) up to T from the run's metrics.jsonl; ``None`` where unknown."""
    metrics = checkpoint.path.parent.parent / "metrics.jsonl"
    if not metrics.is_file():
        return None, None
    by_step: dict[int, dict[str, Any]] = {}
    for line in metrics.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        step = record.get("step")
        if isinstance(step, int) and 0 < step <= checkpoint.step and "es/skipped" in record:
            by_step[step] = record  # a step logged twice (resumed run): the last record
    skipped = sum(1 for r in by_step.values() if r.get("es/skipped"))
    norms = [r.get("es/update_norm") for r in by_step.values()]
    complete = len(by_step) == checkpoint.step and all(isinstance(n, int | float) for n in norms)
    sq = sum(float(n) ** 2 for n in norms) if complete else None  # type: ignore[arg-type]
    return skipped, sq


def _stage_chain(checkpoint: Checkpoint) -> list[Checkpoint]:
    """The final checkpoints of the pipeline stages before ``checkpoint``'s, then ``checkpoint``."""
    run_dir = checkpoint.path.parent.parent
    plan = run_dir.parent / "pipeline.json"
    if not plan.is_file():
        return [checkpoint]
    names = [Path(s["output_dir"]).name for s in json.loads(plan.read_text()).get("stages", [])]
    if run_dir.name not in names:
        return [checkpoint]
    chain = []
    for name in names[: names.index(run_dir.name)]:
        found = latest_checkpoint(run_dir.parent / name)
        if found is None:
            raise ConfigError(f"{run_dir.parent / name}: an earlier pipeline stage has no checkpoint")
        chain.append(Checkpoint(found))
    return [*chain, checkpoint]


def _label(checkpoint: Checkpoint) -> str:
    run_dir = checkpoint.path.parent.parent
    is_stage = (run_dir.parent / "pipeline.json").is_file()
    return f"{run_dir.name}/{checkpoint.path.name}" if is_stage else str(checkpoint.path)


def _resolved(model: str) -> str:
    from es_lightning.models.registry import resolve_model

    try:
        return str(Path(resolve_model(str(model))).expanduser().resolve())
    except Exception:  # an unresolvable name compares as given
        return str(model)
