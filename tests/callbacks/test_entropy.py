"""TokenEntropy's measurement against a direct softmax computation on the tiny model."""

from __future__ import annotations

import pytest
import torch

from es_lightning.callbacks.entropy import TokenEntropy, mean_token_entropy


def test_mean_token_entropy_equals_a_direct_softmax(tiny_model_path):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32).eval()
    pairs = [([5, 6, 7], [8, 9, 10, 2]), ([11, 12], [13]), ([4], [20, 21, 22, 23, 24])]
    for temperature in (1.0, 0.6):
        got = mean_token_entropy(model, pairs, pad_token_id=0, temperature=temperature, micro_batch_size=2)
        total, count = 0.0, 0
        with torch.no_grad():
            for prompt, response in pairs:
                logits = model(torch.tensor([prompt + response])).logits[0].double() / temperature
                for t in range(len(prompt), len(prompt) + len(response)):
                    p = torch.softmax(
                        logits[t - 1], dim=-1
                    )  # the distribution response token t was drawn from
                    total += float(-(p * p.log()).sum())
                    count += 1
        assert got == pytest.approx(total / count, rel=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [(dict(every_n_updates=0), "every_n_updates"), (dict(temperature=0.0), "temperature")],
)
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TokenEntropy(**kwargs)


def test_at_steps_adds_updates_to_every_n_updates():
    entropy = TokenEntropy(every_n_updates=10, at_steps=[1, 2, 3, 5, 7, 15])
    assert [t for t in range(1, 31) if entropy.due(t)] == [1, 2, 3, 5, 7, 10, 15, 20, 30]
    assert [t for t in range(1, 31) if TokenEntropy(every_n_updates=10).due(t)] == [10, 20, 30]
    with pytest.raises(ValueError, match=r"at_steps must be updates >= 1, got \[0, 3\]"):
        TokenEntropy(at_steps=[0, 3])


@pytest.mark.integration
def test_a_run_measures_at_its_steps(tmp_path):
    from es_lightning.training.loggers import read_metrics
    from tests.helpers import TINY_ES_RECIPE, fit

    callback = "callbacks:\n  - class_path: es_lightning.callbacks.TokenEntropy\n"
    callback += "    init_args: {every_n_updates: 10, at_steps: [1, 2], num_prompts: 2, max_tokens: 4}\n"
    out = fit(tmp_path, "run", "--trainer.max_steps", "3", recipe=TINY_ES_RECIPE + callback)
    logged = [m["step"] for m in read_metrics(out / "metrics.jsonl") if "entropy/echo" in m]
    assert logged == [0, 1, 2, 3]  # the start, the two steps, the end
