"""ESStrategy: Evolution Strategies as a Lightning Fabric strategy.

One update t (the paper's Algorithm 1; symbols σ, α, N, z_i, ε_i as there):

1. Every rank draws the same N member seeds (a pure function of run seed and t) and the same B
   prompts; only seeds are ever sent.
2. Rank r evaluates members i ≡ r (mod world size): serve θ + σ·ε_i in its engine, generate, score,
   R_i = the mean reward, restore θ exactly.
3. The N rewards are summed across ranks.
4. z = normalise(R) (``reward_control: permuted`` shuffles R first: the empirical null); all R_i
   equal: the update is skipped (``es/skipped``).
5. θ ← θ + α·(1/N)·Σ_i z_i ε_i on every rank in fp32, accumulated during step 2 or drawn again
   (:mod:`es_lightning.strategies.es_update`); a checksum of the centre must agree on every rank.
6. Signal diagnostics of the true rewards and the no-signal warning (:mod:`es_lightning.es.diagnostics`).

How this departs from the public ES-for-LLM code is listed in :mod:`es_lightning.es.update`;
here, every rank takes its share of the population and the same step.

No backward pass, so the model is never wrapped in DDP: the process group carries seeds, rewards,
checksums and, with several ranks, the update's directions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import torch
from lightning.fabric.strategies.ddp import DDPStrategy
from lightning.fabric.strategies.registry import _StrategyRegistry
from typing_extensions import override

from es_lightning.checked import plain_values
from es_lightning.console import warn
from es_lightning.es.control import controlled_rewards
from es_lightning.es.diagnostics import (
    SignalMonitor,
    antithetic_split_half_correlation,
    flip_rate,
    spearman_brown,
    split_half_correlation,
)
from es_lightning.es.noise import seed_schedule
from es_lightning.es.noise_table import check_table_size
from es_lightning.es.normalize import normalize_rewards
from es_lightning.es.update import Population, kappa_pair, member_coefficients
from es_lightning.ranks import fail_together
from es_lightning.rollout.base import PopulationEngine, Rollout
from es_lightning.rollout.seeds import spaced_seeds
from es_lightning.strategies.base import PopulationResult, ReasoningStrategy, Row, StepResult
from es_lightning.strategies.es_lowrank import check_lowrank_rollout, use_lowrank
from es_lightning.strategies.es_members import MemberResults, evaluate_members, evaluate_population
from es_lightning.strategies.es_settings import ESSettings, MemberSamplingSeeds
from es_lightning.strategies.es_update import accumulates, take_update
from es_lightning.strategies.metrics import (
    function_reward_metrics,
    gather_values,
    member_metrics,
    response_metrics,
    reward_metrics,
    reward_names,
    timed,
    with_advantages,
)
from es_lightning.weight_files import weight_files

if TYPE_CHECKING:
    from lightning.fabric import Fabric

    from es_lightning.checkpoint import Checkpoint
    from es_lightning.es.handle import ESHandle
    from es_lightning.module import ReasoningModule

OPTIMIZER_FILE = "optimizer.pt"


class ESStrategy(ESSettings, ReasoningStrategy, DDPStrategy):
    """Evolution Strategies on the rollout engine of every rank.

    Its keyword arguments are the fields of
    :class:`~es_lightning.strategies.es_settings.ESSettings`, checked when it is built.
    """

    strategy_name = "es"

    def __post_init__(self) -> None:
        super().__post_init__()  # every setting checked, every bad one named
        # the field keeps the backend asked for; Fabric keeps the one it resolves in _process_group_backend
        DDPStrategy.__init__(self, process_group_backend=self.process_group_backend)
        # N of the run-level signal: the members, or the antithetic pairs (N/2 with antithetic_budget:
        # rollouts, N with directions)
        halved = self.antithetic and self.antithetic_budget == "rollouts"
        directions = self.population_size // 2 if halved else self.population_size
        window, threshold = self.signal_window, self.signal_threshold
        self._signal = None if window is None else SignalMonitor(window, threshold, directions)

    @override
    def hparams(self) -> dict[str, Any]:
        """Every setting, the process group backend as Fabric resolved it."""
        return {**plain_values(self), "process_group_backend": self._process_group_backend}

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register("es", cls, description="Evolution Strategies (es-lightning)")

    @override
    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        return module  # ES has no gradients to synchronise

    # -- the trainer's interface (es_lightning.strategies.base.ReasoningStrategy) -----------------
    @override
    def check_rollout(self, rollout: Rollout) -> None:
        """ES needs an engine that perturbs weights; low-rank directions one that serves members."""
        if type(rollout).es_init is Rollout.es_init:
            raise TypeError(
                f"ESStrategy: rollout {type(rollout).__name__} cannot run ES; it generates only. Use a "
                "rollout that holds the ES centre, Rollout.es_init (VLLMRollout, HFRollout)"
            )
        check_lowrank_rollout(self, rollout)

    @override
    def prepare(
        self, fabric: Fabric, module: ReasoningModule, rollout: Rollout, resume: Checkpoint | None
    ) -> None:
        """Make the rollout engine hold the fp32 centre (a checkpoint's, when resuming)."""
        self.check_rollout(rollout)
        files = (
            resume.weight_files("stored")
            if resume is not None
            else weight_files(module.model, revision=module.loading.revision)
        )
        state = resume.state_dir(self.strategy_name) / OPTIMIZER_FILE if resume is not None else None
        rollout.es_init(files, self.optimizer, str(state) if state and state.is_file() else None)
        use_lowrank(self, module.model, module.loading, rollout)
        if self.noise == "table":  # the same table on every rank, built where the centre lives
            check_table_size(self.noise_table_size, rollout.es.shapes())
            rollout.es.use_noise_table(self.noise_table_size)

    @override
    def named_weights(self, rollout: Rollout) -> Iterator[tuple[str, torch.Tensor]]:
        """The fp32 centre streamed out of this rank's engine (rank 0; all ranks hold the same)."""
        if self.is_global_zero:
            yield from rollout.es.named_weights()

    @override
    def save_state(self, fabric: Fabric, rollout: Rollout, folder: Path) -> None:
        """The ES optimizer's state (Adam moments), written by rank 0's engine."""
        if self.is_global_zero:
            folder.mkdir(parents=True, exist_ok=True)
            rollout.es.save_state(str(folder / OPTIMIZER_FILE))

    def population(self, run_seed: int, step: int) -> Population:
        """The members of update ``step``: a pure function of (run seed, step) and the settings."""
        return Population.sample(
            run_seed, step, self.population_size, self.antithetic, self.antithetic_budget
        )

    @override
    def training_step(
        self,
        fabric: Fabric,
        module: ReasoningModule,
        rollout: Rollout,
        rows: list[Row],
        step: int,
        run_seed: int,
    ) -> StepResult:
        """One ES update on the mini-batch ``rows``; returns the metrics and the population."""
        es = rollout.es
        population = self.population(run_seed, step)
        accumulated = accumulates(self.update, self.normalization, self.reward_control, self.perturbation)
        with fail_together():  # generation and reward functions: a failure on one rank ends all ranks
            es.accumulate(accumulated)  # before the first member: each ε is kept until R_i is known
            local = self._evaluate(rollout, module, rows, population, run_seed, step, accumulated)
        names = reward_names(module)
        gathered = self._gather(local, width=3 + len(names))
        update_rewards = controlled_rewards(gathered.rewards, self.reward_control, run_seed, step)  # (M,)
        coeffs = member_coefficients(population, update_rewards, self.normalization)
        update_norm = self._update(es, coeffs, update_rewards, accumulated, local)
        self._check_agreement(es.checksum())
        metrics = self._metrics(gathered, local, population, update_norm, skipped=coeffs is None)
        metrics.update(function_reward_metrics(gathered.per_response[:, 3:], names))
        self._watch_signal(metrics)
        z = None if coeffs is None else normalize_rewards(update_rewards, self.normalization)
        samples = with_advantages(local.samples, z)  # each member's z_i, the weight of its ε_i
        return StepResult(metrics, gathered.population_result(population, z, rows), samples)

    def _update(
        self,
        es: ESHandle,
        coeffs: dict[int, float] | None,
        update_rewards: np.ndarray,
        accumulated: bool,
        local: MemberResults,
    ) -> float:
        """Take the update on every rank (``time/update`` includes the accumulated folds)."""
        fold_s = es.fold_seconds() if accumulated else 0.0
        local.timings["perturb_restore"] -= fold_s
        local.timings["update"] = fold_s
        lr, normalization = self.learning_rate, self.normalization
        with timed(local.timings, "update"):
            return take_update(self, es, coeffs, update_rewards, accumulated, lr, normalization)

    def _evaluate(
        self,
        rollout: Rollout,
        module: ReasoningModule,
        rows: list[Row],
        population: Population,
        run_seed: int,
        step: int,
        accumulated: bool,
    ) -> MemberResults:
        """This rank's members: low-rank ones in one generation call, others one by one."""
        members = range(self.global_rank, population.size, self.world_size)
        sampling = replace(module.train_sampling, n=self.responses_per_prompt)
        seeds = member_sampling_seeds(run_seed, step, population.size, self.member_sampling_seeds)
        if self.perturbation == "lowrank" and self.member_rollouts == "regenerate":
            batched = cast("PopulationEngine", rollout)
            return evaluate_population(
                batched, module, rows, population, members, sampling, seeds, self.sigma
            )
        return evaluate_members(
            rollout,
            module,
            rows,
            population,
            members=members,
            sampling=sampling,
            sampling_seeds=seeds,
            sigma=self.sigma,
            fixed_rollouts=self.member_rollouts == "fixed",
            record_rewards=accumulated,
            keeps_centre_samples=self.global_rank == 0,
        )

    def _metrics(
        self,
        gathered: Gathered,
        local: MemberResults,
        population: Population,
        update_norm: float,
        skipped: bool,
    ) -> dict[str, float]:
        """The update's ``train/``, ``es/`` and ``time/`` scalars."""
        per_response, per_prompt = gathered.per_response, gathered.per_prompt
        split_half = split_half_correlation(per_prompt[0])
        metrics = {
            **reward_metrics(per_response[:, 0]),
            **response_metrics(per_response[:, 1], per_response[:, 2]),
            **member_metrics(gathered.rewards),
            "es/update_norm": update_norm,
            "es/skipped": float(skipped),
            "es/reward_split_half_corr": split_half,
            "es/reward_reliability": spearman_brown(split_half),
            "es/flip_rate": flip_rate(per_prompt[0]),
            "time/tokens_per_s": gathered.tokens / max(local.timings["generate"], 1e-9),
            **{f"time/{k}": v for k, v in local.timings.items()},
        }
        if self.antithetic:
            metrics["es/kappa_pair"] = kappa_pair(gathered.rewards, population)
            pair_split_half = antithetic_split_half_correlation(per_prompt[0])
            metrics["es/antithetic_diff_split_half_corr"] = pair_split_half
            metrics["es/antithetic_diff_reliability"] = spearman_brown(pair_split_half)
        return metrics

    def _watch_signal(self, metrics: dict[str, float]) -> None:
        """Feed the no-signal monitor; its one warning goes to the console."""
        if self._signal is not None:
            key = "es/antithetic_diff_split_half_corr" if self.antithetic else "es/reward_split_half_corr"
            low, high = metrics["train/reward_min"], metrics["train/reward_max"]
            constant = low if low == high else None  # every response got the same reward
            warning = self._signal.observe(metrics[key], metrics["es/skipped"] == 1.0, constant)
            if warning is not None:
                warn(warning, once=False)  # the monitor warns once per run

    def _gather(self, local: MemberResults, width: int) -> Gathered:
        """Every rank's results, summed or gathered over the ranks."""
        rewards = self.all_reduce(local.rewards.to(self.root_device), reduce_op="sum").cpu().numpy()
        per_prompt = self.all_reduce(local.per_prompt.to(self.root_device), reduce_op="sum").cpu().numpy()
        tokens = torch.tensor(float(local.tokens), device=self.root_device)
        tokens_total = float(self.all_reduce(tokens, reduce_op="sum"))
        responses = torch.tensor(local.responses, dtype=torch.float64)
        return Gathered(rewards, per_prompt, tokens_total, gather_values(self, responses).reshape(-1, width))

    def _check_agreement(self, checksum: float) -> None:
        if self.world_size == 1:
            return
        gathered = self.all_gather(torch.tensor([checksum], dtype=torch.float64, device=self.root_device))
        values = gathered.flatten().cpu().tolist()
        if max(values) - min(values) > self.checksum_tolerance:
            raise RuntimeError(
                f"ESStrategy: the ranks' centres disagree after the update (checksums {values})"
            )


@dataclass
class Gathered:
    """One update's measurements from every rank."""

    rewards: np.ndarray  # (M,) R_i
    per_prompt: np.ndarray  # (2, M, P): per member and prompt, mean reward and fraction correct
    tokens: float  # generated tokens, all ranks
    per_response: np.ndarray  # (responses, 3 + F): reward, tokens, truncated, each function's reward

    def population_result(
        self, population: Population, z: np.ndarray | None, rows: list[Row]
    ) -> PopulationResult:
        """What population-level callbacks get (``z``: the normalised rewards the update applied)."""
        return PopulationResult(
            seeds=list(population.seeds),
            signs=list(population.signs),
            rewards=self.rewards,
            member_prompt_rewards=self.per_prompt[0],
            member_prompt_success=self.per_prompt[1],
            z=z,
            rows=list(rows),
        )


def member_sampling_seeds(
    run_seed: int, step: int, population_size: int, mode: MemberSamplingSeeds
) -> list[int]:
    """The sampling seed of every member of update ``step``: one for all, or one each."""
    base = seed_schedule(run_seed ^ 0x5A5A, step, 1)[0] % (2**31)
    return [base] * population_size if mode == "common" else spaced_seeds(base, population_size)
