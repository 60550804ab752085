"""ESStrategy.training_step against a plain reference computation, and the zero-variance skip."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from lightning.fabric import Fabric

from es_lightning.es.control import control_permutation
from es_lightning.es.diagnostics import (
    flip_rate,
    spearman_brown,
    split_half_correlation,
    split_half_reliability,
)
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
    # signal diagnostics of the (N, P) member × prompt rewards
    per_member_prompt = np.array(per_response).reshape(n, len(rows))
    np.testing.assert_equal(metrics["es/reward_reliability"], split_half_reliability(per_member_prompt))
    np.testing.assert_equal(metrics["es/reward_split_half_corr"], split_half_correlation(per_member_prompt))
    assert metrics["es/flip_rate"] == pytest.approx(flip_rate(per_member_prompt))
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


def _reference_centre(theta: dict, rewards: np.ndarray, seeds: list[int], alpha: float) -> dict:
    """θ + α/N·Σ_i z_i ε_i in float64, z the population z-scores of ``rewards``."""
    z = (rewards - rewards.mean()) / rewards.std()
    n = len(seeds)
    return {
        name: t.double()
        + alpha / n * sum(zi * noise_like(s, name, t.shape).double() for zi, s in zip(z, seeds))
        for name, t in theta.items()
    }


def test_permuted_control_applies_shuffled_rewards_and_logs_the_true_ones(
    tiny_model_path, hf_rollout, fabric_es
):
    """Same members, prompts and responses as the real run; the update z-scores R[π] instead of
    R (π a pure function of (run seed, update), so a second fresh strategy, as after a resume,
    takes the same step); with ``none`` the update is the plain one."""
    from transformers import AutoModelForCausalLM

    n, sigma, alpha, step, run_seed = 6, 0.05, 0.02, 3, 11
    module = _module(tiny_model_path)
    rows = module.task.load("train")[:4]
    theta = dict(AutoModelForCausalLM.from_pretrained(tiny_model_path).named_parameters())
    seeds = seed_schedule(run_seed, step, n)
    runs = {}
    for control in ("none", "permuted", "permuted"):
        fabric, strategy = fabric_es(
            population_size=n, sigma=sigma, learning_rate=alpha, reward_control=control
        )
        hf_rollout.es_init()
        result = strategy.training_step(fabric, module, hf_rollout, rows, step=step, run_seed=run_seed)
        master = {k: v.clone() for k, v in hf_rollout.es.master.items()}
        runs.setdefault(control, []).append((result, master))
    ((plain, plain_master),) = runs["none"]
    (shuffled, shuffled_master), (again, again_master) = runs["permuted"]

    true = plain.population.rewards
    assert true.std() > 0, "the test needs varied member rewards"
    perm = control_permutation(run_seed, step, n)
    assert not np.array_equal(true[perm], true), "the test needs a permutation that moves rewards"
    # the true rewards and their metrics are logged as usual
    np.testing.assert_array_equal(shuffled.population.rewards, true)
    for key in ("train/reward_mean", "train/reward_std", "es/member_reward_std", "es/reward_reliability"):
        np.testing.assert_equal(shuffled.metrics[key], plain.metrics[key])
    # the update: z-scores of the shuffled rewards (member i gets R_π(i))
    shuffled_rewards = np.array([true[perm[i]] for i in range(n)])
    np.testing.assert_allclose(
        shuffled.population.z, (shuffled_rewards - shuffled_rewards.mean()) / shuffled_rewards.std()
    )
    for master, rewards in ((shuffled_master, shuffled_rewards), (plain_master, true)):
        expected = _reference_centre(theta, rewards, seeds, alpha)
        for name, t in expected.items():
            assert torch.allclose(master[name].double(), t, atol=1e-6), name
    assert any(not torch.equal(shuffled_master[k], plain_master[k]) for k in plain_master)
    # replayed: a fresh strategy at the same (run seed, update) takes the same step
    assert all(torch.equal(again_master[k], shuffled_master[k]) for k in shuffled_master)


def _tied_run(tiny_model_path, hf_rollout, fabric_es, capsys, sigma: float, updates: int, **kwargs):
    """``updates`` ES updates of the tiny model (greedy) on a task whose reward differs between
    prompts, the console's no-signal lines returned."""
    fabric, strategy = fabric_es(population_size=4, sigma=sigma, learning_rate=0.05, **kwargs)
    module = _module(tiny_model_path, task=_PerPrompt())
    rows = module.task.load("train")
    hf_rollout.es_init()
    capsys.readouterr()
    metrics = [strategy.training_step(fabric, module, hf_rollout, rows, t, 0).metrics for t in range(updates)]
    err = capsys.readouterr().err
    return metrics, [line for line in err.splitlines() if "ES sees no signal" in line]


