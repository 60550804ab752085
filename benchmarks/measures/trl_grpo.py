"""Our GRPO beside TRL's ``GRPOTrainer`` on the demo model and task: seconds per update and the
reward curve, same settings (``pip install -e '.[bench]'`` installs TRL).

    python -m benchmarks.measures.trl_grpo --steps 10 --out trl_grpo.json
    python -m benchmarks.measures.trl_grpo --steps 6 --batch 16 --rounds 2 --out trl_grpo.json

Both sides run the GRPO settings of ``recipes/demo_cpu_grpo.yaml`` (G, B, learning rate and
schedule, AdamW, clipping ε, β, μ, advantage scaling, loss normaliser, temperature, max tokens;
the mapping is :mod:`benchmarks.measures.trl_settings`) with transformers ``generate`` on the CPU,
float32, on the task's train split; TRL sees the prompt text our module builds
(``ReasoningModule.format_prompt``, which ``encode`` tokenizes) and scores with the task's
verifier as a TRL reward function (``Task.reward_fn``). Ours is ``es-lightning fit`` with the
transformers rollout and no evaluation; one update is ``time/step``. TRL's update is the wall
time between consecutive ``on_step_end`` callbacks (one optimizer step = one generation of B·G
completions). Each side runs in a fresh process; rounds alternate the order (TRL first in even
rounds, ours first in odd ones) so that the machine's load falls on both alike; round r uses
seed r on both sides. The first update of every run warms up and is left out of the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.measures.common import REPO, run_tree, summary, write_json
from benchmarks.measures.trl_settings import PeerSettings, our_overrides, recipe_settings, trl_config_kwargs

RECIPE = REPO / "recipes" / "demo_cpu_grpo.yaml"


def recipe_module(recipe: Path) -> Any:
    """The recipe's ``ReasoningModule`` (model, task, dtype, prompt format)."""
    import importlib

    import yaml

    from es_lightning.module import ReasoningModule

    config = yaml.safe_load(recipe.read_text())["module"]
    module_name, _, class_name = config["task"]["class_path"].rpartition(".")
    task = getattr(importlib.import_module(module_name), class_name)(**config["task"].get("init_args", {}))
    return ReasoningModule(model=config["model"], task=task, dtype=config.get("dtype", "auto"))


def run_trl(recipe: Path, settings: PeerSettings, steps: int, seed: int, work: Path) -> dict[str, Any]:
    """``steps`` updates of TRL's GRPOTrainer in this process: seconds and mean reward per update."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    module = recipe_module(recipe)
    rows = module.task.load("train")
    dataset = Dataset.from_list([{**row, "prompt": module.format_prompt(row)} for row in rows])

    class UpdateTimes(TrainerCallback):
        def __init__(self) -> None:
            self.seconds: list[float] = []
            self.cpu_s: list[float] = []
            self.rewards: list[float] = []
            self.last = (time.perf_counter(), time.process_time())

        def on_train_begin(self, args, state, control, **kwargs) -> None:
            self.last = (time.perf_counter(), time.process_time())

        def on_step_end(self, args, state, control, **kwargs) -> None:
            now = (time.perf_counter(), time.process_time())
            self.seconds.append(now[0] - self.last[0])
            self.cpu_s.append(now[1] - self.last[1])
            self.last = now

        def on_log(self, args, state, control, logs=None, **kwargs) -> None:
            if logs and "reward" in logs:
                self.rewards.append(float(logs["reward"]))

    timer = UpdateTimes()
    config = GRPOConfig(**trl_config_kwargs(settings, steps, seed, str(work / f"trl_seed{seed}")))
    trainer = GRPOTrainer(
        model=module.model,
        reward_funcs=module.task.reward_fn,
        args=config,
        train_dataset=dataset,
        processing_class=module.tokenizer,
        callbacks=[timer],
    )
    trainer.train()
    return {"update_s": timer.seconds, "update_cpu_s": timer.cpu_s, "reward_mean": timer.rewards}


def run_ours(
    recipe: Path, settings: PeerSettings, steps: int, seed: int, work: Path, rollout_batch: int | None = None
) -> dict[str, Any]:
    """``steps`` updates of ``es-lightning fit`` on ``recipe`` in a fresh process."""
    out, clock = work / f"ours_seed{seed}", work / f"ours_seed{seed}.clock.json"
    callbacks = (
        f"[{{class_path: benchmarks.measures.update_clock.UpdateClock, init_args: {{path: {clock}}}}}]"
    )
    cmd = [sys.executable, "-m", "es_lightning", "fit", "--config", str(recipe)]
    cmd += our_overrides(settings, steps, seed, str(out), callbacks, rollout_batch)
    run = run_tree(cmd, work / f"ours_seed{seed}.log", 3600)
    if run.returncode != 0:
        raise RuntimeError(f"es-lightning fit exited {run.returncode}; see {run.log}")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    updates = [r for r in rows if "time/step" in r]
    return {
        "update_s": [r["time/step"] for r in updates],
        "update_cpu_s": json.loads(clock.read_text())["cpu_s"],
        "reward_mean": [r["train/reward_mean"] for r in updates],
        "generate_s": [r["time/generate"] for r in updates],
        "train_s": [r["time/train"] for r in updates],
    }


def run_trl_process(args: argparse.Namespace, seed: int, work: Path) -> dict[str, Any]:
    """TRL's side in a fresh process (this script with ``--side trl``)."""
    out = work / f"trl_seed{seed}.json"
    cmd = [sys.executable, "-m", "benchmarks.measures.trl_grpo", "--side", "trl", "--seed", str(seed)]
    cmd += ["--steps", str(args.steps), "--recipe", str(args.recipe), "--out", str(out)]
    if args.batch:
        cmd += ["--batch", str(args.batch)]
    out.unlink(missing_ok=True)
    run = run_tree(cmd, work / f"trl_seed{seed}.log", 3600)
    if run.returncode != 0 or not out.is_file():
        raise RuntimeError(f"TRL side exited {run.returncode}; see {run.log}")
    return json.loads(out.read_text())


