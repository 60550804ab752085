"""Wall time and results of the CPU demo recipes, run one after another on this machine.

    python benchmarks/demo_cpu.py                       # all four demos
    python benchmarks/demo_cpu.py --recipes demo_cpu    # just the main job
    python benchmarks/demo_cpu.py --output runs/bench   # where runs and results.json go
    python benchmarks/demo_cpu.py --recipes demo_cpu_permuted   # ES's null: rewards shuffled among members

Each recipe runs as its own ``es-lightning fit`` process (engine start-up included, as a user sees
it); the table gives the wall time, the ratio to the first recipe's time (the runs share the
machine's state, so the ratio is steadier than the seconds) and Pass@1 / Pass@16 / greedy before
training and after the last stage. ``results.json`` keeps every number; a later call with other
``--recipes`` adds its runs to the same file (a run of the same name is replaced).
``demo_cpu_permuted`` is ``demo_cpu`` with ``--strategy.init_args.reward_control permuted`` (the
member rewards shuffled among the members before each update: ES's empirical null).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEMOS = ["demo_cpu", "demo_cpu_grpo", "demo_cpu_es_then_grpo", "demo_cpu_grpo_then_es"]
VARIANTS = {"demo_cpu_permuted": ("demo_cpu", ["--strategy.init_args.reward_control", "permuted"])}
"""Named runs that are a recipe with overrides: ``name: (recipe, overrides)``."""
METRICS = ("pass@1", "pass@16", "greedy")


def _eval(run_dir: Path, task: str = "arithmetic") -> tuple[dict, dict]:
    """(before, after) summaries of a run directory or of a pipeline's first and last stages."""
    stages = sorted(run_dir.glob("stage*_*"))
    first, last = (stages[0], stages[-1]) if stages else (run_dir, run_dir)
    before = json.loads((first / "eval" / "before.json").read_text())[task]
    after = json.loads((last / "eval" / "after.json").read_text())[task]
    return before, after


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--recipes",
        nargs="+",
        default=DEMOS,
        help=f"recipe names in recipes/ (no .yaml), or {sorted(VARIANTS)}",
    )
    parser.add_argument("--output", type=Path, default=Path("runs/bench_demo_cpu"), help="run directories")
    args = parser.parse_args(argv)
    missing = [
        n for n in args.recipes if n not in VARIANTS and not (REPO / "recipes" / f"{n}.yaml").is_file()
    ]
    if missing:
        parser.error(f"no recipes/{{name}}.yaml for --recipes {missing}")

    args.output.mkdir(parents=True, exist_ok=True)
    saved = args.output / "results.json"
    results = json.loads(saved.read_text()) if saved.is_file() else {"runs": {}}
    results["machine"] = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}"
    for name in args.recipes:
        out = args.output / name
        recipe, overrides = VARIANTS.get(name, (name, []))
        cmd = [
            sys.executable,
            "-m",
            "es_lightning",
            "fit",
            "--config",
            str(REPO / "recipes" / f"{recipe}.yaml"),
        ]
        cmd += [
            *overrides,
            "--trainer.output_dir",
            str(out),
            "--trainer.overwrite",
            "true",
            "--trainer.progress_bar",
            "false",
        ]
        start = time.perf_counter()
        with (args.output / f"{name}.log").open("w") as log:
            subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
        seconds = time.perf_counter() - start
        before, after = _eval(out)
        results["runs"][name] = {
            "seconds": seconds,
            "date": time.strftime("%Y-%m-%d"),
            "before": before,
            "after": after,
        }
        print(f"{name}: {seconds:.0f} s", flush=True)

    first = next(iter(results["runs"].values()))["seconds"]
    print(f"\n{'recipe':<24}{'wall':>8}{'ratio':>7}" + "".join(f"{m:>18}" for m in METRICS))
    for name, run in results["runs"].items():
        cells = "".join(f"{100 * run['before'][m]:>8.1f} -> {100 * run['after'][m]:>5.1f}" for m in METRICS)
        print(f"{name:<24}{run['seconds']:>7.0f}s{run['seconds'] / first:>7.2f}{cells}")
    (args.output / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
