"""CUDA checks at real model size (random-initialised, nothing downloaded). Skipped without a GPU.

Run where a GPU is present: ``python -m pytest tests/gpu -q``.
"""

from __future__ import annotations

import time

import pytest
import torch

pytestmark = [pytest.mark.cuda, pytest.mark.usefixtures("fresh_process_group")]

QWEN_1P5B = dict(
    vocab_size=151936,
    hidden_size=1536,
    intermediate_size=8960,
    num_hidden_layers=28,
    num_attention_heads=12,
    num_key_value_heads=2,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
)


def _real_size_model(dtype: torch.dtype):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(Qwen2Config(**QWEN_1P5B, dtype="float32"))
    return model.to(dtype).eval()


def _writer(model):
    params = dict(model.named_parameters())

    @torch.no_grad()
    def write(named):
        for name, tensor in named:
            params[name].copy_(tensor)

    return write


@torch.no_grad()
def test_bf16_exact_restore_and_es_update_at_1p5b():
    from es_lightning.es.noise import noise_like
    from es_lightning.es.weights import ESWeights

    model = _real_size_model(torch.bfloat16)
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params > 1.4e9
    snapshot = {n: p.clone() for n, p in model.named_parameters()}
    master = {n: p.float() for n, p in model.named_parameters()}
    es = ESWeights(master, _writer(model), torch.bfloat16)
    ids = torch.randint(0, 1000, (2, 32), device="cuda")
    logits_before = model(ids).logits
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(20):
        es.perturb(seed=i, sign=1.0, sigma=1.5e-3)
        es.restore()
        es.serve_centre()
    torch.cuda.synchronize()
    per_cycle = (time.perf_counter() - t0) / 20
    assert all(torch.equal(p, snapshot[n]) for n, p in model.named_parameters())
    assert torch.equal(model(ids).logits, logits_before)
    print(f"\n[cuda] {n_params / 1e9:.2f}B params, perturb+restore {per_cycle * 1e3:.0f} ms/cycle")

    # naive in-place bf16 add/sub drifts (the public code's habit), ours does not
    name, p = next(iter(model.named_parameters()))
    eps = noise_like(0, name, p.shape, p.device)
    naive = p.clone()
    naive.add_((1.5e-3 * eps).to(torch.bfloat16)).sub_((1.5e-3 * eps).to(torch.bfloat16))
    assert not torch.equal(naive, p)

    coeffs = {s: float(z) for s, z in zip(range(100, 132), torch.linspace(-1.5, 1.5, 32))}
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    norm = es.update(coeffs, lr=2.5e-4, population_size=32)
    torch.cuda.synchronize()
    print(f"[cuda] ES update (N=32) {time.perf_counter() - t0:.2f} s, |Δ| = {norm:.4f}")
    # reference on one tensor in float64
    name = "model.layers.0.self_attn.q_proj.weight"
    ref = sum(c * noise_like(s, name, snapshot[name].shape, "cuda").double() for s, c in coeffs.items())
    start = snapshot[name].float().double()
    assert torch.allclose(es.master[name].double(), start + 2.5e-4 / 32 * ref, atol=1e-6)
    assert torch.equal(dict(model.named_parameters())[name], es.master[name].to(torch.bfloat16))


