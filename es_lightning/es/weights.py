"""The ES centre θ as fp32 master weights, written into whatever model serves generation.

Every write is computed from the fp32 master and cast once, so ``restore`` is bit-exact whatever
the serving dtype, and is deferred: the centre is written back only when the served weights are
next read (:meth:`ESWeights.serve_centre`). The update redraws ε (:meth:`ESWeights.update`) or
reads the sums folded while the members ran (:meth:`ESWeights.update_accumulated`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Literal

import torch

from es_lightning.es.accumulate import RewardAccumulator
from es_lightning.es.lowrank import LowRankNoise
from es_lightning.es.noise import noise_like
from es_lightning.es.noise_table import NoiseTable, check_table_size, noise_table
from es_lightning.es.parallel import map_tensors
from es_lightning.es.update import Direction, apply_direction, assign_direction_grad_, redrawn_direction

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
        noise: ``None`` (full-rank ε per tensor) or low-rank directions of the matrices
            (:mod:`es_lightning.es.lowrank`).
    """

    def __init__(
        self,
        master: dict[str, torch.Tensor],
        write: Writer,
        serving_dtype: torch.dtype,
        optimizer: OptimizerName = "sgd",
        noise: LowRankNoise | None = None,
    ) -> None:
        if optimizer not in ("sgd", "adam"):
            raise ValueError(f"ESWeights: unknown optimizer {optimizer!r}; use 'sgd' or 'adam'")
        self.master = {n: t.to(torch.float32) for n, t in master.items()}
        self.write = write
        self.serving_dtype = serving_dtype
        self.optimizer_name = optimizer
        self._adam: torch.optim.Adam | None = None
        self.accumulator = RewardAccumulator()
        self.noise = noise
        self.table: NoiseTable | None = None
        """Full-rank ε read from this shared table (:meth:`use_noise_table`), or drawn (``None``)."""
        self.writes = 0
        """How many times the served weights were written (a vLLM engine drops its prefix cache then)."""
        self.restore_pending = False
        """:meth:`restore` was called and nothing has written the served weights since."""

    def use_noise_table(self, size: int | None) -> None:
        """Read full-rank ε from a shared table of ``size`` numbers (``None``: draw it again)."""
        if self.accumulator.active:
            raise RuntimeError("ESWeights.use_noise_table: not while a population is accumulated")
        if size is None:
            self.table = None
            return
        if self.noise is not None:
            raise ValueError(
                "ESWeights: a noise table gives full-rank ε; low-rank directions draw their factors"
            )
        devices = {m.device for m in self.master.values()}
        if len(devices) != 1:
            raise ValueError(
                f"ESWeights.use_noise_table: the master spans devices {sorted(map(str, devices))}"
            )
        check_table_size(size, self.shapes())
        self.table = noise_table(size, devices.pop())

    def _redrawn(self, coeffs: Mapping[int, float]) -> Direction:
        """Σ_s c_s ε_s drawn again from the seeds, as :attr:`noise` says."""
        return redrawn_direction(coeffs, self.table) if self.noise is None else self.noise.direction(coeffs)

    def perturbed(self, seed: int, sign: float, sigma: float) -> Iterator[tuple[str, torch.Tensor]]:
        """θ + sign·σ·ε_seed per tensor in fp32, cast once; while accumulating ε is kept."""
        scale, dtype = float(sign) * float(sigma), self.serving_dtype
        noise = self.noise
        if noise is not None:  # low-rank: W + sign·σ·A Bᵀ/√r for matrices, other tensors as they are

            def member(name: str, m: torch.Tensor) -> tuple[str, torch.Tensor]:
                return name, torch.add(m, noise.noise(seed, name, m.shape, m.device), alpha=scale).to(dtype)

        elif self.table is not None:  # θ + sign·σ·(a slice of the table); a fold reads it again
            table = self.table
            if self.accumulator.active:
                self.accumulator.begin_member(seed, sign, self.master)

            def member(name: str, m: torch.Tensor) -> tuple[str, torch.Tensor]:
                return name, torch.add(m, table.slice(seed, name, m.shape), alpha=scale).to(dtype)

        elif self.accumulator.active:
            fresh = self.accumulator.begin_member(seed, sign, self.master)
            held = self.accumulator.held

            def member(name: str, m: torch.Tensor) -> tuple[str, torch.Tensor]:
                if fresh:  # ε_seed into the held buffer, kept until the member's reward is folded
                    noise_like(seed, name, m.shape, m.device, out=held[name])
                return name, torch.add(m, held[name], alpha=scale).to(dtype)

        else:

            def member(name: str, m: torch.Tensor) -> tuple[str, torch.Tensor]:
                eps = noise_like(seed, name, m.shape, m.device)
                return name, torch.add(m, eps, alpha=scale, out=eps).to(dtype)  # θ + sign·σ·ε in ε's memory

        yield from map_tensors(member, self.master.items())

    def _serve(self, named: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Write every master tensor's served counterpart (so no restore is pending afterwards)."""
        self.write(named)
        self.writes += 1
        self.restore_pending = False

    @torch.no_grad()
    def perturb(self, seed: int, sign: float, sigma: float) -> None:
        """Serve θ + sign·σ·ε_seed."""
        self._serve(self.perturbed(seed, sign, sigma))

    def restore(self) -> None:
        """Serve the centre again, bit-exactly, from the next read of the served weights on."""
        self.restore_pending = True

    def serve_centre(self) -> None:
        """Write θ into the serving model if a restore is pending (before the served weights are read)."""
        if self.restore_pending:
            self.write_centre()

    @torch.no_grad()
    def write_centre(self) -> None:
        """Write θ into the serving model now, cast once from the fp32 master."""
        self._serve((n, m.to(self.serving_dtype)) for n, m in self.master.items())

    def accumulate(self, active: bool) -> None:
        """Keep each member's ε and fold its reward (``True``), or stop and drop the sums."""
        if active and self.noise is not None:
            raise ValueError(
                "ESWeights: a low-rank update draws its directions again; it does not accumulate"
            )
        if active:
            self.accumulator.start(self.master, self.table)
        else:
            self.accumulator.stop()

    def record_reward(self, reward: float) -> None:
        """R_i of the member perturbed last (accumulating only)."""
        self.accumulator.record(reward)

    @torch.no_grad()
    def update(self, coeffs: Mapping[int, float], lr: float, population_size: int) -> float:
        """θ ← θ + (α/N)·Σ_s c_s ε_s, every ε_s drawn again; writes the centre; returns ‖Δ‖₂."""
        return self._step(self._redrawn(coeffs), lr, population_size)

    @torch.no_grad()
    def update_accumulated(self, mean: float, std: float, lr: float, population_size: int) -> float:
        """θ ← θ + (α/N)·(A − (μ − c)·B)/s from the folded sums; writes the centre; returns ‖Δ‖₂."""
        self.accumulator.finish(self.master)
        return self._step(lambda name, _: self.accumulator.direction(name, mean), lr, population_size, std)

    @torch.no_grad()
    def directions(
        self, names: Sequence[str], coeffs: Mapping[int, float] | None = None, mean: float | None = None
    ) -> dict[str, torch.Tensor]:
        """Unscaled float32 directions of ``names``: redrawn (``coeffs``) or accumulated (``mean``)."""
        if (coeffs is None) == (mean is None):
            raise ValueError("ESWeights.directions: give coeffs (redraw) or mean (accumulated), not both")
        if coeffs is not None:
            direction = self._redrawn(coeffs)
        else:
            self.accumulator.finish(self.master)
            shift = float(mean) if mean is not None else 0.0
            direction = lambda name, _: self.accumulator.direction(name, shift)  # noqa: E731
        items = [(n, self.master[n]) for n in names]
        return dict(zip(names, map_tensors(direction, items), strict=True))

    @torch.no_grad()
    def apply_directions(
        self,
        chunks: Iterable[Mapping[str, torch.Tensor]],
        lr: float,
        population_size: int,
        std: float = 1.0,
    ) -> float:
        """θ ← θ + (α/N)·D/s from chunks covering every tensor once; writes the centre; ‖Δ‖₂."""
        seen: list[str] = []
        if self.optimizer_name == "adam":  # one optimizer step needs every gradient
            staged: dict[str, torch.Tensor] = {}
            for chunk in chunks:
                staged.update(chunk)
                seen += list(chunk)
            self._check_cover(seen)
            return self._step(lambda name, p: staged.pop(name).to(p.device), lr, population_size, std)
        scale, sq_norms, norm = float(lr) / population_size / std, {}, 0.0
        for chunk in chunks:
            part = {n: self.master[n] for n in chunk}
            norm = apply_direction(part, lambda name, p, d=chunk: d[name].to(p.device), scale, sq_norms)
            seen += list(chunk)
        self._check_cover(seen)
        self.accumulator.stop()
        self.write_centre()
        return norm

    def _check_cover(self, names: list[str]) -> None:
        if names != list(self.master):
            raise ValueError("ESWeights.apply_directions: the chunks must cover every tensor once, in order")

    def _step(self, direction: Direction, lr: float, population_size: int, std: float = 1.0) -> float:
        """θ ← θ + (α/N)·D/s (SGD) or Adam's step on −D/(N·s); stops accumulating; serves θ."""
        if population_size < 1:
            raise ValueError(f"population_size must be >= 1, got {population_size}")
        if self.optimizer_name == "sgd":
            norm = apply_direction(self.master, direction, float(lr) / population_size / std)
        else:
            before = {n: m.clone() for n, m in self.master.items()}
            if self._adam is None:
                self._adam = self._new_adam(lr)
            for group in self._adam.param_groups:  # α may differ from the one a resumed state was made with
                group["lr"] = lr
            assign_direction_grad_(self.master, direction, -1.0 / population_size / std)
            self._adam.step()
            self._adam.zero_grad(set_to_none=True)
            norm = float(
                torch.stack(
                    [(m.detach() - before[n]).double().square().sum() for n, m in self.master.items()]
                )
                .sum()
                .sqrt()
            )
        self.accumulator.stop()
        self.write_centre()
        return norm

    def _new_adam(self, lr: float) -> torch.optim.Adam:
        """Adam over the master tensors (betas (0.9, 0.999), eps 1e-8), which now carry gradients."""
        for m in self.master.values():
            m.requires_grad_(True)
        return torch.optim.Adam(list(self.master.values()), lr=lr)

    def checksum(self) -> float:
        """Sum of the fp32 master in float64 (equal centres give equal checksums)."""
        return float(sum(m.detach().double().sum().item() for m in self.master.values()))

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """The master tensors' shapes, in the master's order (the split of an update over ranks)."""
        return {name: tuple(m.shape) for name, m in self.master.items()}

    def fold_seconds(self) -> float:
        """Seconds the current accumulated population has spent folding ε into its sums."""
        return self.accumulator.fold_seconds

    def named_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """The fp32 centre as ``(HF name, CPU copy)`` pairs (checkpoints, drift and attribution read it)."""
        for name, m in self.master.items():
            yield name, m.detach().to("cpu", copy=True)

    def save_state(self, path: str) -> None:
        """Write :meth:`state_dict` (Adam's moments; nothing to restore for plain ES) to ``path``."""
        torch.save(self.state_dict(), path)

    def state_dict(self) -> dict:
        """A copy of the optimizer state (``None`` for plain ES)."""
        import copy

        return {"optimizer": None if self._adam is None else copy.deepcopy(self._adam.state_dict())}

    def load_state_dict(self, state: dict) -> None:
        if state.get("optimizer") is not None:
            if self.optimizer_name != "adam":
                raise ValueError("ESWeights: the checkpoint holds Adam state but the optimizer is 'sgd'")
            self._adam = self._new_adam(0.0)
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
    """The centre read in fp32 on ``device`` from ``files``, not yet written into the served model."""
    from es_lightning.weight_files import load_weights

    master = load_weights(files, names=names, device=device)
    weights = ESWeights(master, write, serving_dtype, optimizer=optimizer)
    if optimizer_state is not None:
        weights.load_state_dict(torch.load(optimizer_state, map_location=device, weights_only=True))
    return weights
