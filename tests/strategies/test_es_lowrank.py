"""ESStrategy with ``perturbation: lowrank``: one update against a plain reference (explicit A, B,
materialised member weights, plain HF generate), its settings, the rollout checks, the fixed matrices and resume guard."""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np
import pytest
import torch
from lightning.fabric import Fabric

from es_lightning.checkpoint import Checkpoint, save_checkpoint
from es_lightning.errors import ConfigError
from es_lightning.es.lowrank import lowrank_factors
from es_lightning.es.noise import seed_schedule
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import SamplingConfig
from es_lightning.strategies import ESStrategy
from es_lightning.tasks import Echo
from es_lightning.training.config import TrainerConfig
from es_lightning.training.resume import check_resume_compatible

pytestmark = pytest.mark.usefixtures("fresh_process_group")


@pytest.fixture(scope="module")
def fabric_es():
    def make(**kwargs) -> tuple[Fabric, ESStrategy]:
        fabric = Fabric(accelerator="cpu", devices=1, strategy=ESStrategy(**kwargs))
        fabric.launch()
        return fabric, fabric.strategy

    return make


def _module(tiny_model_path) -> ReasoningModule:
    return ReasoningModule(
        model=str(tiny_model_path),
        task=Echo(length=4, n_train=8, n_test=4),
        train_sampling=SamplingConfig(temperature=0.0, max_tokens=6),
    )


