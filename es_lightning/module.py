"""ReasoningModule: the model, its tokenizer, the prompt format and the task, shared by ES and GRPO;
it turns rows into prompt token ids and scores the completions, knowing nothing of the optimizer."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal

import torch

from es_lightning.errors import ConfigError
from es_lightning.init_args import RecordsInit
from es_lightning.rollout.base import RolloutOutput, SamplingConfig
from es_lightning.tasks.base import Score, Task
from es_lightning.tasks.reward_calls import call_task_scores

if TYPE_CHECKING:
    from es_lightning.models.loading import ModelLoading

DTypeName = Literal["auto", "float32", "bfloat16", "float16"]


class ReasoningModule(RecordsInit):
    """What is trained and on what.

    Args:
        model: HF hub id or local folder of a causal LM, or a built-in name
            (``es-lightning/tiny-random``, ``es-lightning/tiny-arithmetic``,
            ``es-lightning/tiny-countdown``). A hub id must be in the local HF cache or on the hub;
            a folder must hold a ``config.json`` (checked before anything starts).
        task: the task (dataset + prompt + verifier) as ``class_path: es_lightning.tasks.GSM8K``
            (or another es_lightning.tasks class, or your own) with its ``init_args``.
        tokenizer: tokenizer id/folder when it differs from ``model`` (checked like ``model``).
        dtype: weights' dtype; ``auto`` is bfloat16 on CUDA and float32 on CPU.
        chat_template: ``auto`` uses the tokenizer's chat template when it has one; ``never``
            always uses ``plain_template``.
        plain_template: ``str.format`` template around the task's user message when no chat template
            is used; fields ``system`` (may be empty) and ``prompt``.
        train_sampling: sampling used for training rollouts.
        max_prompt_tokens: prompts longer than this are refused with an error naming the row (>= 1).
        revision: branch, tag or commit of a hub ``model`` (and of its own tokenizer), for the
            tokenizer, the trainer's model and the rollout's model or vLLM engine alike; never applied
            to local folders (checkpoints). A separate ``tokenizer`` repository loads at its default.
        trust_remote_code: allow a model that ships its own architecture code (an ``auto_map`` in
            its config.json) to run it, in transformers and vLLM; checkpoints keep a copy of it.
        model_kwargs: further ``AutoModelForCausalLM.from_pretrained`` options for the trainer's
            model and the HF rollout's (TRL's ``model_init_kwargs``), e.g.
            ``{attn_implementation: sdpa}``; vLLM's own options go in the rollout's ``engine_kwargs``.
    """

    def __init__(
        self,
        model: str,
        task: Task,
        tokenizer: str | None = None,
        dtype: DTypeName = "auto",
        chat_template: Literal["auto", "never"] = "auto",
        plain_template: str = "{system}{prompt}\n",
        train_sampling: SamplingConfig | None = None,
        max_prompt_tokens: int = 2048,
        revision: str | None = None,
        trust_remote_code: bool = False,
        model_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(task, Task):
            raise TypeError(f"ReasoningModule: task must be a Task, got {type(task).__name__}")
        if "{prompt}" not in plain_template:
            raise ConfigError(
                f"ReasoningModule: plain_template must contain '{{prompt}}', got {plain_template!r}"
            )
        if max_prompt_tokens < 1:
            raise ConfigError(f"ReasoningModule: max_prompt_tokens must be >= 1, got {max_prompt_tokens}")
        from es_lightning.models.loading import ModelLoading, looks_local
        from es_lightning.models.registry import resolve_model

        self.model = resolve_model(str(model))
        self.task = task
        self.tokenizer_name = resolve_model(str(tokenizer)) if tokenizer else self.model
        self.loading = ModelLoading(revision, trust_remote_code, dict(model_kwargs or {}))
        """How the model is loaded, wherever it is (:mod:`es_lightning.models.loading`)."""
        self.tokenizer_loading: ModelLoading = (
            self.loading if self.tokenizer_name == self.model else replace(self.loading, revision=None)
        )
        """How the tokenizer is loaded: a separate tokenizer repository at its default revision."""
        if revision is not None and looks_local(self.model):
            raise ConfigError(
                f"ReasoningModule: revision {revision!r} names a hub commit, but model {str(model)!r} is "
                "a local folder (or built-in model); leave revision unset"
            )
        self.dtype_name = dtype
        self.chat_template = chat_template
        self.plain_template = plain_template
        self.train_sampling = train_sampling or SamplingConfig()
        self.max_prompt_tokens = max_prompt_tokens

    def check_model_source(self) -> None:
        """Fail early when the model or tokenizer cannot be found, saying where it looked."""
        from es_lightning.models.source import check_model_source

        check_model_source(self.model, "module.model", self.loading)
        if self.tokenizer_name != self.model:  # another repository: at its default revision
            check_model_source(self.tokenizer_name, "module.tokenizer", self.tokenizer_loading)

    def torch_dtype(self, device: torch.device) -> torch.dtype:
        if self.dtype_name == "auto":
            return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
        return getattr(torch, self.dtype_name)

    @cached_property
    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(
            self.tokenizer_name, **self.tokenizer_loading.hub_kwargs(self.tokenizer_name)
        )
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        return tok

    @property
    def uses_chat_template(self) -> bool:
        return self.chat_template == "auto" and bool(getattr(self.tokenizer, "chat_template", None))

    def format_prompt(self, row: dict[str, Any]) -> str:
        """The full prompt text for ``row`` (chat template applied when used)."""
        messages = self.task.chat_messages(row) or [{"role": "user", "content": self.task.prompt(row)}]
        system = self.task.system_prompt
        if system and messages[0]["role"] != "system":
            messages = [{"role": "system", "content": system}, *messages]
        if self.uses_chat_template:
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        system_text = "\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = "\n".join(m["content"] for m in messages if m["role"] != "system")
        return self.plain_template.format(system=f"{system_text}\n" if system_text else "", prompt=turns)

    def encode(self, rows: Sequence[dict[str, Any]]) -> list[list[int]]:
        """Prompt token ids for each row."""
        encoded = []
        for i, row in enumerate(rows):
            text = self.format_prompt(row)
            ids = self.tokenizer(text, add_special_tokens=not self.uses_chat_template)["input_ids"]
            if len(ids) > self.max_prompt_tokens:
                raise ConfigError(
                    f"ReasoningModule: prompt of row {i} has {len(ids)} tokens > max_prompt_tokens={self.max_prompt_tokens}"
                )
            encoded.append(list(ids))
        return encoded

    def score(self, rows: Sequence[dict[str, Any]], outputs: Sequence[RolloutOutput]) -> list[list[Score]]:
        """Verify every completion; returns scores indexed ``[prompt][sample]``."""
        if len(rows) != len(outputs):
            raise ValueError(f"ReasoningModule.score: {len(rows)} rows but {len(outputs)} outputs")
        flat_rows = [row for row, out in zip(rows, outputs) for _ in out.completions]
        flat_texts = [c.text for out in outputs for c in out.completions]
        flat_ids = [c.token_ids for out in outputs for c in out.completions]  # TRL's completion_ids
        flat = call_task_scores(self.task, flat_texts, flat_rows, flat_ids)  # a failure or a NaN: one line
        rest = iter(flat)
        return [list(islice(rest, len(out.completions))) for out in outputs]

    def with_task(self, task: Task) -> ReasoningModule:
        """The same model and prompt format on another task (for held-out evaluation)."""
        if task is self.task:
            return self
        clone = copy.copy(self)
        clone.task = task
        return clone

    def with_model(self, model: str) -> ReasoningModule:
        """The same task and prompt format (and tokenizer) on other weights."""
        clone = copy.copy(self)
        clone.__dict__.pop("tokenizer", None)  # not shared: loaded again when used
        clone.model = str(model)
        return clone
