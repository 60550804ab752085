"""``es-lightning analyze``: what training did to the weights, between a base model and a checkpoint.

    es-lightning analyze --base Qwen/Qwen2.5-1.5B-Instruct --checkpoint runs/es/checkpoints/step-000300 \\
        [--compare runs/grpo/checkpoints/step-000300] [--taus 1e-4,5e-4,1e-3] [--top_k 100] \\
        [--export_thresholded 1e-3,1.5e-3 [--evaluate arithmetic --evaluation.limit 200]] --output es.json

Cheapest first, so bad input fails before any tensor is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch

from es_lightning.analysis.curve import sparsity_curve
from es_lightning.analysis.delta import VIEWS, View, parse_taus
from es_lightning.analysis.locate import ModelWeights, locate_model
from es_lightning.analysis.null import null_block
from es_lightning.analysis.pair import analyze_pair, check_pair
from es_lightning.analysis.printout import format_analysis, format_curve
from es_lightning.analysis.threshold import export_all
from es_lightning.analysis.walk_inputs import RunWalks, WalkOptions, read_walks
from es_lightning.errors import ConfigError
from es_lightning.evaluation.runner import EvalConfig
from es_lightning.module import DTypeName
from es_lightning.rollout.base import Rollout
from es_lightning.tasks.base import Task
from es_lightning.weight_files import WeightIndex, iter_weights

DEFAULT_TAUS = "1e-4,5e-4,1e-3,1.5e-3,5e-3"
BF16_NOT_MODELLED = (
    "not modelled: rounding both sides to bfloat16 depends on where each θ_0 lies on the bf16 grid"
)


def run_analyze(
    base: str,
    checkpoint: str,
    output: Path,
    compare: str | None = None,
    taus: str | list[float] = DEFAULT_TAUS,
    top_k: int = 100,
    export_thresholded: str | list[float] | None = None,
    export_dir: Path | None = None,
    threshold_view: View = "stored",
    keep_exports: bool = True,
    evaluate: str | Task | None = None,
    evaluation: EvalConfig | None = None,
    rollout: Rollout | None = None,
    device: str = "auto",
    dtype: DTypeName = "auto",
    progress: bool = True,
    random_walk: WalkOptions | None = None,
) -> dict[str, Any]:
    """Weight drift, update sparsity and the largest updates of a checkpoint against its base model.

    Args:
        base: the starting model θ_0: an HF folder, a built-in name or a hub id in the local cache.
        checkpoint: the trained model θ: an HF folder, e.g. ``runs/x/checkpoints/step-000300``
            (its fp32 ``<strategy>_state/master.safetensors`` is read where present).
        output: the JSON file written (its folder is created). Top-level fields are the weights as
            stored (``rel_l2``, ``rel_l2_by_kind``, ``nonzero``, ``sparsity``, ``top_k``,
            ``top_k_by_kind``, ...); the same fields with both models rounded to bfloat16 before
            differencing (the weights as served in bf16) are under ``bf16``.
        compare: another checkpoint of the same base (e.g. GRPO's); adds ``compare`` (its fields)
            and ``rel_l2_ratio`` (this checkpoint's rel-L2 over the other's; the paper: ES/GRPO
            40.7-44.1x).
        taus: thresholds τ of s_τ = |{i: 0 < |Δθ_i| ≤ τ}| / |{i: |Δθ_i| > 0}|, comma-separated or a list.
        top_k: how many of the largest updates |Δθ_i| to list and count by parameter kind.
        export_thresholded: τ values (comma-separated or a list) at which to write a checkpoint
            with every update |Δθ| ≤ τ reverted to the base value.
        export_dir: where the ``thresholded-<tau>/`` folders go (default: ``<output stem>_thresholded/``
            beside the output).
        threshold_view: where |Δθ| > τ is decided for the exports: ``stored`` (fp32 master) or
            ``bf16`` (both rounded to bfloat16).
        keep_exports: keep the exported folders; ``false`` deletes each once it is evaluated
            (needs ``evaluate``).
        evaluate: a task (registered name such as ``arithmetic``, or a task config) on which the
            checkpoint (τ = 0), each export and the base model are scored: writes ``sparsity_curve``
            (Pass@1 against s_τ) and ``sparsity_curve_base`` (the base on the same engine and
            seed) into the output and ``<output stem>_sparsity_curve.png``.
        evaluation: samples per prompt, temperature, prompt limit, seed of that evaluation.
        rollout: its generation backend; default: vLLM when installed, else transformers. One
            engine serves every point (exports are loaded into it).
        device: the evaluation's device: ``cpu``, ``cuda``, ``cuda:1`` or ``auto``.
        dtype: the evaluation's weights dtype (``auto``: bf16 on CUDA, fp32 on CPU).
        progress: show progress bars over tensors.
        random_walk: the ES settings (α, N, T_applied, normalisation) of the random-walk null written
            beside every statistic as ``null`` (:mod:`es_lightning.analysis.null`): what D_rel, s_τ
            and the top-k by kind would be had the rewards carried no information. Read from the
            checkpoint's run folder (``hparams.yaml``, ``metrics.jsonl``; pipeline stages included);
            give them for a bare model folder, or to replace the run's. Non-ES runs get
            ``{"modelled": false, "reason": "n/a: not an ES run"}``; the ``bf16`` view's null is not
            modelled.

    Returns:
        What ``output`` holds.
    """
    tau_list = parse_taus(taus, "taus")  # every setting is checked before any weight is read
    export_taus = parse_taus(export_thresholded, "export_thresholded")
    if top_k < 1:
        raise ConfigError(f"--top_k must be >= 1, got {top_k}")
    if threshold_view not in VIEWS:
        raise ConfigError(f"--threshold_view must be one of {VIEWS}, got {threshold_view!r}")
    if device != "auto":
        try:
            torch.device(device)
        except RuntimeError as err:
            raise ConfigError(f"--device {device!r}: {err}") from None
    task = _resolve_task(evaluate, export_taus, keep_exports)
    evaluation = evaluation or EvalConfig()
    output = Path(output)
    base_w = locate_model(base, "base")  # each model's names and shapes checked against the base's
    ckpt_w = locate_model(checkpoint, "checkpoint")
    check_pair(base_w.specs, ckpt_w.specs, f"--base {base}", f"--checkpoint {checkpoint}")
    compare_w = locate_model(compare, "compare") if compare is not None else None
    if compare_w is not None:
        check_pair(base_w.specs, compare_w.specs, f"--base {base}", f"--compare {compare}")
    walks = read_walks(ckpt_w.folder, base, random_walk)
    compare_walks = read_walks(compare_w.folder, base) if compare_w is not None else None
    output.parent.mkdir(parents=True, exist_ok=True)

    index = WeightIndex(base_w.files)
    bar = _progress_bars(len(base_w.specs), progress)
    result: dict[str, Any] = {"base": base, "base_stored_as": base_w.stored_as, "taus": tau_list}
    result.update(_analyze_model(index, ckpt_w, "checkpoint", walks, tau_list, top_k, bar))
    if compare_w is not None and compare_walks is not None:
        result["compare"] = _analyze_model(index, compare_w, "compare", compare_walks, tau_list, top_k, bar)
        result["rel_l2_ratio"] = _ratio(result["rel_l2"], result["compare"]["rel_l2"])
        result["bf16"]["rel_l2_ratio"] = _ratio(result["bf16"]["rel_l2"], result["compare"]["bf16"]["rel_l2"])
    output.write_text(json.dumps(result, indent=2))
    print(format_analysis(result))
    if export_taus:  # θ_τ for each τ, and with a task the sparsity curve
        root = Path(export_dir) if export_dir is not None else output.with_name(f"{output.stem}_thresholded")
        provenance = {"base": base, "checkpoint": checkpoint}
        exports = export_all(export_taus, index, ckpt_w.files, ckpt_w.folder, root, threshold_view,
                             keep_exports, provenance, bar)  # fmt: skip
        if task is None:
            result["thresholded"] = list(exports)
        else:
            from es_lightning.rollout import default_rollout

            if device == "auto":
                device = "cuda" if torch.cuda.is_available() else "cpu"
            png = output.with_name(f"{output.stem}_sparsity_curve.png")
            result.update(sparsity_curve(
                result if threshold_view == "stored" else result["bf16"], ckpt_w.folder, exports, task, evaluation,
                rollout or default_rollout(), torch.device(device), dtype, root / "completions", png, base_w.folder,
            ))  # fmt: skip
            print(format_curve(result["sparsity_curve"], result["sparsity_curve_base"]))
        output.write_text(json.dumps(result, indent=2))
    print(f"written: {output}")
    return result


def _progress_bars(total: int, progress: bool) -> Callable[[str], Any]:
    """``bar(desc)``: a tqdm factory over the ``total`` tensors of a model (silent unless ``progress``)."""
    from tqdm.auto import tqdm

    return lambda desc: partial(
        tqdm, desc=desc, total=total, unit="tensor", disable=not progress, leave=False
    )


def _analyze_model(
    index: WeightIndex,
    model: ModelWeights,
    label: str,
    model_walks: RunWalks,
    tau_list: list[float],
    top_k: int,
    bar: Callable[[str], Any],
) -> dict[str, Any]:
    """Both views of one model against the base, each with its random-walk null beside it."""
    views = analyze_pair(index, iter_weights(model.files), tau_list, top_k, VIEWS, bar(f"analyze {label}"))
    head = {"checkpoint": model.given, "stored_as": model.stored_as}
    stored, bf16 = views["stored"], views["bf16"]
    reason = model_walks.reason
    if reason is None:
        stored["null"] = null_block(stored, model_walks.walks, tau_list, model_walks.describe())
    else:
        stored["null"] = {"modelled": False, "reason": reason}
    bf16["null"] = {"modelled": False, "reason": BF16_NOT_MODELLED if reason is None else reason}
    return {**head, **stored, "bf16": bf16}


def _resolve_task(evaluate: str | Task | None, export_taus: list[float], keep_exports: bool) -> Task | None:
    if evaluate is None:
        if not keep_exports:
            raise ConfigError("--keep_exports false deletes exports once evaluated: give --evaluate TASK")
        return None
    if not export_taus:
        raise ConfigError("--evaluate scores the thresholded exports: give --export_thresholded TAU[,TAU...]")
    if isinstance(evaluate, Task):
        task = evaluate
    else:
        from es_lightning.tasks.registry import get_task

        try:
            task = get_task(evaluate)
        except KeyError as err:
            raise ConfigError(f"--evaluate: {err.args[0]}") from None
    task.load("test")  # bad data fails now, not after the exports
    return task


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def analyze_parser() -> Any:
    """``es-lightning analyze``'s parser: ``--config`` and every argument of :func:`run_analyze`."""
    from jsonargparse import ActionConfigFile

    from es_lightning.cli_hints import accept_short_names, command_parser

    parser = command_parser((run_analyze.__doc__ or "").split("\n")[0])
    parser.add_argument("--config", action=ActionConfigFile, help="YAML with the same keys.")
    parser.add_function_arguments(run_analyze, fail_untyped=False)
    accept_short_names(parser)  # --rollout hf | vllm, as fit and evaluate take them
    return parser