def test_lowrank_update_equals_plain_reference(tiny_model_path, hf_rollout, fabric_es):
    from transformers import AutoModelForCausalLM

    n, sigma, alpha, rank = 6, 0.08, 0.02, 2
    fabric, strategy = fabric_es(
        population_size=n, sigma=sigma, learning_rate=alpha, perturbation="lowrank", rank=rank
    )
    module = _module(tiny_model_path)
    rows = module.task.load("train")[:4]
    strategy.prepare(fabric, module, hf_rollout, None)
    result = strategy.training_step(fabric, module, hf_rollout, rows, step=1, run_seed=4)

    # Reference: each member's weights written from explicit factors, plain greedy generate.
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path).eval()
    theta = {k: v.detach().clone() for k, v in model.named_parameters()}
    seeds = seed_schedule(4, 1, n)

    def low_rank(seed: int, name: str, t: torch.Tensor) -> torch.Tensor:
        if t.ndim != 2:
            return torch.zeros_like(t, dtype=torch.float64)
        a, b = lowrank_factors(seed, name, t.shape, rank)
        return a.double() @ b.double().T / math.sqrt(rank)

    rewards = []
    for seed in seeds:
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(theta[name].double() + sigma * low_rank(seed, name, p))
        total = 0.0
        for row, ids in zip(rows, module.encode(rows)):
            out = model.generate(
                torch.tensor([ids]), max_new_tokens=6, do_sample=False, eos_token_id=2, pad_token_id=0
            )
            text = module.tokenizer.decode(out[0, len(ids) :].tolist(), skip_special_tokens=True)
            total += module.task.score(text, row).reward
        rewards.append(total / len(rows))
    r = np.array(rewards)
    assert r.std() > 0, "the reference population must have varied rewards for this test to mean anything"
    np.testing.assert_allclose(result.population.rewards, r)
    z = (r - r.mean()) / r.std()
    for name, t in theta.items():
        expected = t.double() + alpha / n * sum(zi * low_rank(s, name, t) for zi, s in zip(z, seeds))
        torch.testing.assert_close(hf_rollout.es.master[name].double(), expected, rtol=0, atol=1e-6)
        if t.ndim == 1:
            assert torch.equal(hf_rollout.es.master[name], t), f"{name} must not move"
    assert result.metrics["es/skipped"] == 0.0 and "time/update" in result.metrics


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(perturbation="sparse"), r"perturbation='sparse' \(must be full or lowrank\)"),
        (dict(perturbation="lowrank", rank=0), r"rank=0 \(must be an integer >= 1\)"),
        (dict(rank=1.5), r"rank=1.5 \(must be an integer >= 1\)"),
    ],
)
def test_bad_lowrank_settings_are_named(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        ESStrategy(**kwargs)


def test_vllm_rollout_is_refused_with_targets_it_cannot_serve_before_any_es_work(tiny_model_path, fabric_es):
    from es_lightning.rollout.vllm import VLLMRollout

    fabric, strategy = fabric_es(perturbation="lowrank", rank=2)
    with pytest.raises(ConfigError, match="VLLMRollout serves low-rank members with lowrank_targets: linear"):
        strategy.prepare(fabric, _module(tiny_model_path), VLLMRollout(), None)


def test_a_generate_only_rollout_is_refused_for_lowrank_naming_the_ones_that_serve_it():
    from es_lightning.strategies.es_lowrank import check_lowrank_rollout

    class GenerateOnly:  # a rollout without es_generate_population
        pass

    with pytest.raises(
        ConfigError, match="needs a rollout that serves low-rank members.*GenerateOnly serves"
    ):
        check_lowrank_rollout(ESStrategy(perturbation="lowrank"), GenerateOnly())  # type: ignore[arg-type]


def test_vllm_reserves_one_lora_slot_per_member_at_a_rank_it_offers():
    from es_lightning.rollout.vllm import VLLMRollout
    from es_lightning.strategies.es_lowrank import check_lowrank_rollout

    rollout = VLLMRollout(engine_kwargs={"max_lora_rank": 16})
    check_lowrank_rollout(
        ESStrategy(perturbation="lowrank", rank=4, population_size=6, lowrank_targets="linear"),
        rollout,
    )
    assert {
        k: rollout.engine_kwargs[k] for k in ("enable_lora", "max_loras", "max_cpu_loras", "max_lora_rank")
    } == {
        "enable_lora": True,
        "max_loras": 6,
        "max_cpu_loras": 6,
        "max_lora_rank": 16,
    }
    with pytest.raises(ConfigError, match="engine_kwargs sets max_loras=2"):
        VLLMRollout(engine_kwargs={"max_loras": 2}).es_reserve_population(6, 4)


def test_linear_targets_keep_the_embedding_and_output_head_fixed(tiny_model_path):
    from es_lightning.es.lowrank import LowRankNoise
    from es_lightning.models.loading import ModelLoading
    from es_lightning.strategies.es_lowrank import embedding_names

    fixed = embedding_names(str(tiny_model_path), ModelLoading())
    assert fixed == {"model.embed_tokens.weight", "lm_head.weight"}  # tied: one tensor, two names
    noise = LowRankNoise(2, fixed)
    assert not noise.moves("model.embed_tokens.weight", (64, 32)) and noise.moves(
        "model.layers.0.mlp.up_proj.weight", (64, 32)
    )
    assert not noise.noise(1, "model.embed_tokens.weight", (4, 3)).any()
    assert not noise.direction({1: 1.0})("model.embed_tokens.weight", torch.ones(4, 3)).any()


def test_perturbation_and_rank_are_recorded_and_guarded_on_resume(tmp_path):
    meta_dir = tmp_path / "meta"  # the model metadata a checkpoint copies
    meta_dir.mkdir()
    (meta_dir / "config.json").write_text('{"model_type": "toy"}')
    config = TrainerConfig(output_dir="runs/a", max_steps=10, batch_size=8, seed=3)
    lowrank = ESStrategy(perturbation="lowrank", rank=4)
    assert (lowrank.hparams()["perturbation"], lowrank.hparams()["rank"]) == ("lowrank", 4)
    folder = save_checkpoint(
        tmp_path / "run",
        4,
        iter([("w", torch.ones(2))]),
        serving_dtype=torch.float32,
        meta_dir=meta_dir,
        strategy_name="es",
        write_state=lambda folder: None,
        trainer_state={"seed": 3, "source_model": "es-lightning/tiny-random"},
        hparams={"strategy": {"name": "es", **lowrank.hparams()}, "trainer": asdict(config)},
    )
    ckpt = Checkpoint(folder)
    assert check_resume_compatible(ckpt, "es", lowrank.hparams(), config) == []
    with pytest.raises(ConfigError, match="strategy.perturbation: 'lowrank' → 'full'"):
        check_resume_compatible(ckpt, "es", ESStrategy(rank=4).hparams(), config)
    with pytest.raises(ConfigError, match="strategy.rank: 4 → 8"):
        check_resume_compatible(ckpt, "es", ESStrategy(perturbation="lowrank", rank=8).hparams(), config)
