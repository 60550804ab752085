"""TokenEntropy: the current policy's mean per-token entropy on a fixed held-out prompt set.

Every ``every_n_updates`` updates and after each of ``at_steps`` (and before the first and after
the last), the engine samples
``samples_per_prompt`` responses at temperature τ for the same ``num_prompts`` prompts of
``task``'s test split with the same seed; then the current weights (the ES centre, or GRPO's model,
streamed through the trainer) score those responses with full-vocabulary logits z_t:

    H = (1/T) Σ_t −Σ_v π(v | ·) log π(v | ·),   π = softmax(z_t / τ)

over every response token t of every response (T tokens in all), in nats. The paper's Figure 2
tracks this on held-out GPQA while training on GSM8K (GRPO falls from ~0.40 to ~0.25; ES stays at
0.33–0.40). Logged as ``entropy/<task>``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from es_lightning.errors import ConfigError
from es_lightning.rollout.base import SamplingConfig
from es_lightning.tasks.base import Task
from es_lightning.training.callbacks import Callback

if TYPE_CHECKING:
    from es_lightning.training.trainer import Trainer


class TokenEntropy(Callback):
    """Mean token entropy of the current policy on held-out prompts (``entropy/<name>``).

    Args:
        task: the held-out task whose test split gives the prompts (default: the training task).
        name: metric name (default: the task's name).
        every_n_updates: measure after every this many updates.
        at_steps: also measure after exactly these updates (e.g. ``[1, 2, 3, 5, 7]``: a
            trajectory's early checkpoints, ``trainer.checkpoint_steps``).
        num_prompts: the first this many test rows form the fixed prompt set.
        samples_per_prompt: responses sampled per prompt.
        temperature: τ of sampling and of the entropy's softmax.
        max_tokens: most tokens per response.
        seed: sampling seed (the same responses for the same weights).
        micro_batch_size: sequences per forward pass when scoring.
    """

    def __init__(
        self,
        task: Task | None = None,
        name: str | None = None,
        every_n_updates: int = 10,
        num_prompts: int = 64,
        samples_per_prompt: int = 1,
        temperature: float = 1.0,
        max_tokens: int = 256,
        seed: int = 0,
        micro_batch_size: int = 16,
        at_steps: list[int] | None = None,
    ) -> None:
        if every_n_updates < 1 or num_prompts < 1 or samples_per_prompt < 1 or micro_batch_size < 1:
            raise ConfigError(
                "TokenEntropy: every_n_updates, num_prompts, samples_per_prompt and micro_batch_size must be >= 1"
            )
        if any(step < 1 for step in at_steps or []):
            raise ConfigError(f"TokenEntropy: at_steps must be updates >= 1, got {at_steps}")
        if temperature <= 0:
            raise ConfigError(
                f"TokenEntropy: temperature must be > 0 (entropy of softmax(z/τ)), got {temperature}"
            )
        self.task = task
        self.name = name
        self.every_n_updates = every_n_updates
        self.at_steps = set(at_steps or [])
        self.num_prompts = num_prompts
        self.sampling = SamplingConfig(
            n=samples_per_prompt, temperature=temperature, max_tokens=max_tokens, seed=seed
        )
        self.micro_batch_size = micro_batch_size
        self.history: dict[int, float] = {}
        self._model: torch.nn.Module | None = None
        self._rows: list[dict[str, Any]] = []

    @property
    def metric(self) -> str:
        return f"entropy/{self.name or (self.task.name if self.task else 'train')}"

    def on_fit_start(self, trainer: Trainer) -> None:
        if trainer.step == 0:  # a new run or pipeline stage (a resumed run restored its curve)
            self.history = {}
        task = self.task or trainer.module.task
        self.name = self.name or task.name
        self._rows = task.load("test")[: self.num_prompts]
        if not self._rows:
            raise ConfigError(f"TokenEntropy: task {task.name!r} has no test rows")
        if trainer.step not in self.history:
            self.measure(trainer)

    def due(self, step: int) -> bool:
        """Whether the entropy is measured after update ``step``."""
        return step % self.every_n_updates == 0 or step in self.at_steps

    def on_train_batch_end(self, trainer: Trainer, step: int, metrics: dict[str, float]) -> None:
        if self.due(step):
            self.measure(trainer)

    def on_fit_end(self, trainer: Trainer, results: dict[str, Any]) -> None:
        if trainer.step not in self.history:
            self.measure(trainer)

    def measure(self, trainer: Trainer) -> float | None:
        """Sample, score with the current weights and log; ``None`` on ranks other than 0."""
        weights = trainer.named_weights()  # every rank: sharded strategies gather collectively
        if not trainer.fabric.is_global_zero:
            for _ in weights:
                pass
            return None
        model = self._load(trainer, weights)
        module = trainer.module.with_task(self.task or trainer.module.task)
        prompts = module.encode(self._rows)
        outputs = trainer.rollout.generate(prompts, self.sampling)
        pairs = [(p, c.token_ids) for p, out in zip(prompts, outputs) for c in out.completions if c.token_ids]
        value = mean_token_entropy(
            model, pairs, module.tokenizer.pad_token_id, self.sampling.temperature, self.micro_batch_size
        )
        self.history[trainer.step] = value
        trainer.log({self.metric: value})
        return value

    def _load(self, trainer: Trainer, weights: Any) -> torch.nn.Module:
        if self._model is None:
            from transformers import AutoModelForCausalLM

            # the policy as served: the engine's dtype (bf16 on GPUs); logits are scored in fp32
            module = trainer.module
            self._model = AutoModelForCausalLM.from_pretrained(
                module.model, dtype=trainer.rollout.dtype, **module.loading.model_kwargs_for(module.model)
            )
            self._model.to(trainer.fabric.device).eval().requires_grad_(False)
        params = dict(self._model.named_parameters())
        with torch.no_grad():
            for name, tensor in weights:
                if name not in params:
                    raise KeyError(
                        f"TokenEntropy: the streamed weight {name!r} is not a parameter of the model"
                    )
                params[name].copy_(tensor)
        return self._model

    def state_dict(self) -> dict[str, Any]:
        return {"history": dict(self.history), "name": self.name}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.history = {int(k): float(v) for k, v in state.get("history", {}).items()}
        self.name = self.name or state.get("name")


@torch.no_grad()
def mean_token_entropy(
    model: torch.nn.Module,
    pairs: list[tuple[list[int], list[int]]],
    pad_token_id: int,
    temperature: float = 1.0,
    micro_batch_size: int = 16,
) -> float:
    """H over every response token of ``pairs`` = [(prompt ids, response ids)] (see the module docstring)."""
    from es_lightning.grpo import pack_sequences, token_logprobs_and_entropy

    if not pairs:
        raise ValueError("mean_token_entropy: no responses to score")
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for start in range(0, len(pairs), micro_batch_size):
        chunk = pairs[start : start + micro_batch_size]
        ids, att, mask, _ = pack_sequences([p for p, _ in chunk], [r for _, r in chunk], pad_token_id)
        _, entropy = token_logprobs_and_entropy(
            model, ids.to(device), att.to(device), mask.to(device), temperature
        )
        total += float(entropy.double().sum())
        count += int(mask.sum())
    return total / count
