"""Build what the measures read, once, in its own process (it does torch work): the bench model and
``--adapters N`` random rank-8 LoRA adapters on all its linear layers (PEFT's format).

    python -m benchmarks.measures.prepare --adapters 32 --out prepared.json
"""

from __future__ import annotations

import argparse

from benchmarks.measures.common import BenchModel, build_bench_model, cache_dir, parameter_count, write_json

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def build_adapters(model_path, n: int, rank: int = 8, scale: float = 1e-2):
    """``n`` adapters whose B is random too (PEFT starts B at zero: no perturbation at all)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    folder = cache_dir() / f"lora-r{rank}-{model_path.name}"
    missing = [i for i in range(n) if not (folder / f"adapter_{i}" / "adapter_config.json").is_file()]
    if not missing:
        return folder
    base = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    model = get_peft_model(
        base, LoraConfig(r=rank, lora_alpha=rank, target_modules=TARGETS, lora_dropout=0.0)
    )
    for i in missing:
        gen = torch.Generator().manual_seed(1000 + i)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_" in name:
                    p.copy_(torch.randn(p.shape, generator=gen) * scale)
        model.save_pretrained(folder / f"adapter_{i}")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--adapters", type=int, default=0)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    path = build_bench_model(BenchModel())
    out = {"bench_model": str(path), "bench_parameters": parameter_count(path)}
    if args.adapters:
        out["adapters"] = str(build_adapters(path, args.adapters))
    write_json(args.out, out)


if __name__ == "__main__":
    main()
