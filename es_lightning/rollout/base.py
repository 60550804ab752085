"""The rollout contract: batched generation behind one interface, pinned to one device.

Both backends take prompts as token ids (the :class:`~es_lightning.module.ReasoningModule` applies
the chat template and tokenises, so every backend sees identical inputs) and return, per prompt,
``n`` completions with their token ids and, when asked, the sampling log-probabilities::

    outputs = rollout.generate([[1, 2, 3], [4, 5]], SamplingConfig(n=4, temperature=0.6))
    outputs[0].completions[2].token_ids     # list[int]
    outputs[0].completions[2].logprobs      # list[float] | None (one per generated token)

Weights move in through :meth:`Rollout.load_weights` (GRPO after each optimizer step, or a
checkpoint); ES adds in-engine perturb/restore on the same object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import torch


@dataclass
class SamplingConfig:
    """How completions are sampled."""

    n: int = 1
    """Completions per prompt."""
    temperature: float = 1.0
    """Sampling temperature; 0 means greedy decoding."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    max_tokens: int = 256
    """Most new tokens per completion."""
    seed: int | None = None
    """Sampling seed; the same seed with the same weights gives the same completions."""
    stop: list[str] | None = None
    """Strings that end a completion (not included in its text)."""
    logprobs: bool = False
    """Return the log-probability of each sampled token."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"SamplingConfig.n must be >= 1, got {self.n}")
        if self.temperature < 0:
            raise ValueError(f"SamplingConfig.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"SamplingConfig.top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"SamplingConfig.max_tokens must be >= 1, got {self.max_tokens}")


@dataclass
class Completion:
    """One generated response."""

    text: str
    token_ids: list[int]
    logprobs: list[float] | None = None
    finish_reason: str = "length"
    """``"stop"`` (end-of-sequence or a stop string) or ``"length"`` (``max_tokens`` reached)."""


@dataclass
class RolloutOutput:
    """The completions for one prompt."""

    prompt_token_ids: list[int]
    completions: list[Completion] = field(default_factory=list)


class Rollout(ABC):
    """A generation backend bound to one model copy on one device."""

    @abstractmethod
    def setup(self, model_path: str, device: torch.device, dtype: torch.dtype) -> None:
        """Bind to ``model_path`` (an HF folder or hub id) on ``device``; engines may start lazily."""

    @abstractmethod
    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig) -> list[RolloutOutput]:
        """Generate ``sampling.n`` completions for each prompt (given as token ids)."""

    @abstractmethod
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Replace the serving weights with ``named_tensors`` (HF parameter names)."""

    @abstractmethod
    def checksum(self) -> float:
        """Sum of all serving weights in float64: equal engines give equal checksums."""

    @abstractmethod
    def digest(self) -> str:
        """SHA-256 of every serving weight's bytes: equal only for bit-identical weights."""

    # -- ES: the centre θ lives in the engine as fp32 master weights (es_lightning.es.weights) -----
    @abstractmethod
    def es_init(self, state_dir: str | None = None, optimizer: str = "sgd") -> None:
        """Keep an fp32 master of the serving weights; when resuming, read the master and the
        optimizer state from a checkpoint's ``es_state`` folder."""

    @abstractmethod
    def es_perturb(self, seed: int, sign: float, sigma: float) -> None:
        """Serve θ + sign·σ·ε_seed."""

    @abstractmethod
    def es_restore(self) -> None:
        """Serve the centre θ again, bit-exactly."""

    @abstractmethod
    def es_update(self, coeffs: dict[int, float], lr: float, population_size: int) -> float:
        """θ ← θ + (α/N)·Σ_s c_s ε_s, then serve it; returns ‖Δ‖₂."""

    @abstractmethod
    def es_checksum(self) -> float:
        """Sum of the fp32 master in float64 (equal centres give equal checksums)."""

    @abstractmethod
    def es_save(self, directory: str) -> None:
        """Write ``model.safetensors`` (serving dtype) and ``es_state/`` (fp32 master, optimizer
        state) into ``directory`` (see :func:`es_lightning.es.weights.save_es_files`)."""

    def close(self) -> None:  # noqa: B027  (optional hook: backends without resources keep it)
        """Release the engine and its memory."""

    def __enter__(self) -> Rollout:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def weights_digest(module: torch.nn.Module) -> str:
    """SHA-256 over the parameters' names, dtypes and raw bytes (in name order)."""
    import hashlib

    h = hashlib.sha256()
    for name, p in sorted(module.named_parameters(), key=lambda kv: kv[0]):
        t = p.detach().to("cpu").contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()
