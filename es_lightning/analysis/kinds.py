"""Parameter kind and layer index from an HF parameter name (Qwen2/Llama style, GPT-2 names too).

The first matching rule decides: ``lm_head``, ``norm``, ``embedding``, ``attention``, ``mlp``, else
``other``; the layer is the integer after ``layers``/``layer``/``h``/``blocks``.

    >>> parameter_kind("model.layers.3.self_attn.q_proj.bias"), layer_index("model.layers.3.self_attn.q_proj.bias")
    ('attention', 3)
    >>> parameter_kind("model.norm.weight"), layer_index("model.norm.weight")
    ('norm', None)
"""

from __future__ import annotations

import re

KINDS: tuple[str, ...] = ("embedding", "attention", "mlp", "norm", "lm_head", "other")
"""Every kind :func:`parameter_kind` returns, in the order the tables list them."""

_ATTENTION = frozenset(
    {"self_attn", "attn", "attention", "self_attention", "cross_attn"}
    | {"q_proj", "k_proj", "v_proj", "o_proj", "qkv_proj", "query_key_value"}
)
_MLP = frozenset(
    {"mlp", "feed_forward", "ffn"} | {"gate_proj", "up_proj", "down_proj", "gate_up_proj", "fc1", "fc2"}
)
_LAYER = re.compile(r"(?:^|\.)(?:layers|layer|h|blocks)\.(\d+)(?:\.|$)")


def parameter_kind(name: str) -> str:
    """The kind of parameter ``name`` (one of :data:`KINDS`), by the rules of the module docstring."""
    parts = name.split(".")
    if "lm_head" in parts:
        return "lm_head"
    if any("norm" in p or p.startswith("ln_") for p in parts):
        return "norm"
    if any("embed" in p or p in ("wte", "wpe") for p in parts):
        return "embedding"
    if any(p in _ATTENTION for p in parts):
        return "attention"
    if any(p in _MLP for p in parts):
        return "mlp"
    return "other"


def layer_index(name: str) -> int | None:
    """The transformer block ``name`` belongs to (``model.layers.3.…`` → 3), ``None`` outside blocks."""
    match = _LAYER.search(name)
    return int(match.group(1)) if match else None
