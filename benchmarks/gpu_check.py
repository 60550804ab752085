"""GPU check: ES (full and low rank) and GRPO updates of a Qwen2.5-1.5B-shaped model on the HF rollout.

    bash benchmarks/gpu_check.sh                        # one CUDA GPU (H200: ~3-5 min, budget 8 min)
    bash benchmarks/gpu_check.sh --tiny                 # CPU, tiny model, < 1 min: checks the script
    bash benchmarks/gpu_check.sh --population 16 --json /tmp/g.json   # any size can be overridden

Needs only torch, transformers, lightning and this repository (no vLLM, no network, no hub). The
model is ``Qwen2ForCausalLM`` built from a config — Qwen2.5-1.5B's shape (hidden 1536, 28 layers,
12 heads, 2 KV heads, MLP 8960, vocab 151936, tied embeddings; 1.54B parameters) with random
weights, saved once in bf16 into the bench cache (``$ES_LIGHTNING_BENCH_CACHE``) with the built-in
character tokenizer of :mod:`es_lightning.models.tiny`. Prompts are the ``arithmetic`` task's, with
a system prompt that brings them to ~190 tokens, about a GSM8K question in Qwen's chat template.

What runs, in one process, through the code the trainer runs (``HFRollout``, bf16 on CUDA):

* ES — ``ESStrategy.training_step`` driven as ``benchmarks/measures/es_step.py`` drives it (σ and α
  of ``recipes/easy_qwen1p5b.yaml``, greedy). After a warm-up, each repeat times ``generate``: the
  same N×B rollouts with the centre's weights and nothing else, then the ES update itself. Random
  weights score 0 for every member, so the update the step skips is timed separately with z-scored
  random rewards and added (as ``es_step.py`` does).
* Low-rank ES — ``ESStrategy(perturbation="lowrank", rank=4)`` at the same N, B and tokens, all N
  members in one ``generate`` call of N×B rows, against a plain (unperturbed) batch of the same N×B
  requests (:mod:`benchmarks.gpu_check_lowrank`): ``lowrank_population_over_plain_batch`` and
  ``lowrank_over_fullrank_update``.
* GRPO — ``GRPOStrategy.training_step`` (G, η, clip, ``sequence_mean``, micro-batch 8 and gradient
  checkpointing of ``recipes/grpo_easy_qwen1p5b.yaml``; ``bf16-mixed``, the trainer's CUDA default);
  the first update is the warm-up. All rewards are 0, so the loss is 0, but every forward, backward,
  AdamW step and weight sync runs as in training.

Reported per strategy: time per update, generated tokens/s, peak ``torch.cuda.max_memory_allocated``
and ``max_memory_reserved``; for ES also ``es_over_generation`` (ES update ÷ generate-only time),
the update's share (``time/update``: regenerate every ε, accumulate, write the centre; as in
``benchmarks/run.py``) and the perturb + restore share (timed with CUDA synchronised, per member).
Random weights never emit EOS, so every response runs to ``max_tokens``. Results go to ``--json``
(default ``$OUT/gpu_check.json`` when ``$OUT`` is set, else ``runs/gpu_check.json``), written again
after each strategy, and a markdown table is printed.

Sizing, an estimate for one H200 (not a measurement): HF ``generate`` of a 1.5B model is bound by
kernel launches and Python, ~25-50 ms per decoding step at batch 64, i.e. 20-40 tokens/s per
sequence, ~1.3-2.6k tokens/s. One ES member (64 prompts × 128 new tokens) is then ~3.5-7 s:

* ES: warm-up ~8 s + 2 repeats × (8 generate-only + 8 ES members) ≈ 2 × 16 × 3.5-7 s ≈ 110-225 s;
* GRPO: 3 updates × (8 prompts × G=8 = 64 sequences, ~3.5-7 s + 8 micro-batches fwd/bwd ~2-4 s);
* setup: imports ~15 s, building + saving the bf16 model (first run only) ~30 s, the two HF loads,
  the fp32 ES centre and the fp32 GRPO trainer + AdamW ~40 s;

≈ 3-5 min in all. ``--budget-s`` (default 420, counted from after ``import torch``) drops ES
repeats and GRPO updates that would not fit (never below one of each), so the run stays inside 8
minutes even if generation is twice as slow as guessed.
The paper's settings are N=32, B=64, 2048 tokens; ratios, not absolute times, carry over.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
import traceback
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.gpu_check_lowrank import run_es_lowrank  # noqa: E402
from benchmarks.measures.common import cache_dir, parameter_count, summary, write_json  # noqa: E402
from es_lightning.models.tiny import TinyConfig  # noqa: E402

START = time.perf_counter()
GIB = 2**30
SYSTEM_PROMPT = (
    "You are a careful assistant. Read the question, work it out step by step, writing one line per "
    "step, and end with a line 'A: <number>' that holds only the final integer answer.\n"
)  # 177 characters = tokens under the character tokenizer; prompts are ~190 tokens


@dataclass(frozen=True)
class ModelShape(TinyConfig):
    """A Qwen2 shape: :class:`TinyConfig`'s fields (and its head-size check) plus the vocabulary."""

    vocab_size: int = 151936
    max_position_embeddings: int = 32768

    @property
    def name(self) -> str:
        return (
            f"qwen2-h{self.hidden_size}-l{self.num_hidden_layers}-i{self.intermediate_size}"
            f"-v{self.vocab_size}-chars-bf16"
        )


