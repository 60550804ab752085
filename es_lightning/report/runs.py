"""Launching the report's runs, one subprocess each, and reusing the finished ones.

A finished run is reused when its recorded configuration is today's, an unfinished one resumes from
its newest checkpoint, and one another report process holds is skipped (``busy``), so two processes
share one ``output_dir``. Two runs with the same configuration are one (a link).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from es_lightning.report.config import FORGETTING, ReportPlan, split_overrides
from es_lightning.report.readers import final_eval_file, is_finished
from es_lightning.report.same_run import same_settings

LOG_NAME = "report_run.log"
MEASURE_NAME = "report_run_measure.json"
"""The run's wall-clock time and peak memory (:mod:`~es_lightning.report.measure`)."""
CONFIG_NAME = "report_run_config.yaml"
"""The resolved configuration a finished run was made with; a run made with another is rerun."""
ATTEMPT_NAME = "report_run_attempt.yaml"
"""The resolved configuration an attempt was started with: an unfinished attempt continues from
its newest checkpoint only when the run it was is still the one asked for."""
RESUME = ("--trainer.resume", "auto")
"""Added to a run's command to continue an unfinished attempt from its newest checkpoint."""
RENDEZVOUS = (
    "MASTER_ADDR",
    "MASTER_PORT",
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "NODE_RANK",
    "LOCAL_WORLD_SIZE",
)
"""What a run must not inherit: each run is a job of its own, and a port this process (or an
earlier in-process Fabric run) holds would refuse the run's process group."""


@dataclass(frozen=True)
class RunSpec:
    """One run of the report."""

    group: str
    """Method name (``es``), ``base``, or ablation name (``population_size``)."""
    label: str | None
    """Ablation value or variant label (``None`` for methods and base)."""
    seed: int
    recipe: str
    overrides: tuple[str, ...]
    run_dir: Path
    command: str = "fit"
    """``fit`` or ``evaluate`` (the base evaluation)."""

    @property
    def name(self) -> str:
        return "/".join(part for part in (self.group, self.label, f"seed{self.seed}") if part is not None)


@dataclass
class RunOutcome:
    """What happened to a run: ``reused``, ``finished``, ``failed``, ``missing`` or ``busy``."""

    spec: RunSpec
    status: str
    returncode: int | None = None
    seconds: float = 0.0
    error: str | None = None
    log: str | None = None

    @property
    def ok(self) -> bool:
        return self.status in ("reused", "finished")

    def to_json(self) -> dict[str, Any]:
        spec = asdict(self.spec) | {"run_dir": str(self.spec.run_dir), "overrides": list(self.spec.overrides)}
        return {
            "name": self.spec.name,
            "status": self.status,
            "returncode": self.returncode,
            "seconds": round(self.seconds, 1),
            "error": self.error,
            "log": self.log,
            **spec,
        }


def plan_runs(plan: ReportPlan) -> list[RunSpec]:
    """Every run of the report in launch order."""
    specs = []
    if plan.base is not None:
        specs.append(
            RunSpec("base", None, plan.seeds[0], plan.base, (), plan.runs_dir / "base" / "seed0", "evaluate")
        )
    path = plan.trajectory.run_overrides()  # GRPO's path: its checkpoints at the path's updates
    for seed in plan.seeds:
        for method, recipe in plan.methods.items():
            run_dir = plan.runs_dir / method / f"seed{seed}"
            extra = split_overrides(plan.method_overrides.get(method))
            extra += path if method in plan.trajectory.paths else []
            overrides = (*plan.overrides, *extra, *plan.quick_overrides)  # the quick sizes win
            specs.append(RunSpec(method, None, seed, recipe, overrides, run_dir))
    for name, ablation in plan.ablations.items():
        own = ablation.seeds is not None and not plan.quick  # --quick: one seed everywhere
        seeds = [plan.seeds[0] + i for i in range(ablation.seeds)] if own else plan.seeds
        extra = split_overrides(ablation.overrides)
        for label, tokens in ablation.runs(plan.quick).items():
            for seed in seeds:
                run_dir = plan.runs_dir / name / label / f"seed{seed}"
                overrides = (*plan.overrides, *plan.quick_overrides, *extra, *tokens)
                specs.append(RunSpec(name, label, seed, ablation.recipe, overrides, run_dir))
    forgetting = plan.forgetting
    forgetting_path = forgetting.trajectory.run_overrides()
    for seed in plan.seeds:
        for method, recipe in forgetting.methods.items():
            run_dir = plan.runs_dir / FORGETTING / method / f"seed{seed}"
            extra = split_overrides([*forgetting.overrides, *forgetting.method_overrides.get(method, [])])
            extra += forgetting_path if method in forgetting.trajectory.paths else []
            overrides = (*plan.overrides, *extra, *plan.quick_overrides)
            specs.append(RunSpec(FORGETTING, method, seed, recipe, overrides, run_dir))
    return specs


