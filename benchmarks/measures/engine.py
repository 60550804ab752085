"""Raw generation throughput: one vLLM engine, two at once, transformers, and LoRA populations.

    python -m benchmarks.measures.engine --role single --model PATH --prompts 64 --out a.json

Roles (each its own process, so engine start order and thread settings are the process's own):

* ``single``: one engine bound to ``--bind`` (default both cores) generates the prompts
  ``--repeats`` times (engine alone); then this process does trainer-like torch work (a forward
  and backward of the model through transformers on 2 threads), and the engine generates again
  (engine with trainer).
* ``part``: one engine bound to ``--bind`` generates its share ``--part i/k`` of the prompts,
  starting when the file ``--go`` appears (two such processes run side by side).
* ``hf``: ``HFRollout`` (transformers ``generate``, ``torch.set_num_threads(2)``), same prompts.
* ``lora``: one engine with ``enable_lora`` serves ``--adapters`` random rank-8 adapters: all of
  them in one ``generate`` call (one request per adapter and prompt).

Prompts are GSM8K test questions in slices of ``--prompts``: the warm-up takes the first slice and
timed repeat r slice r + 1, the same slices on every side (the engine-with-trainer phase repeats
the engine-alone slices); vLLM's prefix cache is emptied before each timed generation, so none
reuses another's prompt KV; request j of a slice has seed 11 + j on every side.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from benchmarks.measures.common import gsm8k_task, resolve, summary, write_json


def _module(model: str, max_tokens: int):
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import SamplingConfig

    return ReasoningModule(
        model=resolve(model),
        task=gsm8k_task(),
        dtype="float32",
        train_sampling=SamplingConfig(temperature=1.0, max_tokens=max_tokens, seed=11),
    )


def _timed(rollout, slices, sampling) -> list[tuple[float, int]]:
    """(seconds, generated tokens) of generating each prompt slice in turn; a vLLM engine's prefix
    cache is emptied first, so no generation reuses an earlier one's prompt KV."""
    out = []
    for prompts in slices:
        llm = getattr(rollout, "llm", None)
        if llm is not None:
            llm.reset_prefix_cache()
        t0 = time.perf_counter()
        outputs = rollout.generate(prompts, sampling)
        seconds = time.perf_counter() - t0
        out.append((seconds, sum(len(c.token_ids) for o in outputs for c in o.completions)))
    return out


def _throughput(runs: list[tuple[float, int]]) -> dict:
    return {
        "seconds": summary([s for s, _ in runs]),
        "tokens": [t for _, t in runs],
        "tokens_per_s": summary([t / s for s, t in runs]),
    }


