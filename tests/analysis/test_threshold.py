"""Thresholded export: every coordinate is bit for bit the checkpoint's value or the base's."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from es_lightning.analysis.pair import tensor_specs
from es_lightning.analysis.threshold import export_thresholded, served_dtype
from es_lightning.weight_files import WeightIndex, served_files, weight_files
from tests.analysis.reference import bf16_round, load

TAU = 1e-3


@pytest.mark.parametrize(("source", "view"), [("es", "stored"), ("es", "bf16"), ("plain", "stored")])
def test_export_is_bit_exact(checkpoints, tmp_path, source, view):
    base, ckpt = checkpoints["base"], checkpoints[source]
    serving = served_dtype(tensor_specs(served_files(ckpt)))
    assert serving == (torch.bfloat16 if source == "es" else torch.float32)
    folder = tmp_path / "thresholded-0.001"
    folder.mkdir()
    (folder / "stale.txt").write_text("an earlier export")  # replaced, not merged into
    record = export_thresholded(
        WeightIndex(weight_files(base)), weight_files(ckpt), ckpt, TAU, folder, serving, view, {"base": "b0"}
    )
    exported = load_file(str(folder / "model.safetensors"))
    base_t, served_t = load_file(str(base / "model.safetensors")), load_file(served_files(ckpt)[0])
    base_np, stored_np = load(weight_files(base)), load(weight_files(ckpt))
    kept = nonzero = 0
    assert set(exported) == set(base_t)
    for name, value in exported.items():
        if view == "bf16":
            delta = bf16_round(stored_np[name]) - bf16_round(base_np[name])
        else:
            delta = stored_np[name] - base_np[name]
        keep = torch.from_numpy(np.abs(delta) > np.float32(TAU))
        assert value.dtype == serving
        assert torch.equal(value[keep], served_t[name][keep]), name  # the checkpoint as it serves
        assert torch.equal(value[~keep], base_t[name].to(serving)[~keep]), name  # the base, cast alike
        kept, nonzero = kept + int(keep.sum()), nonzero + int((delta != 0).sum())
    assert 0 < kept < nonzero
    assert record == {
        "tau": TAU,
        "folder": str(folder),
        "view": view,
        "numel": sum(v.numel() for v in exported.values()),
        "nonzero": nonzero,
        "kept": kept,
        "reverted": nonzero - kept,
        "s_tau": (nonzero - kept) / nonzero,
    }
    files = {p.name for p in folder.iterdir()}
    assert {"config.json", "tokenizer.json", "model.safetensors", "thresholded.json"} <= files
    assert not {"stale.txt", "es_state", "trainer_state.json"} & files
    written = json.loads((folder / "thresholded.json").read_text())
    assert written["base"] == "b0" and written["kept"] == kept
    assert not list(tmp_path.glob(".tmp-*"))


def test_export_loads_in_transformers(checkpoints, tmp_path):
    from transformers import AutoModelForCausalLM

    folder = tmp_path / "thresholded"
    index = WeightIndex(weight_files(checkpoints["base"]))
    export_thresholded(index, weight_files(checkpoints["es"]), checkpoints["es"], 1.0, folder, torch.bfloat16)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    base = load_file(str(checkpoints["base"] / "model.safetensors"))
    for name, param in model.named_parameters():  # τ = 1 reverts every update: the base in bf16
        assert torch.equal(param.detach(), base[name].to(torch.bfloat16).float()), name


def test_refuses_tau_zero(checkpoints, tmp_path):
    index = WeightIndex(weight_files(checkpoints["base"]))
    with pytest.raises(ValueError, match="τ must be > 0"):
        export_thresholded(
            index, weight_files(checkpoints["es"]), checkpoints["es"], 0.0, tmp_path, torch.bfloat16
        )


def test_kept_values_are_copied_not_recomputed(tmp_path):
    """θ_0 + Δθ in fp32 would not give θ back here (3e-8 next to 1.0); the export must."""
    from safetensors.torch import save_file

    base, ckpt = tmp_path / "base", tmp_path / "ckpt"
    for folder, values in ((base, [1.0, 1.0, -1.0, 0.5]), (ckpt, [3e-8, 1.0 + 2**-23, 1e-30, 0.5])):
        folder.mkdir()
        (folder / "config.json").write_text("{}")
        save_file({"w": torch.tensor(values, dtype=torch.float32)}, str(folder / "model.safetensors"))
    theta = load_file(str(ckpt / "model.safetensors"))["w"]
    assert not torch.equal(torch.tensor(1.0) + (theta - 1.0), theta)  # the trap is armed
    record = export_thresholded(
        WeightIndex(weight_files(base)), weight_files(ckpt), ckpt, 1e-9, tmp_path / "out", torch.float32
    )
    assert torch.equal(load_file(str(tmp_path / "out" / "model.safetensors"))["w"], theta)
    assert (record["nonzero"], record["kept"], record["s_tau"]) == (3, 3, 0.0)