def test_no_signal_warning_fires_once_when_members_tie(tiny_model_path, hf_rollout, fabric_es, capsys):
    """σ = 1e-6: every member serves the centre up to rounding, greedy decoding gives them the same
    responses, every update is skipped; the warning comes once, after the window fills, as one
    console line of our own (no Python warning with a source path)."""
    metrics, warned = _tied_run(
        tiny_model_path, hf_rollout, fabric_es, capsys, sigma=1e-6, updates=4, signal_window=3
    )
    assert [m["es/skipped"] for m in metrics] == [1.0] * 4
    assert [m["es/flip_rate"] for m in metrics] == [0.0] * 4
    assert len(warned) == 1 and "3 of the last 3 updates were skipped" in warned[0]
    assert warned[0].startswith("es-lightning: warning: ES sees no signal") and "strategy.sigma" in warned[0]
    assert metrics[0]["train/reward_min"] < metrics[0]["train/reward_max"]  # the reward is not the cause
    _, silent = _tied_run(
        tiny_model_path, hf_rollout, fabric_es, capsys, sigma=1e-6, updates=3, signal_window=None
    )
    assert silent == []


def test_no_signal_warning_names_a_constant_reward(tiny_model_path, hf_rollout, fabric_es, capsys):
    """Every response gets 0.5: the warning blames the reward, not σ (σ is large here)."""
    fabric, strategy = fabric_es(population_size=4, sigma=0.05, learning_rate=0.1, signal_window=2)
    module = _module(tiny_model_path, task=_Constant())
    hf_rollout.es_init()
    capsys.readouterr()
    for t in range(2):
        strategy.training_step(fabric, module, hf_rollout, module.task.load(), step=t, run_seed=0)
    lines = [line for line in capsys.readouterr().err.splitlines() if "ES sees no signal" in line]
    assert len(lines) == 1 and "every response got the same reward (0.5)" in lines[0], lines
    assert "The reward is the likely cause" in lines[0] and "sigma too small" not in lines[0]


class _PerPrompt(Task):
    """Reward = the prompt's digit / 4, whatever the response: it differs between prompts, but
    members that answer alike tie."""

    name = "per_prompt"

    def load(self, split="train"):
        return [{"q": str(i)} for i in range(4)]

    def question(self, row):
        return row["q"]

    def score(self, completion, row):
        return Score(reward=int(row["q"]) / 4, answer=None)


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
    fabric, strategy = fabric_es(population_size=8, sigma=0.05, learning_rate=0.01, estimator="antithetic")
    module = _module(tiny_model_path, task=_FirstCharacter())
    hf_rollout.es_init()
    result = strategy.training_step(fabric, module, hf_rollout, module.task.load("train"), step=0, run_seed=2)
    metrics, table = result.metrics, result.population.member_prompt_rewards
    assert "es/kappa_pair" in metrics
    # the pairs' differences d[j, p] = r[2j, p] − r[2j+1, p] of the logged table, split-half as the members'
    pair_corr = split_half_correlation(table[0::2] - table[1::2])
    np.testing.assert_equal(metrics["es/antithetic_diff_split_half_corr"], pair_corr)
    np.testing.assert_equal(metrics["es/antithetic_diff_reliability"], spearman_brown(pair_corr))
    assert np.isfinite(pair_corr), "the test needs differences that vary over the pairs"


class _FirstCharacter(Task):
    """Reward = (code of the response's first character mod 5)/4: varies as soon as a perturbation
    changes the first greedy token, so small populations of the tiny model have varied rewards."""

    name = "first_character"

    def load(self, split="train"):
        return [{"q": f"{i}{i}"} for i in range(4)]

    def question(self, row):
        return row["q"]

    def score(self, completion, row):
        return Score(reward=(ord(completion[0]) % 5) / 4 if completion else 0.0, answer=None)


