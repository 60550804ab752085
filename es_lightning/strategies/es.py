"""ESStrategy: Evolution Strategies as a Lightning Fabric strategy.

One update t (the paper's Algorithm 1; symbols σ, α, N, z_i, ε_i as there):

1. Every rank draws the same population of N direction seeds from a schedule that is a pure
   function of (run seed, t) — nothing but seeds is ever sent — and the same mini-batch of B prompts.
2. Rank r evaluates members i ≡ r (mod world size): inside its rollout engine it serves
   θ + σ·ε_i, generates (one response per prompt by default), scores with the task's verifier,
   R_i = mean reward, and restores θ exactly.
3. The N scalar rewards are summed across ranks (each entry comes from exactly one rank).
4. z = normalise(R) within the population (``zscore`` default, ``rank``, ``none``); when all R_i
   are equal the update is skipped and logged (``es/skipped``).
5. θ ← θ + α·(1/N)·Σ_i z_i ε_i on every rank, accumulated in fp32 and cast once; a checksum of
   the centre is gathered and must be identical on every rank.

How this departs from the public ES-for-LLM code:

1. Noise is independent per tensor: ε for a tensor is regenerated from (seed_i, a stable hash of
   the parameter's name), in float32 on the tensor's device — not one bf16 stream for the whole model.
2. The centre is an fp32 master; the engine is written from it (cast once), so restore is
   bit-exact in any serving dtype and no drift accumulates over thousands of perturbations.
3. The seed schedule is replayable: resuming at update t redraws the same population.
4. Common random numbers: all members of an update see the same prompts and the same sampling seed.
5. Optional antithetic pairs (±ε_j) with the pairing diagnostic κ_pair, and an optional Adam on
   the ES direction (the default, SGD, is the paper's update).

No backward pass and no optimizer state (plain ES), so the torch model is never wrapped in DDP: the
process group only carries seeds, rewards and checksums (gloo on CPU, NCCL on GPU).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Literal

import numpy as np
import torch
from lightning.fabric.strategies import DDPStrategy
from lightning.fabric.strategies.registry import _StrategyRegistry
from typing_extensions import override

from es_lightning.es.noise import seed_schedule
from es_lightning.es.update import Population, kappa_pair, member_coefficients


class ESStrategy(DDPStrategy):
    """Evolution Strategies on the rollout engine of every rank.

    Args:
        population_size: N, perturbations per update (split over the ranks).
        sigma: σ, the perturbation scale.
        learning_rate: α, the step size (it absorbs 1/σ).
        normalization: how rewards are normalised within the population.
        estimator: ``one_point`` (N seeds, the default) or ``antithetic`` (N/2 seeds, ±ε pairs).
        responses_per_prompt: responses generated per prompt for each member.
        optimizer: ``sgd`` (plain ES, the paper) or ``adam`` on the ES direction.
        checksum_tolerance: largest allowed difference of the centre's checksum across ranks
            (0: bit-identical, the default).
        process_group_backend: ``gloo``/``nccl``; default: NCCL on GPU, gloo on CPU.
    """

    strategy_name = "es"
    state_folder = "es_state"

    def __init__(
        self,
        population_size: int = 32,
        sigma: float = 1.5e-3,
        learning_rate: float = 2.5e-4,
        normalization: Literal["zscore", "rank", "none"] = "zscore",
        estimator: Literal["one_point", "antithetic"] = "one_point",
        responses_per_prompt: int = 1,
        optimizer: Literal["sgd", "adam"] = "sgd",
        checksum_tolerance: float = 0.0,
        process_group_backend: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(process_group_backend=process_group_backend, **kwargs)
        if population_size < 1:
            raise ValueError(f"ESStrategy: population_size must be >= 1, got {population_size}")
        if estimator == "antithetic" and population_size % 2:
            raise ValueError(f"ESStrategy: antithetic needs an even population_size, got {population_size}")
        if estimator not in ("one_point", "antithetic"):
            raise ValueError(f"ESStrategy: unknown estimator {estimator!r}; use 'one_point' or 'antithetic'")
        if normalization not in ("zscore", "rank", "none"):
            raise ValueError(f"ESStrategy: unknown normalization {normalization!r}; use zscore, rank or none")
        if sigma <= 0 or learning_rate <= 0:
            raise ValueError(f"ESStrategy: sigma and learning_rate must be > 0, got {sigma}, {learning_rate}")
        if responses_per_prompt < 1:
            raise ValueError(f"ESStrategy: responses_per_prompt must be >= 1, got {responses_per_prompt}")
        self.population_size = population_size
        self.sigma = sigma
        self.learning_rate = learning_rate
        self.normalization = normalization
        self.estimator = estimator
        self.responses_per_prompt = responses_per_prompt
        self.optimizer = optimizer
        self.checksum_tolerance = checksum_tolerance

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register("es", cls, description="Evolution Strategies (es-lightning)")

    @override
    def setup_module(self, module: torch.nn.Module) -> torch.nn.Module:
        return module  # ES has no gradients to synchronise

    # -- the trainer's interface ----------------------------------------------------------------
    def prepare(self, fabric: Any, module: Any, rollout: Any, state_dir: str | None) -> None:
        """Make the rollout engine hold the fp32 centre (from a checkpoint when resuming)."""
        rollout.es_init(state_dir=state_dir, optimizer=self.optimizer)

    def save(self, rollout: Any, directory: str) -> None:
        """Write the centre as an HF checkpoint plus ``es_state/`` (rank 0 calls it)."""
        rollout.es_save(directory)

    def training_step(
        self, fabric: Any, module: Any, rollout: Any, rows: list[dict], step: int, run_seed: int
    ) -> dict[str, float]:
        """One ES update on the mini-batch ``rows``; returns the metrics to log."""
        population = Population.sample(run_seed, step, self.population_size, self.estimator == "antithetic")
        sampling_seed = seed_schedule(run_seed ^ 0x5A5A, step, 1)[0] % (2**31)
        sampling = module.train_sampling
        sampling = replace(sampling, n=self.responses_per_prompt, seed=sampling_seed)
        prompt_ids = module.encode(rows)

        timings = dict.fromkeys(("generate", "perturb_restore", "score"), 0.0)
        local = torch.zeros(self.population_size, dtype=torch.float64)
        tokens = 0
        for i in range(self.global_rank, self.population_size, self.world_size):
            seed, sign = population.members[i]
            t0 = time.perf_counter()
            rollout.es_perturb(seed, sign, self.sigma)
            t1 = time.perf_counter()
            outputs = rollout.generate(prompt_ids, sampling)
            t2 = time.perf_counter()
            scores = module.score(rows, outputs)
            t3 = time.perf_counter()
            rollout.es_restore()
            timings["perturb_restore"] += t1 - t0 + time.perf_counter() - t3
            timings["generate"] += t2 - t1
            timings["score"] += t3 - t2
            local[i] = float(np.mean([s.reward for per_prompt in scores for s in per_prompt]))
            tokens += sum(len(c.token_ids) for out in outputs for c in out.completions)
        rewards = self.all_reduce(local.to(self.root_device), reduce_op="sum").cpu().numpy()
        tokens_total = float(
            self.all_reduce(torch.tensor(float(tokens), device=self.root_device), reduce_op="sum")
        )

        t0 = time.perf_counter()
        coeffs = member_coefficients(population, rewards, self.normalization)
        update_norm = (
            0.0 if coeffs is None else rollout.es_update(coeffs, self.learning_rate, self.population_size)
        )
        timings["update"] = time.perf_counter() - t0
        self._check_agreement(rollout.es_checksum())

        metrics = {
            "train/reward_mean": float(rewards.mean()),
            "train/reward_std": float(rewards.std()),
            "train/reward_max": float(rewards.max()),
            "train/reward_min": float(rewards.min()),
            "es/update_norm": update_norm,
            "es/skipped": float(coeffs is None),
            "time/tokens_per_s": tokens_total / max(timings["generate"], 1e-9),
            **{f"time/{k}": v for k, v in timings.items()},
        }
        if self.estimator == "antithetic":
            metrics["es/kappa_pair"] = kappa_pair(rewards, population)
        return metrics

    def _check_agreement(self, checksum: float) -> None:
        if self.world_size == 1:
            return
        gathered = self.all_gather(torch.tensor([checksum], dtype=torch.float64, device=self.root_device))
        values = gathered.flatten().cpu().tolist()
        if max(values) - min(values) > self.checksum_tolerance:
            raise RuntimeError(
                f"ESStrategy: the ranks' centres disagree after the update (checksums {values})"
            )
