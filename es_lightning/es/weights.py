"""The ES centre θ as fp32 master weights, written into whatever model serves generation.

The serving model may be an HF module (write = ``copy_`` into its parameters) or a vLLM engine's
model (write = its own ``load_weights``, which fuses and shards). Either way every write is
computed from the fp32 master and cast once, so ``restore`` is bit-exact whatever the serving dtype
and the update is accumulated in fp32 (see :mod:`es_lightning.es.update`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Literal

import torch

from es_lightning.es.noise import noise_like
from es_lightning.es.parallel import map_tensors
from es_lightning.es.update import apply_es_update, assign_es_grad_

Writer = Callable[[Iterable[tuple[str, torch.Tensor]]], None]
OptimizerName = Literal["sgd", "adam"]


class ESWeights:
    """fp32 master of the centre plus a writer into the serving weights.

    Args:
        master: HF-named fp32 tensors (the centre θ); owned by this object.
        write: puts ``(name, tensor)`` pairs into the serving model.
        serving_dtype: dtype the serving model holds.
        optimizer: ``sgd`` = plain ES (θ ← θ + Δ); ``adam`` feeds −Δ/α as the gradient to
            ``torch.optim.Adam(lr=α)``.
    """

    def __init__(
        self,
        master: dict[str, torch.Tensor],
        write: Writer,
        serving_dtype: torch.dtype,
        optimizer: OptimizerName = "sgd",
        adam_betas: tuple[float, float] = (0.9, 0.999),
        adam_eps: float = 1e-8,
    ) -> None:
        if optimizer not in ("sgd", "adam"):
            raise ValueError(f"ESWeights: unknown optimizer {optimizer!r}; use 'sgd' or 'adam'")
        self.master = {n: t.to(torch.float32) for n, t in master.items()}
        self.write = write
        self.serving_dtype = serving_dtype
        self.optimizer_name = optimizer
        self._adam: torch.optim.Adam | None = None
        self._adam_args = dict(betas=adam_betas, eps=adam_eps)

    def perturbed(self, seed: int, sign: float, sigma: float) -> Iterator[tuple[str, torch.Tensor]]:
        """θ + sign·σ·ε_seed per tensor, computed in fp32 and cast once to the serving dtype
        (tensors drawn on several CPU threads, yielded in order: :mod:`es_lightning.es.parallel`)."""
        scale, dtype = float(sign) * float(sigma), self.serving_dtype

        def member(name: str, m: torch.Tensor) -> tuple[str, torch.Tensor]:
            eps = noise_like(seed, name, m.shape, m.device)
            return name, torch.add(m, eps, alpha=scale, out=eps).to(dtype)  # θ + sign·σ·ε in ε's memory

        yield from map_tensors(member, self.master.items())

    @torch.no_grad()
    def perturb(self, seed: int, sign: float, sigma: float) -> None:
        self.write(self.perturbed(seed, sign, sigma))

    @torch.no_grad()
    def restore(self) -> None:
        self.write((n, m.to(self.serving_dtype)) for n, m in self.master.items())

    @torch.no_grad()
    def update(self, coeffs: Mapping[int, float], lr: float, population_size: int) -> float:
        """θ ← θ + (α/N)·Σ_s c_s ε_s (or the Adam step on it); writes the new centre; returns ‖Δ‖₂."""
        if self.optimizer_name == "sgd":
            norm = apply_es_update(self.master, coeffs, lr, population_size)
        else:
            before = {n: m.clone() for n, m in self.master.items()}
            if self._adam is None:
                for m in self.master.values():
                    m.requires_grad_(True)
                self._adam = torch.optim.Adam(list(self.master.values()), lr=lr, **self._adam_args)
            for group in self._adam.param_groups:  # α may differ from the one a resumed state was made with
                group["lr"] = lr
            assign_es_grad_(self.master, coeffs, population_size)
            self._adam.step()
            self._adam.zero_grad(set_to_none=True)
            norm = float(
                torch.sqrt(
                    sum(((m.detach() - before[n]).double().square().sum() for n, m in self.master.items()))
                )
            )
        self.restore()
        return norm

    def checksum(self) -> float:
        return float(sum(m.detach().double().sum().item() for m in self.master.values()))

    def state_dict(self) -> dict:
        """A copy of the optimizer state (``None`` for plain ES)."""
        import copy

        return {"optimizer": None if self._adam is None else copy.deepcopy(self._adam.state_dict())}

    def load_state_dict(self, state: dict) -> None:
        if state.get("optimizer") is not None:
            if self.optimizer_name != "adam":
                raise ValueError("ESWeights: the checkpoint holds Adam state but the optimizer is 'sgd'")
            for m in self.master.values():
                m.requires_grad_(True)
            self._adam = torch.optim.Adam(list(self.master.values()), lr=0.0, **self._adam_args)
            self._adam.load_state_dict(state["optimizer"])


def es_weights_from_files(
    files: Iterable[str],
    write: Writer,
    serving_dtype: torch.dtype,
    device: torch.device | str,
    optimizer: OptimizerName = "sgd",
    optimizer_state: str | None = None,
    names: set[str] | None = None,
) -> ESWeights:
    """The centre read from safetensors ``files`` in fp32 on ``device`` (keeping only ``names``
    when given), with the optimizer state of a checkpoint when ``optimizer_state`` names its file.
    Nothing is written into the serving model yet (call :meth:`ESWeights.restore`)."""
    from es_lightning.weight_files import load_weights

    master = load_weights(files, names=names, device=device)
    weights = ESWeights(master, write, serving_dtype, optimizer=optimizer)
    if optimizer_state is not None:
        weights.load_state_dict(torch.load(optimizer_state, map_location=device, weights_only=True))
    return weights
