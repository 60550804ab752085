"""Does low-rank ES learn as full-rank ES does? The CPU demo, both ways, over seeds.

    python benchmarks/lowrank_learning.py                                  # 3 seeds of each
    python benchmarks/lowrank_learning.py --methods lowrank --seeds 0 1    # only these runs
    python benchmarks/lowrank_learning.py --report                         # the table, nothing run

``full`` is ``recipes/demo_cpu.yaml`` (full-rank ES), ``lowrank`` is ``recipes/demo_cpu_lowrank.yaml``
(the same model, data, σ, α, updates and evaluation with rank-4 directions, the whole population in
one call). Each (method, seed) is its own ``es-lightning fit`` process in ``OUTPUT/<method>/seed<k>``
with a checkpoint every 10 updates: a finished run (its ``eval/after.json``) is kept, an
interrupted one continues from its checkpoint, so the comparison can be spread over sittings. The
goal (issue: low-rank ES) is a mean Pass@1 gain of low rank at least 80 % of full rank's, at the same
number of updates; the table gives each run's gain, wall-clock and the ratio of the means with
both methods' spread over seeds. ``OUTPUT/results.json`` keeps every number.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPES = {"full": "demo_cpu", "lowrank": "demo_cpu_lowrank"}
TASK = "arithmetic"
GOAL = 0.8
"""Low rank's mean Pass@1 gain over full rank's, at least."""


def run(method: str, seed: int, output: Path) -> dict:
    """Run (or continue, or reuse) one demo fit; its before/after Pass@1 and wall-clock."""
    out = output / method / f"seed{seed}"
    record = out / "lowrank_learning.json"
    if record.is_file() and (out / "eval" / "after.json").is_file():
        return json.loads(record.read_text())
    out.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "es_lightning",
        "fit",
        "--config",
        str(REPO / "recipes" / f"{RECIPES[method]}.yaml"),
    ]
    cmd += ["--trainer.output_dir", str(out), "--trainer.seed", str(seed), "--trainer.progress_bar", "false"]
    cmd += ["--trainer.checkpoint_every", "10", "--trainer.keep_last", "1", "--trainer.resume", "auto"]
    spent = json.loads(record.read_text())["seconds"] if record.is_file() else 0.0  # earlier attempts
    start = time.perf_counter()
    with (out / "lowrank_learning.log").open("a") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
    seconds = spent + time.perf_counter() - start
    before = json.loads((out / "eval" / "before.json").read_text())[TASK]
    after = json.loads((out / "eval" / "after.json").read_text())[TASK]
    result = {"method": method, "seed": seed, "seconds": seconds, "before": before, "after": after}
    record.write_text(json.dumps(result, indent=2))
    return result


def summary(results: list[dict]) -> dict:
    """Per method: each seed's Pass@1 gain (points), their mean and sd, the mean wall-clock; and
    low rank's mean gain over full rank's against the goal."""
    out: dict = {"methods": {}, "goal": GOAL}
    for method in RECIPES:
        runs = sorted((r for r in results if r["method"] == method), key=lambda r: r["seed"])
        gains = [100 * (r["after"]["pass@1"] - r["before"]["pass@1"]) for r in runs]
        if gains:
            out["methods"][method] = {
                "seeds": [r["seed"] for r in runs],
                "gain_points": gains,
                "mean_gain": statistics.fmean(gains),
                "sd_gain": statistics.stdev(gains) if len(gains) > 1 else None,
                "mean_seconds": statistics.fmean(r["seconds"] for r in runs),
            }
    methods = out["methods"]
    if "full" in methods and "lowrank" in methods and methods["full"]["mean_gain"] > 0:
        out["gain_ratio"] = methods["lowrank"]["mean_gain"] / methods["full"]["mean_gain"]
        out["met"] = out["gain_ratio"] >= GOAL
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", nargs="+", choices=sorted(RECIPES), default=["lowrank", "full"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--output", type=Path, default=Path("runs/lowrank_learning"))
    parser.add_argument("--report", action="store_true", help="only the table of the finished runs")
    args = parser.parse_args(argv)
    if not args.report:
        for method in args.methods:
            for seed in args.seeds:
                result = run(method, seed, args.output)
                print(f"{method}/seed{seed}: {result['seconds']:.0f} s", flush=True)
    finished = [json.loads(p.read_text()) for p in sorted(args.output.glob("*/seed*/lowrank_learning.json"))]
    table = summary(finished)
    (args.output / "results.json").write_text(json.dumps({"summary": table, "runs": finished}, indent=2))
    for method, m in table["methods"].items():
        gains = ", ".join(f"{g:+.1f}" for g in m["gain_points"])
        print(
            f"{method:<8} seeds {m['seeds']}: Pass@1 gain {gains} (mean {m['mean_gain']:+.1f}), {m['mean_seconds']:.0f} s/run"
        )
    if "gain_ratio" in table:
        print(
            f"low rank / full rank gain: {table['gain_ratio']:.2f} (goal >= {GOAL}: {'met' if table['met'] else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
