"""analyze_pair on two tiny checkpoints on disk, both views, against NumPy; refused pairs."""

from __future__ import annotations

import pytest
import torch

from es_lightning.analysis.pair import PairAnalyzer, analyze_pair, check_pair, tensor_specs
from es_lightning.weight_files import WeightIndex, iter_weights, master_files, served_files, weight_files
from tests.analysis.reference import bf16_round, load, reference

TAUS = [1e-4, 1e-3, 5e-3]


def _assert_matches(got, ref):
    assert got["rel_l2"] == pytest.approx(ref["rel_l2"], rel=1e-10)
    assert got["rel_l2_by_kind"] == pytest.approx(ref["rel_l2_by_kind"], rel=1e-10)
    assert got["nonzero"] == ref["nonzero"] and got["numel"] == ref["numel"]
    assert got["sparsity"] == pytest.approx(ref["sparsity"], rel=1e-12)
    assert [(e["name"], e["index"], e["abs_delta"]) for e in got["top_k"]] == ref["top"]
    assert {k: v for k, v in got["top_k_by_kind"].items() if v} == ref["top_k_by_kind"]


def test_both_views_against_numpy(checkpoints):
    base_files, ckpt_files = weight_files(checkpoints["base"]), weight_files(checkpoints["es"])
    assert ckpt_files == master_files(checkpoints["es"])  # the stored view reads the fp32 master
    got = analyze_pair(base_files, iter_weights(ckpt_files), TAUS, 50, views=("stored", "bf16"))
    base, master = load(base_files), load(ckpt_files)
    _assert_matches(got["stored"], reference(base, master, TAUS, 50))
    rounded = reference(
        {n: bf16_round(v) for n, v in base.items()}, {n: bf16_round(v) for n, v in master.items()}, TAUS, 50
    )
    _assert_matches(got["bf16"], rounded)
    # the bf16 view rounds BOTH sides: it is not the served bf16 file against the fp32 base
    served = load(served_files(checkpoints["es"]))
    assert got["bf16"]["nonzero"] != reference(base, served, TAUS, 1)["nonzero"]
    assert got["stored"]["view"] == "stored" and got["bf16"]["view"] == "bf16"


def test_a_weight_index_and_a_progress_wrapper(checkpoints):
    seen = []

    def progress(stream):
        for item in stream:
            seen.append(item[0])
            yield item

    index = WeightIndex(weight_files(checkpoints["base"]))
    got = analyze_pair(index, iter_weights(weight_files(checkpoints["grpo"])), TAUS, 5, progress=progress)
    assert set(got) == {"stored"} and sorted(seen) == sorted(index.keys())


def _stream(checkpoints, edit):
    weights = dict(iter_weights(weight_files(checkpoints["es"])))
    edit(weights)
    return list(weights.items())


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (
            lambda w: w.update({"lm_head.weight": torch.zeros(1)}),
            "lm_head.weight: in the checkpoint but not in the base",
        ),
        (
            lambda w: w.pop("model.norm.weight"),
            r"1 tensors of the base model are not in the checkpoint: \['model.norm.weight'\]",
        ),
        (
            lambda w: w.update({"model.norm.weight": torch.zeros(3)}),
            r"model.norm.weight: shape \(3,\) in the checkpoint but \(128,\)",
        ),
        (
            lambda w: w["model.norm.weight"].__setitem__(0, float("nan")),
            "model.norm.weight: the update .* NaN",
        ),
    ],
)
def test_refused_streams(checkpoints, edit, match):
    with pytest.raises(ValueError, match=match):
        analyze_pair(weight_files(checkpoints["base"]), _stream(checkpoints, edit), TAUS, 5)


def test_a_name_given_twice(checkpoints):
    stream = _stream(checkpoints, lambda w: None)
    with pytest.raises(ValueError, match="given twice"):
        analyze_pair(weight_files(checkpoints["base"]), stream + stream[:1], TAUS, 5)


def test_check_pair_reads_headers_only(checkpoints):
    base = tensor_specs(weight_files(checkpoints["base"]))
    assert base["model.norm.weight"] == ((128,), "F32")
    assert tensor_specs(served_files(checkpoints["es"]))["model.norm.weight"] == ((128,), "BF16")
    check_pair(base, tensor_specs(weight_files(checkpoints["es"])), "base", "ckpt")
    extra = {**base, "lm_head.weight": ((99, 128), "F32")}
    with pytest.raises(ValueError, match=r"1 tensors of ckpt are not in base, e.g. \['lm_head.weight'\]"):
        check_pair(base, extra, "base", "ckpt")
    with pytest.raises(ValueError, match=r"1 tensors of base are not in ckpt"):
        check_pair(extra, base, "base", "ckpt")
    with pytest.raises(ValueError, match=r"model.norm.weight: shape \[64\] in ckpt but \[128\] in base"):
        check_pair(base, {**base, "model.norm.weight": ((64,), "F32")}, "base", "ckpt")


def test_pair_analyzer_refuses_an_unknown_view():
    with pytest.raises(ValueError, match="unknown view 'fp16'"):
        PairAnalyzer([1e-3], 5, "fp16")  # type: ignore[arg-type]