def timed(side: str, fn, *args: Any) -> dict[str, Any]:
    """``fn(*args)`` with its wall time, its children's CPU seconds and the load average before."""
    load = os.getloadavg()[0]
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    result = fn(*args)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    steady, steady_cpu = summary(result["update_s"][1:]), summary(result["update_cpu_s"][1:])  # 1st: warm-up
    print(f"  {side}: {steady['median']:.2f} s/update ({steady_cpu['median']:.2f} CPU s), "
          f"rewards {[round(r, 3) for r in result['reward_mean']]}", flush=True)  # fmt: skip
    return {**result, "run_wall_s": time.perf_counter() - t0, "run_cpu_s": cpu, "loadavg_before": load,
            "steady_update_s": steady, "steady_update_cpu_s": steady_cpu}  # fmt: skip


def compare(args: argparse.Namespace) -> dict[str, Any]:
    """Rounds of both sides, alternating which goes first; per-round and pooled ratios."""
    from importlib.metadata import version

    work = Path(args.out).resolve().parent
    settings = recipe_settings(args.recipe, args.batch)
    rounds = []
    for r in range(args.rounds):
        sides = {
            "trl": partial(run_trl_process, args, r, work),
            "ours": partial(run_ours, args.recipe, settings, args.steps, r, work, args.rollout_batch),
        }
        order = ["trl", "ours"] if r % 2 == 0 else ["ours", "trl"]
        results = {side: timed(side, sides[side]) for side in order}
        ratio = {
            f"trl_over_ours{suffix}": results["trl"][key]["median"] / results["ours"][key]["median"]
            for suffix, key in (("", "steady_update_s"), ("_cpu", "steady_update_cpu_s"))
        }
        rounds.append({"seed": r, "order": order, **results, **ratio})
    pooled = {s: summary([x for rd in rounds for x in rd[s]["update_s"][1:]]) for s in ("trl", "ours")}
    pooled_cpu = {
        s: summary([x for rd in rounds for x in rd[s]["update_cpu_s"][1:]]) for s in ("trl", "ours")
    }
    return {
        "recipe": str(args.recipe), "steps": args.steps, "settings": asdict(settings),
        "our_rollout_batch": args.rollout_batch,
        "trl_config": trl_config_kwargs(settings, args.steps, 0, "<work>"),
        "versions": {p: version(p) for p in ("trl", "transformers", "torch", "accelerate")},
        "rounds": rounds, "ratio": summary([rd["trl_over_ours"] for rd in rounds]),
        "cpu_ratio": summary([rd["trl_over_ours_cpu"] for rd in rounds]),
        "pooled_update_s": pooled, "pooled_ratio": pooled["trl"]["median"] / pooled["ours"]["median"],
        "pooled_update_cpu_s": pooled_cpu,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="updates per run (the first warms up)")
    parser.add_argument("--batch", type=int, help="B prompts per update (default: the recipe's)")
    parser.add_argument("--rollout-batch", type=int, help="our rollout's sequences per generate call "
                        "(default: HFRollout's, 64; TRL generates all B·G at once)")  # fmt: skip
    parser.add_argument("--rounds", type=int, default=2, help="runs of each side, order alternating")
    parser.add_argument("--recipe", type=Path, default=RECIPE)
    parser.add_argument("--side", choices=["trl"], help=argparse.SUPPRESS)  # one side, in this process
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.side == "trl":
        settings = recipe_settings(args.recipe, args.batch)
        result = run_trl(args.recipe, settings, args.steps, args.seed, Path(args.out).resolve().parent)
    else:
        result = compare(args)
        print(f"TRL / ours, seconds per update: {result['ratio']}", flush=True)
    write_json(args.out, result)


if __name__ == "__main__":
    main()