def test_antithetic_directions_budget_evaluates_both_signs_of_n_directions(
    tiny_model_path, hf_rollout, fabric_es
):
    """``antithetic_budget: directions``: N directions, 2N members (ε_j then −ε_j), and the update
    θ + α/(2N)·Σ_i sign_i z_i ε_i; its population is the ``rollouts`` population of 2N members."""
    from es_lightning.es.update import Population

    n, sigma, alpha = 3, 0.05, 0.02
    fabric, strategy = fabric_es(
        population_size=n,
        sigma=sigma,
        learning_rate=alpha,
        estimator="antithetic",
        antithetic_budget="directions",
    )
    module = _module(tiny_model_path, task=_FirstCharacter())
    rows = module.task.load("train")
    hf_rollout.es_init()
    theta = {k: v.clone() for k, v in hf_rollout.es.master.items()}
    result = strategy.training_step(fabric, module, hf_rollout, rows, step=3, run_seed=11)
    population = result.population
    base = seed_schedule(11, 3, n)
    assert population.seeds == [s for s in base for _ in range(2)]
    assert population.signs == [1.0, -1.0] * n
    assert population.member_prompt_rewards.shape == (2 * n, len(rows))
    assert Population.sample(11, 3, 2 * n, True, "rollouts") == strategy.population(11, 3)
    r = population.rewards
    assert r.std() > 0, "the test needs varied member rewards"
    z = (r - r.mean()) / r.std()
    for name, t in theta.items():
        step = sum(
            zi * sign * noise_like(seed, name, t.shape).double()
            for seed, sign, zi in zip(population.seeds, population.signs, z, strict=True)
        )
        expected = t.double() + alpha / (2 * n) * step
        assert torch.allclose(hf_rollout.es.master[name].double(), expected, atol=1e-6), name
    assert "es/kappa_pair" in result.metrics


def test_accumulated_and_redrawn_updates_agree(tiny_model_path, hf_rollout, fabric_es):
    """The same two updates with ``update: accumulate`` and ``redraw``: the same rewards, centres
    equal up to float32 summation order, and the accumulated update's folds counted as update time."""
    module = _module(tiny_model_path, task=_FirstCharacter())
    rows = module.task.load("train")
    runs = {}
    for update in ("accumulate", "redraw"):
        fabric, strategy = fabric_es(population_size=4, sigma=0.05, learning_rate=0.05, update=update)
        hf_rollout.es_init()
        metrics = [strategy.training_step(fabric, module, hf_rollout, rows, t, 1).metrics for t in range(2)]
        runs[update] = metrics, {k: v.clone() for k, v in hf_rollout.es.master.items()}
    (acc_metrics, acc), (red_metrics, red) = runs["accumulate"], runs["redraw"]
    assert [m["es/skipped"] for m in acc_metrics] == [0.0, 0.0], "the test needs two real updates"
    assert [m["train/reward_mean"] for m in acc_metrics] == [m["train/reward_mean"] for m in red_metrics]
    for name in acc:
        torch.testing.assert_close(acc[name], red[name], rtol=0, atol=1e-6)
    assert any(not torch.equal(acc[n], red[n]) for n in acc)  # two code paths, not one
    assert all(m["time/update"] > 0 and m["time/perturb_restore"] > 0 for m in acc_metrics)


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
        population_size=8,
        sigma=1e-3,
        learning_rate=1e-9,
        estimator="antithetic",
        member_rollouts="fixed",
        responses_per_prompt=4,  # 32 responses: some earn a reward (the test needs varied rewards)
    )
    hf_rollout.es_init()
    result = strategy.training_step(fabric, module, hf_rollout, rows, 0, 7)
    r = result.population.rewards
    plus, minus = r[0::2], r[1::2]
    # the centre's reward: the same responses, every weight 1
    outputs = hf_rollout.generate(
        module.encode(rows),
        SamplingConfig(n=4, temperature=1.0, max_tokens=6, seed=seed_schedule(7 ^ 0x5A5A, 0, 1)[0] % 2**31),
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


def test_an_odd_number_of_directions_is_fine():
    strategy = ESStrategy(population_size=3, estimator="antithetic", antithetic_budget="directions")
    assert strategy.population(0, 0).size == 6
    assert ESStrategy(population_size=4, estimator="antithetic").population(0, 0).size == 4


def test_registered_with_fabric_by_name():
    from lightning.fabric.strategies import STRATEGY_REGISTRY

    assert "es" in STRATEGY_REGISTRY
    fabric = Fabric(accelerator="cpu", devices=1, strategy="es")
    assert isinstance(fabric.strategy, ESStrategy)


@pytest.mark.integration
def test_no_signal_warning_is_one_console_line_of_a_real_run(tmp_path):
    """``es-lightning fit`` on the tiny recipe with σ = 1e-6: the warning appears once."""
    import subprocess

    from tests.helpers import CLI, TINY_ES_RECIPE, subprocess_env

    config = tmp_path / "tied.yaml"
    config.write_text(TINY_ES_RECIPE)
    overrides = ["--strategy.init_args.sigma", "1e-6", "--strategy.init_args.signal_window", "3"]
    cmd = [*CLI, "fit", "--config", str(config), "--trainer.output_dir", str(tmp_path / "run")]
    cmd += [*overrides, "--trainer.max_steps", "5", "--trainer.eval_after", "false"]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if "ES sees no signal" in line]
    assert len(lines) == 1 and "of the last 3 updates" in lines[0], lines  # the σ or the reward verdict
    assert lines[0].startswith("es-lightning: warning: ES sees no signal"), lines  # no source path
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]  # no Python warning line
