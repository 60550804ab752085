"""A tiny Qwen2-architecture causal LM with a character-level tokenizer, built locally from a
fixed seed; a normal HF checkpoint transformers and vLLM both serve (head size 64: vLLM's CPU
attention refuses smaller heads).
"""

from __future__ import annotations

import string
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

PAD, BOS, EOS = "<pad>", "<s>", "</s>"
CHARS = list(string.printable[:95]) + ["\n"]  # digits, letters, punctuation, space, newline


@dataclass(frozen=True)
class TinyConfig:
    """Size of the tiny model."""

    hidden_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    intermediate_size: int = 256
    max_position_embeddings: int = 512
    seed: int = 0
    """Seed of the random initialisation (the same seed gives bit-identical weights)."""

    def __post_init__(self) -> None:
        head_dim, rest = divmod(self.hidden_size, self.num_attention_heads)
        if rest or head_dim < 32:
            raise ValueError(
                f"TinyConfig: hidden_size/num_attention_heads must be an integer >= 32 "
                f"(vLLM's CPU attention needs it); got {self.hidden_size}/{self.num_attention_heads}"
            )


def build_tokenizer():
    """A character-level tokenizer with GPT-2's byte-level alphabet, loading as Qwen2's does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import bytes_to_unicode  # GPT-2's byte -> character map

    alphabet = ByteLevel.alphabet()
    byte_to_char = bytes_to_unicode()
    chars = [byte_to_char[ord(c)] for c in CHARS]
    assert all(c in alphabet for c in chars)
    vocab = {tok: i for i, tok in enumerate([PAD, BOS, EOS, *chars])}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=None, fuse_unk=False))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens([PAD, BOS, EOS])
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=PAD,
        model_max_length=512,
    )


def build_tiny_model(
    path: str | Path,
    config: TinyConfig | None = None,
    *,
    vocab_size: int | None = None,
    dtype: str = "float32",
    init_device: str | torch.device = "cpu",
) -> Path:
    """Write a random Qwen2 model of ``config``'s shape and its tokenizer to ``path``; the path."""
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    config = config or TinyConfig()
    path = Path(path)
    tokenizer = build_tokenizer()
    if vocab_size is not None and vocab_size < len(tokenizer):
        raise ValueError(
            f"build_tiny_model: vocab_size {vocab_size} < the tokenizer's {len(tokenizer)} tokens"
        )
    ids = dict(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    shape = {k: v for k, v in asdict(config).items() if k != "seed"}  # Qwen2Config's names
    model_config = Qwen2Config(
        vocab_size=vocab_size or len(tokenizer), tie_word_embeddings=True, dtype=dtype, **shape, **ids
    )
    device = torch.device(init_device)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []), device:
        torch.manual_seed(config.seed)
        model = Qwen2ForCausalLM(model_config)
    model.to(device="cpu", dtype=getattr(torch, dtype))
    model.generation_config = GenerationConfig(**ids)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    (path / "tiny_config.json").write_text(__import__("json").dumps(asdict(config), indent=2))
    return path
