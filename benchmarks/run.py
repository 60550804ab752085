"""The benchmark suite of issue #12: ratios of what ES and GRPO cost around their rollouts.

    python benchmarks/run.py --quick --json b.json      # ~30 min on 2 CPU cores
    python benchmarks/run.py                             # the full run (~75 min); writes BENCHMARKS.md
    python benchmarks/run.py --only vllm_over_hf scoring_share --json b.json

Everything runs in one go on one machine, so the ratios compare like with like; absolute times are
context. Each measure is a function below that starts fresh subprocesses (engine start order,
process-tree memory and two ranks are process state) through the real code paths —
``ESStrategy.training_step`` on Fabric-launched ranks, ``VLLMRollout`` / ``HFRollout``,
``es-lightning fit`` — and returns ``(ratio, context)``. Repeats give a median and a min–max
spread; a warm-up comes first. A measure that cannot run here still reports its key, with
``value: null`` and the reason. Models: the bench model (random-initialised Qwen2, ≈30M
parameters, head size 64, GSM8K prompts; see ``benchmarks/measures/common.py``) and the demo model
(``es-lightning/tiny-arithmetic``, 0.8M, its arithmetic task).

Before each measure the machine's CPU use by other processes is sampled for a second and kept
with the result (``foreign_cpu_percent``); ``--pause-file F`` waits while ``F`` exists.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.measures.common import DEMO_MODEL, REPO, ratio_summary, run_script, summary, write_json  # noqa: E402
from benchmarks.measures.memory import fit_run  # noqa: E402
from benchmarks.measures.report import GOALS, machine_info, print_table, write_markdown  # noqa: E402

QUICK = dict(
    batch=4, max_tokens=32, repeats=2, demo_batch=32, demo_repeats=2, prompts=32, engine_repeats=2,
    lora_adapters=8, fit_batch=4, fit_steps=2, fit_population=8, group=4, scoring_repeats=2,
    long_prompts=8, long_tokens=128, torch_work_s=4, main_job_steps=3, trl_steps=4, trl_batch=16,
    trl_rounds=2,
)  # fmt: skip
FULL = dict(
    batch=16, max_tokens=32, repeats=3, demo_batch=64, demo_repeats=3, prompts=64, engine_repeats=3,
    lora_adapters=16, fit_batch=8, fit_steps=3, fit_population=16, group=4, scoring_repeats=3,
    long_prompts=16, long_tokens=256, torch_work_s=8, main_job_steps=4, trl_steps=10, trl_batch=64,
    trl_rounds=2,
)  # fmt: skip
POPULATION = 32  # N of every ES update measured here (update_share is defined at N = 32)


class Bench:
    """Runs the measures in order, each in its own subprocesses, and keeps their raw results."""

    def __init__(
        self, settings: dict[str, int], work: Path, pause_file: Path | None, reuse: bool = False
    ) -> None:
        self.s, self.work, self.pause_file, self.reuse = settings, work, pause_file, reuse
        self.raw: dict[str, Any] = {}
        self._foreign_cpu: float | None = None

    def _reused(self, name: str, *files: Path) -> bool:
        """With ``--reuse``: take a measure's results from an earlier run's work folder."""
        if not (self.reuse and files and all(f.is_file() for f in files)):
            return False
        import json

        loaded = [json.loads(f.read_text()) for f in files]
        self.raw[name] = loaded[0] if len(loaded) == 1 else {"parts": loaded, "codes": [0] * len(loaded)}
        self.raw[name]["reused"] = True
        print(f"  [{name}: reused from {files[0].parent}]", flush=True)
        return True

    def script(self, name: str, module: str, args: list[str], timeout_s: float = 900) -> dict[str, Any]:
        """A measure script's JSON (cached per name within the run: several keys share one)."""
        if name not in self.raw and not self._reused(name, self.work / f"{name}.json"):
            self._wait_and_check_load(name)
            t0 = time.perf_counter()
            out = run_script(module, args, self.work / f"{name}.json", self.work / f"{name}.log", timeout_s)
            print(f"  [{name}: {time.perf_counter() - t0:.0f} s]", flush=True)
            out["foreign_cpu_percent"] = self._foreign_cpu
            if "error" not in out:  # kept with the result, so a --reuse run reports it too
                write_json(self.work / f"{name}.json", out)
            self.raw[name] = out
        if "error" in self.raw[name]:
            raise RuntimeError(f"{name}: {self.raw[name]['error']}")
        return self.raw[name]

    def _wait_and_check_load(self, name: str) -> None:
        import psutil

        while self.pause_file is not None and self.pause_file.exists():
            print(f"  [{self.pause_file} exists: waiting before {name}]", flush=True)
            time.sleep(20)
        self._foreign_cpu = psutil.cpu_percent(interval=1.0)  # nothing of ours runs now
        if self._foreign_cpu > 30:
            print(
                f"  [warning: {self._foreign_cpu:.0f}% CPU used by other processes before {name}]", flush=True
            )

    # -- the scripts ----------------------------------------------------------------------------
    def prepared(self) -> dict[str, Any]:
        return self.script("prepare", "prepare", ["--adapters", str(self.s["lora_adapters"])])

    def es_step(
        self, model: str, devices: int, update: str = "accumulate", noise: str = "generator"
    ) -> dict[str, Any]:
        """One ES-step measure; on the bench model both update modes, and on one rank both noise
        sources, are measured side by side in it (alternating per repeat, against the same
        generation), and ``update`` and ``noise`` pick the records."""
        demo = model == DEMO_MODEL
        batch = self.s["demo_batch"] if demo else self.s["batch"]
        repeats = self.s["demo_repeats"] if demo else self.s["repeats"]
        args = ["--model", model, "--population", str(POPULATION), "--batch", str(batch)]
        args += ["--max-tokens", str(self.s["max_tokens"]), "--repeats", str(repeats)]
        args += ["--devices", str(devices), "--binds", "0-1" if devices == 1 else "0;1"]
        args += ["--updates", "accumulate" if demo else "accumulate,redraw"]
        if not demo and devices == 1:
            args += ["--noises", "generator,table"]
        if self.s.get("skip_cached"):
            args += ["--skip-cached"]
        if demo:
            args += ["--temperature", "0.6"]
        name = f"es_step_{'demo' if demo else 'bench'}_{devices}rank"
        step = self.script(name, "es_step", args, timeout_s=5400)
        records = [
            r
            for r in step["records"]
            if (r.get("update", "accumulate"), r.get("noise", "generator")) == (update, noise)
        ]
        if not records:
            raise RuntimeError(f"{name}: no records with update {update!r} and noise {noise!r}")
        return {**step, "records": records, "es": summary([r["es_s"] for r in records])}

    def engine(self, role: str, **extra: str) -> dict[str, Any]:
        args = [
            "--role",
            role,
            "--model",
            self.prepared()["bench_model"],
            "--prompts",
            str(self.s["prompts"]),
        ]
        args += ["--max-tokens", str(self.s["max_tokens"]), "--repeats", str(self.s["engine_repeats"])]
        if role == "single":  # also GSM8K-shaped sampling, for scoring_share's generation time
            extra |= {"long_prompts": str(self.s["long_prompts"]), "long_tokens": str(self.s["long_tokens"])}
            extra |= {"torch_work_s": str(self.s["torch_work_s"])}
        for k, v in extra.items():
            args += [f"--{k.replace('_', '-')}", v]
        return self.script(f"engine_{role}", "engine", args)

    def two_parts(self) -> dict[str, Any]:
        """Two ``part`` engines side by side (cores 0 and 1), released together by a go file."""
        import subprocess

        from benchmarks.measures.common import subprocess_env

        parts_files = [self.work / f"engine_part{i}.json" for i in range(2)]
        if "engine_parts" not in self.raw and not self._reused("engine_parts", *parts_files):
            self._wait_and_check_load("engine_parts")
            go = self.work / "parts.go"
            go.unlink(missing_ok=True)
            procs, outs = [], []
            for i in range(2):
                out = self.work / f"engine_part{i}.json"
                out.unlink(missing_ok=True)
                Path(str(out) + ".ready").unlink(missing_ok=True)
                cmd = [sys.executable, "-m", "benchmarks.measures.engine", "--role", "part"]
                cmd += ["--model", self.prepared()["bench_model"], "--prompts", str(self.s["prompts"])]
                cmd += ["--max-tokens", str(self.s["max_tokens"]), "--repeats", str(self.s["engine_repeats"])]
                cmd += ["--bind", str(i), "--part", f"{i}/2", "--go", str(go), "--out", str(out)]
                log = (self.work / f"engine_part{i}.log").open("w")
                procs.append(
                    subprocess.Popen(
                        cmd, cwd=REPO, env=subprocess_env(), stdout=log, stderr=subprocess.STDOUT
                    )
                )
                outs.append(out)
            deadline = time.time() + 600
            while not all(Path(str(o) + ".ready").exists() for o in outs):
                if time.time() > deadline or any(p.poll() not in (None, 0) for p in procs):
                    for p in procs:
                        p.kill()
                    self.raw["engine_parts"] = {
                        "error": f"a part engine failed; logs {self.work}/engine_part*.log"
                    }
                    break
                time.sleep(0.2)
            else:
                go.touch()
                codes = [p.wait(timeout=600) for p in procs]
                import json

                parts = [json.loads(o.read_text()) for o in outs if o.is_file()]
                self.raw["engine_parts"] = {
                    "parts": parts,
                    "codes": codes,
                    "foreign_cpu_percent": self._foreign_cpu,
                }
                if len(parts) != 2:
                    self.raw["engine_parts"]["error"] = f"part engines exited {codes}"
        if "error" in self.raw["engine_parts"]:
            raise RuntimeError(self.raw["engine_parts"]["error"])
        return self.raw["engine_parts"]

    def fit(self, kind: str) -> dict[str, Any]:
        name = f"fit_{kind}"
        if name not in self.raw and not self._reused(name, self.work / f"{name}.result.json"):
            self._wait_and_check_load(name)
            s = self.s
            self.raw[name] = fit_run(
                kind, self.prepared()["bench_model"], self.work, batch=s["fit_batch"], steps=s["fit_steps"],
                max_tokens=s["max_tokens"], population=s["fit_population"], group=s["group"],
            )  # fmt: skip
            self.raw[name]["foreign_cpu_percent"] = self._foreign_cpu
            write_json(self.work / f"{name}.result.json", self.raw[name])
            print(f"  [{name}: {self.raw[name]['wall_s']:.0f} s]", flush=True)
        if "error" in self.raw[name]:
            raise RuntimeError(self.raw[name]["error"])
        return self.raw[name]


