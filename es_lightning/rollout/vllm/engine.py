"""A vLLM engine pinned to one device: its settings, its start, every call into it (under a
watchdog), its end (with the trainer's, :mod:`~es_lightning.rollout.vllm.lifeline`)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch

from es_lightning.errors import ConfigError
from es_lightning.models.loading import ModelLoading
from es_lightning.rollout.vllm.lifeline import mark_trainer
from es_lightning.rollout.vllm.placement import (
    end_processes,
    engine_processes,
    environment,
    local_rank,
    physical_gpu,
    rank_cores,
)
from es_lightning.rollout.watchdog import EngineWatchdog

if TYPE_CHECKING:
    from vllm import LLM

WORKER_EXTENSION = "es_lightning.rollout.vllm.worker.WorkerExtension"
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # INFO lines off unless VLLM_LOGGING_LEVEL=INFO is set
os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")  # stdout holds the results alone


def vllm_available() -> bool:
    try:
        import vllm  # noqa: F401
    except ImportError:
        return False
    return True


class VLLMEngine:
    """The engine's settings and life (the base of
    :class:`~es_lightning.rollout.vllm.rollout.VLLMRollout`).

    Args:
        gpu_memory_utilization: fraction of the device memory the engine may take (on CPU: of the
            NUMA node's memory; vLLM refuses its 0.92 default there, so keep it small).
        max_model_len: longest prompt + completion in tokens (``None``: the model's own limit).
        enforce_eager: skip graph capture/compilation (faster start, slower decode on GPU).
        cpu_kvcache_space_gib: KV-cache size on CPU in whole GiB (``VLLM_CPU_KVCACHE_SPACE``).
        cpu_threads_bind: cores the CPU worker binds to (``VLLM_CPU_OMP_THREADS_BIND``), e.g.
            ``"0-1"``; ``"auto"`` is vLLM's own choice (every core but one, which its front end
            keeps); ``None`` (default): ``auto`` for one rank, and with several ranks on the
            machine each rank's share of the cores the process may use, split evenly, unless
            ``VLLM_CPU_OMP_THREADS_BIND`` is set (see :meth:`threads_bind`).
        max_num_seqs: most sequences decoded at once (``None``: vLLM's default).
        engine_kwargs: further keyword arguments for ``vllm.LLM`` (e.g. ``hf_overrides``); its
            ``revision`` and ``trust_remote_code`` come from the module's (``module.revision``).
        stream_chunk_bytes: most bytes of weights one call moves into the engine (a weight load,
            e.g. GRPO's sync: one file per chunk) or out of it (the trainer streams the ES centre
            for checkpoints, drift); a larger tensor moves alone.
        call_timeout_s: longest one call into the started engine (a generation, a weight
            update) may take (``None``: no limit). Past it the engine's processes are killed and
            the run stops with an error naming the engine and device; the last checkpoint stays
            intact.
        start_timeout_s: the same for the engine's start (model loading included).
        heartbeat_s: while a call is in flight, log a line this often saying how long it has run.
    """

    def __init__(
        self,
        gpu_memory_utilization: float = 0.3,
        max_model_len: int | None = None,
        enforce_eager: bool = True,
        cpu_kvcache_space_gib: int = 1,
        cpu_threads_bind: str | None = None,
        max_num_seqs: int | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        stream_chunk_bytes: int = 256 * 2**20,
        call_timeout_s: float | None = 3600.0,
        start_timeout_s: float | None = 3600.0,
        heartbeat_s: float = 120.0,
    ) -> None:
        if not 0 < gpu_memory_utilization <= 1:
            raise ConfigError(
                f"VLLMRollout: gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}"
            )
        if cpu_kvcache_space_gib < 1:
            raise ConfigError(
                f"VLLMRollout: cpu_kvcache_space_gib must be a whole number >= 1, got {cpu_kvcache_space_gib}"
            )
        self.gpu_memory_utilization = gpu_memory_utilization
        self.max_model_len = max_model_len
        self.enforce_eager = enforce_eager
        self.cpu_kvcache_space_gib = cpu_kvcache_space_gib
        self.cpu_threads_bind = cpu_threads_bind
        self.max_num_seqs = max_num_seqs
        for name, limit in (("call_timeout_s", call_timeout_s), ("start_timeout_s", start_timeout_s)):
            if limit is not None and limit <= 0:
                raise ConfigError(f"VLLMRollout: {name} must be positive or null, got {limit}")
        self.start_timeout_s = start_timeout_s
        if heartbeat_s <= 0:
            raise ConfigError(f"VLLMRollout: heartbeat_s must be positive, got {heartbeat_s}")
        self.call_timeout_s, self.heartbeat_s = call_timeout_s, heartbeat_s
        self.engine_kwargs = dict(engine_kwargs or {})
        self.stream_chunk_bytes = stream_chunk_bytes
        self.model_path: str | None = None
        self.loading = ModelLoading()
        self.device = torch.device("cpu")
        self.dtype = torch.float32
        self.llm: LLM | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._pids: list[int] = []
        self._watchdog: EngineWatchdog | None = None

    def engine_args(self) -> dict[str, Any]:
        """The keyword arguments :meth:`start` gives ``vllm.LLM``."""
        if self.model_path is None:
            raise RuntimeError("VLLMRollout: call setup(model_path, device, dtype) before generating")
        kwargs: dict[str, Any] = dict(
            model=self.model_path,
            dtype=str(self.dtype).removeprefix("torch."),
            gpu_memory_utilization=self.gpu_memory_utilization,
            enforce_eager=self.enforce_eager,
            worker_extension_cls=WORKER_EXTENSION,
            seed=0,
        )
        if self.max_model_len is not None:
            kwargs["max_model_len"] = self.max_model_len
        if self.max_num_seqs is not None:
            kwargs["max_num_seqs"] = self.max_num_seqs
        kwargs.update(self.loading.vllm_kwargs(self.model_path))
        kwargs.update(self.engine_kwargs)
        return kwargs

    def threads_bind(self) -> str:
        """``VLLM_CPU_OMP_THREADS_BIND`` for this engine (``auto`` for one rank, else its cores)."""
        given = self.cpu_threads_bind or os.environ.get("VLLM_CPU_OMP_THREADS_BIND")
        if given:
            return given
        rank, ranks = local_rank()
        if ranks == 1:
            return "auto"
        share = [int(c) for c in rank_cores(rank, ranks).split(",")]
        tp = int(self.engine_kwargs.get("tensor_parallel_size", 1))  # one core list per worker
        return "|".join(rank_cores(i, tp, share) for i in range(tp))

    def start(self) -> None:
        """Create the engine now (it is otherwise created on first use)."""
        if self.llm is not None:
            return
        kwargs = self.engine_args()
        from vllm import LLM

        os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
        bind = {}
        if self.device.type == "cpu":
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(self.cpu_kvcache_space_gib)
            bind["VLLM_CPU_OMP_THREADS_BIND"] = self.threads_bind()
        elif self.device.type == "cuda" and self.device.index is not None:
            os.environ["CUDA_VISIBLE_DEVICES"] = physical_gpu(self.device.index)
        mark_trainer()  # the engine's processes end with this one (rollout/vllm/lifeline.py)
        before = set(engine_processes())
        self._watchdog = EngineWatchdog(
            f"vLLM engine on {self.device}",
            lambda: self._pids or sorted(set(engine_processes()) - before),
            self.call_timeout_s,
            self.heartbeat_s,
            unblock=self._wake_waiting_call,
        )
        with self._watchdog.call("start", timeout_s=self.start_timeout_s), environment(bind):
            self.llm = LLM(**kwargs)
        self._pids = sorted(set(engine_processes()) - before)

    def _wake_waiting_call(self) -> None:
        """After the engine was killed: fail what vLLM's client still waits on."""
        from vllm.v1.engine.exceptions import EngineDeadError

        client = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        queue = getattr(client, "outputs_queue", None)
        if queue is not None:
            queue.put_nowait(EngineDeadError())
        for future in list(getattr(client, "utility_results", {}).values()):
            if not future.done():
                future.set_exception(EngineDeadError())

    @contextmanager
    def _call(self, what: str) -> Iterator[LLM]:
        """The started engine, for one call into it (under the watchdog: timeout and heartbeat)."""
        self.start()
        llm, watchdog = self.llm, self._watchdog
        if llm is None or watchdog is None:
            raise RuntimeError(f"VLLMRollout: the engine is not running for {what}")
        with watchdog.call(what):
            yield llm

    def _weights_changed(self) -> None:
        """Drop the prefix cache, keyed by token ids only, after a weight change."""
        with self._call("reset_prefix_cache") as llm:
            reset = llm.reset_prefix_cache()
        if reset is False:
            raise RuntimeError("vLLM refused to reset its prefix cache after a weight change")

    def rpc(self, method: str, *args: Any) -> list[Any]:
        """Run ``WorkerExtension.method(*args)`` in every worker of the engine."""
        with self._call(method) as llm:
            return llm.collective_rpc(method, args=args)

    @property
    def engine_pids(self) -> list[int]:
        """Process ids of the started engine (``VLLM::EngineCore``, ``VLLM::Worker``)."""
        return list(self._pids)

    def close(self) -> None:
        """Shut the engine down; processes that do not exit within 10 s are killed."""
        if self.llm is not None:
            engine = getattr(self.llm, "llm_engine", None)
            shutdown = getattr(getattr(engine, "engine_core", None), "shutdown", None)
            try:
                if callable(shutdown):
                    shutdown()
            finally:
                self.llm = None
                end_processes(self._pids, grace_s=10.0)
                self._pids = []
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
