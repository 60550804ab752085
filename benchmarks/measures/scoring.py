"""The GSM8K verifier on the whole test set: 1319 prompts × 32 completions, timed.

    python -m benchmarks.measures.scoring --samples 32 --repeats 3 --model PATH --out s.json

The completions are the reference solutions written as model answers, in 32 variants per prompt
(the solution as is; the final number changed; ``####`` replaced by "The answer is N."; with ``$``
and thousands separators; text appended after the answer; ...), so the verifier sees right,
wrong and oddly formatted answers of realistic length. They go through ``ReasoningModule.score``,
the call ES and GRPO make. Their token count in ``--model``'s tokenizer is written too, so the
caller can turn it into a generation time with a measured throughput.
"""

from __future__ import annotations

import argparse
import re
import time

from benchmarks.measures.common import gsm8k_task, resolve, summary, write_json


def variants(answer: str, k: int) -> list[str]:
    """``k`` completions derived from a GSM8K reference ``answer`` (``... #### N``), its calculator
    annotations (``<<9*2=18>>``) removed as a model's answer would not have them."""
    answer = re.sub(r"<<[^>]*>>", "", answer)
    body, _, final = answer.rpartition("####")
    final = final.strip()
    try:
        wrong = str(int(final.replace(",", "")) + 1)
    except ValueError:
        wrong = final + "1"
    forms = [
        answer,
        f"{body}#### {wrong}",
        f"{body}The answer is {final}.",
        f"{body}#### ${final}",
        f"{body}#### {final}\n\nI hope this helps!",
        body.strip(),  # no final answer line: the verifier falls back to the last number
        f"{body}#### {final}.00",
        re.sub(r"\d", "7", answer),
    ]
    return [forms[i % len(forms)] + ("" if i < len(forms) else f" ({i})") for i in range(k)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    from es_lightning.module import ReasoningModule
    from es_lightning.rollout.base import Completion, RolloutOutput

    module = ReasoningModule(model=resolve(args.model), task=gsm8k_task(), dtype="float32")
    rows = module.task.load("test")
    outputs = [
        RolloutOutput(
            prompt_token_ids=[],
            completions=[Completion(text=t, token_ids=[]) for t in variants(r["answer"], args.samples)],
        )
        for r in rows
    ]
    texts = [c.text for o in outputs for c in o.completions]
    tokens = sum(len(ids) for ids in module.tokenizer(texts, add_special_tokens=False)["input_ids"])
    seconds, rewards = [], None
    module.score(rows[:10], outputs[:10])  # warm-up
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        scores = module.score(rows, outputs)
        seconds.append(time.perf_counter() - t0)
        rewards = [s.reward for per in scores for s in per]
    write_json(
        args.out,
        {
            "prompts": len(rows),
            "completions": len(texts),
            "completion_tokens": tokens,
            "completion_chars": sum(len(t) for t in texts),
            "mean_reward": sum(rewards) / len(rewards),
            "score_s": summary(seconds),
        },
    )


if __name__ == "__main__":
    main()
