import json
import os
import string
from dataclasses import asdict
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from es_lightning.models import registry
from es_lightning.models.registry import BUILTIN_MODELS, cache_dir, resolve_model
from es_lightning.models.tiny import BOS, CHARS, EOS, PAD, TinyConfig, build_tiny_model, build_tokenizer

ALL_TEXT = string.printable[:95] + "\n"  # every printable ASCII character and newline


@pytest.fixture(scope="module")
def tokenizer():
    return build_tokenizer()


def test_vocabulary_layout(tokenizer):
    assert CHARS == list(ALL_TEXT)
    assert len(tokenizer) == 3 + 96
    assert (tokenizer.pad_token, tokenizer.bos_token, tokenizer.eos_token) == (PAD, BOS, EOS)
    assert (tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id) == (0, 1, 2)


def test_one_token_per_character_and_round_trip(tokenizer):
    ids = tokenizer(ALL_TEXT)["input_ids"]
    assert ids == list(range(3, 99))  # character i of CHARS is token 3 + i; no BOS/EOS added
    assert tokenizer.decode(ids) == ALL_TEXT
    for text in ["a", " ", "\n", "  two  spaces", "x\n\ny", "#### 42", "{'k': [1, 2]}\\"]:
        ids = tokenizer(text)["input_ids"]
        assert len(ids) == len(text), text
        assert ids == [3 + CHARS.index(c) for c in text]
        assert tokenizer.decode(ids) == text


def test_special_tokens_are_single_ids_and_skippable(tokenizer):
    ids = tokenizer("<s>ab</s>")["input_ids"]
    a, b = 3 + CHARS.index("a"), 3 + CHARS.index("b")
    assert ids == [1, a, b, 2]
    assert tokenizer.decode(ids, skip_special_tokens=True) == "ab"


def test_auto_tokenizer_on_the_saved_folder_matches(tiny_model_path, tokenizer):
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(tiny_model_path)
    samples = [ALL_TEXT, "Repeat: 4821\n", "<s>hi</s>", "  lead and trail  "]
    for text in samples:
        assert loaded(text)["input_ids"] == tokenizer(text)["input_ids"], text
        assert loaded.decode(loaded(text)["input_ids"]) == text
    assert (loaded.pad_token_id, loaded.bos_token_id, loaded.eos_token_id) == (0, 1, 2)
    vocab_size = json.loads((tiny_model_path / "config.json").read_text())["vocab_size"]
    assert max(loaded(ALL_TEXT + "<s></s><pad>")["input_ids"]) < vocab_size


def test_saved_folder_contents(tiny_model_path):
    names = {p.name for p in Path(tiny_model_path).iterdir()}
    assert {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tiny_config.json",
    } <= names
    config = json.loads((tiny_model_path / "config.json").read_text())
    assert config["model_type"] == "qwen2" and config["vocab_size"] == 99
    assert config["hidden_size"] // config["num_attention_heads"] == 64
    assert json.loads((tiny_model_path / "tiny_config.json").read_text()) == asdict(TinyConfig())


def _small(seed: int) -> TinyConfig:
    return TinyConfig(
        hidden_size=64, num_attention_heads=2, intermediate_size=64, num_hidden_layers=1, seed=seed
    )


def test_build_is_deterministic_per_seed(tmp_path):
    a = load_file(build_tiny_model(tmp_path / "a", _small(0)) / "model.safetensors")
    b = load_file(build_tiny_model(tmp_path / "b", _small(0)) / "model.safetensors")
    c = load_file(build_tiny_model(tmp_path / "c", _small(1)) / "model.safetensors")
    assert a.keys() == b.keys() == c.keys()
    assert len(a) > 0
    for name in a:
        assert a[name].dtype == b[name].dtype == torch.float32
        assert a[name].view(torch.int32).equal(b[name].view(torch.int32)), name  # bit-identical
    random_init = [n for n in a if a[n].std() > 0]  # norms start at ones; weights are random
    assert random_init
    assert all(not a[n].equal(c[n]) for n in random_init)


