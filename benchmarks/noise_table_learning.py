"""Does ES learn as well with ε from a shared noise table? The CPU demo with both noise sources, over seeds.

    python benchmarks/noise_table_learning.py                                # 3 seeds of each
    python benchmarks/noise_table_learning.py --methods table --seeds 0 1    # only these runs
    python benchmarks/noise_table_learning.py --methods table \\
        --reference docs/demo_cpu/lowrank_learning.json                      # generator runs from there
    python benchmarks/noise_table_learning.py --report                       # the table, nothing run

``generator`` is ``recipes/demo_cpu.yaml`` as it is (ε drawn per tensor), ``table`` the same run with
``--strategy.init_args.noise table`` (ε a slice of the shared table; the same model, data, σ, α,
updates and evaluation). Each (method, seed) is its own ``es-lightning fit`` process in
``OUTPUT/<method>/seed<k>`` with a checkpoint every 10 updates: a finished run (its
``eval/after.json``) is kept, an interrupted one continues from its checkpoint, so the comparison
can be spread over sittings. ``--reference`` takes the generator's runs from a results file of
``benchmarks/lowrank_learning.py`` (its ``full`` runs are ``demo_cpu.yaml`` at the same seeds)
instead of running them again. The goal (issue: ES noise at memory speed): the table's mean Pass@1
gain within the generator's seed spread or above it, i.e. at least the generator's smallest gain;
the table gives each run's gain, the means, their spread and the difference. ``OUTPUT/results.json``
keeps every number.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECIPE = REPO / "recipes" / "demo_cpu.yaml"
OVERRIDES = {"generator": [], "table": ["--strategy.init_args.noise", "table"]}
TASK = "arithmetic"


def run(method: str, seed: int, output: Path, fit_args: list[str]) -> dict:
    """Run (or continue, or reuse) one demo fit (``fit_args`` appended to its command); its
    before/after Pass@1 and wall-clock."""
    out = output / method / f"seed{seed}"
    record = out / "noise_table_learning.json"
    if record.is_file() and (out / "eval" / "after.json").is_file():
        return json.loads(record.read_text())
    out.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "es_lightning", "fit", "--config", str(RECIPE), *OVERRIDES[method]]
    cmd += ["--trainer.output_dir", str(out), "--trainer.seed", str(seed), "--trainer.progress_bar", "false"]
    cmd += ["--trainer.checkpoint_every", "10", "--trainer.keep_last", "1", "--trainer.resume", "auto"]
    cmd += fit_args
    spent = json.loads(record.read_text())["seconds"] if record.is_file() else 0.0  # earlier attempts
    start = time.perf_counter()
    with (out / "noise_table_learning.log").open("a") as log:
        subprocess.run(cmd, check=True, stdout=log, stderr=subprocess.STDOUT)
    seconds = spent + time.perf_counter() - start
    before = json.loads((out / "eval" / "before.json").read_text())[TASK]
    after = json.loads((out / "eval" / "after.json").read_text())[TASK]
    result = {"method": method, "seed": seed, "seconds": seconds, "before": before, "after": after}
    result["fit_args"] = fit_args
    record.write_text(json.dumps(result, indent=2))
    return result


def reference_runs(path: Path) -> list[dict]:
    """The ``full`` runs of a ``benchmarks/lowrank_learning.py`` results file, as generator runs."""
    runs = json.loads(path.read_text())["runs"]
    return [{**r, "method": "generator", "source": str(path)} for r in runs if r["method"] == "full"]


def summary(results: list[dict]) -> dict:
    """Per method: each seed's Pass@1 gain (points), their mean, sd and range; and the table's mean
    gain against the generator's spread."""
    out: dict = {"methods": {}}
    for method in OVERRIDES:
        runs = sorted((r for r in results if r["method"] == method), key=lambda r: r["seed"])
        gains = [100 * (r["after"]["pass@1"] - r["before"]["pass@1"]) for r in runs]
        if gains:
            out["methods"][method] = {
                "seeds": [r["seed"] for r in runs],
                "gain_points": gains,
                "mean_gain": statistics.fmean(gains),
                "sd_gain": statistics.stdev(gains) if len(gains) > 1 else None,
                "range": [min(gains), max(gains)],
            }
    methods = out["methods"]
    if "generator" in methods and "table" in methods:
        table, generator = methods["table"], methods["generator"]
        out["difference"] = table["mean_gain"] - generator["mean_gain"]
        out["met"] = table["mean_gain"] >= generator["range"][0]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--methods", nargs="+", choices=sorted(OVERRIDES), default=["table", "generator"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--output", type=Path, default=Path("runs/noise_table_learning"))
    parser.add_argument("--reference", type=Path, help="take the generator's runs from this results file")
    parser.add_argument("--report", action="store_true", help="only the table of the finished runs")
    parser.add_argument(
        "--fit-args",
        default="",
        help="more `es-lightning fit` arguments, e.g. '--trainer.max_steps 2' (a check)",
    )
    args = parser.parse_args(argv)
    if not args.report:
        for method in args.methods:
            if method == "generator" and args.reference is not None:
                continue
            for seed in args.seeds:
                result = run(method, seed, args.output, shlex.split(args.fit_args))
                print(f"{method}/seed{seed}: {result['seconds']:.0f} s", flush=True)
    finished = [
        json.loads(p.read_text()) for p in sorted(args.output.glob("*/seed*/noise_table_learning.json"))
    ]
    if args.reference is not None:
        finished = [r for r in finished if r["method"] != "generator"] + reference_runs(args.reference)
    table = summary(finished)
    changed = sorted({f"{r['method']}/seed{r['seed']}" for r in finished if r.get("fit_args")})
    if changed:
        print(f"warning: {', '.join(changed)} ran with extra fit arguments; the gains do not compare")
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "results.json").write_text(json.dumps({"summary": table, "runs": finished}, indent=2))
    for method, m in table["methods"].items():
        gains = ", ".join(f"{g:+.1f}" for g in m["gain_points"])
        print(f"{method:<10} seeds {m['seeds']}: Pass@1 gain {gains} (mean {m['mean_gain']:+.1f})")
    if "met" in table:
        low, high = table["methods"]["generator"]["range"]
        verdict = "met" if table["met"] else "NOT met"
        print(
            f"table - generator mean gain: {table['difference']:+.1f} points; generator spread "
            f"{low:+.1f}..{high:+.1f} (goal: table mean >= {low:+.1f}: {verdict})"
        )


if __name__ == "__main__":
    main()