# -- the measures: each returns (ratio summary, context) -----------------------------------------
def es_over_generation(
    b: Bench, model: str | None = None, update: str = "accumulate", noise: str = "generator"
):
    r = b.es_step(model or b.prepared()["bench_model"], 1, update, noise)["records"]
    ctx = {
        "es_update_s": summary([x["es_s"] for x in r]),
        "generate_s": summary([x["generate_s"] for x in r]),
    }
    if all("es_cpu_s" in x for x in r):  # CPU seconds of the process trees: robust to foreign load
        ctx["cpu_ratio"] = ratio_summary([x["es_cpu_s"] for x in r], [x["generate_cpu_s"] for x in r])
    return ratio_summary([x["es_s"] for x in r], [x["generate_s"] for x in r]), ctx


def update_share(b: Bench, model: str | None = None, update: str = "accumulate", noise: str = "generator"):
    """The update's own seconds (with an accumulated update's folds, which run inside the
    perturbations) over the whole ES step."""
    step = b.es_step(model or b.prepared()["bench_model"], 1, update, noise)
    r = step["records"]
    parts = {
        k: summary([x[f"time/{k}"] for x in r]) for k in ("generate", "perturb_restore", "score", "update")
    }
    return ratio_summary([x["time/update"] for x in r], [x["es_s"] for x in r]), {
        "population": step["population"], "parts_s": parts, "worker_profile_s": step["profile"],
    }  # fmt: skip


