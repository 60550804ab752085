"""A low-rank ES population in one transformers ``generate`` call: N members × B prompts as rows.

A forward hook adds each row's own low-rank term to every layer whose weight moves
(``nn.Linear``: y_row += (x_row·B_m)·(sign·σ/√r·A_m)ᵀ), and :class:`RowSampler` samples each row
from its own stream, so a member generated alone samples the same tokens.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Protocol, cast

import torch
from torch import nn

from es_lightning.errors import ConfigError
from es_lightning.es.lowrank import LowRankNoise
from es_lightning.es.weights import ESWeights
from es_lightning.rollout.base import Completion, RolloutOutput, SamplingConfig
from es_lightning.rollout.seeds import sample_seed

Factors = tuple[torch.Tensor, torch.Tensor]  # A (M, d_out, r) scaled by sign·σ/√r, B (M, d_in, r)


def sample_rows(
    logits: torch.Tensor,
    uniforms: torch.Tensor,
    temperature: float,
    top_p: float,
    top_k: int = 0,
    min_p: float = 0.0,
) -> torch.Tensor:
    """One token per row from its uniform over softmax(logits/T), filtered as transformers does."""
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    sorted_probs, order = torch.sort(probs, dim=-1, descending=True, stable=True)
    if top_k > 0:
        sorted_probs[:, top_k:] = 0.0
        sorted_probs = sorted_probs / sorted_probs.sum(-1, keepdim=True)
    cumulative = sorted_probs.cumsum(-1)
    kept = (cumulative - sorted_probs) < top_p  # the mass before a token is below top_p (first kept)
    if top_k > 0:
        kept[:, top_k:] = False
    if min_p > 0:
        kept &= sorted_probs >= min_p * sorted_probs[:, :1]  # the most probable token always stays
    sorted_probs = sorted_probs * kept
    cdf = sorted_probs.cumsum(-1)
    target = uniforms.to(cdf) * cdf[:, -1]
    index = torch.searchsorted(cdf, target[:, None], right=True)
    index = torch.minimum(index, kept.sum(-1, keepdim=True) - 1)  # u·total rounded up to total
    return order.gather(-1, index).squeeze(-1)


class RowSampler:
    """A logits processor sampling each row from its own stream (greedy decoding keeps its pick)."""

    def __init__(self, row_seeds: Sequence[int | None], sampling: SamplingConfig) -> None:
        streams = []
        for seed in row_seeds:
            gen = torch.Generator()
            if seed is None:
                gen.seed()
            else:
                gen.manual_seed(seed)
            streams.append(torch.rand(sampling.max_tokens, generator=gen, dtype=torch.float64))
        self.uniforms = torch.stack(streams)  # (rows, max_tokens)
        self.sampling = sampling
        self.step = 0

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        s = self.sampling  # scores arrive after transformers' repetition penalty, if any
        tokens = sample_rows(scores, self.uniforms[:, self.step], s.temperature, s.top_p, s.top_k, s.min_p)
        self.step += 1
        out = torch.full_like(scores, float("-inf"))
        return out.scatter_(1, tokens[:, None].to(scores.device), 0.0)


def row_seeds(sampling_seeds: Sequence[int | None], n_prompts: int, n: int) -> list[int | None]:
    """The seed of every row, member-major: (member m, prompt j, response k) → sample_seed(s_m, j, k)."""
    return [
        None if seed is None else sample_seed(seed, j, k)
        for seed in sampling_seeds
        for j in range(n_prompts)
        for k in range(n)
    ]


def _linear_hook(a: torch.Tensor, b: torch.Tensor):
    def hook(module: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> torch.Tensor:
        x = inputs[0].reshape(a.shape[0], -1, inputs[0].shape[-1])  # (M, L, d_in): a member's rows
        delta = (x @ b) @ a.transpose(1, 2)  # (M, L, r) -> (M, L, d_out)
        return output + delta.reshape(output.shape)

    return hook


def _embedding_hook(a: torch.Tensor, b: torch.Tensor):
    def hook(module: nn.Module, inputs: tuple[torch.Tensor, ...], output: torch.Tensor) -> torch.Tensor:
        ids = inputs[0].reshape(a.shape[0], -1)  # (M, L)
        picked = a[torch.arange(a.shape[0], device=ids.device)[:, None], ids]  # (M, L, r)
        return output + (picked @ b.transpose(1, 2)).reshape(output.shape)  # (M, L, d)

    return hook


def hooked_layers(
    model: nn.Module, master: Mapping[str, torch.Tensor], noise: LowRankNoise
) -> list[tuple[nn.Module, str]]:
    """(layer, master name) of every layer whose weight ``noise`` moves; refuses one it misses."""
    names = {id(p): n for n, p in model.named_parameters()}
    layers = []
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            name = names.get(id(module.weight))
            if name is not None and name in master and noise.moves(name, master[name].shape):
                layers.append((module, name))
    missing = sorted({n for n, t in master.items() if noise.moves(n, t.shape)} - {n for _, n in layers})
    if missing:
        raise ConfigError(
            f"perturbation: lowrank: the batched rollout adds the members' terms to nn.Linear and "
            f"nn.Embedding outputs, but {missing[0]!r} (and {len(missing) - 1} more) belong to other layers"
        )
    return layers


@contextmanager
def population_hooks(
    model: nn.Module,
    master: Mapping[str, torch.Tensor],
    noise: LowRankNoise,
    members: Sequence[tuple[int, float]],
    sigma: float,
) -> Iterator[None]:
    """While open, row block m of every forward pass runs member m's weights (module docstring)."""
    dtype = next(model.parameters()).dtype
    factors: dict[str, Factors] = {}
    handles = []
    try:
        for module, name in hooked_layers(model, master, noise):
            if name not in factors:  # a tied tensor: one set of factors
                device = cast(torch.Tensor, module.weight).device
                factors[name] = noise.member_factors(members, name, master[name].shape, sigma, device, dtype)
            make = _embedding_hook if isinstance(module, nn.Embedding) else _linear_hook
            handles.append(module.register_forward_hook(make(*factors[name])))
        yield
    finally:
        for handle in handles:
            handle.remove()


