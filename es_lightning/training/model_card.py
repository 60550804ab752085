"""The model card (``README.md``) a finished run writes into its final checkpoint's HF folder."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

from es_lightning.evaluation.columns import format_table
from es_lightning.models.registry import BUILTIN_MODELS

CARD_FILE = "README.md"
METHODS = {
    "es": "ES (evolution strategies in parameter space)",
    "grpo": "GRPO (group relative policy optimisation)",
}


def _read(path: Path) -> Any:
    """The parsed JSON or YAML file (by its suffix); ``None`` when it is absent or unreadable."""
    try:
        text = path.read_text()
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError):
        return None


def _config_file(run_dir: Path) -> Path | None:
    """The run's resolved ``config.yaml``: its own, or its pipeline's for a stage folder."""
    for folder in (run_dir, run_dir.parent):
        if (folder / "config.yaml").is_file() and (folder == run_dir or (folder / "pipeline.json").is_file()):
            return folder / "config.yaml"
    return None


def _pipeline_note(run_dir: Path) -> str:
    """`` (stage 2 of the pipeline es then grpo)`` for a pipeline stage's folder, else ``""``."""
    plan = _read(run_dir.parent / "pipeline.json")
    names = [str(stage.get("name")) for stage in (plan or {}).get("stages", []) if isinstance(stage, dict)]
    index = run_dir.name.removeprefix("stage").split("_")[0]
    return f" (stage {index} of the pipeline {' then '.join(names)})" if names and index.isdigit() else ""


def _launched_as() -> str | None:
    """The command line this process was started with, when it was the ``es-lightning`` command."""
    program = Path(sys.argv[0]).name if sys.argv else ""
    if program in ("es-lightning", "__main__.py") and "fit" in sys.argv[1:]:
        return shlex.join(["es-lightning", *sys.argv[1:]])
    return None


def _block(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False).rstrip()


def evaluation_section(run_dir: Path) -> list[str]:
    """The card's before/after table, or a sentence saying there was no evaluation."""
    before, after = (_read(run_dir / "eval" / f"{tag}.json") for tag in ("before", "after"))
    columns = {tag: data for tag, data in (("before", before), ("after", after)) if isinstance(data, dict)}
    if not columns:
        return ["The run wrote no evaluation (`evaluation: null` or `trainer.eval_after: false`)."]
    table = format_table(columns, difference="change" if len(columns) == 2 else None, details=True)
    measured = next(iter(columns.values()))
    scope = [
        f"`{task}`: {s.get('n_prompts', 0):.0f} problems x {s.get('n_samples', 0):.0f} samples"
        + (f" ({s['split']} split)" if s.get("split") else "")
        for task, s in measured.items()
        if isinstance(s, dict) and "n_prompts" in s
    ]
    lines = [
        "Accuracies in percent (change in points), then the mean reward, the mean response length "
        "(tokens) and the share of samples cut off at `max_tokens`:",
        "",
        "```",
        table,
        "```",
    ]
    return lines + ([""] + [f"- {line}" for line in scope] if scope else [])


def card_text(checkpoint: Path, run_dir: Path) -> str:
    """The model card of ``checkpoint`` (a folder of ``run_dir``'s) as Markdown with YAML front matter."""
    hparams = _read(checkpoint / "hparams.yaml") or {}
    state = _read(checkpoint / "trainer_state.json") or {}
    strategy = dict(hparams.get("strategy") or {})
    method = str(strategy.pop("name", state.get("strategy", "unknown")))
    config_file = _config_file(run_dir)
    config = _read(config_file) if config_file is not None else None
    module = (config or {}).get("module") or {}
    module = module.get("init_args") or module
    task_config = module.get("task")
    base = str(module.get("model") or hparams.get("model") or state.get("source_model") or "unknown")
    trainer = hparams.get("trainer") or {}
    front = {"library_name": "transformers", "tags": ["es-lightning", method, "reasoning"]}
    if base.count("/") == 1 and base not in BUILTIN_MODELS and not Path(base).exists():  # a hub id
        front["base_model"] = base
    lines = ["---", _block(front), "---", "", f"# {run_dir.name}: {checkpoint.name}", ""]
    lines += [
        f"`{base}` post-trained with {METHODS.get(method, method)} by es-lightning for "
        f"{state.get('step', '?')} update{'' if state.get('step') == 1 else 's'} on the task "
        f"`{hparams.get('task', '?')}`.",
        "",
        "## Training",
        "",
        f"- **Base model**: `{base}`",
        f"- **Method**: {METHODS.get(method, method)}{_pipeline_note(run_dir)}",
        f"- **Updates**: {state.get('step', '?')}, {trainer.get('batch_size', '?')} prompts each, "
        f"seed {trainer.get('seed', state.get('seed', '?'))}",
        f"- **Data**: the task `{hparams.get('task', '?')}`"
        + (" (its settings below)" if task_config is not None else ""),
        "",
        "Method settings:",
        "",
        "```yaml",
        _block(strategy),
        "```",
    ]
    if task_config is not None:
        lines += ["", "Task:", "", "```yaml", _block(task_config), "```"]
    lines += ["", "## Evaluation", "", *evaluation_section(run_dir), "", "## Reproduce", ""]
    lines += reproduce_section(run_dir, config_file)
    return "\n".join(lines) + "\n"


def reproduce_section(run_dir: Path, config_file: Path | None) -> list[str]:
    """The command that reruns the run from its resolved configuration, and its launch command."""
    if config_file is None:
        return ["No `config.yaml` was recorded for this run."]
    fresh = config_file.parent.with_name(config_file.parent.name + "_reproduced")
    command = shlex.join(
        ["es-lightning", "fit", "--config", str(config_file), "--trainer.output_dir", str(fresh)]
    )
    lines = ["From the run's resolved configuration (every setting, defaults included):", "", "```bash"]
    lines += [command, "```"]
    launched = _launched_as()
    if launched is not None:
        lines += ["", f"Launched as: `{launched}`"]
    return lines


def write_model_card(checkpoint: Path, run_dir: Path) -> Path:
    """Write :func:`card_text` to ``checkpoint/README.md``; returns its path."""
    path = Path(checkpoint) / CARD_FILE
    path.write_text(card_text(Path(checkpoint), Path(run_dir)))
    return path
