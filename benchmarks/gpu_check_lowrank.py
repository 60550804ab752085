"""GPU check, low-rank ES: ``ESStrategy(perturbation="lowrank")`` at the full-rank phase's shape.

Run by ``benchmarks/gpu_check.py`` after full-rank ES (``--only es_lowrank`` alone). The transformers
rollout generates all N members of an update in one ``generate`` call of N×B rows, each row's linear
and embedding layers adding its member's term σ·(x·B_i)·A_iᵀ/√r (EGGROLL). Each repeat times:

* a **plain batch**: the same N×B prompts, one ``generate`` call, no perturbation (the centre), the
  time every member's rollouts would take if perturbing them cost nothing;
* the **low-rank ES update**: ``ESStrategy.training_step`` (generation of the population, scoring,
  the update computed from the seeds' factors).

Reported: ``lowrank_population_over_plain_batch`` (update ÷ plain batch; the issue's goal ≤ 1.3 on
the transformers rollout), ``lowrank_over_fullrank_update`` (this update ÷ the full-rank phase's, same
N, B and tokens; goal ≤ 0.5), time per update, tokens/s and peak memory (the N×B rows' KV cache).
Random weights score 0 everywhere, so the update the step skips is timed separately, as for
full-rank ES (:func:`benchmarks.gpu_check._forced_update`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from benchmarks.measures.common import summary


def run_es_lowrank(
    kit: ModuleType,
    device: torch.device,
    model_path: Path,
    s: Any,
    fullrank: dict[str, Any] | None,
    budget_s: float,
) -> dict[str, Any]:
    """Low-rank ES on ``model_path``: plain N×B batch vs ``training_step``, ``s.es_repeats`` times
    (fewer when the next would pass ``budget_s`` seconds from now); ``fullrank``: the full-rank
    phase's results, for the ratio; ``kit``: the running ``gpu_check`` module (its clock, timers,
    memory readings and the forced update)."""
    from lightning.fabric import Fabric

    from es_lightning.rollout.hf import HFRollout
    from es_lightning.strategies import ESStrategy

    start = time.perf_counter()
    kit.reset_memory(device)
    strategy = ESStrategy(
        population_size=s.population,
        sigma=1.5e-3,
        learning_rate=2.5e-4,
        perturbation="lowrank",
        rank=s.lowrank_rank,
        process_group_backend=s.process_group_backend,
    )
    fabric = Fabric(accelerator=device.type, devices=1, strategy=strategy)
    fabric.launch()
    module = kit.make_module(model_path, temperature=0.0, max_tokens=s.es_max_tokens)
    rollout = HFRollout(batch_size=s.population * s.es_batch)  # the plain batch: one call too
    rollout.setup(module.model, fabric.device, module.torch_dtype(fabric.device), module.loading)
    strategy = fabric.strategy
    strategy.prepare(fabric, module, rollout, None)
    rows = module.task.load("train")[: s.es_batch]
    prompt_ids = module.encode(rows)
    sampling = replace(module.train_sampling, n=1, seed=1)
    records: list[dict[str, Any]] = []
    for step in range(s.es_repeats):
        if records and time.perf_counter() - start + 1.2 * records[-1]["cycle_s"] > budget_s:
            kit.log(f"ES low-rank: stopping after {len(records)} repeat(s) (budget)")
            break
        t0 = time.perf_counter()
        outputs, plain_s = kit.timed(device, lambda: rollout.generate(prompt_ids * s.population, sampling))
        tokens = sum(len(c.token_ids) for out in outputs for c in out.completions)
        result, es_s = kit.timed(
            device, lambda step=step: strategy.training_step(fabric, module, rollout, rows, step, 0)
        )
        if result.metrics["es/skipped"] == 1.0:  # all rewards equal: time the update it skipped
            _, update_s = kit.timed(device, kit._forced_update(strategy, rollout, step))
            result.metrics["time/update"] += update_s
            es_s += update_s
        records.append(
            {
                "plain_batch_s": plain_s,
                "es_s": es_s,
                "plain_tokens": tokens,
                "cycle_s": time.perf_counter() - t0,
                **{k: v for k, v in result.metrics.items() if k.startswith("time/")},
            }
        )
        kit.log(
            f"ES low-rank: repeat {step + 1}: plain N×B batch {plain_s:.2f} s, low-rank ES update {es_s:.2f} s"
        )
    peak = kit.memory(device)
    rollout.close()
    out: dict[str, Any] = {
        "rank": s.lowrank_rank,
        "records": records,
        "time_per_update_s": summary([r["es_s"] for r in records]),
        "plain_batch_s": summary([r["plain_batch_s"] for r in records]),
        "tokens_per_s": summary([r["time/tokens_per_s"] for r in records]),
        "lowrank_population_over_plain_batch": summary([r["es_s"] / r["plain_batch_s"] for r in records]),
        "memory": peak,
    }
    if fullrank and fullrank.get("records"):
        full = fullrank["time_per_update_s"]["median"]
        out["lowrank_over_fullrank_update"] = summary([r["es_s"] / full for r in records])
    return out
