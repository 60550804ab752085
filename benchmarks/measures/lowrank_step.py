"""Wall time of one ES update, full-rank against low-rank (all members in one generate call).

    python -m benchmarks.measures.lowrank_step --population 32 --batch 64 --rank 4 --repeats 2

The built-in ``es-lightning/tiny-arithmetic`` model and its arithmetic task on the transformers
rollout, demo_cpu.yaml's sampling (T 0.6, 32 new tokens) and σ, α. Each repeat runs one update of
each kind on the same mini-batch, alternating, from the same centre (the update is taken, then
the centre read again), and records the update's ``time/*`` metrics and its wall seconds.
"""

from __future__ import annotations

import argparse
import json
import time

import torch
from lightning.fabric import Fabric

from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import SamplingConfig
from es_lightning.rollout.hf import HFRollout
from es_lightning.strategies import ESStrategy
from es_lightning.tasks import Arithmetic


def one_update(
    strategy: ESStrategy, fabric: Fabric, module: ReasoningModule, rollout: HFRollout, rows
) -> dict:
    strategy.prepare(fabric, module, rollout, None)  # the same starting centre for every update
    t0 = time.perf_counter()
    result = strategy.training_step(fabric, module, rollout, rows, step=0, run_seed=0)
    wall = time.perf_counter() - t0
    times = {k: round(v, 3) for k, v in result.metrics.items() if k.startswith("time/")}
    return {"wall_s": round(wall, 3), "reward_mean": result.metrics["train/reward_mean"], **times}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--population", type=int, default=32)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--rank", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    module = ReasoningModule(
        model="es-lightning/tiny-arithmetic",
        task=Arithmetic(n_train=2048, n_test=200, seed=0),
        dtype="float32",
        train_sampling=SamplingConfig(temperature=0.6, max_tokens=32),
    )
    rows = module.task.load("train")[: args.batch]
    rollout = HFRollout()
    rollout.setup(str(module.model), torch.device("cpu"), torch.float32, module.loading)
    common = dict(population_size=args.population, sigma=1e-3, learning_rate=2e-3)
    strategies = {
        "full": ESStrategy(**common),
        "lowrank": ESStrategy(**common, perturbation="lowrank", rank=args.rank),
    }
    fabrics = {}
    for name, strategy in strategies.items():
        fabrics[name] = Fabric(accelerator="cpu", devices=1, strategy=strategy)
    fabrics["full"].launch()
    results: dict[str, list[dict]] = {name: [] for name in strategies}
    for _ in range(args.repeats):
        for name, strategy in strategies.items():
            results[name].append(one_update(strategy, fabrics["full"], module, rollout, rows))
            print(name, results[name][-1], flush=True)
    summary = {
        "setting": vars(args) | {"threads": torch.get_num_threads()},
        "updates": results,
        "best_wall_s": {name: min(r["wall_s"] for r in runs) for name, runs in results.items()},
    }
    print(json.dumps(summary["best_wall_s"]))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(summary, f, indent=2)


if __name__ == "__main__":
    main()
