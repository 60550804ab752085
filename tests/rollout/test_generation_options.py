"""top_k, min_p, repetition_penalty and generation_kwargs mean the same on both rollouts."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from es_lightning.errors import ConfigError
from es_lightning.rollout.base import SamplingConfig
from es_lightning.rollout.hf_population import sample_rows

BACKENDS = ["hf_rollout", pytest.param("vllm_rollout", marks=pytest.mark.vllm)]


@pytest.fixture()
def prompts(tiny_model_path):
    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    return [tok(f"Q: {i}+{2 * i}=").input_ids for i in range(4)]


def _tokens(outputs):
    return [[c.token_ids for c in o.completions] for o in outputs]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"top_k": -1}, "top_k"),
        ({"top_k": 1.5}, "top_k"),
        ({"top_k": True}, "top_k"),
        ({"min_p": 1.5}, "min_p"),
        ({"min_p": -0.1}, "min_p"),
        ({"repetition_penalty": 0.0}, "repetition_penalty"),
        ({"repetition_penalty": float("nan")}, "repetition_penalty"),
        ({"generation_kwargs": {"temperature": 0.5}}, r"generation_kwargs may not set \['temperature'\]"),
        ({"generation_kwargs": {"max_new_tokens": 3}}, "max_new_tokens"),
        ({"generation_kwargs": [1, 2]}, "generation_kwargs must be a mapping"),
    ],
)
def test_bad_values_are_named(options, named):
    with pytest.raises(ConfigError, match=named):
        SamplingConfig(**options)


def test_defaults_leave_sampling_as_it_was():
    s = SamplingConfig()
    assert (s.top_k, s.min_p, s.repetition_penalty, s.generation_kwargs) == (0, 0.0, 1.0, None)


def test_sample_rows_top_k_and_min_p_by_hand():
    logits = torch.log(torch.tensor([[0.1, 0.5, 0.3, 0.1]] * 4))
    u = torch.tensor([0.0, 0.6, 0.7, 0.99])
    # default: cdf (0.5, 0.8, 0.9, 1.0) over the sorted tokens (1, 2, 0, 3)
    assert sample_rows(logits, u, 1.0, 1.0).tolist() == [1, 2, 2, 3]
    assert torch.equal(sample_rows(logits, u, 1.0, 1.0, top_k=0, min_p=0.0), sample_rows(logits, u, 1.0, 1.0))
    # top_k=2: (0.5, 0.3) renormalised to (0.625, 0.375)
    assert sample_rows(logits, u, 1.0, 1.0, top_k=2).tolist() == [1, 1, 2, 2]
    # top_k=1 is greedy whatever u
    assert sample_rows(logits, u, 1.0, 1.0, top_k=1).tolist() == [1, 1, 1, 1]
    # min_p=0.5: keep p >= 0.25, i.e. (0.5, 0.3) as top_k=2; min_p=0.7: only 0.5
    assert sample_rows(logits, u, 1.0, 1.0, min_p=0.5).tolist() == [1, 1, 2, 2]
    assert sample_rows(logits, u, 1.0, 1.0, min_p=0.7).tolist() == [1, 1, 1, 1]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("options", [{"top_k": 1}, {"min_p": 1.0}])
def test_top_k_1_and_min_p_1_are_greedy(backend, options, prompts, request):
    rollout = request.getfixturevalue(backend)
    greedy = rollout.generate(prompts, SamplingConfig(temperature=0.0, max_tokens=12))
    sampled = rollout.generate(
        prompts, SamplingConfig(n=3, temperature=1.5, max_tokens=12, seed=3, **options)
    )
    assert _tokens(sampled) == [[g.completions[0].token_ids] * 3 for g in greedy]
    plain = rollout.generate(prompts, SamplingConfig(n=3, temperature=1.5, max_tokens=12, seed=3))
    assert _tokens(plain) != _tokens(sampled)  # the filter did something


def _penalised_greedy(model_path, prompt, penalty, steps):
    """Greedy decoding by hand: every token already in the sequence has its logit ℓ turned into
    ℓ/r (ℓ > 0) or ℓ·r (ℓ <= 0) before the argmax."""
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    ids = list(prompt)
    out = []
    with torch.no_grad():
        for _ in range(steps):
            logits = model(torch.tensor([ids])).logits[0, -1]
            seen = torch.tensor(sorted(set(ids)))
            picked = logits[seen]
            logits[seen] = torch.where(picked > 0, picked / penalty, picked * penalty)
            token = int(logits.argmax())
            out.append(token)
            ids.append(token)
            if token == model.generation_config.eos_token_id:
                break
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_repetition_penalty_is_the_ctrl_penalty(backend, prompts, request, tiny_model_path):
    rollout = request.getfixturevalue(backend)
    steps = 12
    penalised = rollout.generate(
        prompts, SamplingConfig(temperature=0.0, max_tokens=steps, repetition_penalty=3.0)
    )
    plain = rollout.generate(prompts, SamplingConfig(temperature=0.0, max_tokens=steps))
    expected = [_penalised_greedy(tiny_model_path, p, 3.0, steps) for p in prompts]
    assert [o.completions[0].token_ids for o in penalised] == expected
    assert _tokens(penalised) != _tokens(plain)


def test_generation_kwargs_reach_transformers(hf_rollout, prompts):
    out = hf_rollout.generate(
        prompts, SamplingConfig(temperature=0.0, max_tokens=10, generation_kwargs={"no_repeat_ngram_size": 1})
    )
    plain = hf_rollout.generate(prompts, SamplingConfig(temperature=0.0, max_tokens=10))
    assert _tokens(out) != _tokens(plain)
    for prompt, o in zip(prompts, out):
        new = o.completions[0].token_ids
        for i, token in enumerate(new):  # a 1-gram ban: no token that the sequence already holds
            assert token not in prompt + new[:i]
    with pytest.raises(ConfigError, match=r"knows no \['bogus'\]"):
        hf_rollout.generate(prompts, SamplingConfig(max_tokens=2, generation_kwargs={"bogus": 1}))


@pytest.mark.vllm
def test_generation_kwargs_reach_vllm(vllm_rollout, prompts):
    out = vllm_rollout.generate(
        prompts,
        SamplingConfig(n=2, temperature=1.0, max_tokens=10, seed=1, generation_kwargs={"min_tokens": 10}),
    )
    assert all(len(c.token_ids) == 10 for o in out for c in o.completions)
    with pytest.raises(ConfigError, match=r"knows no \['bogus'\]"):
        vllm_rollout.generate(prompts, SamplingConfig(max_tokens=2, generation_kwargs={"bogus": 1}))


def test_row_sampler_applies_top_k_and_the_penalty(hf_rollout, prompts):
    """The per-row sampler (low-rank populations) honours the same options: top_k=1 is greedy."""
    greedy = hf_rollout.generate(
        prompts, SamplingConfig(temperature=0.0, max_tokens=8, repetition_penalty=2.0)
    )
    rows = hf_rollout.generate_rows(
        prompts,
        SamplingConfig(n=2, temperature=1.5, max_tokens=8, top_k=1, repetition_penalty=2.0),
        row_seeds=list(range(2 * len(prompts))),
    )
    assert [c.token_ids for c in rows] == [o.completions[0].token_ids for o in greedy for _ in range(2)]


def test_help_documents_each_option(capsys):
    from jsonargparse import ArgumentParser

    from es_lightning.training.command import fit_parser

    with pytest.raises(SystemExit):
        fit_parser().parse_args(["--evaluation.help", "EvalConfig"])
    evaluation = capsys.readouterr().out
    parser = ArgumentParser()
    parser.add_class_arguments(SamplingConfig, "train_sampling")
    sampling = parser.format_help()
    for option, words in [
        ("top_k", "most probable tokens"),
        ("min_p", "min_p times the most probable"),
        ("repetition_penalty", "CTRL"),
        ("generation_kwargs", "vllm.SamplingParams"),
    ]:
        for text, prefix in ((evaluation, "evaluation"), (sampling, "train_sampling")):
            assert f"--{prefix}.{option}" in text
            assert words in " ".join(text.split()), (prefix, option)


def test_evaluation_settings_carry_and_check_the_options():
    from es_lightning.evaluation.runner import EvalConfig

    config = EvalConfig(
        num_samples=4, top_k=5, min_p=0.1, repetition_penalty=1.2, generation_kwargs={"typical_p": 0.9}
    )
    s = config.sampling()
    assert (s.top_k, s.min_p, s.repetition_penalty, s.generation_kwargs) == (5, 0.1, 1.2, {"typical_p": 0.9})
    with pytest.raises(ConfigError, match=r"evaluation\.top_k"):
        EvalConfig(top_k=-2)
    with pytest.raises(ConfigError, match=r"evaluation\.generation_kwargs may not set \['seed'\]"):
        EvalConfig(generation_kwargs={"seed": 1})
