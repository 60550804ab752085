"""ES updates against plain generation of the same rollouts, on the same engine(s), 1 or 2 ranks.

    python -m benchmarks.measures.es_step --model PATH --population 32 --batch 16 --devices 1 \
        --binds 0-1 --repeats 3 --noises generator,table --out es.json

Fabric launches the ranks (as ``es-lightning fit`` does); each rank starts its vLLM engine bound
to its cores (``--binds``: one entry per rank, ``;``-separated), then ``ESStrategy.prepare`` puts
the fp32 centre in it. After a warm-up, each repeat times, between barriers:

* ``generate``: this rank's members' rollouts with the centre's weights, nothing else — the same
  prompts, ``max_tokens`` and sampling seeds the ES update uses, with vLLM's prefix cache emptied
  before each member's rollouts as a weight change empties it (N members are N different models:
  none can reuse another's prompt KV, so prefilling is part of their rollouts);
  ``generate_cached`` is the same with the cache kept (prompts prefilled once), for context;
* ``es``: ``ESStrategy.training_step`` itself (perturb, generate, score, restore, all-reduce,
  update, checksum agreement), with its own ``time/*`` breakdown, once per ``--updates`` mode
  (``accumulate``, ``redraw``) and ``--noises`` source (``generator``, ``table``: ε drawn or read
  from the shared noise table) in each repeat, the order of these combinations reversed every
  other repeat, so that all are measured side by side against the same generation on the same
  engine. The table is built once, before the first repeat (``table_build_s``).

Next to each wall time, the CPU seconds (user + system) that the ranks' process trees (trainer,
engine core, workers) used in it, summed over the ranks (``*_cpu_s``): on a machine shared with
other work the wall times stretch with the foreign load, the CPU seconds much less.

Rank 0 also times the parts of one perturbation inside its worker (``ProfilingWorker``), with
ε drawn and, when ``table`` is among the noises, read from the table.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import torch

from benchmarks.measures.common import resolve, summary, task_for, write_json
from benchmarks.measures.profiling_worker import PROFILING_WORKER


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--population", type=int, default=32)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--sigma", type=float, default=1e-3)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--binds", default="0-1", help="cores per rank, ';'-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--updates", default="accumulate", help="ESStrategy update modes, ','-separated")
    parser.add_argument("--noises", default="generator", help="ESStrategy noise sources, ','-separated")
    parser.add_argument(
        "--table-size", type=int, default=None, help="noise_table_size (default: ESStrategy's)"
    )
    parser.add_argument("--skip-cached", action="store_true", help="do not time generate_cached")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    from lightning.fabric import Fabric

    from es_lightning.es.noise import seed_schedule
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import SamplingConfig
    from es_lightning.rollout.vllm import VLLMRollout
    from es_lightning.strategies import ESStrategy

    updates, noises = args.updates.split(","), args.noises.split(",")
    sides = [(update, noise) for update in updates for noise in noises]
    strategy = ESStrategy(
        population_size=args.population, sigma=args.sigma, learning_rate=args.sigma, update=updates[0]
    )
    table_size = args.table_size or strategy.noise_table_size
    fabric = Fabric(accelerator="cpu", devices=args.devices, strategy=strategy)
    fabric.launch()
    binds = args.binds.split(";")
    model = resolve(args.model)
    module = ReasoningModule(
        model=model,
        task=task_for(args.model),
        dtype="float32",
        train_sampling=SamplingConfig(temperature=args.temperature, max_tokens=args.max_tokens),
    )
    rollout = VLLMRollout(
        gpu_memory_utilization=0.1,
        max_model_len=2048 if args.model != "es-lightning/tiny-arithmetic" else 512,
        cpu_threads_bind=binds[fabric.local_rank % len(binds)],
        engine_kwargs={"worker_extension_cls": PROFILING_WORKER},
    )
    rollout.setup(model, fabric.device, module.torch_dtype(fabric.device), module.loading)
    t0 = time.perf_counter()
    rollout.start()  # before any torch work in this process, as the trainer does
    start_s = time.perf_counter() - t0
    strategy = fabric.strategy
    strategy.prepare(fabric, module, rollout, None)
    rows = module.task.load("test")[: args.batch]
    prompt_ids = module.encode(rows)
    sampling = replace(module.train_sampling, n=1)
    members = list(range(fabric.global_rank, args.population, fabric.world_size))

    # warm-up: generation and one perturb/restore
    rollout.generate(prompt_ids, replace(sampling, seed=1))
    rollout.es.perturb(12345, 1.0, args.sigma)
    rollout.es.restore()
    table_build_s = None
    if "table" in noises:  # built once per worker process, outside the timed steps
        t0 = time.perf_counter()
        rollout.es.use_noise_table(table_size)
        table_build_s = time.perf_counter() - t0

    def cpu_s() -> float:  # this rank's process tree so far, summed over the ranks
        return float(fabric.all_reduce(torch.tensor(_tree_cpu_s(), dtype=torch.float64), reduce_op="sum"))

    records = []
    for step in range(args.repeats):
        seeds = seed_schedule(0 ^ 0x5A5A, step, args.population)  # ESStrategy's common sampling seed
        tokens = 0
        c0 = cpu_s()
        fabric.barrier()
        t0 = time.perf_counter()
        for _ in members:
            rollout.llm.reset_prefix_cache()
            outputs = rollout.generate(prompt_ids, replace(sampling, seed=seeds[0] % (2**31)))
            tokens += sum(len(c.token_ids) for out in outputs for c in out.completions)
        fabric.barrier()
        generate_s = time.perf_counter() - t0
        generate_cpu_s = cpu_s() - c0
        generate_cached_s = None
        if not args.skip_cached:
            fabric.barrier()
            t0 = time.perf_counter()
            for _ in members:
                rollout.generate(prompt_ids, replace(sampling, seed=seeds[0] % (2**31)))
            fabric.barrier()
            generate_cached_s = time.perf_counter() - t0
        for update, noise in sides if step % 2 == 0 else sides[::-1]:
            strategy.update, strategy.noise = update, noise
            rollout.es.use_noise_table(table_size if noise == "table" else None)
            c0 = cpu_s()
            fabric.barrier()
            t0 = time.perf_counter()
            result = strategy.training_step(fabric, module, rollout, rows, step, 0)
            fabric.barrier()
            es_s = time.perf_counter() - t0
            es_cpu_s = cpu_s() - c0
            forced = result.metrics["es/skipped"] == 1.0
            if forced:  # all rewards equal (random weights score 0): time the update the step skipped
                update_s, update_cpu_s = _forced_update(fabric, strategy, rollout, step, args.sigma, cpu_s)
                result.metrics["time/update"] += update_s
                es_s += update_s
                es_cpu_s += update_cpu_s
            records.append(
                {
                    "update": update,
                    "noise": noise,
                    "generate_s": generate_s,
                    "generate_cached_s": generate_cached_s,
                    "es_s": es_s,
                    "generate_cpu_s": generate_cpu_s,
                    "es_cpu_s": es_cpu_s,
                    "generate_tokens_rank0": tokens,
                    "update_forced": forced,
                    **{k: v for k, v in result.metrics.items() if k.startswith("time/")},
                }
            )
            if fabric.is_global_zero:
                print(
                    f"repeat {step} ({update}, {noise}): generate {generate_s:.2f} s ({generate_cpu_s:.1f} CPU s), "
                    f"ES update {es_s:.2f} s ({es_cpu_s:.1f} CPU s)",
                    flush=True,
                )

    profile = stale = None
    if fabric.is_global_zero:
        stale = prefix_cache_check(rollout, prompt_ids, sampling)
        profile = rollout.rpc("es_profile", 777, args.sigma, 3, table_size if "table" in noises else None)[0]
        t0 = time.perf_counter()
        for _ in range(10):
            rollout.rpc("noop")
        profile["rpc_roundtrip"] = (time.perf_counter() - t0) / 10
    fabric.barrier()
    rollout.close()
    if fabric.is_global_zero:
        write_json(
            args.out,
            {
                "devices": fabric.world_size,
                "binds": binds,
                "population": args.population,
                "batch": args.batch,
                "max_tokens": args.max_tokens,
                "engine_start_s": start_s,
                "records": records,
                "updates": updates,
                "noises": noises,
                "table_size": table_size if "table" in noises else None,
                "table_build_s": table_build_s,
                "generate": summary(
                    [r["generate_s"] for r in records if (r["update"], r["noise"]) == sides[0]]
                ),
                "es": summary([r["es_s"] for r in records if (r["update"], r["noise"]) == sides[0]]),
                "es_by_update": {
                    f"{u}/{n}": summary([r["es_s"] for r in records if (r["update"], r["noise"]) == (u, n)])
                    for u, n in sides
                },
                "profile": profile,
                "prefix_cache": stale,
                "prompt_tokens": [len(p) for p in prompt_ids],
            },
        )


def _tree_cpu_s() -> float:
    """CPU seconds (user + system) used so far by this process and every process it started."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:  # ended meanwhile
            pass
    return total


