"""GRPOStrategy on the tiny model: parameters move, reward rises, the engine gets the new weights."""

from __future__ import annotations

import pytest
import torch
from lightning.fabric import Fabric
from transformers import AutoTokenizer

from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import SamplingConfig
from es_lightning.strategies import GRPOStrategy
from es_lightning.tasks import Echo

pytestmark = pytest.mark.usefixtures("fresh_process_group")


def _setup(tiny_model_path, rollout, **kwargs):
    fabric = Fabric(accelerator="cpu", devices=1, strategy=GRPOStrategy(**kwargs))
    fabric.launch()
    module = ReasoningModule(
        model=str(tiny_model_path),
        task=Echo(length=4, n_train=64, n_test=8),
        train_sampling=SamplingConfig(temperature=1.0, max_tokens=8),
    )
    fabric.strategy.prepare(fabric, module, rollout, None)
    return fabric, fabric.strategy, module


@pytest.mark.slow
def test_steps_change_parameters_and_raise_reward(tiny_model_path, hf_rollout):
    fabric, strategy, module = _setup(
        tiny_model_path, hf_rollout, group_size=8, learning_rate=3e-3, micro_batch_size=32
    )
    rows = module.task.load("train")
    before = {n: p.detach().clone() for n, p in strategy._unwrapped().named_parameters()}
    rewards = []
    for step in range(12):
        batch = rows[(step * 16) % 64 : (step * 16) % 64 + 16]
        metrics = strategy.training_step(fabric, module, hf_rollout, batch, step, run_seed=0).metrics
        rewards.append(metrics["train/reward_mean"])
        assert 0.0 <= metrics["grpo/clip_frac"] <= 1.0 and metrics["train/entropy"] > 0
        assert metrics["grpo/kl"] == 0.0  # beta = 0: no reference model
    after = dict(strategy._unwrapped().named_parameters())
    assert all(not torch.equal(before[n], after[n].detach()) for n in before), "every parameter should move"
    assert sum(rewards[-4:]) / 4 > sum(rewards[:4]) / 4 + 0.05, rewards


def test_kl_to_reference_is_logged_when_beta_positive(tiny_model_path, hf_rollout):
    fabric, strategy, module = _setup(
        tiny_model_path, hf_rollout, group_size=4, learning_rate=1e-2, beta=0.1, inner_iterations=2
    )
    rows = module.task.load("train")[:8]
    strategy.training_step(fabric, module, hf_rollout, rows, 0, run_seed=0)
    metrics = strategy.training_step(fabric, module, hf_rollout, rows, 1, run_seed=0).metrics
    assert metrics["grpo/kl"] > 0.0  # the policy has moved away from the frozen start


@pytest.mark.vllm
def test_engine_serves_the_trained_weights_after_sync(tiny_model_path, vllm_rollout):
    fabric, strategy, module = _setup(
        tiny_model_path, vllm_rollout, group_size=4, learning_rate=1e-2, micro_batch_size=32
    )
    rows = module.task.load("train")[:8]
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    prompts = [tok(f"Repeat: {1000 + 7 * i}\n").input_ids for i in range(6)]
    greedy = SamplingConfig(temperature=0.0, max_tokens=10)
    base = [o.completions[0].token_ids for o in vllm_rollout.generate(prompts, greedy)]
    for step in range(3):
        strategy.training_step(fabric, module, vllm_rollout, rows, step, run_seed=1)
    engine = [o.completions[0].token_ids for o in vllm_rollout.generate(prompts, greedy)]
    model = strategy._unwrapped().eval()
    with torch.no_grad():
        trained = []
        for ids in prompts:
            out = model.generate(
                torch.tensor([ids]), max_new_tokens=10, do_sample=False, eos_token_id=2, pad_token_id=0
            )
            trained.append(out[0, len(ids) :].tolist())
    assert engine != base, "the trained weights should change the greedy outputs"
    assert [e == t[: len(e)] for e, t in zip(engine, trained)] == [True] * len(prompts)
    served = vllm_rollout.checksum()
    assert served == pytest.approx(sum(p.double().sum().item() for p in model.parameters()), rel=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(group_size=1), "group_size"),
        (dict(clip_eps=1.5), "clip_eps"),
        (dict(advantage="mean"), "advantage"),
        (dict(loss_aggregation="sum"), "loss_aggregation"),
        (dict(inner_iterations=0), "inner_iterations"),
        (dict(weight_decay=-0.1), r"weight_decay=-0.1 \(must be >= 0\)"),
        (dict(adam_betas=(0.9, 1.5)), r"adam_betas=\[0.9, 1.5\]"),
        (dict(max_grad_norm=0.0), "max_grad_norm"),
        (dict(group_size=1, clip_eps=2.0), r"group_size=1 \(must be >= 2\); clip_eps=2.0"),
    ],
)
def test_bad_settings_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        GRPOStrategy(**kwargs)


