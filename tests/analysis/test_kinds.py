"""Parameter kind and layer index on real Qwen2 names (the tiny model) and other HF spellings."""

from __future__ import annotations

import pytest
from safetensors import safe_open

from es_lightning.analysis.kinds import KINDS, layer_index, parameter_kind

# every tensor of a Qwen2 block, by the suffix after "model.layers.<i>."
BLOCK = {
    "input_layernorm.weight": "norm",
    "post_attention_layernorm.weight": "norm",
    "self_attn.q_proj.weight": "attention",
    "self_attn.q_proj.bias": "attention",
    "self_attn.k_proj.weight": "attention",
    "self_attn.k_proj.bias": "attention",
    "self_attn.v_proj.weight": "attention",
    "self_attn.v_proj.bias": "attention",
    "self_attn.o_proj.weight": "attention",
    "mlp.gate_proj.weight": "mlp",
    "mlp.up_proj.weight": "mlp",
    "mlp.down_proj.weight": "mlp",
}


def test_every_name_of_the_tiny_qwen2(tiny_model_path):
    with safe_open(str(tiny_model_path / "model.safetensors"), framework="pt") as f:
        names = set(f.keys())
    expected = {"model.embed_tokens.weight": ("embedding", None), "model.norm.weight": ("norm", None)}
    for layer in (0, 1):
        expected |= {f"model.layers.{layer}.{suffix}": (kind, layer) for suffix, kind in BLOCK.items()}
    assert names == set(expected)  # tied embeddings: no lm_head.weight in the file
    assert {n: (parameter_kind(n), layer_index(n)) for n in names} == expected


@pytest.mark.parametrize(
    ("name", "kind", "layer"),
    [
        ("lm_head.weight", "lm_head", None),
        ("model.layers.12.self_attn.q_norm.weight", "norm", 12),  # Qwen3: a norm inside attention
        ("model.layers.3.mlp.gate_up_proj.weight", "mlp", 3),
        ("model.layers.3.self_attn.qkv_proj.weight", "attention", 3),
        ("transformer.h.7.ln_1.weight", "norm", 7),  # GPT-2 spellings
        ("transformer.h.7.attn.c_proj.weight", "attention", 7),
        ("transformer.h.7.mlp.c_proj.weight", "mlp", 7),
        ("transformer.wte.weight", "embedding", None),
        ("transformer.ln_f.bias", "norm", None),
        ("model.layers.10.block_sparse_moe.gate.weight", "other", 10),
        ("score.weight", "other", None),
    ],
)
def test_other_spellings(name, kind, layer):
    assert parameter_kind(name) == kind and kind in KINDS
    assert layer_index(name) == layer
