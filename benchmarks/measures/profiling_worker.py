"""The project's vLLM worker extension plus one method that times a perturbation's parts in the worker.

Served with ``VLLMRollout(engine_kwargs={"worker_extension_cls": PROFILING_WORKER})``; everything
else is :class:`es_lightning.rollout.vllm.worker.WorkerExtension` unchanged.
"""

from __future__ import annotations

import statistics
import time

import torch

from es_lightning.es.noise import noise_like
from es_lightning.rollout.vllm.worker import WorkerExtension

PROFILING_WORKER = "benchmarks.measures.profiling_worker.ProfilingWorker"


class ProfilingWorker(WorkerExtension):
    def noop(self) -> int:
        return 0

    @torch.no_grad()
    def es_profile(
        self, seed: int, sigma: float, repeats: int, table_size: int | None = None
    ) -> dict[str, float]:
        """Median seconds of each part of ``es.perturb`` + ``es.restore`` over ``repeats``:
        noise (ε for every tensor, one after another), noise_threaded (the same on the threads
        ``es.perturb`` uses, :mod:`es_lightning.es.parallel`), perturbed (what ``es.perturb``
        computes: noise + add + cast on those threads), add (θ + σε, cast), load (the model's
        ``load_weights``), repack (the CPU kernels' weight refresh), restore (a whole write of the
        centre, which ``es.restore`` defers and a population never makes between members).
        With ``table_size`` also the same for ε from a noise table of that size
        (:meth:`_table_profile`), the drawn ε being the generator's whatever the run used."""
        from es_lightning.es.parallel import map_tensors

        es = self._es
        table, es.table = es.table, None  # the generator's parts first
        keys = ("noise", "noise_threaded", "perturbed", "add", "load", "repack", "restore")
        parts: dict[str, list[float]] = {k: [] for k in keys}
        for r in range(repeats):
            t = time.perf_counter()
            list(map_tensors(lambda n, m, s=seed + r: noise_like(s, n, m.shape, m.device), es.master.items()))
            parts["noise_threaded"].append(time.perf_counter() - t)
            t = time.perf_counter()
            list(es.perturbed(seed + r, 1.0, sigma))
            parts["perturbed"].append(time.perf_counter() - t)
            t0 = time.perf_counter()
            eps = {n: noise_like(seed + r, n, m.shape, m.device) for n, m in es.master.items()}
            t1 = time.perf_counter()
            perturbed = [
                (n, torch.add(m, eps[n], alpha=sigma).to(es.serving_dtype)) for n, m in es.master.items()
            ]
            t2 = time.perf_counter()
            self._served_model().load_weights(weights=iter(perturbed))
            t3 = time.perf_counter()
            self.refresh_cpu_kernels()
            t4 = time.perf_counter()
            es.write_centre()
            t5 = time.perf_counter()
            for key, value in zip(
                ("noise", "add", "load", "repack", "restore"), (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)
            ):
                parts[key].append(value)
        es.table = table
        out = {k: statistics.median(v) for k, v in parts.items()}
        if table_size is not None:
            out.update(self._table_profile(seed, sigma, repeats, table_size))
        out["torch_threads"] = float(torch.get_num_threads())
        out["parameters"] = float(sum(m.numel() for m in es.master.values()))
        return out

    @torch.no_grad()
    def _table_profile(self, seed: int, sigma: float, repeats: int, size: int) -> dict[str, float]:
        """Medians over ``repeats`` with ε from the noise table of ``size`` numbers: table_noise
        (every tensor's ε copied out of the table on the perturbation's threads: the noise-only
        cost, an upper bound of it, since a perturbation adds the slice without copying it) and
        table_perturbed (what ``es.perturb`` computes with the table: slice + add + cast);
        table_build (seconds to get the table: building it, or 0 when this process has it)."""
        from es_lightning.es.noise_table import noise_table
        from es_lightning.es.parallel import map_tensors

        es = self._es
        t = time.perf_counter()
        table = noise_table(size, next(iter(es.master.values())).device)
        build = time.perf_counter() - t
        parts: dict[str, list[float]] = {"table_noise": [], "table_perturbed": []}
        previous, es.table = es.table, table
        try:
            for r in range(repeats):
                t = time.perf_counter()
                list(
                    map_tensors(
                        lambda n, m, s=seed + r: table.slice(s, n, m.shape).clone(), es.master.items()
                    )
                )
                parts["table_noise"].append(time.perf_counter() - t)
                t = time.perf_counter()
                list(es.perturbed(seed + r, 1.0, sigma))
                parts["table_perturbed"].append(time.perf_counter() - t)
        finally:
            es.table = previous
        return {**{k: statistics.median(v) for k, v in parts.items()}, "table_build": build}