def noise_table_over_generator(b: Bench):
    """Not in the issue's list: the noise-only cost of one perturbation inside the worker, ε of
    every tensor copied out of the shared noise table ÷ drawn by the generators, on the
    perturbation's threads (``ProfilingWorker.es_profile``; the copy bounds what reading costs)."""
    step = b.es_step(b.prepared()["bench_model"], 1, noise="table")
    p = step["profile"]
    ctx = {
        "table_noise_s": p["table_noise"], "generator_noise_s": p["noise_threaded"],
        "table_perturbed_s": p["table_perturbed"], "generator_perturbed_s": p["perturbed"],
        "table_size": step["table_size"], "table_build_s": step["table_build_s"],
        "parameters": p["parameters"],
    }  # fmt: skip
    return summary([p["table_noise"] / p["noise_threaded"]]), ctx


def two_engine_speedup(b: Bench, update: str = "accumulate"):
    one = b.es_step(b.prepared()["bench_model"], 1, update)
    two = b.es_step(b.prepared()["bench_model"], 2, update)
    value = ratio_summary([x["es_s"] for x in one["records"]], [x["es_s"] for x in two["records"]])
    raw, _ = two_engine_speedup_raw_vllm(b)
    ctx = {"one_rank_s": one["es"], "two_ranks_s": two["es"], "raw_vllm_speedup": raw["median"]}
    if raw["median"] and value["median"]:
        ctx["es_over_raw"] = value["median"] / raw["median"]
    return value, ctx