def test_registered_with_fabric_by_name():
    assert isinstance(Fabric(accelerator="cpu", devices=1, strategy="grpo").strategy, GRPOStrategy)


@pytest.mark.vllm
def test_trainer_logprobs_match_the_engine_sampling_policy(tiny_model_path, vllm_rollout):
    """π_old in the ratio is the trainer's recomputation: it must equal the engine's own log-probs
    of the sampled tokens (EOS included), or the clipped objective is off-policy by accident."""
    from transformers import AutoModelForCausalLM

    from es_lightning.grpo import pack_sequences, token_logprobs_and_entropy

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    prompts = [tok(f"Repeat: {2000 + 13 * i}\n").input_ids for i in range(4)]
    out = vllm_rollout.generate(
        prompts, SamplingConfig(n=3, temperature=1.0, max_tokens=12, seed=9, logprobs=True)
    )
    pairs = [(p, c) for p, o in zip(prompts, out) for c in o.completions]
    ids, att, mask, _ = pack_sequences(
        [p for p, _ in pairs], [c.token_ids for _, c in pairs], tok.pad_token_id
    )
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    with torch.no_grad():
        logp, _ = token_logprobs_and_entropy(model, ids, att, mask, temperature=1.0)
    for i, (_, completion) in enumerate(pairs):
        trainer = logp[i][mask[i].bool()]
        assert len(trainer) == len(completion.token_ids)
        assert torch.allclose(trainer, torch.tensor(completion.logprobs), atol=1e-4)


def test_step_metrics_equal_a_reference_over_the_same_rollouts(tiny_model_path, hf_rollout):
    """The step's responses are regenerated with its seed at the same weights (before the step)."""
    from dataclasses import replace

    import numpy as np

    from es_lightning.es.noise import seed_schedule

    fabric, strategy, module = _setup(tiny_model_path, hf_rollout, group_size=4, learning_rate=1e-3)
    # short, and a digit ends a response: some stop, some truncate, whatever the seed
    module.train_sampling = SamplingConfig(temperature=1.0, max_tokens=3, stop=list("0123456789"))
    rows = module.task.load("train")[:6]
    seed = seed_schedule(5 ^ 0x6A6A, 2, 1)[0] % (2**31)
    outputs = hf_rollout.generate(module.encode(rows), replace(module.train_sampling, n=4, seed=seed))
    scores = module.score(rows, outputs)
    result = strategy.training_step(fabric, module, hf_rollout, rows, 2, run_seed=5)
    m = result.metrics

    r = np.array([[s.reward for s in per] for per in scores])  # (P, G)
    lengths = [len(c.token_ids) for out in outputs for c in out.completions]
    truncated = [c.finish_reason == "length" for out in outputs for c in out.completions]
    assert m["train/reward_mean"] == pytest.approx(r.mean())
    assert m["train/reward_std"] == pytest.approx(r.std())
    assert m["train/response_len"] == pytest.approx(np.mean(lengths))
    assert m["train/truncated_frac"] == pytest.approx(np.mean(truncated))
    assert 0 < m["train/truncated_frac"] < 1, "the test needs both kinds of responses"
    assert m["grpo/zero_std_frac"] == pytest.approx(np.mean(r.max(1) == r.min(1)))
    assert [s.completion for s in result.samples] == [out.completions[0].text for out in outputs]
    assert [s.reward for s in result.samples] == list(r[:, 0]) and result.samples[0].member is None


def test_bf16_mixed_precision_runs_the_model_under_fabric_autocast(tiny_model_path, hf_rollout):
    """Fabric's ``bf16-mixed``: the forward passes run in bf16, weights and AdamW stay fp32."""
    fabric = Fabric(accelerator="cpu", devices=1, strategy=GRPOStrategy(group_size=2), precision="bf16-mixed")
    fabric.launch()
    module = ReasoningModule(
        model=str(tiny_model_path),
        task=Echo(length=4, n_train=8, n_test=4),
        train_sampling=SamplingConfig(temperature=1.0, max_tokens=4),
    )
    strategy = fabric.strategy
    strategy.prepare(fabric, module, hf_rollout, None)
    model = strategy._unwrapped()
    seen = []
    model.lm_head.register_forward_hook(lambda mod, args, out: seen.append(out.dtype))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    strategy.training_step(fabric, module, hf_rollout, module.task.load("train")[:4], 0, run_seed=0)
    assert seen and set(seen) == {torch.bfloat16}
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert any(not torch.equal(before[n], p.detach()) for n, p in model.named_parameters())
    moments = [s["exp_avg"] for s in strategy.optimizer.optimizer.state.values()]
    assert moments and all(m.dtype == torch.float32 for m in moments)
