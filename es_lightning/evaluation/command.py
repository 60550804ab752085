"""The ``evaluate`` command: Pass@K / Maj@K of a model (generated here) or of saved completions::

    es-lightning evaluate --task gsm8k --completions samples.jsonl --output scores.json

:func:`run_evaluate` is the command; its docstring is the ``--help``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.evaluation.columns import print_table
from es_lightning.evaluation.offline import strict_dumps
from es_lightning.evaluation.runner import EvalConfig, evaluate_rows
from es_lightning.evaluation.summary import average_over_tasks
from es_lightning.models.loading import ModelLoading
from es_lightning.rollout import default_rollout
from es_lightning.rollout.base import Rollout
from es_lightning.tasks.base import Task


def run_evaluate(
    task: str | Task | list[str | Task],
    model: str | None = None,
    completions: Path | None = None,
    output: Path = Path("eval.json"),
    evaluation: EvalConfig | None = None,
    rollout: Rollout | None = None,
    device: str = "auto",
    dtype: str = "auto",
    revision: str | None = None,
    trust_remote_code: bool = False,
    model_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score saved completions (``--completions``) or generate and score (``--model``).

    Args:
        task: a registered task name (gsm8k, math, countdown, multiple_choice, commonsense_qa, gpqa,
            hotpotqa, mbpp, arithmetic, echo), a task config with class_path/init_args, or a list of
            them (generation mode: one engine for all, plus their average).
        model: HF id, local folder or built-in name to sample from (generation mode).
        completions: JSONL of dataset rows plus ``"completions": [str, ...]`` (offline mode).
        output: JSON file written with ``{task: {n_prompts, n_samples, pass@1.., maj@1..}}``.
        evaluation: M, temperature, K values, greedy pass, prompt limit (generation mode).
        rollout: generation backend (generation mode); default vLLM when installed, else transformers.
        device: ``cpu``, ``cuda``, ``cuda:1`` or ``auto``.
        dtype: weights' dtype in generation mode (``auto``: bf16 on CUDA, fp32 on CPU).
        revision: branch, tag or commit of a hub ``--model`` (not applied to local folders).
        trust_remote_code: allow a model that ships its own code (``auto_map``) to run it.
        model_kwargs: further ``AutoModelForCausalLM.from_pretrained`` options for the HF rollout
            (e.g. ``{attn_implementation: sdpa}``).
    """
    from es_lightning.evaluation.offline import score_completions_file
    from es_lightning.tasks.registry import get_task

    if (model is None) == (completions is None):
        raise ConfigError("evaluate: give exactly one of --model (generate) or --completions (score a file)")
    given = task if isinstance(task, list) else [task]
    tasks = [get_task(t) if isinstance(t, str) else t for t in given]
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ConfigError(f"evaluate: tasks {names} repeat a name; evaluate such variants in separate runs")
    evaluation = evaluation or EvalConfig()
    output = Path(output)
    if completions is not None:
        if len(tasks) != 1:
            raise ConfigError("evaluate: --completions scores one task; give a single --task")
        if not Path(completions).is_file():
            raise MissingPathError(f"evaluate: --completions file {completions} does not exist")
        summaries = {names[0]: score_completions_file(tasks[0], completions, ks=evaluation.ks)}
        write_summary(output, summaries)
        return summaries
    from es_lightning.evaluation.plots import plot_pass_at_k
    from es_lightning.models.registry import resolve_model
    from es_lightning.models.source import check_model_source
    from es_lightning.module import ReasoningModule

    loading = ModelLoading(revision, trust_remote_code, dict(model_kwargs or {}))
    check_model_source(resolve_model(model), "--model", loading)
    cuda = torch.cuda.is_available()
    target = torch.device("cuda" if cuda else "cpu") if device == "auto" else torch.device(device)
    rollout = rollout or default_rollout()
    rows = {name: t.load(evaluation.split) for name, t in zip(names, tasks)}  # bad data: before the engine
    first = ReasoningModule(model, tasks[0], dtype=dtype, **vars(loading))
    first.check_model_source()
    rollout.setup(first.model, target, first.torch_dtype(target), first.loading)
    if hasattr(rollout, "start"):
        rollout.start()
    summaries = {}
    stem, label = output.with_suffix(""), Path(model).name or model
    try:
        for name, one in zip(names, tasks):
            result = evaluate_rows(first.with_task(one), rollout, rows[name], evaluation, progress=True)
            summaries[name] = result.summary
            suffix = "" if len(tasks) == 1 else f"_{name}"
            result.write_completions(f"{stem}{suffix}_completions.jsonl")
            curve = {int(k[5:]): v for k, v in result.summary.items() if k.startswith("pass@")}
            plot_pass_at_k({label: curve}, f"{stem}{suffix}_pass_at_k.png", title=f"{name}: Pass@K")
    finally:
        rollout.close()
    if len(summaries) > 1:
        summaries = average_over_tasks(summaries)
    write_summary(output, summaries, label=label)
    return summaries


def evaluate_parser() -> Any:
    """``es-lightning evaluate``'s parser: ``--config`` and every argument of :func:`run_evaluate`."""
    from jsonargparse import ActionConfigFile

    from es_lightning.cli_hints import accept_short_names, command_parser

    parser = command_parser(run_evaluate.__doc__.split("\n")[0], prog="es-lightning evaluate")
    parser.add_argument("--config", action=ActionConfigFile, help="YAML with the same keys.")
    parser.add_function_arguments(run_evaluate, fail_untyped=False)
    return accept_short_names(parser)  # rollout: hf


def write_summary(path: Path, summaries: dict[str, Any], label: str | None = None) -> None:
    """The JSON file, and its accuracies on stdout as one column headed ``label``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(strict_dumps(summaries, indent=2))  # non-finite numbers as null
    print_table({label or path.stem: summaries})
    print(f"written: {path}")