def two_engine_speedup_raw_vllm(b: Bench):
    single, parts = b.engine("single"), b.two_parts()["parts"]
    one = single["alone"]["seconds"]["median"]
    per_repeat = max(p["total_s"] for p in parts) / b.s["engine_repeats"]
    return summary([one / per_repeat]), {
        "one_engine_both_cores_s": one,
        "two_engines_one_core_each_s": per_repeat,
        "prompts": single["prompts"],
        "engine_start_s": [p["engine_start_s"] for p in parts],
    }


def rss_es_over_grpo(b: Bench):
    es, grpo = b.fit("es"), b.fit("grpo")
    ctx = {
        "es_peak_rss_gib": es["peak_rss_bytes"] / 2**30, "grpo_peak_rss_gib": grpo["peak_rss_bytes"] / 2**30,
        "es_peak_pss_gib": es["peak_pss_bytes"] / 2**30, "grpo_peak_pss_gib": grpo["peak_pss_bytes"] / 2**30,
        "pss_ratio": es["peak_pss_bytes"] / max(grpo["peak_pss_bytes"], 1),
        "processes": [es["peak_processes"], grpo["peak_processes"]], "batch": b.s["fit_batch"],
    }  # fmt: skip
    return summary([es["peak_rss_bytes"] / grpo["peak_rss_bytes"]]), ctx


def vllm_over_hf(b: Bench):
    v, h = b.engine("single")["alone"], b.engine("hf")["hf"]
    ctx = {"vllm_tokens_per_s": v["tokens_per_s"], "hf_tokens_per_s": h["tokens_per_s"]}
    return summary([v["tokens_per_s"]["median"] / h["tokens_per_s"]["median"]]), ctx


def engine_with_trainer_over_alone(b: Bench):
    s = b.engine("single")
    ctx = {
        "alone_tokens_per_s": s["alone"]["tokens_per_s"],
        "with_trainer_tokens_per_s": s["with_trainer"]["tokens_per_s"],
    }
    return summary([s["with_trainer"]["tokens_per_s"]["median"] / s["alone"]["tokens_per_s"]["median"]]), ctx


def scoring_share(b: Bench):
    args = [
        "--samples",
        "32",
        "--repeats",
        str(b.s["scoring_repeats"]),
        "--model",
        b.prepared()["bench_model"],
    ]
    sc = b.script("scoring", "scoring", args)
    tps = b.engine("single")["long"]["tokens_per_s"]["median"]  # n=8 samples of long completions
    generate_s = sc["completion_tokens"] / tps
    ctx = {**{k: sc[k] for k in ("prompts", "completions", "completion_tokens", "mean_reward")}}
    ctx |= {"score_s": sc["score_s"], "generate_s_estimated": generate_s, "vllm_tokens_per_s": tps}
    return summary(
        [s / generate_s for s in (sc["score_s"]["median"], sc["score_s"]["min"], sc["score_s"]["max"])]
    ), ctx


def grpo_sync_share(b: Bench):
    g = b.fit("grpo")
    ctx = {k: g[k] for k in ("time/sync", "time/step", "time/train", "time/generate") if k in g}
    return summary([g["time/sync"]["median"] / g["time/step"]["median"]]), ctx


