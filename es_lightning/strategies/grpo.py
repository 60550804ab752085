"""GRPOStrategy: Group Relative Policy Optimization as a Lightning Fabric strategy.

One update (symbols as in DeepSeekMath's GRPO):

1. Each rank samples G responses to each of its prompts, with a sampling seed of its own
   (:mod:`es_lightning.strategies.grpo_rollouts`).
2. Rewards r (P, G) from the verifier; advantages A = (r − mean_g r) / (std_g r + eps)
   (:mod:`es_lightning.grpo.advantages`).
3. The trainer recomputes log π_θ of every sampled token and minimises, over μ optimizer steps::

       L = −min(ρ_t A, clip(ρ_t, 1 − ε_low, 1 + ε_high) A) + β · KL_k3(π_θ ‖ π_ref)

   averaged per token (``token_mean``) or per sequence (``sequence_mean``), with AdamW, gradient
   clipping and micro-batches, in Fabric's precision (``trainer.precision``).
4. The engine receives the new weights.

How this departs from the textbook: π_old is the trainer's recomputation at the rollout weights,
so with μ = 1 the ratio is exactly 1; β defaults to 0 (no reference model). The model is wrapped in
DDP (``grpo``) or FSDP (``grpo_fsdp``); with ``lora`` only adapters train and weights leave merged.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import torch
from lightning.fabric.strategies.ddp import DDPStrategy
from lightning.fabric.strategies.fsdp import FSDPStrategy
from lightning.fabric.strategies.parallel import ParallelStrategy
from lightning.fabric.strategies.registry import _StrategyRegistry
from lightning.fabric.wrappers import _unwrap_objects
from typing_extensions import override

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.grpo.lora import (
    AdaptersOff,
    LoRASettings,
    engine_holds_frozen_weights,
    merged_weights,
    require_peft,
    save_adapter,
    seed_dropout,
    wrap_with_lora,
)
from es_lightning.grpo.loss import GRPOLoss
from es_lightning.grpo.optimize import PolicyBatch, optimize_policy
from es_lightning.grpo.schedule import Schedule, lr_multiplier, resolve_warmup
from es_lightning.grpo.settings import SETTING_NAMES, GRPOSettings, build_settings, settings_hparams
from es_lightning.ranks import fail_together
from es_lightning.rollout.base import Rollout
from es_lightning.strategies.base import ReasoningStrategy, Row, StepResult
from es_lightning.strategies.grpo_rollouts import GroupRollouts, rank_sampling_seed, sample_groups
from es_lightning.strategies.metrics import (
    function_reward_metrics,
    gather_values,
    response_metrics,
    response_stats,
    reward_metrics,
    reward_names,
    text_samples,
    timed,
)
from es_lightning.weight_files import load_weights, master_files

if TYPE_CHECKING:
    from lightning.fabric import Fabric
    from lightning.fabric.wrappers import _FabricModule, _FabricOptimizer

    from es_lightning.checkpoint import Checkpoint
    from es_lightning.module import ReasoningModule

FABRIC_STATE = "fabric_state.ckpt"
"""The trainer model and AdamW state, written as ``fabric.save`` writes them (sharded under FSDP)."""


class _GRPO(ReasoningStrategy, ParallelStrategy):
    """GRPO with a trainer copy of the model and weight sync into the rollout engine; a Fabric
    parallel strategy, made concrete by the DDP or FSDP strategy it is mixed with.

    Its settings are keyword arguments (the recipes' ``strategy.init_args``), beside which Fabric's
    DDP or FSDP arguments pass through ``kwargs``; they are checked together when it is built
    (:func:`~es_lightning.grpo.settings.build_settings`, every bad value named at once) and kept as
    ``self.settings`` and the loss ``self.loss``.

    Args:
        group_size: G, responses per prompt (>= 2).
        learning_rate: AdamW learning rate η (> 0), the peak of the schedule.
        lr_schedule: ``constant`` (default), ``linear`` or ``cosine`` decay after the warmup, over
            the run's updates × μ optimizer steps (``es_lightning/grpo/schedule.py``; a pipeline
            stage schedules over its own updates).
        warmup_steps: optimizer steps of linear warmup from 0 (overrides ``warmup_ratio``).
        warmup_ratio: warmup as a fraction of the run's optimizer steps.
        weight_decay: AdamW weight decay.
        adam_betas: AdamW betas.
        clip_eps: ε (ε_low) of the clipped ratio, in (0, 1).
        clip_eps_high: ε_high (DAPO's asymmetric clip); ``None``: same as ``clip_eps``.
        beta: β, weight of the k3 KL to the frozen starting model (0: no reference model).
        advantage: ``group`` (default), ``batch`` or ``none``.
        loss_aggregation: ``token_mean`` (default) or ``sequence_mean`` (original GRPO).
        inner_iterations: μ, optimizer steps per batch of rollouts.
        micro_batch_size: sequences per forward/backward (gradients accumulate over the batch).
        max_grad_norm: gradient clipping norm (``None``: no clipping).
        gradient_checkpointing: trade compute for memory in the trainer model.
        lora: train low-rank adapters only (``LoRASettings``; ``pip install "es-lightning[lora]"``;
            DDP only); engine, checkpoints and callbacks get the merged W + (α/r)·B·A, the state
            folder also the adapter in PEFT's format (:mod:`es_lightning.grpo.lora`).
        process_group_backend: ``gloo``/``nccl``; default: NCCL on GPU, gloo on CPU.
        kwargs: further arguments of the Fabric strategy underneath (DDP or FSDP).
    """

    strategy_name = "grpo"
    _process_group_backend: str | None  # set by the DDP or FSDP strategy underneath

    def __init__(
        self,
        group_size: int = GRPOSettings.group_size,
        learning_rate: float = GRPOSettings.learning_rate,
        lr_schedule: Schedule = GRPOSettings.lr_schedule,
        warmup_steps: int = GRPOSettings.warmup_steps,
        warmup_ratio: float = GRPOSettings.warmup_ratio,
        weight_decay: float = GRPOSettings.weight_decay,
        adam_betas: tuple[float, float] = GRPOSettings.adam_betas,
        clip_eps: float = GRPOLoss.clip_eps,
        clip_eps_high: float | None = GRPOLoss.clip_eps_high,
        beta: float = GRPOLoss.beta,
        advantage: Literal["group", "batch", "none"] = GRPOSettings.advantage,
        loss_aggregation: Literal["token_mean", "sequence_mean"] = GRPOLoss.loss_aggregation,
        inner_iterations: int = GRPOSettings.inner_iterations,
        micro_batch_size: int = GRPOSettings.micro_batch_size,
        max_grad_norm: float | None = GRPOSettings.max_grad_norm,
        gradient_checkpointing: bool = GRPOSettings.gradient_checkpointing,
        lora: LoRASettings | None = GRPOSettings.lora,
        process_group_backend: str | None = None,
        **kwargs: Any,
    ) -> None:
        settings = {name: value for name, value in locals().items() if name in SETTING_NAMES}
        self.settings, self.loss = build_settings(**settings)  # in the signature's order
        if lora is not None and isinstance(self, FSDPStrategy):
            raise ConfigError("GRPOFSDPStrategy: lora is not supported under FSDP; use GRPOStrategy (DDP)")
        if lora is not None:
            require_peft()
        kwargs["process_group_backend"] = process_group_backend  # a DDP and FSDP argument: the
        super().__init__(**kwargs)  # concrete class's (GRPOStrategy, GRPOFSDPStrategy) strategy takes it
        self.model: _FabricModule | None = None
        self.optimizer: _FabricOptimizer | None = None
        self.reference: torch.nn.Module | None = None

    @override
    def hparams(self) -> dict[str, Any]:
        """Every setting once, and the process group backend."""
        return {
            **settings_hparams(self.settings, self.loss),
            "process_group_backend": self._process_group_backend,
        }

    # -- the trainer's interface (es_lightning.strategies.base.ReasoningStrategy) -----------------
    @override
    def prepare(
        self, fabric: Fabric, module: ReasoningModule, rollout: Rollout, resume: Checkpoint | None
    ) -> None:
        """Load the trainer model (fp32) and AdamW, or a checkpoint's or the previous stage's."""
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(
            module.model, dtype=torch.float32, **module.loading.model_kwargs_for(module.model)
        )
        start = master_files(module.model)  # a previous stage's fp32 weights
        if start:
            missing, unexpected = model.load_state_dict(load_weights(start), strict=False)
            if unexpected or [m for m in missing if not m.endswith("lm_head.weight")]:
                raise KeyError(f"GRPO: {start} does not match the model ({missing[:3]}, {unexpected[:3]})")
        settings, lora = self.settings, self.settings.lora
        if self.loss.beta > 0 and lora is None:  # π_ref for the KL: a frozen copy of the start
            frozen = copy.deepcopy(cast(torch.nn.Module, model))  # a plain module: HF types .to its own way
            self.reference = frozen.eval().requires_grad_(False).to(fabric.device)
        if settings.gradient_checkpointing:
            model.gradient_checkpointing_enable()
            if lora is not None:  # frozen embeddings: checkpointed blocks must still pass gradients
                model.enable_input_require_grads()
        model.config.use_cache = False
        if lora is not None:  # only the adapters train; the frozen base is the β reference
            model = wrap_with_lora(model, lora)
            self.reference = AdaptersOff(model) if self.loss.beta > 0 else None
        optimizer = torch.optim.AdamW(
            [p for p in model.parameters() if p.requires_grad],
            lr=settings.learning_rate,
            betas=settings.adam_betas,
            weight_decay=settings.weight_decay,
        )
        self.model, self.optimizer = fabric.setup(model, optimizer)
        if resume is not None:
            state = resume.state_dir(self.strategy_name) / FABRIC_STATE
            if not state.exists():
                raise MissingPathError(
                    f"GRPO resume: {state} does not exist (the checkpoint holds no GRPO state; was it "
                    "written by another strategy?)"
                )
            fabric.load(state, {"model": self.model, "optimizer": self.optimizer})
        engine_start = resume.path if resume is not None else module.model  # what the engine loaded
        exact = engine_holds_frozen_weights(engine_start, module.torch_dtype(fabric.device))
        self.sync_weights(rollout, everything=not exact)

    def lr_at(self, optimizer_step: int) -> float:
        """η at optimizer step ``optimizer_step`` (0-based) of the run's ``total_updates`` × μ."""
        settings = self.settings
        if settings.lr_schedule == "constant" and not (settings.warmup_steps or settings.warmup_ratio):
            return settings.learning_rate
        if not self.total_updates:
            raise ConfigError(
                f"GRPOStrategy: lr_schedule={settings.lr_schedule!r} with warmup needs the run's length "
                "(the trainer sets total_updates from trainer.max_steps or epochs)"
            )
        total = self.total_updates * settings.inner_iterations
        warmup = resolve_warmup(total, settings.warmup_steps, settings.warmup_ratio)
        return settings.learning_rate * lr_multiplier(optimizer_step, total, warmup, settings.lr_schedule)

    def _unwrapped(self) -> torch.nn.Module:
        """The trainer's model without Fabric's and DDP's/FSDP's wrappers (with LoRA: the PeftModel)."""
        if self.model is None:
            raise RuntimeError("GRPO: call prepare(fabric, module, rollout, resume) first")
        model: torch.nn.Module = self.model
        inner = model.module
        while isinstance(inner, torch.nn.Module):
            model, inner = inner, getattr(inner, "module", None)
        return model

    @override
    def named_weights(self, rollout: Rollout) -> Iterator[tuple[str, torch.Tensor]]:
        """Every weight under its HF name, fp32 (with LoRA the merged weights, never the adapters)."""
        if self.settings.lora is not None:
            yield from merged_weights(self._unwrapped())
            return
        for name, p in self._unwrapped().named_parameters():
            yield name, p.detach()

    def sync_weights(self, rollout: Rollout, everything: bool = False) -> None:
        """Give the engine what changed: all weights, or with LoRA the adapted layers' merged ones."""
        if self.settings.lora is not None and not everything:
            rollout.load_weights(merged_weights(self._unwrapped(), adapted_only=True))
        else:
            rollout.load_weights(self.named_weights(rollout))

    @override
    def save_state(self, fabric: Fabric, rollout: Rollout, folder: Path) -> None:
        """The trainer model and AdamW as ``fabric.save`` writes them; with LoRA the adapter too."""
        state = _unwrap_objects({"model": self.model, "optimizer": self.optimizer})
        self.save_checkpoint(folder / FABRIC_STATE, state)  # fabric.save without its barrier: the
        # checkpoint's fail_together is the barrier, and it also carries a failed write to every rank
        if self.settings.lora is not None and fabric.is_global_zero:
            save_adapter(self._unwrapped(), folder)

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
        """Sample G responses per prompt, score them, take μ optimizer steps, sync the engine."""
        if len(rows) < self.world_size:
            raise ValueError(
                f"GRPO: batch of {len(rows)} prompts is smaller than the {self.world_size} ranks"
            )
        rows = rows[self.global_rank :: self.world_size]
        sampling = replace(
            module.train_sampling,
            n=self.settings.group_size,
            seed=rank_sampling_seed(run_seed, step, self.global_rank),
        )
        with fail_together():  # generation and reward functions: a failure on one rank ends all ranks
            groups = sample_groups(module, rollout, rows, sampling, self.settings.advantage)
        temperature = sampling.temperature if sampling.temperature > 0 else 1.0
        with timed(groups.timings, "train"):
            stats = self._optimize(fabric, groups.batch, temperature, step)
        with timed(groups.timings, "sync"):
            self.sync_weights(rollout)
        metrics = self._metrics(groups, stats, reward_names(module))
        samples = []
        if self.global_rank == 0:  # each prompt's first response, with its advantage
            first = groups.advantages.view(len(rows), -1)[:, 0].tolist()
            samples = text_samples(module, rows, groups.outputs, groups.scores, advantages=first)
        return StepResult(metrics=metrics, samples=samples)

    def _metrics(self, groups: GroupRollouts, stats: dict[str, float], names: list[str]) -> dict[str, float]:
        """The update's ``train/``, ``grpo/`` and ``time/`` scalars."""
        stats_rows = response_stats(groups.outputs, groups.scores, names)
        per_response = torch.tensor(stats_rows, dtype=torch.float64)
        per_response = gather_values(self, per_response).reshape(-1, 3 + len(names))  # (P_all*G, 3 + F)
        rewards = groups.rewards  # (P, G)
        flat_groups = gather_values(self, (rewards.amax(1) == rewards.amin(1)).double())  # (P_all,)
        tokens = float(groups.batch.response_mask.sum(1).float().sum())

        def reduce(x: float | torch.Tensor) -> float:  # the optimisation's statistics: means over ranks
            return float(self.all_reduce(torch.tensor(float(x), device=self.root_device), reduce_op="mean"))

        return {
            **reward_metrics(per_response[:, 0]),
            **response_metrics(per_response[:, 1], per_response[:, 2]),
            **function_reward_metrics(per_response[:, 3:], names),
            "grpo/zero_std_frac": float(flat_groups.mean()),
            "train/entropy": reduce(stats["entropy"]),
            "train/loss": reduce(stats["loss"]),
            "grpo/clip_frac": reduce(stats["clip_frac"]),
            "grpo/kl": reduce(stats["kl"]),
            "grpo/adv_std": reduce(groups.advantages.std(unbiased=False)),
            "grpo/grad_norm": reduce(stats["grad_norm"]),
            "train/lr": stats["lr"],  # the learning rate as it is
            "time/tokens_per_s": tokens / max(groups.timings["generate"], 1e-9),
            **{f"time/{k}": v for k, v in groups.timings.items()},
        }

    def _optimize(
        self, fabric: Fabric, batch: PolicyBatch, temperature: float, step: int
    ) -> dict[str, float]:
        """μ optimizer steps on ``batch`` at update ``step`` (:func:`~es_lightning.grpo.optimize.optimize_policy`)."""
        if self.model is None or self.optimizer is None:
            raise RuntimeError("GRPO: call prepare(fabric, module, rollout, resume) before training_step")
        settings = self.settings
        if settings.lora is not None:
            seed_dropout(settings.lora, step, self.global_rank)
        mu = settings.inner_iterations
        return optimize_policy(
            fabric,
            self.model,
            self.optimizer,
            self.loss,
            batch,
            [self.lr_at(step * mu + it) for it in range(mu)],
            temperature=temperature,
            micro_batch_size=settings.micro_batch_size,
            max_grad_norm=settings.max_grad_norm,
            reference=self.reference,
        )


class GRPOStrategy(_GRPO, DDPStrategy):
    """GRPO over DDP (``strategy: grpo``): every rank holds the whole model; gradients are averaged."""

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register("grpo", cls, description="GRPO over DDP (es-lightning)")


class GRPOFSDPStrategy(_GRPO, FSDPStrategy):
    """GRPO over FSDP (``strategy: grpo_fsdp``): parameters, gradients and AdamW state are sharded
    across ranks; FSDP arguments pass through ``kwargs``."""

    @classmethod
    @override
    def register_strategies(cls, strategy_registry: _StrategyRegistry) -> None:
        strategy_registry.register("grpo_fsdp", cls, description="GRPO over FSDP (es-lightning)")

    @override
    def named_weights(self, rollout: Rollout) -> Iterator[tuple[str, torch.Tensor]]:
        """The full weights gathered from the shards on every rank (a collective)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        if self.model is None:
            raise RuntimeError("GRPO: call prepare(fabric, module, rollout, resume) first")
        state = get_model_state_dict(self.model, options=StateDictOptions(full_state_dict=True))
        names = {_strip_fsdp_prefix(name) for name, _ in self._unwrapped().named_parameters()}
        for key, value in state.items():
            if _strip_fsdp_prefix(key) in names and isinstance(value, torch.Tensor):  # (all are)
                yield _strip_fsdp_prefix(key), value


def _strip_fsdp_prefix(name: str) -> str:
    return name.replace("_fsdp_wrapped_module.", "").replace("_checkpoint_wrapped_module.", "")