def command_line(spec: RunSpec) -> list[str]:
    """The subprocess command of a run."""
    base = [sys.executable, "-m", "es_lightning", spec.command, "--config", spec.recipe]
    if spec.command == "evaluate":
        return [*base, "--output", str(final_eval_file(spec.run_dir)), *spec.overrides]
    fit = ["--trainer.output_dir", str(spec.run_dir), "--trainer.seed", str(spec.seed)]
    return [*base, *fit, *spec.overrides]


def measured_command(spec: RunSpec, name: str = MEASURE_NAME) -> list[str]:
    """:func:`command_line` wrapped to record the run's time and peak memory in ``<run dir>/<name>``."""
    out = str(spec.run_dir / name)
    return [sys.executable, "-m", "es_lightning.report.measure", out, "--", *command_line(spec)]


BUSY = "being run by another report process"


@contextlib.contextmanager
def claimed(target: Path) -> Any:
    """Hold the lock ``.<name>.lock`` beside ``target`` while the block runs; yields whether it
    was taken (``False``: another process holds it). The lock ends with its process, a killed one
    included."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / f".{target.name}.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def tail(path: Path, lines: int = 20) -> str:
    """The last ``lines`` lines of a log ("" when unreadable)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


STOP_GRACE_S = 120.0
"""How long a stopped run may take to finish its update and save its checkpoint before it is killed."""


