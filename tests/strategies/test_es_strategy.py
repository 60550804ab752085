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
    result = strategy.training_step(fabric, module, hf_rollout, rows, step=3, run_seed=11)
    metrics = result.metrics

    # Reference: explicit loops over members, plain HF generate, float64 update.
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    theta = {k: v.detach().clone() for k, v in model.named_parameters()}
    prompts = module.encode(rows)
    rewards, per_response, lengths, truncated = [], [], [], []
    for seed in seed_schedule(11, 3, n):
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(theta[name] + sigma * noise_like(seed, name, p.shape))
        total = 0.0
        for row, ids in zip(rows, prompts):
            out = model.generate(
                torch.tensor([ids]), max_new_tokens=6, do_sample=False, eos_token_id=2, pad_token_id=0
            )
            response = out[0, len(ids) :].tolist()
            text = module.tokenizer.decode(response, skip_special_tokens=True)
            total += module.task.score(text, row).reward
            per_response.append(module.task.score(text, row).reward)
            ended = 2 in response  # the end-of-sequence token (HF keeps it in the response)
            lengths.append(response.index(2) + 1 if ended else len(response))
            truncated.append(not ended)
        rewards.append(total / len(rows))
    r = np.array(rewards)
    assert r.std() > 0, "the reference population must have varied rewards for this test to mean anything"
    z = (r - r.mean()) / r.std()
    # train/: over every response of the update; es/member_: over the members' mean rewards R_i
    v = np.array(per_response)
    assert metrics["train/reward_mean"] == pytest.approx(v.mean()) == pytest.approx(r.mean())
    assert metrics["train/reward_std"] == pytest.approx(v.std())
    assert (metrics["train/reward_max"], metrics["train/reward_min"]) == (v.max(), v.min())
    assert metrics["es/member_reward_std"] == pytest.approx(r.std())
    assert (metrics["es/member_reward_max"], metrics["es/member_reward_min"]) == (r.max(), r.min())
    assert metrics["train/truncated_frac"] == pytest.approx(np.mean(truncated))
    assert metrics["train/response_len"] == pytest.approx(np.mean(lengths))
    # text samples: member 0's first response to each of the first prompts, with its reward
    assert [s.prompt for s in result.samples] == [module.format_prompt(row) for row in rows]
    assert [s.member for s in result.samples] == [0] * len(rows)
    assert [s.reward for s in result.samples] == per_response[: len(rows)]
    assert metrics["es/skipped"] == 0.0
    # the population handed to callbacks: the same rewards, per prompt, and their z-scores
    population = result.population
    assert population.seeds == seed_schedule(11, 3, n) and population.signs == [1.0] * n
    np.testing.assert_allclose(population.rewards, r)
    assert population.member_prompt_rewards.shape == (n, len(rows))
    np.testing.assert_allclose(population.member_prompt_rewards.mean(axis=1), r)
    np.testing.assert_allclose(population.z, z)

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
    metrics = strategy.training_step(
        fabric, module, hf_rollout, module.task.load(), step=0, run_seed=0
    ).metrics
    assert metrics["es/skipped"] == 1.0 and metrics["es/update_norm"] == 0.0
    assert hf_rollout.digest() == before


def test_antithetic_logs_kappa_pair(tiny_model_path, hf_rollout, fabric_es):
    fabric, strategy = fabric_es(population_size=4, sigma=0.05, learning_rate=0.01, estimator="antithetic")
    module = _module(tiny_model_path)
    hf_rollout.es_init()
    metrics = strategy.training_step(
        fabric, module, hf_rollout, module.task.load("train")[:4], step=0, run_seed=2
    ).metrics
    assert "es/kappa_pair" in metrics


def test_independent_member_seeds_change_what_members_sample(tiny_model_path, hf_rollout, fabric_es):
    """With common seeds two members that serve the same weights sample the same responses; with
    independent seeds they do not (the κ_pair ablation's two conditions)."""
    module = ReasoningModule(
        model=str(tiny_model_path),
        task=Echo(length=4, n_train=8, n_test=4),
        train_sampling=SamplingConfig(temperature=1.0, max_tokens=6),
    )
    rows = module.task.load("train")[:4]
    per_mode = {}
    for mode in ("common", "independent"):
        # σ tiny: every member serves (almost) the centre, so differences come from sampling seeds
        fabric, strategy = fabric_es(
            population_size=4, sigma=1e-9, learning_rate=1e-9, member_sampling_seeds=mode
        )
        hf_rollout.es_init()
        per_mode[mode] = strategy.training_step(fabric, module, hf_rollout, rows, 0, 5).population
    common = per_mode["common"].member_prompt_rewards
    assert all(np.array_equal(common[0], common[i]) for i in range(1, 4))
    independent = per_mode["independent"].member_prompt_rewards
    assert any(not np.array_equal(independent[0], independent[i]) for i in range(1, 4))


def test_fixed_rollouts_give_smooth_member_rewards(tiny_model_path, hf_rollout, fabric_es):
    """On fixed (re-scored) rollouts a ± pair's rewards straddle the centre's to first order: the
    re-scored reward is a smooth function of the weights, with no sampling noise of its own."""
    module = ReasoningModule(
        model=str(tiny_model_path),
        task=Echo(length=4, n_train=16, n_test=4),
        train_sampling=SamplingConfig(temperature=1.0, max_tokens=6),
    )
    rows = module.task.load("train")[:8]
    fabric, strategy = fabric_es(
        population_size=8, sigma=1e-3, learning_rate=1e-9, estimator="antithetic", member_rollouts="fixed"
    )
    hf_rollout.es_init()
    result = strategy.training_step(fabric, module, hf_rollout, rows, 0, 7)
    r = result.population.rewards
    plus, minus = r[0::2], r[1::2]
    # the centre's reward: the same responses, every weight 1
    outputs = hf_rollout.generate(
        module.encode(rows),
        SamplingConfig(n=1, temperature=1.0, max_tokens=6, seed=seed_schedule(7 ^ 0x5A5A, 0, 1)[0] % 2**31),
    )
    centre = np.mean([s.reward for per in module.score(rows, outputs) for s in per])
    assert np.abs(plus - minus).max() > 0, "members must see different rewards"
    assert np.abs((plus + minus) / 2 - centre).max() < 0.1 * np.abs(plus - minus).max() + 1e-9
    assert "es/kappa_pair" in result.metrics


def test_refuses_a_rollout_that_cannot_run_es(tiny_model_path, fabric_es):
    from tests.helpers import generate_only_rollout

    fabric, strategy = fabric_es(population_size=4)
    with pytest.raises(TypeError, match="GenerateOnly cannot run ES"):
        strategy.prepare(fabric, _module(tiny_model_path), generate_only_rollout(), None)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(population_size=0), "population_size"),
        (dict(population_size=1), "population_size must be >= 2"),
        (dict(member_sampling_seeds="shared"), "member_sampling_seeds"),
        (dict(member_rollouts="cached"), "member_rollouts"),
        (dict(population_size=3, estimator="antithetic"), "even"),
        (dict(estimator="two_point"), "estimator"),
        (dict(normalization="softmax"), "normalization"),
        (dict(sigma=0.0), "sigma"),
        (dict(responses_per_prompt=0), "responses_per_prompt"),
        (dict(learning_rate=-1.0), "learning_rate must be > 0, got -1.0"),
        (dict(sigma=float("nan")), "sigma must be > 0, got nan"),
        (dict(optimizer="lion"), "unknown optimizer 'lion'; use sgd, adam"),
        (dict(checksum_tolerance=-1.0), "checksum_tolerance must be >= 0"),
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
