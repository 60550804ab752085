"""The ES centre inside a vLLM engine's workers, driven by a proxy that runs each
:class:`~es_lightning.es.weights.ESWeights` method in every worker. Float32 tensors travel between
the trainer and a worker through a shared-memory file in ``/dev/shm`` (:func:`exchange_file`),
instead of ``collective_rpc``'s copies."""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from es_lightning.rollout.vllm.engine import VLLMEngine


class WorkerESWeights:
    """The :class:`~es_lightning.es.weights.ESWeights` of ``engine``'s workers, one RPC per call."""

    def __init__(self, engine: VLLMEngine) -> None:
        self._engine = engine
        self.writes = 0  # writes of the served weights, counted in the workers
        self.restore_pending = False  # as the workers reported it last
        self._shapes: dict[str, tuple[int, ...]] | None = None

    def _call(self, method: str, *args: Any) -> Any:
        """``ESWeights.method(*args)`` in every worker; the first worker's value."""
        return self._reported(self._engine.rpc("es_call", method, *args))

    def _reported(self, replies: list[Any]) -> Any:
        """A reply's value, the prefix cache dropped if the call wrote the served weights."""
        value, writes, self.restore_pending = replies[0]
        if writes:
            self.writes += writes
            self._engine._weights_changed()
        return value

    def perturb(self, seed: int, sign: float, sigma: float) -> None:
        self._call("perturb", seed, sign, sigma)

    def restore(self) -> None:
        self._call("restore")

    def serve_centre(self) -> None:
        if self.restore_pending:
            self._call("serve_centre")

    def use_noise_table(self, size: int | None) -> None:
        """Every worker builds the same table (same seed and device type) or keeps it from before."""
        self._call("use_noise_table", None if size is None else int(size))

    def accumulate(self, active: bool) -> None:
        self._call("accumulate", active)

    def record_reward(self, reward: float) -> None:
        self._call("record_reward", float(reward))

    def update(self, coeffs: Mapping[int, float], lr: float, population_size: int) -> float:
        return self._call("update", dict(coeffs), lr, population_size)

    def update_accumulated(self, mean: float, std: float, lr: float, population_size: int) -> float:
        return self._call("update_accumulated", mean, std, lr, population_size)

    def checksum(self) -> float:
        return self._call("checksum")

    def fold_seconds(self) -> float:
        return self._call("fold_seconds")

    def shapes(self) -> dict[str, tuple[int, ...]]:
        if self._shapes is None:  # fixed from es_init on
            self._shapes = {name: tuple(shape) for name, shape in self._call("shapes").items()}
        return dict(self._shapes)

    def save_state(self, path: str) -> None:
        self._call("save_state", str(path))

    def directions(
        self, names: Sequence[str], coeffs: Mapping[int, float] | None = None, mean: float | None = None
    ) -> dict[str, torch.Tensor]:
        """The workers' directions, through a shared-memory file."""
        shapes = {n: self.shapes()[n] for n in names}
        total = sum(math.prod(s) for s in shapes.values())
        with exchange_file(total) as path:
            coeffs = None if coeffs is None else dict(coeffs)
            self._engine.rpc("es_directions_to_file", list(names), coeffs, mean, path)
            flat = torch.from_file(path, shared=False, size=total, dtype=torch.float32)
        return unflatten(flat, shapes)

    def apply_directions(
        self, chunks: Iterable[Mapping[str, torch.Tensor]], lr: float, population_size: int, std: float = 1.0
    ) -> float:
        """Each chunk goes to the workers through a shared-memory file; they apply the whole at the end."""
        for chunk in chunks:
            total = sum(t.numel() for t in chunk.values())
            with exchange_file(total) as path:
                flat = torch.from_file(path, shared=True, size=total, dtype=torch.float32)
                offset = 0
                for t in chunk.values():
                    flat[offset : offset + t.numel()].copy_(t.detach().reshape(-1))
                    offset += t.numel()
                self._engine.rpc("es_stage_directions_from_file", list(chunk), path)
        return self._reported(self._engine.rpc("es_apply_staged", lr, population_size, std))

    def named_weights(self) -> Iterator[tuple[str, torch.Tensor]]:
        """The centre streamed out of the first worker, at most ``stream_chunk_bytes`` a call."""
        rpc = self._engine.rpc
        for names in rpc("es_weight_chunks", self._engine.stream_chunk_bytes)[0]:
            chunk = rpc("es_weight_chunk", names)[0]
            for name in names:
                shape, data = chunk.pop(name)
                yield name, torch.frombuffer(bytearray(data), dtype=torch.float32).reshape(shape)


@contextlib.contextmanager
def exchange_file(numbers: int) -> Iterator[str]:
    """A fresh file for ``numbers`` float32 values in shared memory (else the temporary folder)."""
    folder = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix="es-lightning-exchange-", suffix=".f32", dir=folder)
    try:
        os.ftruncate(fd, 4 * max(int(numbers), 1))
        os.close(fd)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def unflatten(flat: torch.Tensor, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    """Views of ``flat`` with the given shapes, one after another in ``shapes``' order."""
    out, offset = {}, 0
    for name, shape in shapes.items():
        n = math.prod(shape)
        out[name] = flat[offset : offset + n].view(shape)
        offset += n
    if offset != flat.numel():
        raise ValueError(f"unflatten: {flat.numel()} numbers for shapes of {offset}")
    return out