def _forced_update(fabric, strategy, rollout, step: int, sigma: float, cpu_s) -> tuple[float, float]:
    """Seconds (and CPU seconds) of the update ``training_step`` skipped, taken with the
    coefficients of z-scored random rewards (the same on every rank), between barriers. An accumulated update folded every
    member during the step (whatever the rewards) and drops its sums on a skip: here each rank
    evaluates one member again outside the timing, so the timed call has its last fold to make,
    as in a real update."""
    import numpy as np

    from es_lightning.es.update import member_coefficients
    from es_lightning.strategies.es_update import accumulates, take_update

    population = strategy.population(0, step)
    rewards = np.random.default_rng(step).normal(size=population.size)
    settings = strategy
    coeffs = member_coefficients(population, rewards, settings.normalization)
    accumulated = accumulates(settings.update, settings.normalization, settings.reward_control)
    if accumulated:
        rollout.es.accumulate(True)
        rollout.es.perturb(*population.members[strategy.global_rank], sigma)
        rollout.es.record_reward(float(rewards[strategy.global_rank]))
        rollout.es.restore()
    c0 = cpu_s()
    fabric.barrier()
    t0 = time.perf_counter()
    take_update(
        strategy, rollout.es, coeffs, rewards, accumulated, settings.learning_rate, settings.normalization
    )
    fabric.barrier()
    return time.perf_counter() - t0, cpu_s() - c0


