"""``es-lightning fit`` runs of ES and GRPO on the same model and batch, their process trees sampled.

The recipes are written to the work folder; each run is one CLI process (engine, workers and
trainer below it). What comes back: peak RSS and PSS summed over the tree (see
:func:`benchmarks.measures.common.run_tree`) and the run's ``metrics.jsonl`` timings.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.measures.common import GSM8K_DIR, run_tree, summary

RECIPE = """
module:
  model: {model}
  task:
    class_path: es_lightning.tasks.GSM8K
    init_args:
      train: {{path: {data}/train.jsonl}}
      test: {{path: {data}/test.jsonl}}
  dtype: float32
  train_sampling: {{temperature: 1.0, max_tokens: {max_tokens}}}
strategy:
{strategy}
rollout:
  class_path: es_lightning.rollout.vllm.VLLMRollout
  init_args: {{gpu_memory_utilization: 0.1, max_model_len: 2048, cpu_threads_bind: "0-1"}}
trainer:
  max_steps: {steps}
  batch_size: {batch}
  seed: 0
  accelerator: cpu
  devices: 1
  progress_bar: false
  eval_before: false
  eval_after: false
evaluation: null
"""

ES = """  class_path: es_lightning.strategies.ESStrategy
  init_args: {{population_size: {population}, sigma: 1.0e-3, learning_rate: 1.0e-3}}"""
GRPO = """  class_path: es_lightning.strategies.GRPOStrategy
  init_args: {{group_size: {group}, learning_rate: 1.0e-5, micro_batch_size: {micro}}}"""


def fit_run(
    kind: str, model: str, work: Path, *, batch: int, steps: int, max_tokens: int, population: int, group: int
) -> dict[str, Any]:
    """One ``es-lightning fit`` of ``kind`` (``es`` or ``grpo``); peak memory and timings."""
    strategy = (ES if kind == "es" else GRPO).format(population=population, group=group, micro=group * 2)
    recipe = RECIPE.format(
        model=model, data=GSM8K_DIR, max_tokens=max_tokens, strategy=strategy, steps=steps, batch=batch
    )
    config = work / f"fit_{kind}.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(recipe)
    out = work / f"fit_{kind}"
    cmd = [sys.executable, "-m", "es_lightning", "fit", "--config", str(config)]
    cmd += ["--trainer.output_dir", str(out), "--trainer.overwrite", "true"]
    run = run_tree(cmd, work / f"fit_{kind}.log", timeout_s=900)
    result: dict[str, Any] = {
        "returncode": run.returncode,
        "wall_s": run.seconds,
        "peak_rss_bytes": run.peak_rss_bytes,
        "peak_pss_bytes": run.peak_pss_bytes,
        "peak_processes": run.peak_processes,
        "log": str(run.log),
    }
    metrics_file = out / "metrics.jsonl"
    if run.returncode != 0 or not metrics_file.is_file():
        tail = run.log.read_text(errors="replace")[-600:] if run.log.is_file() else ""
        result["error"] = f"fit exited {run.returncode}: ...{tail}"
        return result
    rows = [json.loads(line) for line in metrics_file.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "time/step" in r]
    for key in sorted({k for r in rows for k in r if k.startswith("time/")}):
        result[key] = summary([r[key] for r in rows if r.get(key) is not None])
    result["steps"] = len(rows)
    return result
