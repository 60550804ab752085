"""bf16 rounding in analyze's top-k: the spacing on hand-worked values, the flag end to end."""

from __future__ import annotations

import json

import torch

from es_lightning.analysis.bf16_grid import bf16_spacing, flag_rounding, is_bf16_rounding
from es_lightning.analysis.command import run_analyze
from tests.analysis.conftest import write_checkpoint

ONE_STEP_AT_ONE = 2.0**-7


def test_spacing_is_one_unit_in_the_last_of_eight_bits():
    assert bf16_spacing(1.0) == bf16_spacing(1.99) == 2.0**-7
    assert bf16_spacing(0.999) == 2.0**-8 and bf16_spacing(-3.0) == 2.0**-6
    assert bf16_spacing(0.02) == 2.0**-13  # 0.02 = 1.28·2^-6
    # x + spacing is the next bf16 value up; a quarter of it rounds back to x
    for x in (1.0, 0.75, 0.02, -5.5, 1e-3):
        value = float(torch.tensor(x).to(torch.bfloat16))
        spacing = bf16_spacing(value)
        for move, expected in ((spacing, value + spacing), (spacing / 4, value)):
            assert float(torch.tensor(value + move).to(torch.bfloat16)) == expected


def test_one_step_is_flagged_from_either_side_of_a_power_of_two():
    assert is_bf16_rounding(1.0, ONE_STEP_AT_ONE) and is_bf16_rounding(1.0, -(2.0**-8))
    assert is_bf16_rounding(0.99609375, 2.0**-8)  # up to 1.0: the step below 1.0
    assert not is_bf16_rounding(1.0, 2 * ONE_STEP_AT_ONE)  # two steps
    assert not is_bf16_rounding(1.0, 0.005) and not is_bf16_rounding(1.0, 0.0)  # fp32 sizes, none
    entries = [{"theta0": 1.0, "delta": ONE_STEP_AT_ONE}, {"theta0": 0.02, "delta": 2e-3}]
    assert flag_rounding(entries) == 1
    assert [e["bf16_rounding"] for e in entries] == [True, False]
    assert entries[0]["bf16_spacing"] == ONE_STEP_AT_ONE


def _norms_up(name: str, theta0: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Norm weights (1.0) up by 0.005, below one bf16 step; everything else by ~1e-5 noise."""
    if "norm" in name:
        return theta0 + 0.005
    return theta0 + 1e-5 * torch.randn(theta0.shape, generator=generator)


def test_analyze_flags_norm_weights_that_moved_one_bf16_step(tiny_model_path, tmp_path, capsys):
    """The fp32 master moved the norm weights by 0.005; served in bf16 they moved 2^-7 and top
    the bf16 view's list: flagged there (JSON and text), never in the stored view."""
    ckpt = write_checkpoint(tiny_model_path, tmp_path / "ckpt", _norms_up, seed=0)
    out = tmp_path / "a.json"
    result = run_analyze(str(tiny_model_path), str(ckpt), out, top_k=5, progress=False)
    bf16 = result["bf16"]
    assert bf16["top_k_by_kind"]["norm"] == 5
    assert bf16["top_k_bf16_rounding"] == 5
    assert all(e["bf16_rounding"] and e["abs_delta"] == ONE_STEP_AT_ONE for e in bf16["top_k"])
    assert result["top_k_by_kind"]["norm"] == 5 and result["top_k_bf16_rounding"] == 0
    assert not any(e["bf16_rounding"] for e in result["top_k"])
    assert json.loads(out.read_text())["bf16"]["top_k"][0]["bf16_rounding"] is True
    printed = capsys.readouterr().out
    line = next(line for line in printed.splitlines() if line.startswith("bf16 rounding"))
    assert line.startswith("bf16 rounding (checkpoint bf16): 5 of the top-5 updates") and "norm 5" in line
    assert "bf16 rounding (checkpoint stored)" not in printed