def lora_population_over_sequential(b: Bench):
    n = b.s["lora_adapters"]
    lora = b.script(
        "engine_lora", "engine",
        ["--role", "lora", "--model", b.prepared()["bench_model"], "--prompts", str(b.s["batch"]),
         "--max-tokens", str(b.s["max_tokens"]), "--repeats", str(b.s["engine_repeats"]),
         "--adapters", b.prepared()["adapters"]],
    )  # fmt: skip
    r = b.es_step(b.prepared()["bench_model"], 1)["records"]
    per_member = [(x["time/generate"] + x["time/perturb_restore"]) / POPULATION for x in r]
    sequential = summary(per_member)["median"] * n
    batch = lora["lora_batch"]["seconds"]
    return summary([batch["median"] / sequential]), {
        "adapters": n, "prompts": b.s["batch"], "lora_batch_s": batch, "sequential_full_weight_s": sequential,
        "no_lora_batch_s": lora["no_lora_batch"]["seconds"], "lora_tokens": lora["lora_batch"]["tokens"],
    }  # fmt: skip


def _lowrank_step(b: Bench, model: str, rollout: str = "hf") -> dict[str, Any]:
    """``measures/lowrank_step.py``: full-rank, low-rank (r = 4) and a plain N×B batch on the
    transformers rollout or on vLLM, side by side (the ES step's N, B, tokens and temperature)."""
    demo = model == DEMO_MODEL
    batch = b.s["demo_batch"] if demo else b.s["batch"]
    args = ["--model", model, "--population", str(POPULATION), "--batch", str(batch), "--rank", "4"]
    args += ["--max-tokens", str(b.s["max_tokens"]), "--temperature", "0.6" if demo else "1.0"]
    args += ["--repeats", str(b.s["demo_repeats"] if demo else b.s["repeats"]), "--rollout", rollout]
    if not demo and rollout == "hf":  # its full-rank update takes > 15 min: vLLM's (es_step) is compared
        args += ["--sides", "lowrank,plain"]
    name = f"lowrank_step_{'demo' if demo else 'bench'}" + ("_vllm" if rollout == "vllm" else "")
    return b.script(name, "lowrank_step", args, timeout_s=5400)


def lowrank_on_vllm(b: Bench, key: str, model: str | None = None):
    """``key`` of the low-rank step on vLLM: the population as N LoRA adapters in one call,
    against full rank on a LoRA-free engine and a plain batch (``measures/lowrank_step.py``)."""
    step = _lowrank_step(b, model or b.prepared()["bench_model"], rollout="vllm")
    return step[key], {"wall_s": step["wall_s"], "rank": 4, "lowrank_targets": "linear"}


def lowrank_population_over_plain_batch(b: Bench, model: str | None = None):
    """A low-rank ES update (every member in one generate call) ÷ one unperturbed generate call
    of the same N×B requests, on the transformers rollout."""
    step = _lowrank_step(b, model or b.prepared()["bench_model"])
    return step["lowrank_population_over_plain_batch"], {"wall_s": step["wall_s"], "rank": 4}


def lowrank_over_fullrank_update(b: Bench, model: str | None = None):
    """A low-rank ES update on the transformers rollout ÷ a full-rank one (same N, B, tokens), full
    rank on the faster of the transformers rollout (side by side, paired) and vLLM (the ES step's
    update, when it ran here; on the bench model always vLLM's, run here if it has not)."""
    model = model or b.prepared()["bench_model"]
    demo = model == DEMO_MODEL
    step = _lowrank_step(b, model)
    ctx: dict[str, Any] = {"wall_s": step["wall_s"], "hf_ratio": step.get("lowrank_over_fullrank_update")}
    if not demo:  # full rank on the transformers rollout is not timed there (_lowrank_step)
        b.es_step(model, 1)
    full_vllm = b.raw.get(f"es_step_{'demo' if demo else 'bench'}_1rank")
    if full_vllm and "error" not in full_vllm:
        records = [r["es_s"] for r in full_vllm["records"] if r.get("update", "accumulate") == "accumulate"]
        ctx["vllm_full_update_s"] = summary(records)
        if "full" not in step["wall_s"] or summary(records)["median"] < step["wall_s"]["full"]["median"]:
            return ratio_summary([r["lowrank"]["wall_s"] for r in step["records"]], records), ctx
    return step["lowrank_over_fullrank_update"], ctx


