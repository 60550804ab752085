"""The rollout contract: batched generation behind one interface, pinned to one device.

Backends take prompts as token ids and return ``n`` completions per prompt::

    outputs = rollout.generate([[1, 2, 3], [4, 5]], SamplingConfig(n=4, temperature=0.6))
    outputs[0].completions[2].token_ids     # list[int]

ES holds the centre θ where generation runs (:meth:`Rollout.es_init`, :attr:`Rollout.es`), so only
seeds and scalars cross a process boundary.

A low-rank ES population is generated in one call by an engine that is also a
:class:`PopulationEngine` (transformers serves members with forward hooks, vLLM with LoRA adapters)::

    engine.es_reserve_population(N, r)            # before the engine starts: room for N members
    engine.es_init(...)
    engine.es_use_lowrank(r, fixed)               # perturb, restore and update with A Bᵀ/√r
    outputs = engine.es_generate_population(prompts, sampling, members, σ, sampling_seeds)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from es_lightning.errors import ConfigError
from es_lightning.init_args import RecordsInit
from es_lightning.rollout.generation_options import check_generation_options

if TYPE_CHECKING:
    from es_lightning.es.handle import ESHandle
    from es_lightning.es.weights import OptimizerName
    from es_lightning.models.loading import ModelLoading


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
    top_k: int = 0
    """Sample among the k most probable tokens only; 0: every token."""
    min_p: float = 0.0
    """Drop tokens less probable than min_p times the most probable one, in [0, 1]; 0: off."""
    repetition_penalty: float = 1.0
    """CTRL penalty on tokens already in the prompt or completion (logit ℓ → ℓ/r if ℓ > 0, else
    ℓ·r), > 0; 1: off. Applies to greedy decoding too."""
    generation_kwargs: dict[str, Any] | None = None
    """Further keyword arguments passed as they are to the backend (transformers ``generate`` or
    ``vllm.SamplingParams``), e.g. ``{typical_p: 0.9}``; keys the settings above set are refused."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"SamplingConfig.n must be >= 1, got {self.n}")
        if self.temperature < 0:
            raise ConfigError(f"SamplingConfig.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ConfigError(f"SamplingConfig.top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ConfigError(f"SamplingConfig.max_tokens must be >= 1, got {self.max_tokens}")
        check_generation_options(
            "SamplingConfig", self.top_k, self.min_p, self.repetition_penalty, self.generation_kwargs
        )


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


class Rollout(RecordsInit, ABC):
    """A generation backend bound to one model copy on one device (one engine per Fabric rank)."""

    dtype: torch.dtype = torch.float32
    """The dtype the engine serves the weights in (set by :meth:`setup`)."""
    _es: ESHandle | None = None

    @abstractmethod
    def setup(
        self,
        model_path: str,
        device: torch.device,
        dtype: torch.dtype,
        loading: ModelLoading | None = None,
    ) -> None:
        """Bind to ``model_path`` on ``device``, loaded as ``loading`` says; may start lazily."""

    @abstractmethod
    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig) -> list[RolloutOutput]:
        """Generate ``sampling.n`` completions for each prompt (given as token ids)."""

    @abstractmethod
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Replace the serving weights with ``named_tensors`` (HF parameter names)."""

    def score_logprobs(
        self, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        """log π of every token of each response under the served weights (temperature 1)."""
        raise NotImplementedError(f"{type(self).__name__} cannot score given responses (score_logprobs)")

    @abstractmethod
    def checksum(self) -> float:
        """Sum of all serving weights in float64: equal engines give equal checksums."""

    @abstractmethod
    def digest(self) -> str:
        """SHA-256 of every serving weight's bytes: equal only for bit-identical weights."""

    def es_init(
        self,
        weight_files: Sequence[str] | None = None,
        optimizer: OptimizerName = "sgd",
        optimizer_state: str | None = None,
    ) -> None:
        """Hold and serve the ES centre θ as fp32 master weights read from ``weight_files``."""
        raise NotImplementedError(f"{type(self).__name__} cannot hold an ES centre (es_init)")

    @property
    def es(self) -> ESHandle:
        """The ES centre :meth:`es_init` made (:class:`~es_lightning.es.handle.ESHandle`)."""
        if self._es is None:
            raise RuntimeError(f"{type(self).__name__}: call es_init() before ES operations")
        return self._es

    def _serve_centre(self) -> None:
        """Before the served weights are read: write the ES centre back if a restore is pending."""
        if self._es is not None:
            self._es.serve_centre()

    def start(self) -> None:  # noqa: B027  (optional hook: backends that start lazily override it)
        """Start the engine now; the trainer calls it before any torch work in its process."""

    def close(self) -> None:  # noqa: B027  (optional hook: backends without resources keep it)
        """Release the engine and its memory."""

    def __enter__(self) -> Rollout:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PopulationEngine(ABC):
    """Low-rank ES members generated together, each batch row under its own member's weights."""

    lowrank_targets_served: tuple[str, ...] = ("matrices", "linear")
    """The ``lowrank_targets`` this engine can serve (:class:`~es_lightning.es.lowrank.LowRankTargets`)."""

    def es_reserve_population(self, members: int, rank: int) -> None:
        """Before the engine starts: room for ``members`` low-rank members of rank ``rank``."""
        return None

    @abstractmethod
    def es_use_lowrank(self, rank: int | None, fixed: Collection[str] = ()) -> None:
        """Use low-rank directions of rank ``rank`` (``None``: full rank), ``fixed`` held still."""

    @abstractmethod
    def es_generate_population(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingConfig,
        members: Sequence[tuple[int, float]],
        sigma: float,
        sampling_seeds: Sequence[int],
    ) -> list[list[RolloutOutput]]:
        """Every member's responses to ``prompts`` (``[m][j]``), member m serving θ + sign·σ·A Bᵀ/√r."""


def weights_digest(module: torch.nn.Module) -> str:
    """SHA-256 over the parameters' names, dtypes and raw bytes (in name order)."""
    import hashlib

    h = hashlib.sha256()
    for name, p in sorted(module.named_parameters(), key=lambda kv: kv[0]):
        t = p.detach().to("cpu").contiguous()
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()
