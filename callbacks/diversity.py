"""PopulationDiversity: how differently an ES population's members succeed, and what reaches the centre.

Every ``every_n_updates`` updates (ES only), on a probe set kept apart from the update's reward
prompts (:mod:`es_lightning.callbacks.probe`), with M = ``samples_per_prompt`` samples per member
and prompt:

1. Before update t (the engine serves its centre θ), each of the N members θ + s_i σ ε_i of update t
   (the population is a pure function of the run seed and t) samples the probe: p_i(x). N copies
   of the centre (σ = 0), copy i with member i's sampling seed, do the same: the baseline (under
   common sampling seeds one generation stands for all N copies: they are identical).
2. After update t (the engine serves θ⁺), with the z_i the update applied: the centre samples the
   probe once more, p_θ⁺(x).

Logged at step t (formulas in :mod:`es_lightning.es.diversity`):
``diversity/{p_pop, p_same, gap, js}`` of the members, ``diversity/{js, gap}_baseline`` of the
copies, ``diversity/{js, gap}_excess`` (members − copies: what sampling noise alone does not
explain), ``diversity/alignment_cov`` (cov(z_i, p_i(x)) on the probe) and, for the SGD update,
``diversity/{transfer_kl, mixture_gain, centre_gain, transfer_margin}`` (Proposition 1). A skipped
update (all rewards tied, no z) logs the diversity only.

Cost: one probe generates P·M responses N times (members), N times or once (copies, independent or
common seeds) and once (θ⁺): with the defaults (P = 16, M = 4) and N = 32, B = 32, one response per
prompt, that is about 2× (common) or 4× (independent) one update's generation, every 10 updates:
+20% / +40% generation. The probe never touches the training's random streams, so the training
itself is the same with or without it. The probe always regenerates per member (also under
``member_rollouts: fixed``) and samples at the training temperature unless ``temperature`` is
given; at T = 0 the M samples coincide, so one is drawn and p_i(x) ∈ {0, 1}.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch
from lightning.fabric.utilities.rank_zero import rank_zero_info

from es_lightning.callbacks.probe import ProbePrompts, probe_sampling_seeds, success_rates
from es_lightning.errors import ConfigError
from es_lightning.es.diversity import (
    alignment_covariance,
    excess_diversity,
    mixture_weights,
    transfer_error,
)
from es_lightning.es.update import Population
from es_lightning.strategies.es import ESStrategy
from es_lightning.training.callbacks import Callback

if TYPE_CHECKING:
    from es_lightning.rollout.base import SamplingConfig
    from es_lightning.strategies.base import PopulationResult
    from es_lightning.strategies.es_settings import ESSettings
    from es_lightning.training.trainer import Trainer


class PopulationDiversity(Callback):
    """Probe-set diversity, its excess over a σ = 0 baseline, alignment and transfer (ES only).

    Args:
        every_n_updates: probe the updates t = k, 2k, ... (1-based, as logged).
        num_prompts: P, probe prompts.
        samples_per_prompt: M (>= 2) samples per member and prompt.
        split: where the probe prompts come from: ``auto`` (the task's validation split if it has
            one, else training rows past ``train_limit``, else the train tail outside the update's
            batch), ``validation`` or ``train`` (the tail).
        temperature: sampling temperature of the probe (default: the training sampling's).
        max_tokens: most tokens per probe response (default: the training sampling's).
        seed: seed of the probe's sampling seeds.
    """

    def __init__(
        self,
        every_n_updates: int = 10,
        num_prompts: int = 16,
        samples_per_prompt: int = 4,
        split: Literal["auto", "validation", "train"] = "auto",
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int = 0,
    ) -> None:
        if every_n_updates < 1 or num_prompts < 1:
            raise ConfigError(
                f"PopulationDiversity: every_n_updates and num_prompts must be >= 1, got "
                f"{every_n_updates}, {num_prompts}"
            )
        if samples_per_prompt < 2:
            raise ConfigError(
                "PopulationDiversity: samples_per_prompt must be >= 2 (success rates, not single draws), "
                f"got {samples_per_prompt}"
            )
        if temperature is not None and temperature < 0:
            raise ConfigError(f"PopulationDiversity: temperature must be >= 0, got {temperature}")
        if max_tokens is not None and max_tokens < 1:
            raise ConfigError(f"PopulationDiversity: max_tokens must be >= 1, got {max_tokens}")
        if split not in ("auto", "validation", "train"):
            raise ConfigError(f"PopulationDiversity: split must be auto, validation or train, got {split!r}")
        self.every_n_updates = every_n_updates
        self.num_prompts = num_prompts
        self.samples_per_prompt = samples_per_prompt
        self.split = split
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.prompts: ProbePrompts | None = None
        self._pending: dict[str, Any] | None = None

    # -- hooks ------------------------------------------------------------------------------------
    def on_fit_start(self, trainer: Trainer) -> None:
        self._pending = None
        self.prompts = None
        if getattr(trainer.reasoning_strategy, "strategy_name", None) != "es":
            return  # GRPO (or a pipeline's GRPO stage): nothing to probe
        cfg = trainer.config
        self.prompts = ProbePrompts(trainer.module.task, self.split, self.num_prompts, cfg.train_limit)
        rank_zero_info(f"PopulationDiversity: probe prompts from the {self.prompts.source}")
        self._maybe_probe(trainer, trainer.step)

    def on_train_batch_end(self, trainer: Trainer, step: int, metrics: dict[str, float]) -> None:
        self._maybe_probe(trainer, step)

    def on_population_end(self, trainer: Trainer, step: int, population: PopulationResult) -> None:
        pending, self._pending = self._pending, None
        if pending is None or pending["update"] != step - 1:
            return
        members, copies = pending["members"], pending["copies"]
        metrics = excess_diversity(members, copies)
        settings = es_settings(trainer)
        if population.z is not None:
            z = np.asarray(population.z, dtype=np.float64)
            metrics["diversity/alignment_cov"] = alignment_covariance(z, members)
            if settings.optimizer == "sgd" and trainer.fabric.is_global_zero:
                sampling = replace(pending["sampling"], seed=pending["centre_seed"])
                after = self._rates(trainer, pending["rows"], pending["prompt_ids"], sampling)
                weights = mixture_weights(z, settings.learning_rate, settings.sigma)
                clip = 1.0 / (2.0 * (sampling.n + 1))
                metrics.update(transfer_error(weights, members, copies.mean(axis=0), after, clip))
        trainer.log(metrics, step=step)

    # -- the probe before an update ---------------------------------------------------------------
    def _maybe_probe(self, trainer: Trainer, update: int) -> None:
        """Sample update ``update``'s members and the centre's copies (0-based ``update``: logged
        at step ``update + 1``), if it is probed."""
        total = trainer.reasoning_strategy.total_updates
        if (
            self.prompts is None
            or (update + 1) % self.every_n_updates
            or (total is not None and update >= total)
        ):
            return
        settings = es_settings(trainer)
        cfg, module, engine = trainer.config, trainer.module, trainer.rollout
        n = settings.population_size
        population = Population.sample(cfg.seed, update, n, settings.antithetic)
        seeds = probe_sampling_seeds(self.seed, update, n, settings.member_sampling_seeds)
        common = settings.member_sampling_seeds == "common"
        rows = self.prompts.rows(cfg.batch_size, cfg.seed, cfg.data_offset + update)
        prompt_ids = module.encode(rows)
        sampling = self._sampling(module.train_sampling)
        rank, world = trainer.fabric.global_rank, trainer.fabric.world_size
        members = torch.zeros(n, len(rows), dtype=torch.float64)
        copies = torch.zeros(n, len(rows), dtype=torch.float64)
        for i in range(rank, n, world):
            seed, sign = population.members[i]
            engine.es.perturb(seed, sign, settings.sigma)
            members[i] = torch.from_numpy(
                self._rates(trainer, rows, prompt_ids, replace(sampling, seed=seeds[i]))
            )
            engine.es.restore()
        for i in range(rank, 1 if common else n, world):  # σ = 0: the centre itself
            copies[i] = torch.from_numpy(
                self._rates(trainer, rows, prompt_ids, replace(sampling, seed=seeds[i]))
            )
        if world > 1:  # each rank filled its members' rows; the sum is the whole table
            device = trainer.fabric.device
            members = trainer.fabric.all_reduce(members.to(device), reduce_op="sum").cpu()
            copies = trainer.fabric.all_reduce(copies.to(device), reduce_op="sum").cpu()
        if common:
            copies[:] = copies[0]
        self._pending = {
            "update": update,
            "members": members.numpy(),
            "copies": copies.numpy(),
            "rows": rows,
            "prompt_ids": prompt_ids,
            "sampling": sampling,
            "centre_seed": seeds[0],
        }

    def _sampling(self, train: SamplingConfig) -> SamplingConfig:
        temperature = train.temperature if self.temperature is None else self.temperature
        return replace(
            train,
            n=self.samples_per_prompt if temperature > 0 else 1,  # greedy: the M samples coincide
            temperature=temperature,
            max_tokens=self.max_tokens or train.max_tokens,
            logprobs=False,
        )

    @staticmethod
    def _rates(
        trainer: Trainer, rows: list[dict[str, Any]], prompt_ids: list[list[int]], sampling: Any
    ) -> np.ndarray:
        return success_rates(trainer.module, rows, trainer.rollout.generate(prompt_ids, sampling))


def es_settings(trainer: Trainer) -> ESSettings:
    """The settings of the ES strategy whose populations are probed."""
    strategy = trainer.reasoning_strategy
    if not isinstance(strategy, ESStrategy):
        raise TypeError(f"PopulationDiversity: probes ES populations, not {type(strategy).__name__}'s")
    return strategy