def main_job_hf_over_vllm(b: Bench):
    """Not in the issue's list: the README's main job (``recipes/demo_cpu.yaml``) per ES update,
    transformers rollout ÷ vLLM rollout (above 1: vLLM is the faster backend for it)."""
    job = b.script("main_job", "main_job", ["--steps", str(b.s["main_job_steps"])], timeout_s=3600)
    fit = job["fit"]
    ctx = {
        name: {k: v["median"] if isinstance(v, dict) else v for k, v in r.items()} for name, r in fit.items()
    }
    ctx["evaluate_wall_s"] = {k: v["wall_s"] for k, v in job["evaluate"].items()}
    return summary([fit["hf"]["update_s"]["median"] / fit["vllm"]["update_s"]["median"]]), ctx


def prefix_cache_stale_fraction(b: Bench):
    """Not in the issue: the fraction of prompts whose greedy completion under a perturbation
    differs between a warm prefix cache (prompt KV from the centre) and a fresh one."""
    step = b.es_step(b.prepared()["bench_model"], 1)
    check = step["prefix_cache"]
    ctx = {**check, "prompt_tokens": summary(step["prompt_tokens"]), "block_size": 128}
    return summary([check["stale_fraction"]]), ctx


def trl_over_ours_grpo_update(b: Bench):
    """TRL's ``GRPOTrainer`` ÷ our GRPO, CPU seconds per update (median of the rounds' ratios; the
    wall-clock ratio is ``wall_ratio``) on the demo GRPO recipe's settings at B = ``trl_batch``, both
    on transformers ``generate``, ours with all B·G completions in one call as TRL does
    (``benchmarks/measures/trl_grpo.py``). The same invocation profiles our update at the same B
    and call size (``benchmarks/measures/grpo_profile.py``): its per-phase CPU split is
    ``profile``. Needs ``pip install -e '.[bench]'``."""
    import importlib.util

    from benchmarks.measures.trl_grpo import RECIPE
    from benchmarks.measures.trl_settings import recipe_settings

    if importlib.util.find_spec("trl") is None:
        raise RuntimeError("skipped: trl is not installed (pip install -e '.[bench]')")
    batch = b.s["trl_batch"]
    per_call = batch * recipe_settings(RECIPE, batch).group_size  # B·G: one generate call per update
    args = ["--steps", str(b.s["trl_steps"]), "--batch", str(batch), "--rollout-batch", str(per_call)]
    peer = b.script("trl_grpo", "trl_grpo", [*args, "--rounds", str(b.s["trl_rounds"])], timeout_s=7200)
    prof = b.script("grpo_profile", "grpo_profile", args, timeout_s=3600)
    keys = ("steps", "versions", "our_rollout_batch", "pooled_update_s", "pooled_update_cpu_s")
    ctx = {k: peer[k] for k in keys} | {"wall_ratio": peer["ratio"]}
    ctx["settings"] = {
        k: peer["settings"][k] for k in ("batch_size", "group_size", "learning_rate", "max_tokens")
    }
    ctx["rewards"] = {side: [rd[side]["reward_mean"] for rd in peer["rounds"]] for side in ("trl", "ours")}
    ctx["loadavg_before"] = [rd[s]["loadavg_before"] for rd in peer["rounds"] for s in rd["order"]]
    per_update = ("update_cpu_s", "update_wall_s", "phase_cpu_s_median")  # our update, phase by phase
    ctx["profile"] = {k: prof[k] for k in ("batch", "rollout_batch", "steps", "threads", *per_update)}
    return peer["cpu_ratio"], ctx