class PopulationRollout(Protocol):
    """What :func:`generate_population` needs of the transformers rollout."""

    @property
    def es(self) -> ESWeights: ...
    @property
    def served_model(self) -> nn.Module: ...
    def generate_rows(
        self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig, row_seeds: Sequence[int | None]
    ) -> list[Completion]: ...


def generate_population(
    rollout: PopulationRollout,
    prompts: Sequence[Sequence[int]],
    sampling: SamplingConfig,
    members: Sequence[tuple[int, float]],
    sigma: float,
    sampling_seeds: Sequence[int | None],
    batched: bool = True,
) -> list[list[RolloutOutput]]:
    """``[m][j]``: member m's output for prompt j, all in one call (``batched``) or one by one."""
    if len(sampling_seeds) != len(members):
        raise ValueError(f"{len(members)} members but {len(sampling_seeds)} sampling seeds")
    seeds = row_seeds(sampling_seeds, len(prompts), sampling.n)
    per_member = len(prompts) * sampling.n
    if batched:
        rollout.es.serve_centre()
        noise = rollout.es.noise
        if noise is None:
            raise RuntimeError("HFRollout: es_use_lowrank(rank) before generating a low-rank population")
        with population_hooks(rollout.served_model, rollout.es.master, noise, members, sigma):
            rows = rollout.generate_rows([p for _ in members for p in prompts], sampling, seeds)
        blocks = [rows[m * per_member : (m + 1) * per_member] for m in range(len(members))]
    else:
        blocks = []
        for m, (seed, sign) in enumerate(members):
            rollout.es.perturb(seed, sign, sigma)
            blocks.append(
                rollout.generate_rows(prompts, sampling, seeds[m * per_member : (m + 1) * per_member])
            )
            rollout.es.restore()
    return [
        [
            RolloutOutput(prompt_token_ids=list(p), completions=block[j * sampling.n : (j + 1) * sampling.n])
            for j, p in enumerate(prompts)
        ]
        for block in blocks
    ]
