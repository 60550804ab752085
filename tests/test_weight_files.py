import json
from pathlib import Path

import pytest
import torch

from es_lightning.weight_files import (
    WeightIndex,
    iter_weights,
    load_weights,
    master_files,
    served_files,
    weight_files,
    write_weights,
)


def test_large_weights_are_sharded_with_an_index(tmp_path):
    weights = {f"layer{i}.weight": torch.randn(16, 16) for i in range(5)}  # 1 KiB each in fp32
    write_weights(tmp_path, weights.items(), torch.bfloat16, tmp_path / "grpo_state", shard_bytes=2048)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) == 2  # bf16: 512 B each, 4 per 2 KiB shard
    assert sorted(Path(f).name for f in served_files(tmp_path)) == [
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
    ]
    assert len(master_files(tmp_path)) == 3  # fp32: 1 KiB each, 2 per shard
    assert weight_files(tmp_path) == master_files(tmp_path)
    streamed = dict(iter_weights(master_files(tmp_path)))
    assert set(streamed) == set(weights) and all(torch.equal(streamed[k], weights[k]) for k in weights)
    assert not list(tmp_path.rglob(".*part*"))  # no temporary parts left


def test_sharded_checkpoint_loads_in_transformers(tiny_model_path, tmp_path):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    weights = {n: p.detach() for n, p in model.named_parameters()}
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (tmp_path / f).write_bytes((tiny_model_path / f).read_bytes())
    write_weights(tmp_path, weights.items(), torch.float32, None, shard_bytes=64 * 1024)
    assert (tmp_path / "model.safetensors.index.json").is_file()
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path)
    assert all(torch.equal(p, weights[n]) for n, p in loaded.named_parameters())


def test_weight_index_reads_one_tensor_by_name_across_shards(tmp_path):
    weights = {f"layer{i}.weight": torch.randn(16, 16) for i in range(5)}
    write_weights(tmp_path, weights.items(), torch.float32, None, shard_bytes=2048)
    index = WeightIndex(served_files(tmp_path))
    assert sorted(index.keys()) == sorted(weights) and "layer3.weight" in index and "nope" not in index
    assert torch.equal(index.get("layer3.weight"), weights["layer3.weight"])
    assert index.get("layer0.weight", dtype=torch.bfloat16).dtype == torch.bfloat16
    with pytest.raises(KeyError, match="nope"):
        index.get("nope")


def test_load_weights_keeps_only_the_names_asked_for_and_refuses_an_empty_read(tmp_path):
    weights = {"a.weight": torch.randn(3, 2), "b.bias": torch.randn(4)}
    write_weights(tmp_path, weights.items(), torch.bfloat16, tmp_path / "es_state")
    both = load_weights(weight_files(tmp_path))
    assert all(torch.equal(both[k], weights[k]) for k in weights)  # fp32 master, not the bf16 file
    assert list(load_weights(served_files(tmp_path), names={"b.bias"})) == ["b.bias"]
    with pytest.raises(ValueError, match="no tensors found"):
        load_weights(served_files(tmp_path), names={"nope"})


def test_a_folder_without_weights_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"no \\*.safetensors weights in {tmp_path}"):
        served_files(tmp_path)