MEASURES = {
    "es_over_generation": es_over_generation,
    "update_share": update_share,
    "es_over_generation_table": lambda b: es_over_generation(b, noise="table"),
    "update_share_table": lambda b: update_share(b, noise="table"),
    "noise_table_over_generator": noise_table_over_generator,
    "es_over_generation_redraw": lambda b: es_over_generation(b, update="redraw"),
    "update_share_redraw": lambda b: update_share(b, update="redraw"),
    "es_over_generation_demo": lambda b: es_over_generation(b, DEMO_MODEL),
    "update_share_demo": lambda b: update_share(b, DEMO_MODEL),
    "two_engine_speedup": two_engine_speedup,
    "two_engine_speedup_redraw": lambda b: two_engine_speedup(b, update="redraw"),
    "two_engine_speedup_raw_vllm": two_engine_speedup_raw_vllm,
    "rss_es_over_grpo": rss_es_over_grpo,
    "vllm_over_hf": vllm_over_hf,
    "engine_with_trainer_over_alone": engine_with_trainer_over_alone,
    "scoring_share": scoring_share,
    "grpo_sync_share": grpo_sync_share,
    "lora_population_over_sequential": lora_population_over_sequential,
    "prefix_cache_stale_fraction": prefix_cache_stale_fraction,
    "main_job_hf_over_vllm": main_job_hf_over_vllm,
    "lowrank_population_over_plain_batch": lowrank_population_over_plain_batch,
    "lowrank_over_fullrank_update": lowrank_over_fullrank_update,
    "lowrank_population_over_plain_batch_demo": lambda b: lowrank_population_over_plain_batch(b, DEMO_MODEL),
    "lowrank_over_fullrank_update_demo": lambda b: lowrank_over_fullrank_update(b, DEMO_MODEL),
    "lowrank_population_over_plain_batch_vllm": lambda b: lowrank_on_vllm(
        b, "lowrank_population_over_plain_batch"
    ),
    "lowrank_over_fullrank_update_vllm": lambda b: lowrank_on_vllm(b, "lowrank_over_fullrank_update"),
    "lowrank_population_over_plain_batch_vllm_demo": lambda b: lowrank_on_vllm(
        b, "lowrank_population_over_plain_batch", DEMO_MODEL
    ),
    "lowrank_over_fullrank_update_vllm_demo": lambda b: lowrank_on_vllm(
        b, "lowrank_over_fullrank_update", DEMO_MODEL
    ),
    "trl_over_ours_grpo_update": trl_over_ours_grpo_update,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="2 repeats, 4 prompts per member (~30 min on 2 cores; the full run ~75 min)",
    )
    parser.add_argument("--json", type=Path, help="write every key, its context and the raw results here")
    parser.add_argument("--markdown", type=Path, help="where to write BENCHMARKS.md (default: the "
                        "repository's, on full runs only)")  # fmt: skip
    parser.add_argument(
        "--only", nargs="+", choices=list(MEASURES), metavar="KEY", help="run only these keys"
    )
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/es_lightning_bench"), help="logs and run folders"
    )
    parser.add_argument("--pause-file", type=Path, help="wait before each measure while this file exists")
    parser.add_argument("--reuse", action="store_true", help="take results already in --work (after a crash)")
    parser.add_argument(
        "--set", nargs="+", default=[], metavar="KEY=N", help="override settings, e.g. batch=8 repeats=2"
    )
    args = parser.parse_args(argv)
    settings = dict(QUICK if args.quick else FULL)
    for item in args.set:
        key, _, value = item.partition("=")
        if key not in settings and key != "skip_cached":
            parser.error(f"--set: unknown setting {key!r}; one of {', '.join(settings)}, skip_cached")
        settings[key] = int(value)
    args.work.mkdir(parents=True, exist_ok=True)
    bench = Bench(settings, args.work, args.pause_file, args.reuse)
    started = time.time()
    results: dict[str, Any] = {}
    for key in args.only or list(MEASURES):
        print(f"{key} ...", flush=True)
        try:
            value, context = MEASURES[key](bench)
            results[key] = {
                "value": value["median"],
                "spread": [value["min"], value["max"]],
                "context": context,
            }
        except Exception as error:  # the key is still written, with the reason
            traceback.print_exc()
            results[key] = {"value": None, "reason": f"{type(error).__name__}: {error}"[:1500]}
        check, goal = GOALS.get(key, (None, None))
        value = results[key]["value"]
        results[key]["goal"] = goal
        results[key]["met"] = None if check is None or value is None else bool(check(value))
    info = machine_info(bench, settings, args.quick, time.time() - started)
    print_table(results)
    if args.json:
        write_json(args.json, {"machine": info, "results": results, "raw": bench.raw})
    markdown = args.markdown or (None if args.quick or args.only or args.set else REPO / "BENCHMARKS.md")
    if markdown:
        write_markdown(markdown, info, results)
        print(f"wrote {markdown}")


if __name__ == "__main__":
    main()
