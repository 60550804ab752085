"""Generation with transformers ``generate`` on any device (the fallback where vLLM is absent)."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from typing import Any, cast

import torch
from typing_extensions import override

from es_lightning.errors import ConfigError
from es_lightning.es.lowrank import LowRankNoise
from es_lightning.es.weights import ESWeights, OptimizerName, es_weights_from_files
from es_lightning.models.loading import ModelLoading
from es_lightning.rollout.base import (
    Completion,
    PopulationEngine,
    Rollout,
    RolloutOutput,
    SamplingConfig,
    weights_digest,
)
from es_lightning.rollout.generation_options import check_known_kwargs
from es_lightning.rollout.seeds import chunk_seed
from es_lightning.weight_files import weight_files as default_weight_files


class HFRollout(Rollout, PopulationEngine):
    """transformers ``generate`` behind the rollout contract, with the ES centre in the same process.

    Low-rank ES populations are generated in one call, every member's rows under its own weights
    (:mod:`es_lightning.rollout.hf_population`).

    Args:
        batch_size: most sequences (prompts × n) generated in one ``generate`` call.
    """

    def __init__(self, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ConfigError(f"HFRollout: batch_size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.model: Any = None  # a transformers PreTrainedModel once set up
        self.tokenizer: Any = None  # its tokenizer
        self.loading = ModelLoading()
        self.device = torch.device("cpu")

    @override
    def setup(
        self,
        model_path: str,
        device: torch.device,
        dtype: torch.dtype,
        loading: ModelLoading | None = None,
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.loading = loading = loading or ModelLoading()
        self.device = torch.device(device)
        self.model_path = str(model_path)
        self.dtype = dtype
        self.tokenizer = AutoTokenizer.from_pretrained(model_path, **loading.hub_kwargs(model_path))
        model: Any = AutoModelForCausalLM.from_pretrained(
            model_path, dtype=dtype, **loading.model_kwargs_for(model_path)
        )
        self.model = model.to(self.device).eval()

    @property
    def served_model(self) -> Any:
        """The transformers model that generates (the weights it holds now)."""
        if self.model is None:
            raise RuntimeError("HFRollout: call setup(model_path, device, dtype) before generating")
        return self.model

    @override
    @torch.inference_mode()
    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig) -> list[RolloutOutput]:
        self._serve_centre()
        outputs = [RolloutOutput(prompt_token_ids=list(p)) for p in prompts]
        per_call = max(1, self.batch_size // sampling.n)
        for start in range(0, len(prompts), per_call):
            # hashed: torch keeps 32 bits (es_lightning/rollout/seeds.py)
            seed = None if sampling.seed is None else chunk_seed(sampling.seed, start)
            completions = self._generate_call(prompts[start : start + per_call], sampling, torch_seed=seed)
            for j, completion in enumerate(completions):
                outputs[start + j // sampling.n].completions.append(completion)
        return outputs

    @torch.inference_mode()
    def generate_rows(
        self, prompts: Sequence[Sequence[int]], sampling: SamplingConfig, row_seeds: Sequence[int | None]
    ) -> list[Completion]:
        """The ``sampling.n`` completions of every prompt in one call, row r from stream ``row_seeds[r]``."""
        from es_lightning.rollout.hf_population import RowSampler

        sampler = None if sampling.temperature == 0 else RowSampler(row_seeds, sampling)
        rows = [p for p in prompts for _ in range(sampling.n)]  # a row per response (greedy takes n = 1)
        return self._generate_call(rows, replace(sampling, n=1), row_sampler=sampler)

    def _generate_call(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingConfig,
        torch_seed: int | None = None,
        row_sampler: object | None = None,
    ) -> list[Completion]:
        """One ``generate`` call, sampled from the torch stream ``torch_seed`` or by ``row_sampler``."""
        model, tok = self.served_model, self.tokenizer
        eos = {tok.eos_token_id} | set(_as_list(model.generation_config.eos_token_id))
        eos.discard(None)
        pad_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        ids, mask = _left_padded(prompts, pad_id)
        kwargs = _generate_kwargs(
            sampling, pad_id, sorted(eos), greedy=sampling.temperature == 0 or row_sampler is not None
        )
        kwargs.update(input_ids=ids.to(self.device), attention_mask=mask.to(self.device))
        if row_sampler is not None:
            from transformers import LogitsProcessorList

            kwargs.update(logits_processor=LogitsProcessorList([row_sampler]))
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=tok)
        with torch.random.fork_rng(devices=[self.device] if self.device.type == "cuda" else []):
            if torch_seed is not None:
                torch.manual_seed(torch_seed)
            result = model.generate(**kwargs)
        new = result.sequences[:, ids.shape[1] :].cpu()  # (len(prompts) * n, T_new)
        logps = None
        if sampling.logprobs:
            logits = torch.stack(result.logits, dim=1).float()  # (len(prompts) * n, T_new, V)
            logps = torch.log_softmax(logits, -1).gather(
                -1, new[:, : logits.shape[1], None].to(logits.device)
            )
            logps = logps.squeeze(-1).cpu()
        return [
            self._completion(new[j], None if logps is None else logps[j], eos, sampling)
            for j in range(new.shape[0])
        ]

    def _completion(
        self, new_ids: torch.Tensor, logps: torch.Tensor | None, eos: set[int], sampling: SamplingConfig
    ) -> Completion:
        ids = new_ids.tolist()
        finish = "length"
        for pos, t in enumerate(ids):
            if t in eos:  # the EOS token is kept, as vLLM does
                ids, finish = ids[: pos + 1], "stop"
                break
        text = self.tokenizer.decode([t for t in ids if t not in eos], skip_special_tokens=True)
        if sampling.stop:
            cut = min((text.find(s) for s in sampling.stop if s in text), default=-1)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        return Completion(
            text=text,
            token_ids=ids,
            logprobs=None if logps is None else logps[: len(ids)].tolist(),
            finish_reason=finish,
        )

    @override
    @torch.no_grad()
    def score_logprobs(
        self, prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]
    ) -> list[list[float]]:
        from es_lightning.grpo import pack_sequences, token_logprobs_and_entropy

        if len(prompts) != len(responses):
            raise ValueError(f"score_logprobs: {len(prompts)} prompts but {len(responses)} responses")
        self._serve_centre()
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        out: list[list[float]] = []
        for start in range(0, len(prompts), self.batch_size):
            p, r = prompts[start : start + self.batch_size], responses[start : start + self.batch_size]
            ids, att, mask, _ = pack_sequences(list(p), list(r), pad)
            logp, _ = token_logprobs_and_entropy(
                self.served_model, ids.to(self.device), att.to(self.device), mask.to(self.device)
            )
            out.extend(row[m.bool()].tolist() for row, m in zip(logp.cpu(), mask))
        return out

    @override
    @torch.no_grad()
    def load_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        self._serve_centre()  # the tensors may cover only part of the model
        params = dict(self.served_model.named_parameters())
        for name, tensor in named_tensors:
            if name not in params:
                raise KeyError(f"HFRollout.load_weights: the model has no parameter {name!r}")
            params[name].copy_(tensor.to(params[name].device, params[name].dtype))

    @override
    def checksum(self) -> float:
        self._serve_centre()
        return float(sum(p.detach().double().sum().item() for p in self.served_model.parameters()))

    @override
    def digest(self) -> str:
        self._serve_centre()
        return weights_digest(self.served_model)

    # -- ES: the fp32 master lives beside the HF model in this process ---------------------------
    @override
    def es_init(
        self,
        weight_files: Sequence[str] | None = None,
        optimizer: OptimizerName = "sgd",
        optimizer_state: str | None = None,
    ) -> None:
        params = dict(self.served_model.named_parameters())  # tied weights appear once
        files = (
            list(weight_files)
            if weight_files
            else default_weight_files(self.model_path, revision=self.loading.revision)
        )
        dtype = next(iter(params.values())).dtype
        es = es_weights_from_files(
            files, self._write, dtype, self.device, optimizer, optimizer_state, names=set(params)
        )
        for name in set(params) - set(es.master):  # e.g. weights the files name differently
            es.master[name] = params[name].detach().to(torch.float32, copy=True)
        es.write_centre()
        self._es = es

    @torch.no_grad()
    def _write(self, named: Iterable[tuple[str, torch.Tensor]]) -> None:
        params = dict(self.served_model.named_parameters())
        for name, tensor in named:
            params[name].copy_(tensor)

    @property
    @override
    def es(self) -> ESWeights:
        """The fp32 centre beside the served model, in this process."""
        return cast(ESWeights, super().es)

    @override
    def es_use_lowrank(self, rank: int | None, fixed: Collection[str] = ()) -> None:
        self.es.noise = None if rank is None else LowRankNoise(rank, frozenset(fixed))

    @override
    def es_generate_population(
        self,
        prompts: Sequence[Sequence[int]],
        sampling: SamplingConfig,
        members: Sequence[tuple[int, float]],
        sigma: float,
        sampling_seeds: Sequence[int],
    ) -> list[list[RolloutOutput]]:
        """All members in one ``generate`` call of N·B·n rows."""
        from es_lightning.rollout.hf_population import generate_population

        return generate_population(self, prompts, sampling, members, sigma, sampling_seeds)

    @override
    def close(self) -> None:
        """Release the served model and the ES centre (its fp32 master and optimizer state)."""
        self.model = None
        self._es = None


def _left_padded(prompts: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids and attention mask (rows, width), left padded: the last prompt tokens line up."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, p in enumerate(prompts):
        ids[row, width - len(p) :] = torch.tensor(p, dtype=torch.long)
        mask[row, width - len(p) :] = 1
    return ids, mask


def _generate_kwargs(sampling: SamplingConfig, pad_id: int, eos: list[int], greedy: bool) -> dict[str, Any]:
    """``generate``'s keyword arguments for ``sampling`` (no inputs): ``greedy`` turns its own sampler off."""
    kwargs: dict[str, Any] = dict(
        max_new_tokens=sampling.max_tokens,
        do_sample=not greedy,
        num_return_sequences=sampling.n,
        pad_token_id=pad_id,
        eos_token_id=eos,
        return_dict_in_generate=True,
        output_logits=sampling.logprobs,
        temperature=None if greedy else sampling.temperature,
        top_p=None if greedy else sampling.top_p,
        top_k=None if greedy else sampling.top_k,  # 0: every token
        min_p=None if greedy else sampling.min_p or None,
        repetition_penalty=sampling.repetition_penalty,  # 1.0: off; greedy too
    )
    if sampling.generation_kwargs:
        from transformers import GenerationConfig

        known = set(GenerationConfig().to_dict())
        check_known_kwargs("transformers generate (GenerationConfig)", sampling.generation_kwargs, known)
        kwargs.update(sampling.generation_kwargs)
    return kwargs


def _as_list(x: int | list[int] | None) -> list[int]:
    return [] if x is None else list(x) if isinstance(x, (list, tuple)) else [x]
