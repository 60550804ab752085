"""Code that runs inside each vLLM worker process (``worker_extension_cls``), reached with
``collective_rpc``; weights travel through safetensors files."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, cast

import torch

from es_lightning.rollout.vllm.lifeline import start_lifeline

if TYPE_CHECKING:
    from es_lightning.es.weights import OptimizerName

_keep_cpu_weights_patched = False


def _keep_cpu_linear_weights() -> None:
    """Keep the linear weights vLLM's CPU backend frees after repacking, so updates can land."""
    global _keep_cpu_weights_patched
    if _keep_cpu_weights_patched:
        return
    from vllm.model_executor.layers import utils

    original = utils.dispatch_cpu_unquantized_gemm

    def dispatch_keeping_weight(layer: torch.nn.Module, remove_weight: bool) -> None:
        original(layer, remove_weight=False)

    dispatch_keeping_weight.original = original  # type: ignore[attr-defined]
    utils.dispatch_cpu_unquantized_gemm = dispatch_keeping_weight
    _keep_cpu_weights_patched = True


def _rewind_cpu_generators_by_state() -> None:
    """Rewind CPU generators by state (vLLM's ``set_offset`` is CUDA-only), so chunking changes nothing."""
    import numpy as np
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    if getattr(GPUModelRunner.sample_tokens, "rewinds_cpu_generators", False):
        return
    sample_tokens, bookkeeping_sync = GPUModelRunner.sample_tokens, GPUModelRunner._bookkeeping_sync

    def discarded_cpu_generators(runner) -> dict:  # type: ignore[no-untyped-def]
        generators = runner.input_batch.generators
        rows = np.nonzero(runner.discard_request_mask.np[: runner.input_batch.num_reqs])[0]
        return {
            int(i): generators[int(i)]
            for i in rows
            if int(i) in generators and generators[int(i)].device.type == "cpu"
        }

    def sample_tokens_keeping_cpu_draws(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        saved = {i: (g, g.get_state()) for i, g in discarded_cpu_generators(self).items()}
        try:
            return sample_tokens(self, *args, **kwargs)
        finally:
            for generator, state in saved.values():
                generator.set_state(state)

    def bookkeeping_sync_without_cpu_offsets(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        generators = self.input_batch.generators
        hidden = {i: generators.pop(i) for i in discarded_cpu_generators(self)}
        try:
            return bookkeeping_sync(self, *args, **kwargs)
        finally:
            generators.update(hidden)

    sample_tokens_keeping_cpu_draws.rewinds_cpu_generators = True  # type: ignore[attr-defined]
    # setattr: the patched attributes are typed as their decorators (``inference_mode``), not functions
    setattr(GPUModelRunner, "sample_tokens", sample_tokens_keeping_cpu_draws)  # noqa: B010
    setattr(GPUModelRunner, "_bookkeeping_sync", bookkeeping_sync_without_cpu_offsets)  # noqa: B010


try:
    _keep_cpu_linear_weights()
    _rewind_cpu_generators_by_state()
except ImportError:  # imported outside a vLLM install (docs, type checks)
    pass
start_lifeline()  # in an engine process: end with the trainer (does nothing elsewhere)

ES_CALLS = frozenset(
    "perturb restore serve_centre accumulate record_reward update update_accumulated checksum "
    "fold_seconds shapes save_state use_noise_table".split()
)
"""The :class:`~es_lightning.es.weights.ESWeights` methods the trainer calls through
:meth:`WorkerExtension.es_call` (:class:`~es_lightning.rollout.vllm.es_centre.WorkerESWeights`)."""


class _LoadsWeights(Protocol):
    """A vLLM model: a torch module with a loader of HF-named tensors."""

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]: ...


class WorkerExtension:
    """Weight access inside a vLLM worker."""

    def _served_model(self) -> torch.nn.Module:
        return self.model_runner.model  # type: ignore[attr-defined]

    def load_weights_from_file(self, path: str, refresh: bool = True) -> int:
        """Load HF-named tensors from a file with the model's own loader (``refresh``: repack after)."""
        from safetensors.torch import load_file

        tensors = load_file(path, device="cpu")
        self._write(tensors.items(), refresh=refresh)
        return len(tensors)

    def _write(self, named: Iterable[tuple[str, torch.Tensor]], refresh: bool = True) -> None:
        """Load HF-named tensors with the model's own loader, then (``refresh``) the CPU kernels."""
        cast("_LoadsWeights", self._served_model()).load_weights(weights=named)
        if refresh:
            self.refresh_cpu_kernels()

    def refresh_cpu_kernels(self) -> None:
        """Repack every linear weight for the CPU kernels (once per weight change; nothing off CPU)."""
        from vllm.platforms import current_platform

        if not current_platform.is_cpu():
            return
        from vllm.model_executor.layers import utils

        dispatch = getattr(
            utils.dispatch_cpu_unquantized_gemm, "original", utils.dispatch_cpu_unquantized_gemm
        )
        for module in self._served_model().modules():
            weight = getattr(module, "weight", None)
            if (
                hasattr(module, "cpu_linear")
                and isinstance(weight, torch.Tensor)
                and weight.ndim == 2
                and weight.numel() > 0
                and not getattr(module, "_cpu_skip_gemm_dispatch", False)
            ):
                dispatch(module, remove_weight=False)

    def weights_digest(self) -> str:
        """SHA-256 of every served weight's bytes (bit-exact comparisons)."""
        from es_lightning.rollout.base import weights_digest

        return weights_digest(self._served_model())

    def weights_checksum(self) -> float:
        """Sum of every served weight in float64."""
        return float(sum(p.detach().double().sum().item() for p in self._served_model().parameters()))

    # -- ES: the centre lives here as fp32 master weights --------------------------------------
    def es_init(self, weight_files: list[str], optimizer: OptimizerName, optimizer_state: str | None) -> int:
        """fp32 master (HF names) from ``weight_files``; optimizer state from a checkpoint file."""
        from es_lightning.es.weights import es_weights_from_files

        first = next(self._served_model().parameters())
        self._es = es_weights_from_files(
            weight_files,
            self._write,
            first.dtype,
            first.device,
            optimizer,
            optimizer_state,
        )
        self._es.write_centre()  # serve cast(master) from now on, whatever the file's dtype
        self._staged: dict[str, torch.Tensor] = {}
        return len(self._es.master)

    def es_call(self, method: str, *args: Any) -> tuple[Any, int, bool]:
        """``ESWeights.method(*args)`` here, as ``(value, writes made, restore pending)``."""
        if method not in ES_CALLS:
            raise ValueError(f"WorkerExtension.es_call: {method!r} is not one of {sorted(ES_CALLS)}")
        if method == "update":  # seeds as ints, whatever the transport made of the keys
            args = ({int(k): float(v) for k, v in args[0].items()}, *args[1:])
        return self._reported(getattr(self._es, method), *args)

    def _reported(self, call: Callable[..., Any], *args: Any) -> tuple[Any, int, bool]:
        before = self._es.writes
        value = call(*args)
        return value, self._es.writes - before, self._es.restore_pending

    def es_use_lowrank(self, rank: int | None, fixed: list[str]) -> list[str]:
        """Low-rank noise of rank ``rank``; the moving matrices vLLM cannot serve as LoRA."""
        from es_lightning.rollout.vllm.population import use_lowrank_in_worker

        return use_lowrank_in_worker(self, rank, fixed)

    def es_load_population(self, members: list[tuple[int, float]], sigma: float) -> list[int]:
        """The members' LoRA adapters, built from their seeds; returns their adapter ids."""
        from es_lightning.rollout.vllm.population import load_population_in_worker

        return load_population_in_worker(self, members, sigma)

    def es_directions_to_file(
        self, names: list[str], coeffs: dict | None, mean: float | None, path: str
    ) -> None:
        """Unscaled float32 directions of ``names`` into the shared file ``path``."""
        coeffs = None if coeffs is None else {int(k): float(v) for k, v in coeffs.items()}
        directions = self._es.directions(names, coeffs, mean)
        numbers = sum(d.numel() for d in directions.values())
        flat = torch.from_file(path, shared=True, size=numbers, dtype=torch.float32)
        offset = 0
        for d in directions.values():
            flat[offset : offset + d.numel()].copy_(d.reshape(-1))
            offset += d.numel()

    def es_stage_directions_from_file(self, names: list[str], path: str) -> None:
        """Keep the summed directions of ``names`` from ``path`` until :meth:`es_apply_staged`."""
        from es_lightning.rollout.vllm.es_centre import unflatten

        staged = self._staged
        shapes = {n: tuple(self._es.master[n].shape) for n in names}
        numbers = sum(math.prod(s) for s in shapes.values())
        flat = torch.from_file(path, shared=True, size=numbers, dtype=torch.float32)  # scaled in place
        device = next(iter(self._es.master.values())).device
        for name, t in unflatten(flat, shapes).items():
            staged[name] = t.to(device)

    def es_apply_staged(self, lr: float, population_size: int, std: float) -> tuple[Any, int, bool]:
        """Apply the staged directions (reported as :meth:`es_call` reports)."""
        staged, self._staged = self._staged, {}
        return self._reported(self._es.apply_directions, [staged], lr, population_size, std)

    def es_weight_chunks(self, max_bytes: int) -> list[list[str]]:
        """The master's tensor names in groups of at most ``max_bytes`` (one tensor at least)."""
        from es_lightning.es.split import chunk_names

        return chunk_names({n: m.numel() * m.element_size() for n, m in self._es.master.items()}, max_bytes)

    def es_weight_chunk(self, names: list[str]) -> dict[str, tuple[list[int], bytes]]:
        """The fp32 master tensors ``names`` as (shape, raw bytes): what crosses the process boundary."""
        out = {}
        for name in names:
            t = self._es.master[name].detach().to("cpu").contiguous()
            out[name] = (list(t.shape), t.view(torch.uint8).numpy().tobytes())
        return out
