"""The README's main job (``recipes/demo_cpu.yaml``) on each rollout backend, as a user runs it.

    python -m benchmarks.measures.main_job --steps 4 --out main_job.json

Each variant is one ``es-lightning fit --config recipes/demo_cpu.yaml`` process with only the
rollout switched (``--rollout hf``; ``--rollout vllm`` with the default core binding, vLLM's
``auto`` for one rank: the worker on all cores but the one its front end keeps; vLLM with the worker
bound to both cores, ``cpu_threads_bind: "0-1"``) and no
evaluation or callbacks, so that the updates are what is timed; from its ``metrics.jsonl``: the
median ``time/step`` (one ES update) and ``time/generate`` over the updates after the first, and
the wall time of the whole process (engine start included). Then ``es-lightning evaluate`` of the
demo model on its 200 test problems × 16 samples (the main job's evaluation) on each backend,
wall time of the process. The variants run one after another on the same machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from benchmarks.measures.common import REPO, run_tree, summary, write_json

VARIANTS = {
    "hf": ["--rollout", "hf"],
    "vllm": ["--rollout", "vllm"],
    "vllm_all_cores": ["--rollout", "vllm", "--rollout.cpu_threads_bind", "0-1"],
}


def fit(name: str, extra: list[str], work: Path, steps: int) -> dict:
    out = work / f"main_job_{name}"
    cmd = [sys.executable, "-m", "es_lightning", "fit", "--config", str(REPO / "recipes" / "demo_cpu.yaml")]
    cmd += [
        "--trainer.output_dir",
        str(out),
        "--trainer.overwrite",
        "true",
        "--trainer.progress_bar",
        "false",
    ]
    cmd += ["--trainer.max_steps", str(steps), "--evaluation", "null", "--callbacks", "[]", *extra]
    t0 = time.perf_counter()
    run = run_tree(cmd, work / f"main_job_{name}.log", timeout_s=1800)
    wall = time.perf_counter() - t0
    if run.returncode != 0:
        raise RuntimeError(f"{name}: exit {run.returncode}; see {work}/main_job_{name}.log")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    steps_rows = [r for r in rows if "time/step" in r][1:]  # the first update warms up
    return {
        "wall_s": wall,
        "update_s": summary([r["time/step"] for r in steps_rows]),
        "generate_s": summary([r["time/generate"] for r in steps_rows]),
        "perturb_restore_s": summary([r["time/perturb_restore"] for r in steps_rows]),
        "update_only_s": summary([r["time/update"] for r in steps_rows]),
    }


def evaluate(name: str, rollout: str, work: Path) -> dict:
    cmd = [sys.executable, "-m", "es_lightning", "evaluate", "--model", "es-lightning/tiny-arithmetic"]
    cmd += ["--task", "arithmetic", "--evaluation.num_samples", "16", "--evaluation.max_tokens", "32"]
    cmd += [
        "--evaluation.ks",
        "[1, 16]",
        "--rollout",
        rollout,
        "--output",
        str(work / f"main_job_eval_{name}.json"),
    ]
    t0 = time.perf_counter()
    run = run_tree(cmd, work / f"main_job_eval_{name}.log", timeout_s=1800)
    if run.returncode != 0:
        raise RuntimeError(f"evaluate {name}: exit {run.returncode}; see {work}/main_job_eval_{name}.log")
    return {"wall_s": time.perf_counter() - t0}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4, help="ES updates per variant (the first warms up)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--no-evaluate", action="store_true", help="skip the evaluation timings")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    work = Path(args.out).parent
    result: dict = {"steps": args.steps, "fit": {}, "evaluate": {}}
    for name in args.variants:
        result["fit"][name] = fit(name, VARIANTS[name], work, args.steps)
        print(name, json.dumps(result["fit"][name]["update_s"]), flush=True)
    if not args.no_evaluate:
        for name in ("hf", "vllm"):
            result["evaluate"][name] = evaluate(name, name, work)
            print("evaluate", name, result["evaluate"][name], flush=True)
    write_json(args.out, result)


if __name__ == "__main__":
    main()