def _stop(proc: subprocess.Popen) -> None:
    """End the run's process group: TERM (it saves a checkpoint), then KILL after
    :data:`STOP_GRACE_S`; further TERMs to the report are ignored meanwhile."""
    previous = _set_sigterm(signal.SIG_IGN)
    try:
        for sig, grace in ((signal.SIGTERM, STOP_GRACE_S), (signal.SIGKILL, None)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                continue
    finally:
        _set_sigterm(previous)


def _set_sigterm(handler: Any) -> Any:
    """Install ``handler`` for SIGTERM where Python allows it (the main thread); the previous one."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, handler)


def _raise_interrupted(signum: int, frame: Any) -> None:
    from es_lightning.training.signals import RunInterrupted

    raise RunInterrupted(signum, at_boundary=False)


def run_logged(
    argv: list[str], log: Path, timeout_s: float | None = None, append: bool = False
) -> int | None:
    """Run ``argv`` in its own process group, output in ``log``; the exit code, or ``None`` past
    ``timeout_s``. Interrupting the report stops the run first. The run does not inherit
    :data:`RENDEZVOUS`."""
    env = {k: v for k, v in os.environ.items() if k not in RENDEZVOUS} | {"PYTHONUNBUFFERED": "1"}
    with log.open("a" if append else "w") as out:
        out.write("$ " + shlex.join(argv) + "\n")
        out.flush()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        previous = _set_sigterm(_raise_interrupted)
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            return None
        except BaseException:  # Ctrl-C or SIGTERM reach only the report (the run has its own session)
            _stop(proc)
            raise
        finally:
            if previous is not None:
                _set_sigterm(previous)


def logged_record(name: str, argv: list[str], log: Path, wrote: Callable[[], bool]) -> dict[str, Any]:
    """The report's record of :func:`run_logged`: ``finished``, ``failed`` or ``busy``."""
    with claimed(log) as mine:
        if not mine:
            return {"name": name, "status": "busy", "returncode": None, "seconds": 0.0, "log": str(log),
                    "error": BUSY}  # fmt: skip
        start = time.perf_counter()
        code = run_logged(argv, log)
        ok = code == 0 and wrote()
    return {
        "name": name,
        "status": "finished" if ok else "failed",
        "returncode": code,
        "seconds": round(time.perf_counter() - start, 1),
        "log": str(log),
        "error": None if ok else f"exit code {code}\n{tail(log)}",
    }


def execute(
    spec: RunSpec, timeout_s: float | None = None, command: Callable[[RunSpec], list[str]] = measured_command
) -> RunOutcome:
    """Run ``spec`` unless it is finished; never raises for a failed run."""
    if is_finished(spec.run_dir):
        return RunOutcome(spec, "reused")
    if not Path(spec.recipe).is_file():
        return RunOutcome(spec, "failed", error=f"recipe {spec.recipe} not found (cwd {Path.cwd()})")
    key = resolved_key(spec)
    if can_resume(spec, key):
        outcome = _attempt(spec, timeout_s, [*command(spec), *RESUME])
        if outcome.returncode != 2:  # 2: the resume was refused (a usage error); start over below
            return outcome
    if spec.run_dir.exists():
        shutil.rmtree(spec.run_dir)  # an unfinished earlier attempt
    spec.run_dir.mkdir(parents=True)
    if key is not None:
        (spec.run_dir / ATTEMPT_NAME).write_text(key)
    return _attempt(spec, timeout_s, command(spec))


def can_resume(spec: RunSpec, key: str | None) -> bool:
    """Whether an unfinished attempt of this very run left a checkpoint to continue from."""
    from es_lightning.checkpoint import latest_checkpoint

    attempt = spec.run_dir / ATTEMPT_NAME
    return (
        spec.command == "fit"
        and key is not None
        and attempt.is_file()
        and same_settings(attempt.read_text(), key)
        and latest_checkpoint(spec.run_dir) is not None
    )


def _attempt(spec: RunSpec, timeout_s: float | None, argv: list[str]) -> RunOutcome:
    """Run ``argv`` for ``spec`` (its log appended to), the outcome judged by the final evaluation."""
    log = spec.run_dir / LOG_NAME
    start = time.perf_counter()
    code = run_logged(argv, log, timeout_s, append=True)
    seconds = time.perf_counter() - start
    if code == 0 and is_finished(spec.run_dir):
        return RunOutcome(spec, "finished", 0, seconds, log=str(log))
    if code is None:
        error = f"timed out after {timeout_s:g} s"
    elif code == 0:
        error = f"exited 0 but wrote no {final_eval_file(spec.run_dir).relative_to(spec.run_dir)}"
    else:
        error = f"exit code {code}"
    return RunOutcome(spec, "failed", code, seconds, error=f"{error}\n{tail(log)}".strip(), log=str(log))


_PARSING = threading.Lock()


def resolved_key(spec: RunSpec) -> str | None:
    """The run's resolved ``fit`` configuration as text (output folder aside), or ``None``.

    One parse at a time: jsonargparse changes the process's working folder to the recipe's while it
    reads it, so two threads parsing at once can leave the process in the wrong folder."""
    if spec.command != "fit":
        return None
    try:
        from es_lightning.training.command import fit_parser
        from es_lightning.training.stage_args import expand_stage_args

        argv = command_line(spec)[4:]  # --config ... (without the interpreter, -m es_lightning and fit)
        argv[argv.index("--trainer.output_dir") + 1] = "RUN_DIR"
        with _PARSING:
            parser = fit_parser()
            return parser.dump(parser.parse_args(expand_stage_args(parser, argv)))
    except (Exception, SystemExit):  # an unparsable recipe fails when it runs, with its own log
        return None


def run_all(
    specs: list[RunSpec],
    launch: bool = True,
    timeout_s: float | None = None,
    command: Callable[[RunSpec], list[str]] = measured_command,
    after_each: Callable[[list[RunOutcome]], None] | None = None,
) -> list[RunOutcome]:
    """Run (or reuse) every spec in order, ``after_each(outcomes)`` after each one."""
    from tqdm.auto import tqdm

    settle = after_each or (lambda outcomes: None)
    finished = [spec for spec in specs if is_finished(spec.run_dir)]
    print(
        f"[report] {len(specs)} runs: {len(finished)} finished (reused), {len(specs) - len(finished)} to run",
        flush=True,
    )
    outcomes = []
    same: dict[str, Path] = {}
    bar = tqdm(specs, desc="report runs", unit="run", dynamic_ncols=True)
    for spec in bar:
        bar.set_postfix_str(spec.name)
        key = resolved_key(spec)
        recorded = spec.run_dir / CONFIG_NAME
        if (
            key is not None
            and recorded.is_file()
            and not same_settings(recorded.read_text(), key)
            and not spec.run_dir.is_symlink()
        ):
            tqdm.write(f"[report] {spec.name}: made with other settings; running it again")
            shutil.rmtree(spec.run_dir)
        first = same.setdefault(key, spec.run_dir) if key is not None else spec.run_dir
        if first != spec.run_dir and is_finished(first) and not spec.run_dir.is_dir():
            spec.run_dir.parent.mkdir(parents=True, exist_ok=True)
            spec.run_dir.symlink_to(first.resolve(), target_is_directory=True)
            tqdm.write(f"[report] {spec.name}: the same run as {first}")
        if is_finished(spec.run_dir):
            outcomes.append(RunOutcome(spec, "reused"))
            settle(outcomes)
            continue
        if not launch:
            outcomes.append(RunOutcome(spec, "missing", error="not run (launch: false)"))
            continue
        with claimed(spec.run_dir) as mine:
            if not mine or is_finished(spec.run_dir):  # another report process runs it (or just did)
                status = "busy" if not mine else "reused"
                outcomes.append(RunOutcome(spec, status, error=BUSY if not mine else None))
                tqdm.write(f"[report] {spec.name}: {status}")
                if mine:
                    settle(outcomes)
                continue
            tqdm.write(f"[report] running {spec.name} -> {spec.run_dir}")
            outcome = execute(spec, timeout_s, command)
        if outcome.status == "finished" and key is not None:
            (spec.run_dir / CONFIG_NAME).write_text(key)
        tqdm.write(f"[report] {spec.name}: {outcome.status} ({outcome.seconds:.0f} s)")
        if outcome.status == "failed":
            log = f"; log: {outcome.log}" if outcome.log else ""
            tqdm.write(f"[report]   {(outcome.error or '').splitlines()[0]}{log}")
        outcomes.append(outcome)
        if outcome.ok:
            settle(outcomes)
    bar.close()
    return outcomes