@pytest.fixture(scope="module")
def body_1p5b(tmp_path_factory):
    """A Qwen2.5-1.5B-sized body (28 layers, hidden 1536) with the tiny character vocabulary, saved
    in bf16 so the rollout and the trainer load real files (~2.6 GB)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from es_lightning.models.tiny import build_tokenizer

    tok = build_tokenizer()
    path = tmp_path_factory.mktemp("body1p5b")
    config = Qwen2Config(
        **{**QWEN_1P5B, "vocab_size": len(tok)}, bos_token_id=1, eos_token_id=2, pad_token_id=0
    )
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _echo_module(path, temperature):
    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import SamplingConfig
    from es_lightning.tasks import Echo

    return ReasoningModule(
        model=str(path),
        task=Echo(length=4, n_train=8),
        train_sampling=SamplingConfig(temperature=temperature, max_tokens=8),
    )


def test_es_strategy_step_on_cuda_with_nccl(body_1p5b):
    from lightning.fabric import Fabric

    from es_lightning.rollout.hf import HFRollout
    from es_lightning.strategies import ESStrategy

    fabric = Fabric(
        accelerator="cuda", devices=1, strategy=ESStrategy(population_size=8, sigma=1e-2, learning_rate=5e-3)
    )
    fabric.launch()
    module = _echo_module(body_1p5b, temperature=0.0)
    rollout = HFRollout(batch_size=64)
    rollout.setup(str(body_1p5b), fabric.device, module.torch_dtype(fabric.device))
    assert rollout.dtype == torch.bfloat16
    fabric.strategy.prepare(fabric, module, rollout, None)
    before = rollout.es.checksum()
    t0 = time.perf_counter()
    metrics = fabric.strategy.training_step(
        fabric, module, rollout, module.task.load("train")[:4], 0, 0
    ).metrics
    print(
        f"\n[cuda] ES step N=8 B=4 on {sum(p.numel() for p in rollout.model.parameters()) / 1e9:.2f}B: "
        f"{time.perf_counter() - t0:.1f} s, metrics {metrics}"
    )
    served = dict(rollout.model.named_parameters())
    assert all(torch.equal(served[n], m.to(torch.bfloat16)) for n, m in rollout.es.master.items())
    assert metrics["es/skipped"] == 1.0 or rollout.es.checksum() != before


def test_grpo_step_on_cuda_bf16_autocast(body_1p5b):
    from lightning.fabric import Fabric

    from es_lightning.rollout.hf import HFRollout
    from es_lightning.strategies import GRPOStrategy

    fabric = Fabric(
        accelerator="cuda",
        devices=1,
        precision="bf16-mixed",
        strategy=GRPOStrategy(
            group_size=4, learning_rate=1e-5, micro_batch_size=8, gradient_checkpointing=True
        ),
    )
    fabric.launch()
    module = _echo_module(body_1p5b, temperature=1.0)
    rollout = HFRollout(batch_size=64)
    rollout.setup(str(body_1p5b), fabric.device, torch.bfloat16)
    strategy = fabric.strategy
    strategy.prepare(fabric, module, rollout, None)
    trained = strategy._unwrapped()
    assert next(trained.parameters()).dtype == torch.float32  # fp32 master weights, bf16 autocast compute
    start = {n: p.detach().clone() for n, p in trained.named_parameters()}
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    metrics = strategy.training_step(fabric, module, rollout, module.task.load("train")[:4], 0, 0).metrics
    print(
        f"\n[cuda] GRPO step G=4 B=4: {time.perf_counter() - t0:.1f} s, peak {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB, "
        f"metrics {metrics}"
    )
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values())
    moved = sum(not torch.equal(start[n], p.detach()) for n, p in trained.named_parameters())
    assert moved > 0.9 * len(start)
    served = dict(rollout.model.named_parameters())
    assert all(torch.equal(served[n], p.detach().to(torch.bfloat16)) for n, p in trained.named_parameters())


def test_grpo_fsdp_step_syncs_full_weights_saves_and_resumes(body_1p5b, tmp_path):
    """One FSDP rank: a step, the engine gets the gathered weights, a checkpoint through the
    weights layer, then a second strategy resumes it with the optimizer state loaded by Fabric."""
    from lightning.fabric import Fabric
    from safetensors.torch import load_file

    from es_lightning.checkpoint import Checkpoint, save_checkpoint, write_model_meta
    from es_lightning.rollout.hf import HFRollout
    from es_lightning.strategies import GRPOFSDPStrategy

    def launch():
        fabric = Fabric(
            accelerator="cuda",
            devices=1,
            precision="bf16-mixed",
            strategy=GRPOFSDPStrategy(group_size=4, learning_rate=1e-5, micro_batch_size=8),
        )
        fabric.launch()
        return fabric, fabric.strategy

    fabric, strategy = launch()
    module = _echo_module(body_1p5b, temperature=1.0)
    rollout = HFRollout(batch_size=64)
    rollout.setup(str(body_1p5b), fabric.device, torch.bfloat16)
    strategy.prepare(fabric, module, rollout, None)
    start = {n: t.clone() for n, t in strategy.named_weights(rollout)}
    assert set(start) == {n for n, _ in rollout.model.named_parameters()}
    t0 = time.perf_counter()
    metrics = strategy.training_step(fabric, module, rollout, module.task.load("train")[:4], 0, 0).metrics
    print(f"\n[cuda] GRPO-FSDP step G=4 B=4: {time.perf_counter() - t0:.1f} s, metrics {metrics}")
    weights = dict(strategy.named_weights(rollout))
    assert sum(not torch.equal(start[n], w) for n, w in weights.items()) > 0.9 * len(start)
    served = dict(rollout.model.named_parameters())
    assert all(torch.equal(served[n], w.to(torch.bfloat16)) for n, w in weights.items())
    meta = write_model_meta(str(body_1p5b), module.tokenizer, torch.bfloat16, tmp_path / "meta")
    folder = save_checkpoint(
        tmp_path / "run",
        1,
        strategy.named_weights(rollout),
        serving_dtype=torch.bfloat16,
        meta_dir=meta,
        strategy_name=strategy.strategy_name,
        write_state=lambda f: strategy.save_state(fabric, rollout, f),
        trainer_state={},
    )
    saved = load_file(folder / "grpo_state" / "master.safetensors")
    assert all(torch.equal(saved[n], w.cpu()) for n, w in weights.items())
    moments = {k: v["exp_avg"].clone() for k, v in strategy.optimizer.state_dict()["state"].items()}

    fabric2, resumed = launch()
    resumed.prepare(fabric2, module.with_model(str(folder)), rollout, Checkpoint(folder))
    again = dict(resumed.named_weights(rollout))
    assert all(torch.equal(again[n], w) for n, w in weights.items())
    state = resumed.optimizer.state_dict()["state"]
    assert state and all(torch.equal(state[k]["exp_avg"], m) for k, m in moments.items())


@pytest.mark.integration
def test_cli_smoke_run_on_cuda(tmp_path):
    """The whole trainer on a GPU through the CLI (HF rollout: vLLM is not installed here)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from tests.helpers import subprocess_env

    jsonargparse = pytest.importorskip("jsonargparse")
    del jsonargparse
    repo = Path(__file__).resolve().parents[2]
    for recipe, name in (("smoke_cpu.yaml", "es"), ("smoke_cpu_grpo.yaml", "grpo")):
        out = tmp_path / name
        cmd = [
            sys.executable,
            "-m",
            "es_lightning",
            "fit",
            "--config",
            str(repo / "recipes" / recipe),
            "--rollout",
            "es_lightning.rollout.hf.HFRollout",
            "--trainer.accelerator",
            "cuda",
            "--module.dtype",
            "auto",
            "--trainer.max_steps",
            "6",
            "--trainer.output_dir",
            str(out),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=subprocess_env(), timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
        train = [m for m in lines if "train/reward_mean" in m]
        print(f"[cuda] CLI {name}: rewards {[round(m['train/reward_mean'], 3) for m in train]}")
        assert len(train) == 6 and (out / "checkpoints" / "step-000006" / "model.safetensors").is_file()
        config = json.loads((out / "checkpoints" / "step-000006" / "config.json").read_text())
        assert config.get("dtype", config.get("torch_dtype")) == "bfloat16"


@pytest.mark.integration
def test_cpu_demo_recipe_runs_unchanged_on_cuda(tmp_path):
    """recipes/demo_cpu.yaml on a GPU (bf16 serving, HF rollout), 10 of its 30 updates."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    from tests.helpers import subprocess_env

    pytest.importorskip("jsonargparse")
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "demo"
    cmd = [sys.executable, "-m", "es_lightning", "fit", "--config", str(repo / "recipes" / "demo_cpu.yaml")]
    cmd += ["--rollout", "es_lightning.rollout.hf.HFRollout", "--trainer.accelerator", "cuda"]
    cmd += ["--module.dtype", "auto", "--trainer.max_steps", "10", "--trainer.output_dir", str(out)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=subprocess_env(), timeout=500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    train = [m for m in lines if "train/reward_mean" in m]
    evals = [m for m in lines if "eval/arithmetic/pass@1" in m]
    print(
        f"[cuda] demo_cpu 10 updates in {time.perf_counter() - start:.0f} s: rewards "
        f"{[round(m['train/reward_mean'], 3) for m in train]}, pass@1 "
        f"{evals[0]['eval/arithmetic/pass@1']:.3f} -> {evals[-1]['eval/arithmetic/pass@1']:.3f}, greedy "
        f"{evals[0]['eval/arithmetic/greedy']:.3f} -> {evals[-1]['eval/arithmetic/greedy']:.3f}"
    )
    assert len(train) == 10 and len(evals) == 2
    assert all(m["es/skipped"] == 0 for m in train) and evals[0]["eval/arithmetic/pass@1"] > 0.2
    config = json.loads((out / "checkpoints" / "step-000010" / "config.json").read_text())
    assert config.get("dtype", config.get("torch_dtype")) == "bfloat16"


@torch.no_grad()
def test_streamed_checkpoint_of_a_1p5b_centre(tmp_path):
    """The ES centre of a real-size model streamed out of its engine into a sharded checkpoint."""
    from es_lightning.es.weights import ESWeights
    from es_lightning.weight_files import iter_weights, master_files, served_files, write_weights

    model = _real_size_model(torch.bfloat16)
    es = ESWeights({n: p.float() for n, p in model.named_parameters()}, _writer(model), torch.bfloat16)
    es.update({1: 0.5, 2: -1.0}, lr=1e-3, population_size=2)
    t0 = time.perf_counter()
    streamed = ((n, m.detach().to("cpu")) for n, m in es.master.items())
    count = write_weights(tmp_path, streamed, torch.bfloat16, tmp_path / "es_state", shard_bytes=2 * 2**30)
    elapsed = time.perf_counter() - t0
    print(f"\n[cuda] streamed checkpoint of {count} tensors (1.54B fp32 master + bf16): {elapsed:.1f} s")
    assert len(master_files(tmp_path)) >= 3 and len(served_files(tmp_path)) >= 2  # 6.2 GB fp32, 3.1 GB bf16
    for name, tensor in iter_weights(master_files(tmp_path)):
        assert torch.equal(tensor, es.master[name].cpu()), name


@pytest.mark.integration
def test_instruments_on_cuda(tmp_path):
    """TokenEntropy, ParameterDrift, LayerAttribution and PopulationDiversity through the CLI on a GPU."""
    import json
    import subprocess
    import sys

    from tests.helpers import subprocess_env

    pytest.importorskip("jsonargparse")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        """
module:
  model: es-lightning/tiny-random
  task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 16, n_test: 8}}
  train_sampling: {temperature: 1.0, max_tokens: 6}
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {population_size: 8, sigma: 0.05, learning_rate: 0.05}
rollout: {class_path: es_lightning.rollout.hf.HFRollout}
trainer: {batch_size: 4, seed: 3, accelerator: cuda, progress_bar: false, checkpoint_every: 2, max_steps: 4}
evaluation: null
callbacks:
  - {class_path: es_lightning.callbacks.TokenEntropy, init_args: {every_n_updates: 2, num_prompts: 4, max_tokens: 6}}
  - {class_path: es_lightning.callbacks.ParameterDrift, init_args: {every_n_updates: 2}}
  - {class_path: es_lightning.callbacks.LayerAttribution, init_args: {top_k: 10}}
  - {class_path: es_lightning.callbacks.PopulationDiversity, init_args: {every_n_updates: 2, num_prompts: 2, samples_per_prompt: 2}}
"""
    )
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "es_lightning",
        "fit",
        "--config",
        str(recipe),
        "--trainer.output_dir",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    keys = {k for m in lines for k in m}
    print(
        f"[cuda] instruments: {sorted(k for k in keys if k.split('/')[0] in ('entropy', 'drift', 'diversity'))}"
    )
    assert {"entropy/echo", "drift/rel_l2", "diversity/js", "attribution/top_k/norm"} <= keys
    assert (out / "analysis" / "attribution-step-000004.json").is_file()