QWEN2P5_1P5B = ModelShape(
    hidden_size=1536,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
    intermediate_size=8960,
)
TINY_SHAPE = ModelShape(
    hidden_size=128,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    intermediate_size=256,
    vocab_size=1024,  # more ids than the tokenizer has, as Qwen2.5's 151936 > its 151665 tokens
    max_position_embeddings=512,
)


@dataclass(frozen=True)
class Settings:
    """What runs and how much of it (defaults: one H200 inside 8 minutes)."""

    population: int = 8
    """ES: N members per update (the paper: 32)."""
    es_batch: int = 64
    """ES: B prompts per update, shared by all members (the paper: 64)."""
    es_max_tokens: int = 128
    """ES: new tokens per response, greedy (the paper: 2048)."""
    es_repeats: int = 2
    """ES: timed repeats after the warm-up (generate-only, then the ES update)."""
    grpo_batch: int = 8
    """GRPO: prompts per update (the paper: 64)."""
    group_size: int = 8
    """GRPO: G responses per prompt at temperature 1 (the paper: 8)."""
    grpo_max_tokens: int = 128
    """GRPO: new tokens per response (the paper: 2048)."""
    grpo_updates: int = 3
    """GRPO: updates, the first of which is the warm-up."""
    budget_s: float = 420.0
    """Wall seconds for the whole run; repeats/updates that would not fit are dropped (one stays)."""
    lowrank_rank: int = 4
    """Low-rank ES: r of the members' directions (``perturbation: lowrank``; demo_cpu_lowrank: 4)."""
    process_group_backend: str | None = None
    """``nccl``/``gloo`` for the (one-rank) process group; ``None``: NCCL on CUDA, as in training."""


TINY_SETTINGS = Settings(
    population=4,
    es_batch=8,
    es_max_tokens=16,
    grpo_batch=2,
    group_size=4,
    grpo_max_tokens=16,
    budget_s=110.0,
)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} +{time.perf_counter() - START:6.1f}s] {msg}", flush=True)


def elapsed() -> float:
    return time.perf_counter() - START


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(device: torch.device, fn: Any) -> tuple[Any, float]:
    """``(fn(), seconds)`` with the device synchronised on both sides."""
    sync(device)
    t0 = time.perf_counter()
    out = fn()
    sync(device)
    return out, time.perf_counter() - t0