def prefix_cache_check(rollout, prompt_ids, sampling, sigma: float = 1e-2) -> dict:
    """Does a member reuse prompt KV computed under other weights? Greedy completions of a
    perturbed member right after the centre generated the same prompts (prefix cache warm) vs after
    ``reset_prefix_cache`` (prompt KV recomputed under the member's weights)."""
    greedy = replace(sampling, temperature=0.0, seed=None)
    rollout.llm.reset_prefix_cache()
    centre_fresh = rollout.generate(prompt_ids, greedy)  # the centre fills the cache
    centre_warm = rollout.generate(prompt_ids, greedy)  # control: same weights, cache warm
    rollout.es.perturb(4242, 1.0, sigma)
    warm = rollout.generate(prompt_ids, greedy)
    rollout.llm.reset_prefix_cache()
    fresh = rollout.generate(prompt_ids, greedy)
    rollout.es.restore()
    rollout.llm.reset_prefix_cache()

    def differ(xs, ys) -> float:
        return sum(a.completions[0].token_ids != b.completions[0].token_ids for a, b in zip(xs, ys)) / len(xs)

    return {
        "sigma": sigma,
        "prompts": len(prompt_ids),
        "stale_fraction": differ(warm, fresh),
        "control_centre_fraction": differ(centre_warm, centre_fresh),
        "member_vs_centre_fraction": differ(fresh, centre_fresh),
    }


if __name__ == "__main__":
    main()
