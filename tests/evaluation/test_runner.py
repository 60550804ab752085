"""Generation-mode evaluation in chunks: the same samples as one call, and a progress bar over them."""

from __future__ import annotations

import pytest
import torch

from es_lightning.evaluation import sharding
from es_lightning.evaluation.runner import EvalConfig, evaluate_rows, generate_in_chunks
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import SamplingConfig
from es_lightning.rollout.hf import HFRollout
from es_lightning.tasks import Echo

TASK = Echo(length=4, n_train=4, n_test=10)


def _tokens(outputs):
    return [[c.token_ids for c in out.completions] for out in outputs]


@pytest.fixture()
def small_batches(tiny_model_path):
    """transformers rollouts 8 sequences at a time: 2 prompts per batch at M = 4."""
    rollout = HFRollout(batch_size=8)
    rollout.setup(str(tiny_model_path), torch.device("cpu"), torch.float32)
    yield rollout
    rollout.close()


def test_chunked_sampling_equals_one_call_on_transformers(tiny_model_path, small_batches):
    module = ReasoningModule(model=str(tiny_model_path), task=TASK)
    prompts = module.encode(TASK.load("test"))
    sampling = SamplingConfig(n=4, temperature=1.0, max_tokens=8, seed=11)
    whole = small_batches.generate(prompts, sampling)
    for chunk in (2, 4, 6, None):
        seen = []
        chunked = generate_in_chunks(small_batches, prompts, sampling, chunk=chunk, on_chunk=seen.append)
        assert _tokens(chunked) == _tokens(whole), chunk
        assert sum(seen) == len(prompts) * 4
    assert _tokens(generate_in_chunks(small_batches, prompts, sampling, chunk=2)) != _tokens(
        small_batches.generate(prompts, SamplingConfig(n=4, temperature=1.0, max_tokens=8, seed=12))
    )  # the seed does decide the samples


def test_evaluate_rows_shows_a_bar_and_gives_the_samples_of_one_call(
    tiny_model_path, small_batches, monkeypatch, capsys
):
    monkeypatch.setattr(sharding, "PROGRESS_CHUNKS", 5)  # 10 prompts: 5 calls of 2
    module = ReasoningModule(model=str(tiny_model_path), task=TASK)
    rows = TASK.load("test")
    config = EvalConfig(num_samples=4, temperature=1.0, max_tokens=8, ks=[1, 4], seed=3)
    shown = evaluate_rows(module, small_batches, rows, config, progress=True, desc="echo (after)")
    bar = capsys.readouterr().err
    assert "eval echo (after)" in bar and "/50 [" in bar  # 10 prompts x (4 samples + greedy)
    hidden = evaluate_rows(module, small_batches, rows, config)
    assert capsys.readouterr().err == ""
    whole = small_batches.generate(module.encode(rows), config.sampling())
    assert shown.completions == hidden.completions == [[c.text for c in o.completions] for o in whole]
    assert shown.summary == hidden.summary and shown.greedy == hidden.greedy


@pytest.mark.vllm
def test_chunked_sampling_equals_one_call_on_vllm(tiny_model_path, vllm_engine):
    module = ReasoningModule(model=str(tiny_model_path), task=TASK)
    prompts = module.encode(TASK.load("test"))
    sampling = SamplingConfig(n=4, temperature=1.0, max_tokens=8, seed=11)
    whole = vllm_engine.generate(prompts, sampling)
    assert _tokens(generate_in_chunks(vllm_engine, prompts, sampling, chunk=3)) == _tokens(whole)


def test_summary_has_the_samples_mean_length_and_truncated_fraction(tiny_model_path, small_batches):
    module = ReasoningModule(model=str(tiny_model_path), task=TASK)
    rows = TASK.load("test")
    config = EvalConfig(num_samples=4, temperature=1.0, max_tokens=3, ks=[1], seed=5, greedy=False)
    summary = evaluate_rows(module, small_batches, rows, config).summary
    sampled = [
        c for o in small_batches.generate(module.encode(rows), config.sampling()) for c in o.completions
    ]
    assert summary["response_len"] == pytest.approx(sum(len(c.token_ids) for c in sampled) / len(sampled))
    truncated = sum(c.finish_reason == "length" for c in sampled) / len(sampled)
    assert summary["truncated_frac"] == pytest.approx(truncated) and 0 < truncated < 1