def _trainer_torch_work(model_path: str, seconds: float) -> float:
    """Forward + backward passes of the model in this process on 2 threads for ~``seconds``."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(2)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    ids = torch.randint(3, 90, (4, 256))
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        model(input_ids=ids, labels=ids).loss.backward()
    return time.perf_counter() - t0


def _vllm(model_path: str, bind: str, **engine_kwargs):
    import torch

    from es_lightning.rollout.vllm import VLLMRollout

    rollout = VLLMRollout(
        gpu_memory_utilization=0.1, max_model_len=2048, cpu_threads_bind=bind, engine_kwargs=engine_kwargs
    )
    rollout.setup(model_path, torch.device("cpu"), torch.float32, None)
    t0 = time.perf_counter()
    rollout.start()
    return rollout, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", choices=["single", "part", "hf", "lora"], required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--bind", default="0-1")
    parser.add_argument("--part", default="0/1", help="i/k: this process's share of the prompts")
    parser.add_argument("--go", help="file whose appearance starts the timed part (role part)")
    parser.add_argument("--torch-work-s", type=float, default=5.0)
    parser.add_argument("--adapters", help="folder of adapter_0..adapter_{N-1} (role lora)")
    parser.add_argument("--long-prompts", type=int, default=0, help="role single: also time these prompts")
    parser.add_argument("--long-n", type=int, default=8, help="... with this many samples each")
    parser.add_argument("--long-tokens", type=int, default=128, help="... of this many tokens")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    from dataclasses import replace

    module = _module(args.model, args.max_tokens)
    p, r = args.prompts, args.repeats
    rows = module.task.load("test")[: p * (1 + r) + args.long_prompts]
    prompts = module.encode(rows)
    slices = [prompts[i * p : (i + 1) * p] for i in range(1 + r)]
    sampling = module.train_sampling
    result: dict = {"role": args.role, "prompts": p, "max_tokens": args.max_tokens}

    if args.role == "hf":
        import torch

        from es_lightning.rollout.hf import HFRollout

        torch.set_num_threads(2)
        rollout = HFRollout(batch_size=p)
        rollout.setup(module.model, torch.device("cpu"), torch.float32)
        rollout.generate(slices[0][:8], sampling)  # warm-up
        result["hf"] = _throughput(_timed(rollout, slices[1 : 1 + r], sampling))
    elif args.role == "single":
        rollout, result["engine_start_s"] = _vllm(module.model, args.bind)
        rollout.generate(slices[0], sampling)  # warm-up
        result["alone"] = _throughput(_timed(rollout, slices[1 : 1 + r], sampling))
        if args.long_prompts:  # GSM8K-shaped sampling: n samples per prompt, long completions
            long = replace(sampling, n=args.long_n, max_tokens=args.long_tokens)
            result["long"] = _throughput(_timed(rollout, [prompts[-args.long_prompts :]], long))
            result["long"] |= {"prompts": args.long_prompts, "n": args.long_n, "max_tokens": args.long_tokens}
        result["torch_work_s"] = _trainer_torch_work(module.model, args.torch_work_s)
        result["with_trainer"] = _throughput(_timed(rollout, slices[1 : 1 + r], sampling))
        rollout.close()
    elif args.role == "part":
        i, k = (int(x) for x in args.part.split("/"))
        share = p // k
        mine = [s[i * share : (i + 1) * share] for s in slices[: 1 + r]]
        own = replace(sampling, seed=sampling.seed + i * share)  # request j of the slice keeps seed 11 + j
        rollout, result["engine_start_s"] = _vllm(module.model, args.bind)
        rollout.generate(mine[0], own)  # warm-up
        Path(args.out + ".ready").touch()
        while not Path(args.go).exists():
            time.sleep(0.05)
        t_all = time.perf_counter()
        runs = _timed(rollout, mine[1:], own)
        result["total_s"] = time.perf_counter() - t_all
        result["part"] = _throughput(runs)
        rollout.close()
    else:
        result.update(_lora(module, slices[0], sampling, args))
    write_json(args.out, result)
    os._exit(0)  # engines are closed; skip slow interpreter teardown of vLLM's threads


def _lora(module, prompts, sampling, args) -> dict:
    """One engine with LoRA: N adapters x P prompts in one generate call (after a warm-up call)."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt
    from vllm.lora.request import LoRARequest

    folders = sorted(Path(args.adapters).glob("adapter_*"), key=lambda p: int(p.name.split("_")[1]))
    n = len(folders)
    rollout, start_s = _vllm(
        module.model, args.bind, enable_lora=True, max_loras=n, max_lora_rank=8, max_cpu_loras=n
    )
    llm = rollout.llm
    requests, params, loras = [], [], []
    for a, folder in enumerate(folders):
        for j, p in enumerate(prompts):
            requests.append(TokensPrompt(prompt_token_ids=list(p)))
            params.append(
                SamplingParams(temperature=1.0, max_tokens=sampling.max_tokens, seed=sampling.seed + j)
            )
            loras.append(LoRARequest(f"member{a}", a + 1, str(folder)))
    llm.generate(requests, params, lora_request=loras, use_tqdm=False)  # warm-up: loads the adapters
    runs = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        results = llm.generate(requests, params, lora_request=loras, use_tqdm=False)
        runs.append((time.perf_counter() - t0, sum(len(c.token_ids) for r in results for c in r.outputs)))
    plain = []
    for _ in range(args.repeats):  # the same requests without adapters, in the same engine
        t0 = time.perf_counter()
        results = llm.generate(requests, params, use_tqdm=False)
        plain.append((time.perf_counter() - t0, sum(len(c.token_ids) for r in results for c in r.outputs)))
    rollout.close()
    return {
        "adapters": n,
        "engine_start_s": start_s,
        "lora_batch": _throughput(runs),
        "no_lora_batch": _throughput(plain),
    }


if __name__ == "__main__":
    main()
