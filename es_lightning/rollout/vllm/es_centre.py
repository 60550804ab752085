"""The ES centre inside a vLLM engine's workers: every ES operation is one call into them.

:class:`VLLMES` is the :class:`~es_lightning.rollout.es_engine.ESEngine` half of
:class:`~es_lightning.rollout.vllm.VLLMRollout`; the fp32 master and the noise live in each worker
(:class:`es_lightning.rollout.vllm.worker.WorkerExtension`), and only seeds, scalars and file names
cross the process boundary. After every weight change the engine's prefix cache is dropped
(``_weights_changed``). ``es_restore`` is deferred: the served weights are written back to the
centre only when something next reads them (``_serve_centre``, called by generation, scoring,
checksums and weight loads), since the next member's perturbation and the update overwrite every
served tensor anyway. A member's reward for an accumulated update (``es_record_reward``) travels
with the next call that needs it (the next perturbation, or the update), not in a call of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import torch
from typing_extensions import override

from es_lightning.es.weights import OptimizerName
from es_lightning.models.loading import ModelLoading
from es_lightning.rollout.es_engine import ESEngine
from es_lightning.rollout.vllm.exchange import exchange_file, unflatten
from es_lightning.weight_files import weight_files as default_weight_files


class VLLMES(ESEngine):
    """ES operations through ``rpc`` into the engine's workers (mixed into ``VLLMRollout``, beside ``VLLMEngine``)."""

    model_path: str | None
    loading: ModelLoading
    stream_chunk_bytes: int
    _restore_pending: bool
    _reward: float | None = None  # a member's reward not yet sent to the workers

    # provided by VLLMEngine: a call into every worker, and the prefix-cache reset after a change
    rpc: Callable[..., list[Any]]
    _weights_changed: Callable[[], None]

    @override
    def es_init(
        self,
        weight_files: Sequence[str] | None = None,
        optimizer: OptimizerName = "sgd",
        optimizer_state: str | None = None,
    ) -> None:
        if weight_files:
            files = list(weight_files)
        elif self.model_path is not None:
            files = default_weight_files(self.model_path, revision=self.loading.revision)
        else:
            raise RuntimeError("VLLMRollout: call setup(model_path, device, dtype) before es_init")
        self.rpc("es_init", files, optimizer, optimizer_state)
        self._master_shapes = None
        self._restore_pending = False
        self._weights_changed()

    @override
    def es_perturb(self, seed: int, sign: float, sigma: float) -> None:
        """Serve θ + sign·σ·ε_seed: every served tensor is written from the fp32 master, so a
        restore still pending from the previous member is not needed."""
        self.rpc("es_perturb", seed, sign, sigma, self._take_reward())
        self._restore_pending = False
        self._weights_changed()

    @override
    def es_restore(self) -> None:
        """Serve the centre again, bit-exactly. The write waits for the next call that reads the
        served weights (generation, scoring, a checksum, a partial load); the next member's
        perturbation or the update overwrites every served tensor anyway, so between members of
        a population nothing is written."""
        self._restore_pending = True

    def _serve_centre(self) -> None:
        if self._restore_pending:
            self.rpc("es_restore")
            self._restore_pending = False
            self._weights_changed()

    @override
    def es_update(self, coeffs: Mapping[int, float], lr: float, population_size: int) -> float:
        norm = self.rpc("es_update", dict(coeffs), lr, population_size)[0]  # writes the new centre
        self._restore_pending = False
        self._weights_changed()
        return norm

    def _take_reward(self) -> float | None:
        reward, self._reward = self._reward, None
        return reward

    @override
    def es_accumulate(self, active: bool) -> None:
        self._reward = None
        self.rpc("es_accumulate", active)

    @override
    def es_record_reward(self, reward: float) -> None:
        if self._reward is not None:
            raise RuntimeError("VLLMRollout: a reward was recorded twice for one member")
        self._reward = float(reward)

    @override
    def es_update_accumulated(self, mean: float, std: float, lr: float, population_size: int) -> float:
        reward = self._take_reward()
        norm = self.rpc("es_update_accumulated", mean, std, lr, population_size, reward)[0]
        self._restore_pending = False
        self._weights_changed()
        return norm

    @override
    def es_fold_seconds(self) -> float:
        return self.rpc("es_fold_seconds")[0]

    @override
    def es_tensor_shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: tuple(shape) for name, shape in self.rpc("es_tensor_shapes")[0].items()}

    @override
    def es_directions(
        self, names: Sequence[str], coeffs: Mapping[int, float] | None = None, mean: float | None = None
    ) -> dict[str, torch.Tensor]:
        """The workers write the directions into a shared-memory file this process then maps (one
        copy each way, no serialisation: about 3× faster than bytes through ``collective_rpc``)."""
        coeffs = None if coeffs is None else dict(coeffs)
        shapes = self._es_shapes(names)
        total = sum(math.prod(s) for s in shapes.values())
        with exchange_file(total) as path:
            self.rpc("es_directions_to_file", list(names), coeffs, mean, self._take_reward(), path)
            flat = torch.from_file(path, shared=False, size=total, dtype=torch.float32)
        return unflatten(flat, shapes)

    @override
    def es_apply_directions(
        self, chunks: Iterable[Mapping[str, torch.Tensor]], lr: float, population_size: int, std: float = 1.0
    ) -> float:
        for chunk in chunks:
            total = sum(t.numel() for t in chunk.values())
            with exchange_file(total) as path:
                flat = torch.from_file(path, shared=True, size=total, dtype=torch.float32)
                offset = 0
                for t in chunk.values():
                    flat[offset : offset + t.numel()].copy_(t.detach().reshape(-1))
                    offset += t.numel()
                self.rpc("es_stage_directions_from_file", list(chunk), path)
        norm = self.rpc("es_apply_staged", lr, population_size, std)[0]
        self._restore_pending = False
        self._weights_changed()
        return norm

    def _es_shapes(self, names: Sequence[str]) -> dict[str, tuple[int, ...]]:
        shapes = getattr(self, "_master_shapes", None)
        if shapes is None:
            shapes = self._master_shapes = self.es_tensor_shapes()
        return {n: shapes[n] for n in names}

    @override
    def es_checksum(self) -> float:
        return self.rpc("es_checksum")[0]

    @override
    def es_named_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        for names in self.rpc("es_weight_chunks", self.stream_chunk_bytes)[0]:
            chunk = self.rpc("es_weight_chunk", names)[0]
            for name in names:
                shape, data = chunk.pop(name)
                yield name, torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(shape)

    @override
    def es_save_optimizer(self, path: str) -> None:
        self.rpc("es_save_optimizer", str(path))