def test_default_build_matches_session_model(tiny_model_path, tmp_path):
    again = load_file(build_tiny_model(tmp_path / "again") / "model.safetensors")
    session = load_file(tiny_model_path / "model.safetensors")
    assert again.keys() == session.keys()
    assert all(again[n].equal(session[n]) for n in session)


@pytest.mark.parametrize(
    ("hidden", "heads"),
    [(64, 4), (128, 8), (31, 1), (100, 3)],  # head_dim 16, 16, 31, non-integer
)
def test_tiny_config_rejects_small_or_fractional_heads(hidden, heads):
    with pytest.raises(ValueError, match="hidden_size/num_attention_heads must be an integer >= 32") as err:
        TinyConfig(hidden_size=hidden, num_attention_heads=heads)
    assert f"{hidden}/{heads}" in str(err.value)


def test_tiny_config_accepts_head_dim_32():
    assert TinyConfig(hidden_size=64, num_attention_heads=2).hidden_size == 64


def test_resolve_model_builds_once_into_the_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("ES_LIGHTNING_CACHE", str(cache))
    assert cache_dir() == cache
    calls = []
    real = BUILTIN_MODELS["es-lightning/tiny-random"]

    def counting(path):
        calls.append(path)
        return real(path)

    monkeypatch.setitem(registry.BUILTIN_MODELS, "es-lightning/tiny-random", counting)

    first = resolve_model("es-lightning/tiny-random")
    assert first == str(cache / "es-lightning--tiny-random")
    assert (Path(first) / "config.json").is_file()
    assert (Path(first) / "model.safetensors").is_file()
    assert os.listdir(cache) == ["es-lightning--tiny-random"]  # the temporary build folder was renamed
    stamps = {p.name: p.stat().st_mtime_ns for p in Path(first).iterdir()}

    second = resolve_model("es-lightning/tiny-random")
    assert second == first
    assert len(calls) == 1
    assert {p.name: p.stat().st_mtime_ns for p in Path(second).iterdir()} == stamps


def test_cache_dir_default(monkeypatch):
    monkeypatch.delenv("ES_LIGHTNING_CACHE")
    assert cache_dir() == Path.home() / ".cache" / "es_lightning"


@pytest.mark.parametrize(
    "name", ["Qwen/Qwen2.5-0.5B-Instruct", "/some/local/model", "./relative", "es-lightning/unknown"]
)
def test_resolve_model_passes_other_names_through(name, tmp_path, monkeypatch):
    monkeypatch.setenv("ES_LIGHTNING_CACHE", str(tmp_path / "cache"))
    assert resolve_model(name) == name
    assert not (tmp_path / "cache").exists()  # nothing built


def test_extra_vocabulary_rows_and_bf16_weights_load_in_transformers(tmp_path, tokenizer):
    from transformers import AutoModelForCausalLM

    path = build_tiny_model(tmp_path / "m", _small(0), vocab_size=160, dtype="bfloat16")
    weights = load_file(path / "model.safetensors")
    assert all(w.dtype == torch.bfloat16 for w in weights.values())
    assert weights["model.embed_tokens.weight"].shape == (160, 64)
    fp32 = load_file(build_tiny_model(tmp_path / "f", _small(0), vocab_size=160) / "model.safetensors")
    for name, w in weights.items():  # the same draw, rounded
        assert w.equal(fp32[name].to(torch.bfloat16)), name
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
    logits = model(torch.tensor([tokenizer("12+3=")["input_ids"]])).logits
    assert logits.shape[-1] == 160 and torch.isfinite(logits.float()).all()


def test_a_vocabulary_smaller_than_the_tokenizer_is_refused(tmp_path):
    with pytest.raises(ValueError, match="vocab_size 50 < the tokenizer's 99 tokens"):
        build_tiny_model(tmp_path / "m", _small(0), vocab_size=50)
    assert not (tmp_path / "m").exists()  # refused before anything is written