def reset_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def memory(device: torch.device) -> dict[str, float | None]:
    """Peak and current GPU memory (GiB) since the last :func:`reset_memory` (``None`` on CPU),
    and the process's peak RSS since it started (it cannot be reset)."""
    import resource

    rss = {"process_peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB}
    if device.type != "cuda":
        return {"peak_allocated_gib": None, "peak_reserved_gib": None, "allocated_gib": None, **rss}
    return {
        "peak_allocated_gib": torch.cuda.max_memory_allocated(device) / GIB,
        "peak_reserved_gib": torch.cuda.max_memory_reserved(device) / GIB,
        "allocated_gib": torch.cuda.memory_allocated(device) / GIB,
        **rss,
    }


def build_model(shape: ModelShape, device: torch.device) -> Path:
    """The model's folder (bf16 safetensors + the character tokenizer), built once into the bench
    cache; random weights are initialised on ``device`` (seconds on a GPU, minutes on CPU at 1.5B)."""
    from es_lightning.models.tiny import build_tiny_model

    path = cache_dir() / shape.name
    if (path / "config.json").is_file():
        return path
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    build_tiny_model(tmp, shape, vocab_size=shape.vocab_size, dtype="bfloat16", init_device=device)
    reset_memory(device)
    tmp.rename(path)
    return path


def make_module(model_path: Path, temperature: float, max_tokens: int) -> Any:
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import SamplingConfig
    from es_lightning.tasks import Arithmetic

    return ReasoningModule(
        model=str(model_path),
        task=Arithmetic(n_train=1000, n_test=10, seed=0, system_prompt=SYSTEM_PROMPT),
        dtype="auto",  # bf16 on CUDA, fp32 on CPU: the recipes' setting
        train_sampling=SamplingConfig(temperature=temperature, max_tokens=max_tokens),
    )


def run_es(device: torch.device, model_path: Path, s: Settings, grpo_follows: bool) -> dict[str, Any]:
    """ES: generate-only vs ``ESStrategy.training_step`` on the same N×B rollouts, repeated; a
    repeat that would leave GRPO (when ``grpo_follows``) too little of the budget is dropped."""
    from lightning.fabric import Fabric

    from es_lightning.es.noise import seed_schedule
    from es_lightning.rollout.hf import HFRollout
    from es_lightning.strategies import ESStrategy

    reset_memory(device)
    t_setup = time.perf_counter()
    strategy = ESStrategy(
        population_size=s.population,
        sigma=1.5e-3,  # σ and α of recipes/easy_qwen1p5b.yaml
        learning_rate=2.5e-4,
        process_group_backend=s.process_group_backend,
    )
    fabric = Fabric(accelerator=device.type, devices=1, strategy=strategy)
    fabric.launch()
    module = make_module(model_path, temperature=0.0, max_tokens=s.es_max_tokens)
    rollout = HFRollout(batch_size=s.es_batch)  # one generate call per member
    rollout.setup(module.model, fabric.device, module.torch_dtype(fabric.device), module.loading)
    strategy = fabric.strategy
    strategy.prepare(fabric, module, rollout, None)  # the fp32 centre beside the serving model
    setup_s = time.perf_counter() - t_setup
    resident = memory(device)
    log(f"ES: set up in {setup_s:.1f} s (serving {rollout.dtype}, fp32 centre)")

    rows = module.task.load("train")[: s.es_batch]
    prompt_ids = module.encode(rows)
    sampling = replace(module.train_sampling, n=1)
    outputs, warm_s = timed(device, lambda: rollout.generate(prompt_ids, replace(sampling, seed=1)))
    warm_tokens = sum(len(c.token_ids) for out in outputs for c in out.completions)
    perturb_restore = []
    for k in range(3):  # one member's perturb + restore, synchronised
        _, t = timed(
            device,
            lambda k=k: (
                rollout.es.perturb(12345 + k, 1.0, strategy.sigma),
                rollout.es.restore(),
                rollout.es.serve_centre(),  # the deferred restore, written as the next generate would
            ),
        )
        perturb_restore.append(t)
    per_member_pr = statistics.median(perturb_restore)
    log(
        f"ES: warm-up member {warm_s:.2f} s ({warm_tokens / warm_s:.0f} tokens/s), "
        f"perturb+restore {per_member_pr * 1e3:.0f} ms"
    )

    records: list[dict[str, Any]] = []
    for step in range(s.es_repeats):
        estimate = _next_es_repeat_s(records[-1], s, grpo_follows) if records else 0.0
        if records and elapsed() + estimate > s.budget_s:
            log(
                f"ES: stopping after {len(records)} repeat(s): another (~{estimate:.0f} s) would pass the budget"
            )
            break
        seed = seed_schedule(0 ^ 0x5A5A, step, s.population)[0] % (2**31)  # ESStrategy's common seed
        tokens = 0
        sync(device)
        t0 = time.perf_counter()
        for _ in range(s.population):
            outputs = rollout.generate(prompt_ids, replace(sampling, seed=seed))
            tokens += sum(len(c.token_ids) for out in outputs for c in out.completions)
        sync(device)
        generate_s = time.perf_counter() - t0
        result, es_s = timed(
            device, lambda step=step: strategy.training_step(fabric, module, rollout, rows, step, 0)
        )
        forced = result.metrics["es/skipped"] == 1.0
        if forced:  # all rewards equal (random weights score 0): time the update the step skipped
            update = _forced_update(strategy, rollout, step)
            _, update_s = timed(device, update)
            result.metrics["time/update"] += update_s  # an accumulated update's folds are in already
            es_s += update_s
        records.append(
            {
                "generate_s": generate_s,
                "es_s": es_s,
                "generate_tokens": tokens,
                "update_forced": forced,
                **{k: v for k, v in result.metrics.items() if k.startswith("time/")},
            }
        )
        log(
            f"ES: repeat {step + 1}/{s.es_repeats}: generate-only {generate_s:.2f} s "
            f"({tokens / generate_s:.0f} tokens/s), ES update {es_s:.2f} s (update {result.metrics['time/update']:.3f} s)"
        )
    peak = memory(device)
    rollout.close()
    return {
        "setup_s": setup_s,
        "serving_dtype": str(rollout.dtype),
        "prompt_tokens": summary([len(p) for p in prompt_ids]),
        "warmup_member_s": warm_s,
        "perturb_restore_per_member_s": summary(perturb_restore),
        "records": records,
        "time_per_update_s": summary([r["es_s"] for r in records]),
        "generate_only_s": summary([r["generate_s"] for r in records]),
        "tokens_per_s": summary([r["time/tokens_per_s"] for r in records]),
        "generate_only_tokens_per_s": summary([r["generate_tokens"] / r["generate_s"] for r in records]),
        "es_over_generation": summary([r["es_s"] / r["generate_s"] for r in records]),
        "update_share": summary([r["time/update"] / r["es_s"] for r in records]),
        "perturb_restore_share": summary([s.population * per_member_pr / r["es_s"] for r in records]),
        "memory_after_prepare": resident,
        "memory": peak,
    }


def _next_es_repeat_s(last: dict[str, Any], s: Settings, grpo_follows: bool) -> float:
    """Seconds another ES repeat needs, as long as the last one, plus what GRPO still needs when it
    follows: its set-up (~60 s at 1.5B) and updates of ~2.5 members' generation each (a rollout of
    G × prompts, then forward/backward over the same sequences) — a rough guess."""
    repeat = last["generate_s"] + last["es_s"]
    if not grpo_follows:
        return repeat
    per_member = last["generate_s"] / s.population
    return repeat + 60.0 + s.grpo_updates * 2.5 * per_member * s.grpo_max_tokens / s.es_max_tokens


def _forced_update(strategy: Any, rollout: Any, step: int) -> Any:
    """The update ``training_step`` skipped (to be called, and timed, by the caller), with the
    coefficients of z-scored random rewards (``benchmarks/measures/es_step.py``'s, which cannot be
    imported without vLLM). An accumulated update dropped its sums on the skip: one member is
    evaluated again here, so the update has its last fold to make, as in a real one."""
    import numpy as np

    from es_lightning.es.update import member_coefficients
    from es_lightning.strategies.es_update import accumulates, take_update

    population = strategy.population(0, step)
    rewards = np.random.default_rng(step).normal(size=population.size)
    settings = strategy
    coeffs = member_coefficients(population, rewards, settings.normalization)
    accumulated = accumulates(
        settings.update, settings.normalization, settings.reward_control, settings.perturbation
    )
    if accumulated:
        rollout.es.accumulate(True)
        rollout.es.perturb(*population.members[0], settings.sigma)
        rollout.es.record_reward(float(rewards[0]))
        rollout.es.restore()
    lr, normalization = settings.learning_rate, settings.normalization
    return lambda: take_update(strategy, rollout.es, coeffs, rewards, accumulated, lr, normalization)


def run_grpo(device: torch.device, model_path: Path, s: Settings) -> dict[str, Any]:
    """GRPO: ``GRPOStrategy.training_step`` (sample G per prompt, fwd/bwd, AdamW, weight sync)."""
    from lightning.fabric import Fabric

    from es_lightning.rollout.hf import HFRollout
    from es_lightning.strategies import GRPOStrategy

    reset_memory(device)
    t_setup = time.perf_counter()
    strategy = GRPOStrategy(
        group_size=s.group_size,
        learning_rate=1e-6,
        clip_eps=0.2,
        beta=0.0,
        loss_aggregation="sequence_mean",
        micro_batch_size=8,
        max_grad_norm=1.0,
        gradient_checkpointing=True,
        process_group_backend=s.process_group_backend,
    )
    precision = "bf16-mixed" if device.type == "cuda" else "32-true"  # the trainer's defaults
    fabric = Fabric(accelerator=device.type, devices=1, strategy=strategy, precision=precision)
    fabric.launch()
    module = make_module(model_path, temperature=1.0, max_tokens=s.grpo_max_tokens)
    rollout = HFRollout(batch_size=s.grpo_batch * s.group_size)  # one generate call per update
    rollout.setup(module.model, fabric.device, module.torch_dtype(fabric.device), module.loading)
    strategy = fabric.strategy
    strategy.total_updates = s.grpo_updates
    strategy.prepare(fabric, module, rollout, None)  # fp32 trainer model + AdamW, synced into the rollout
    setup_s = time.perf_counter() - t_setup
    resident = memory(device)
    log(f"GRPO: set up in {setup_s:.1f} s ({precision})")

    rows = module.task.load("train")[: s.grpo_batch]
    records = []
    for step in range(s.grpo_updates):
        if len(records) >= 2 and elapsed() + records[-1]["step_s"] > s.budget_s:
            log(f"GRPO: stopping after {len(records)} updates: another would pass the budget")
            break
        result, step_s = timed(
            device, lambda step=step: strategy.training_step(fabric, module, rollout, rows, step, 0)
        )
        m = result.metrics
        records.append(
            {"step_s": step_s, **{k: v for k, v in m.items() if k.startswith(("time/", "train/", "grpo/"))}}
        )
        log(
            f"GRPO: update {step + 1}/{s.grpo_updates}{' (warm-up)' if step == 0 else ''}: {step_s:.2f} s "
            f"(generate {m['time/generate']:.2f}, train {m['time/train']:.2f}, sync {m['time/sync']:.3f}; "
            f"{m['time/tokens_per_s']:.0f} tokens/s)"
        )
    peak = memory(device)
    rollout.close()
    timed_records = records[1:] or records  # the warm-up is left out when anything else ran
    return {
        "setup_s": setup_s,
        "precision": precision,
        "records": records,
        "timed_updates": len(timed_records),
        "time_per_update_s": summary([r["step_s"] for r in timed_records]),
        "tokens_per_s": summary([r["time/tokens_per_s"] for r in timed_records]),
        "parts_s": {
            k: summary([r[f"time/{k}"] for r in timed_records])
            for k in ("generate", "score", "train", "sync")
        },
        "memory_after_prepare": resident,
        "memory": peak,
    }


def _fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def _median(d: dict[str, Any] | None, key: str, spec: str = ".2f") -> str:
    if not d or key not in d:
        return "-"
    stats = d[key]
    if stats["median"] is None:
        return "-"
    spread = f" [{format(stats['min'], spec)}-{format(stats['max'], spec)}]" if stats["n"] > 1 else ""
    return f"{format(stats['median'], spec)}{spread}"


def _count(n: int) -> str:
    return f"{n / 1e9:.3f}B" if n >= 1e8 else f"{n / 1e6:.2f}M"


def markdown(results: dict[str, Any]) -> str:
    ok = {k: d for k in ("es", "es_lowrank", "grpo") if (d := results.get(k)) and "error" not in d}
    es, grpo, low = ok.get("es"), ok.get("grpo"), ok.get("es_lowrank")

    def mem(d: dict[str, Any] | None, key: str) -> str:
        return "-" if not d else _fmt(d["memory"][key])

    parts = "-"
    if grpo:
        parts = ", ".join(f"{k} {_fmt(v['median'])}" for k, v in grpo["parts_s"].items())
    rows = [
        (
            "updates timed",
            str(len(es["records"])) if es else "-",
            str(grpo["timed_updates"]) if grpo else "-",
        ),
        ("time per update (s)", _median(es, "time_per_update_s"), _median(grpo, "time_per_update_s")),
        (
            "generated tokens/s (in the update)",
            _median(es, "tokens_per_s", ".0f"),
            _median(grpo, "tokens_per_s", ".0f"),
        ),
        ("generate-only tokens/s (no perturbation)", _median(es, "generate_only_tokens_per_s", ".0f"), "-"),
        ("es_over_generation", _median(es, "es_over_generation", ".3f"), "-"),
        ("update share (noise + apply)", _median(es, "update_share", ".4f"), "-"),
        ("perturb + restore share", _median(es, "perturb_restore_share", ".4f"), "-"),
        ("GRPO parts (s, median)", "-", parts),
        ("low-rank ES: time per update (s)", _median(low, "time_per_update_s"), "-"),
        (
            "low-rank ES: lowrank_population_over_plain_batch",
            _median(low, "lowrank_population_over_plain_batch", ".3f"),
            "-",
        ),
        (
            "low-rank ES: lowrank_over_fullrank_update",
            _median(low, "lowrank_over_fullrank_update", ".3f"),
            "-",
        ),
        ("low-rank ES: peak GPU memory allocated (GiB)", mem(low, "peak_allocated_gib"), "-"),
        ("peak GPU memory allocated (GiB)", mem(es, "peak_allocated_gib"), mem(grpo, "peak_allocated_gib")),
        ("peak GPU memory reserved (GiB)", mem(es, "peak_reserved_gib"), mem(grpo, "peak_reserved_gib")),
    ]
    s = results["settings"]
    lines = [
        f"GPU check on {results['machine']['device_name']}: {results['model']['name']} "
        f"({_count(results['model']['parameters'])} parameters, random weights), HF rollout",
        f"ES: N={s['population']}, B={s['es_batch']}, {s['es_max_tokens']} tokens, greedy; "
        f"GRPO: {s['grpo_batch']} prompts x G={s['group_size']}, {s['grpo_max_tokens']} tokens, T=1",
        "",
        "| measure | ES | GRPO |",
        "|---|---|---|",
        *(f"| {a} | {b} | {c} |" for a, b, c in rows),
    ]
    lines += [
        f"\n{k.upper()} failed: {results[k]['error']}"
        for k in ("es", "es_lowrank", "grpo")
        if results.get(k, {}).get("error")
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="CPU, tiny model, tiny sizes (checks the script)")
    out = os.environ.get("OUT")
    parser.add_argument(
        "--json",
        type=Path,
        default=Path(out) / "gpu_check.json" if out else Path("runs/gpu_check.json"),
        help="results file (default: $OUT/gpu_check.json when $OUT is set, else runs/gpu_check.json)",
    )
    parser.add_argument("--only", choices=("es", "es_lowrank", "grpo"), help="run one phase only")
    parser.add_argument(
        "--process-group-backend",
        choices=("nccl", "gloo"),
        help="the strategies' process group (default: the trainer's, NCCL on CUDA, gloo on CPU)",
    )
    for f in fields(Settings):  # every size; unset keeps the preset's (Settings() or TINY_SETTINGS)
        if f.name == "process_group_backend":
            continue
        gpu, tiny = getattr(Settings(), f.name), getattr(TINY_SETTINGS, f.name)
        flag = f"--{f.name.replace('_', '-')}"
        parser.add_argument(flag, type=type(gpu), help=f"default {gpu} (--tiny: {tiny})")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not args.tiny and not torch.cuda.is_available():
        raise SystemExit(
            f"gpu_check: CUDA is not available (torch {torch.__version__}, built for CUDA "
            f"{torch.version.cuda}); this benchmark needs an NVIDIA GPU. Use --tiny for the CPU-sized "
            "run that checks the script."
        )
    preset = TINY_SETTINGS if args.tiny else Settings()
    sizes = replace(
        preset,
        **{f.name: getattr(args, f.name) for f in fields(Settings) if getattr(args, f.name) is not None},
    )
    shape = TINY_SHAPE if args.tiny else QWEN2P5_1P5B
    device = torch.device("cpu") if args.tiny else torch.device("cuda", 0)
    import lightning
    import transformers

    transformers.utils.logging.disable_progress_bar()  # the progress lines below say what runs

    results: dict[str, Any] = {
        "complete": False,
        "settings": asdict(sizes),
        "model": {**asdict(shape), "name": shape.name},
        "machine": {
            "device_name": torch.cuda.get_device_name(device)
            if device.type == "cuda"
            else f"CPU ({os.cpu_count()} cores)",
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "transformers": transformers.__version__,
            "lightning": lightning.__version__,
        },
    }
    log(f"gpu_check on {results['machine']['device_name']}: {sizes}")
    model_path, build_s = timed(device, lambda: build_model(shape, device))
    results["model"].update(path=str(model_path), build_s=build_s, parameters=parameter_count(model_path))
    log(f"model ready in {build_s:.1f} s ({_count(results['model']['parameters'])} parameters): {model_path}")

    phases = {"es": lambda: run_es(device, model_path, sizes, grpo_follows=args.only is None)}
    phases["es_lowrank"] = lambda: run_es_lowrank(  # leaves GRPO a third of what is left
        sys.modules[__name__],
        device,
        model_path,
        sizes,
        results.get("es"),
        (sizes.budget_s - elapsed()) * (1 if args.only else 2 / 3),
    )
    phases["grpo"] = lambda: run_grpo(device, model_path, sizes)
    failed = []
    for name, run in phases.items():
        if args.only not in (None, name):
            continue
        try:
            results[name] = run()
        except Exception as error:  # one strategy failing still leaves the other's numbers
            failed.append(name)
            results[name] = {"error": f"{type(error).__name__}: {error}", "traceback": traceback.format_exc()}
            log(f"{name.upper()} FAILED:\n{results[name]['traceback']}")
        reset_memory(device)
        write_json(args.json, results)
    results.update(complete=not failed, wall_s=elapsed())
    results["markdown"] = markdown(results)
    write_json(args.json, results)
    log(f"done in {elapsed():.0f} s; results in {args.json}")
    print("\n" + results["markdown"], flush=True)
    if failed:
        raise SystemExit(f"gpu_check: {', '.join(failed)} failed (tracebacks above and in {args.json})")


if __name__ == "__main__":
    main()
