"""Wall time of one ES update: full-rank, low-rank (all members in one generate call) and a plain
batch of the same N×B requests, side by side, on the transformers rollout or on vLLM.

    python -m benchmarks.measures.lowrank_step --model es-lightning/tiny-arithmetic --population 32 \\
        --batch 64 --rank 4 --repeats 2 --out runs/lowrank_step.json
    python -m benchmarks.measures.lowrank_step --rollout vllm ...     # the same on vllm(-cpu)

The model's task (:func:`~benchmarks.measures.common.task_for`: the demo model's arithmetic, GSM8K
for the bench model), fp32 on CPU, sampling at ``--temperature`` with ``--max-tokens`` new tokens,
σ = 1e-3. Each repeat runs, in turn and from the same starting centre:

* ``full``: ``ESStrategy.training_step`` with full-rank members, one generate call per member;
* ``lowrank``: the same with ``perturbation: lowrank`` (rank r), every member in one call of N×B
  rows (transformers: forward hooks; vLLM: N LoRA adapters, ``lowrank_targets: linear``);
* ``plain``: ``generate`` of the N×B prompts at the centre in one call, no perturbation, on the
  low-rank side's engine (what the low-rank population would cost if serving the members' terms
  were free).

On vLLM the two sides are two engines alive at once and used in turn (bound to the same cores):
full rank on an engine without LoRA, as a full-rank user runs it, low rank and plain on one
started with the population's LoRA slots; prefix caching is off in both, since N members are N
models whose prompts are each prefilled (a plain batch of repeated prompts would otherwise share
the prefill).

``lowrank_population_over_plain_batch`` = lowrank ÷ plain, ``lowrank_over_fullrank_update`` =
lowrank ÷ full, per repeat (paired). ``--sides lowrank,plain`` leaves full rank out (on the bench
model the transformers rollout's full-rank update takes over 15 minutes on 2 cores; vLLM's,
measured by ``es_step.py``, is the one to compare with there). Random or untrained models can give every member the same
reward; the step then skips its update (``es/skipped``), which is recorded beside the times.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace

import torch
from lightning.fabric import Fabric

from benchmarks.measures.common import resolve, summary, task_for
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import Rollout, SamplingConfig
from es_lightning.rollout.hf import HFRollout
from es_lightning.strategies import ESStrategy


def one_update(strategy: ESStrategy, fabric: Fabric, module: ReasoningModule, rollout: Rollout, rows) -> dict:
    strategy.prepare(fabric, module, rollout, None)  # the same starting centre for every update
    t0 = time.perf_counter()
    result = strategy.training_step(fabric, module, rollout, rows, step=0, run_seed=0)
    wall = time.perf_counter() - t0
    times = {k: round(v, 3) for k, v in result.metrics.items() if k.startswith("time/")}
    return {"wall_s": wall, "skipped": result.metrics["es/skipped"], **times}


def plain_batch(module: ReasoningModule, rollout: Rollout, rows, population: int) -> dict:
    prompts = module.encode(rows) * population
    t0 = time.perf_counter()
    outputs = rollout.generate(prompts, replace(module.train_sampling, n=1, seed=1))
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "tokens": sum(len(c.token_ids) for o in outputs for c in o.completions)}


def _rollouts(args: argparse.Namespace, module: ReasoningModule, lowrank: ESStrategy) -> dict[str, Rollout]:
    """``{full, lowrank}``: one transformers rollout for both, or two vLLM engines (module docstring),
    started before any torch work in this process."""
    if args.rollout == "hf":
        hf = HFRollout(batch_size=args.population * args.batch)  # full rank: one call per member
        hf.setup(str(module.model), torch.device("cpu"), torch.float32, module.loading)
        return {"full": hf, "lowrank": hf}
    from es_lightning.rollout.vllm import VLLMRollout

    engines = {}
    for name in [n for n in ("full", "lowrank") if n in args.sides.split(",")]:
        engine = VLLMRollout(
            gpu_memory_utilization=0.1,
            max_model_len=512 if args.model == "es-lightning/tiny-arithmetic" else 2048,
            cpu_threads_bind=args.bind,
            engine_kwargs={"enable_prefix_caching": False},
        )
        engine.setup(str(module.model), torch.device("cpu"), torch.float32, module.loading)
        if name == "lowrank":
            lowrank.check_rollout(engine)  # reserves the population's LoRA slots
        engine.start()
        engines[name] = engine
    return engines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="es-lightning/tiny-arithmetic")
    parser.add_argument("--population", type=int, default=32)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rank", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=0.6)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rollout", choices=["hf", "vllm"], default="hf")
    parser.add_argument("--bind", default="0-1", help="vLLM: the engines' cores")
    parser.add_argument("--sides", default="full,lowrank,plain", help="what to time, ','-separated")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    sides = args.sides.split(",")
    if not set(sides) <= {"full", "lowrank", "plain"} or "lowrank" not in sides:
        parser.error(f"--sides: {args.sides!r}; 'lowrank' and any of 'full', 'plain'")

    module = ReasoningModule(
        model=resolve(args.model),
        task=task_for(args.model),
        dtype="float32",
        train_sampling=SamplingConfig(temperature=args.temperature, max_tokens=args.max_tokens),
    )
    rows = module.task.load("train")[: args.batch]
    common = dict(population_size=args.population, sigma=1e-3, learning_rate=2e-3)
    targets = "linear" if args.rollout == "vllm" else "matrices"
    strategies = {
        "full": ESStrategy(**common),
        "lowrank": ESStrategy(**common, perturbation="lowrank", rank=args.rank, lowrank_targets=targets),
    }
    if "full" not in sides:
        del strategies["full"]
    rollouts = _rollouts(args, module, strategies["lowrank"])
    fabrics = {name: Fabric(accelerator="cpu", devices=1, strategy=s) for name, s in strategies.items()}
    fabric = fabrics["lowrank"]  # each Fabric sets its strategy's device; one process group serves both
    fabric.launch()
    records: list[dict] = []
    for repeat in range(args.repeats):
        record = {name: one_update(s, fabric, module, rollouts[name], rows) for name, s in strategies.items()}
        if "plain" in sides:
            record["plain"] = plain_batch(module, rollouts["lowrank"], rows, args.population)
        records.append(record)
        print(repeat, {k: round(v["wall_s"], 2) for k, v in record.items()}, flush=True)
    low = [r["lowrank"]["wall_s"] for r in records]
    for rollout in {id(r): r for r in rollouts.values()}.values():
        rollout.close()
    result = {
        "setting": vars(args) | {"threads": torch.get_num_threads()},
        "records": records,
        "wall_s": {k: summary([r[k]["wall_s"] for r in records]) for k in sides},
    }
    for key, side in (
        ("lowrank_population_over_plain_batch", "plain"),
        ("lowrank_over_fullrank_update", "full"),
    ):
        if side in sides:
            result[key] = summary([a / r[side]["wall_s"] for a, r in zip(low, records)])
    print(json.dumps({k: v["median"] for k, v in result.items() if k.startswith("lowrank_")}))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
