"""vLLM's requests and results in the rollout contract's terms (prompts, completions, log-probs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from es_lightning.rollout.base import Completion, RolloutOutput, SamplingConfig

if TYPE_CHECKING:
    from vllm.inputs import TokensPrompt
    from vllm.logprobs import Logprob


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
