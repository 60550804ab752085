"""ESStrategy.training_step against a plain reference computation, and the zero-variance skip."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lightning.fabric import Fabric

from es_lightning.es.noise import noise_like, seed_schedule
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import SamplingConfig
from es_lightning.strategies import ESStrategy
from es_lightning.tasks import Echo, Score, Task

pytestmark = pytest.mark.usefixtures("fresh_process_group")


@pytest.fixture(scope="module")
def fabric_es():
    def make(**kwargs) -> tuple[Fabric, ESStrategy]:
        fabric = Fabric(accelerator="cpu", devices=1, strategy=ESStrategy(**kwargs))
        fabric.launch()
        return fabric, fabric.strategy

    return make


def _module(tiny_model_path, task=None):
    return ReasoningModule(
        model=str(tiny_model_path),
        task=task or Echo(length=4, n_train=8, n_test=4),
        train_sampling=SamplingConfig(temperature=0.0, max_tokens=6),
    )


def test_update_equals_plain_reference(tiny_model_path, hf_rollout, fabric_es):
    from transformers import AutoModelForCausalLM

    n, sigma, alpha = 6, 0.05, 0.02
    fabric, strategy = fabric_es(population_size=n, sigma=sigma, learning_rate=alpha)
    module = _module(tiny_model_path)
    rows = module.task.load("train")[:4]
    hf_rollout.es_init()
    metrics = strategy.training_step(fabric, module, hf_rollout, rows, step=3, run_seed=11)

    # Reference: explicit loops over members, plain HF generate, float64 update.
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    theta = {k: v.detach().clone() for k, v in model.named_parameters()}
    prompts = module.encode(rows)
    rewards = []
    for seed in seed_schedule(11, 3, n):
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(theta[name] + sigma * noise_like(seed, name, p.shape))
        total = 0.0
        for row, ids in zip(rows, prompts):
            out = model.generate(
                torch.tensor([ids]), max_new_tokens=6, do_sample=False, eos_token_id=2, pad_token_id=0
            )
            text = module.tokenizer.decode(out[0, len(ids) :], skip_special_tokens=True)
            total += module.task.score(text, row).reward
        rewards.append(total / len(rows))
    r = np.array(rewards)
    assert r.std() > 0, "the reference population must have varied rewards for this test to mean anything"
    z = (r - r.mean()) / r.std()
    assert metrics["train/reward_mean"] == pytest.approx(r.mean())
    assert metrics["train/reward_std"] == pytest.approx(r.std())
    assert metrics["es/skipped"] == 0.0

    master = hf_rollout.es.master
    sq = 0.0
    for name, t in theta.items():
        step = sum(zi * noise_like(s, name, t.shape).double() for zi, s in zip(z, seed_schedule(11, 3, n)))
        expected = t.double() + alpha / n * step
        assert torch.allclose(master[name].double(), expected, atol=1e-6), name
        sq += float((alpha / n * step).square().sum())
    assert metrics["es/update_norm"] == pytest.approx(sq**0.5, rel=1e-5)


class _Constant(Task):
    name = "constant"

    def load(self, split="train"):
        return [{"q": str(i)} for i in range(4)]

    def question(self, row):
        return row["q"]

    def score(self, completion, row):
        return Score(reward=0.5, answer=None)


def test_equal_rewards_skip_the_update(tiny_model_path, hf_rollout, fabric_es):
    fabric, strategy = fabric_es(population_size=4, sigma=0.05, learning_rate=0.1)
    module = _module(tiny_model_path, task=_Constant())
    hf_rollout.es_init()
    before = hf_rollout.digest()
    metrics = strategy.training_step(fabric, module, hf_rollout, module.task.load(), step=0, run_seed=0)
    assert metrics["es/skipped"] == 1.0 and metrics["es/update_norm"] == 0.0
    assert hf_rollout.digest() == before


def test_antithetic_logs_kappa_pair(tiny_model_path, hf_rollout, fabric_es):
    fabric, strategy = fabric_es(population_size=4, sigma=0.05, learning_rate=0.01, estimator="antithetic")
    module = _module(tiny_model_path)
    hf_rollout.es_init()
    metrics = strategy.training_step(
        fabric, module, hf_rollout, module.task.load("train")[:4], step=0, run_seed=2
    )
    assert "es/kappa_pair" in metrics


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(population_size=0), "population_size"),
        (dict(population_size=3, estimator="antithetic"), "even"),
        (dict(estimator="two_point"), "estimator"),
        (dict(normalization="softmax"), "normalization"),
        (dict(sigma=0.0), "sigma"),
        (dict(responses_per_prompt=0), "responses_per_prompt"),
    ],
)
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ESStrategy(**kwargs)


def test_registered_with_fabric_by_name():
    from lightning.fabric.strategies import STRATEGY_REGISTRY

    assert "es" in STRATEGY_REGISTRY
    fabric = Fabric(accelerator="cpu", devices=1, strategy="es")
    assert isinstance(fabric.strategy, ESStrategy)
