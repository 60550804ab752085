"""The three accumulators against brute-force NumPy on small hand-made tensors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from es_lightning.analysis.drift import DriftAccumulator
from es_lightning.analysis.sparsity import SparsityAccumulator
from es_lightning.analysis.topk import TopKAccumulator, top_indices
from tests.analysis.reference import reference

TAU = 2.0**-12  # exactly representable: Δ = TAU lies exactly at τ
NAMES = [
    "model.embed_tokens.weight",
    "model.layers.0.self_attn.q_proj.weight",
    "model.layers.0.self_attn.q_proj.bias",
    "model.layers.0.mlp.up_proj.weight",
    "model.layers.1.input_layernorm.weight",
    "model.norm.weight",
]
SHAPES = [(6, 4), (4, 4), (4,), (8, 4), (4,), (4,)]


def _pair(seed: int = 0) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """θ_0 and θ with exact zeros, updates exactly at ±τ, just above τ, and repeated magnitudes."""
    rng = np.random.default_rng(seed)
    base, ckpt = {}, {}
    choices = np.array([0.0, TAU, -TAU, np.nextafter(np.float32(TAU), 1), 2 * TAU, -0.015625, 0.015625])
    for name, shape in zip(NAMES, SHAPES):
        theta0 = (rng.integers(-64, 64, shape) / 64).astype(np.float32)  # coarse grid: Δ adds exactly
        delta = rng.choice(choices, size=shape).astype(np.float32)
        mask = rng.random(shape) < 0.5
        delta = np.where(mask, delta, rng.normal(0, 1e-3, shape).astype(np.float32))
        base[name], ckpt[name] = theta0, theta0 + delta
    base["model.norm.weight"][:] = 1.0
    ckpt["model.norm.weight"] = base["model.norm.weight"].copy()  # a kind that did not move
    return base, ckpt


def _feed(accumulator, base, ckpt, order=None):
    for name in order or NAMES:
        accumulator.add(name, torch.from_numpy(base[name]), torch.from_numpy(ckpt[name]))
    return accumulator.result()


def test_drift_against_numpy():
    base, ckpt = _pair()
    ref = reference(base, ckpt, [TAU], k=5)
    got = _feed(DriftAccumulator(), base, ckpt)
    assert got["rel_l2"] == pytest.approx(ref["rel_l2"], rel=1e-12)
    assert got["rel_l2_by_kind"] == pytest.approx(ref["rel_l2_by_kind"], rel=1e-12)
    assert list(got["rel_l2_by_kind"]) == ["embedding", "attention", "mlp", "norm"]  # KINDS order
    assert got["delta_l2"] / got["base_l2"] == pytest.approx(got["rel_l2"], rel=1e-12)


def test_drift_of_a_zero_start():
    acc = DriftAccumulator()
    acc.add("model.layers.0.self_attn.q_proj.bias", torch.zeros(3), torch.tensor([0.0, 3.0, 4.0]))
    acc.add("model.norm.weight", torch.zeros(2), torch.zeros(2))
    acc.add("model.embed_tokens.weight", torch.ones(2, 2), torch.ones(2, 2))
    got = acc.result()
    assert got["rel_l2_by_kind"] == {"embedding": 0.0, "attention": None, "norm": 0.0}
    assert got["rel_l2"] == 2.5 and got["delta_l2"] == 5.0  # ‖(3, 4)‖ / ‖ones(4)‖


def test_sparsity_against_brute_force_with_values_at_tau():
    base, ckpt = _pair()
    taus = [TAU / 2, TAU, 2 * TAU, 1.0]
    ref = reference(base, ckpt, taus, k=1)
    got = _feed(SparsityAccumulator(taus), base, ckpt)
    delta = np.concatenate([(ckpt[n] - base[n]).ravel() for n in NAMES])
    assert (np.abs(delta) == np.float32(TAU)).sum() > 5 and (delta == 0).sum() > 5  # the edge cases occur
    assert got["nonzero"] == ref["nonzero"] == int((delta != 0).sum())
    assert got["numel"] == delta.size
    assert got["sparsity"] == ref["sparsity"]  # exact counts, so exact ratios
    at_tau = int(((delta != 0) & (np.abs(delta) <= np.float32(TAU))).sum())
    assert got["small_updates"][f"{TAU:g}"] == at_tau
    assert got["sparsity"]["1"] == 1.0


def test_sparsity_when_nothing_changed():
    acc = SparsityAccumulator([1e-3])
    acc.add("w", torch.ones(3), torch.ones(3))
    assert acc.result() == {
        "numel": 3,
        "nonzero": 0,
        "sparsity": {"0.001": None},
        "small_updates": {"0.001": 0},
    }
    with pytest.raises(ValueError, match="> 0"):
        SparsityAccumulator([0.0])


@pytest.mark.parametrize("k", [1, 5, 17, 1000])
def test_top_k_against_argsort_with_ties(k):
    base, ckpt = _pair()
    ref = reference(base, ckpt, [TAU], k=k)
    shuffled = NAMES[::-1]  # arrival order must not matter
    got = _feed(TopKAccumulator(k), base, ckpt, order=shuffled)
    assert [(e["name"], e["index"], e["abs_delta"]) for e in got["top_k"]] == ref["top"]
    assert len(got["top_k"]) == min(k, ref["nonzero"])  # unchanged coordinates are never listed
    by_kind = {kind: ref["top_k_by_kind"].get(kind, 0) for kind in ("embedding", "attention", "mlp", "norm")}
    assert got["top_k_by_kind"] == by_kind
    first = got["top_k"][0]
    theta0, theta = base[first["name"]], ckpt[first["name"]]
    assert first["delta"] == float((theta - theta0)[tuple(first["position"])])
    assert first["layer"] == (0 if ".layers.0." in first["name"] else None)


def test_top_indices_ties_go_to_the_lower_index():
    magnitude = torch.tensor([0.0, 2.0, 1.0, 2.0, 2.0, 0.0, 3.0])
    assert top_indices(magnitude, 3).tolist() == [6, 1, 3]
    assert sorted(top_indices(magnitude, 10).tolist()) == [1, 2, 3, 4, 6]  # zeros are not updates
    assert top_indices(torch.zeros(4), 2).numel() == 0


def test_merge_equals_one_pass():
    base, ckpt = _pair(1)
    whole = [DriftAccumulator(), SparsityAccumulator([TAU]), TopKAccumulator(7)]
    halves = [[DriftAccumulator(), SparsityAccumulator([TAU]), TopKAccumulator(7)] for _ in range(2)]
    for i, name in enumerate(NAMES):
        for acc, part in zip(whole, halves[i % 2]):
            for a in (acc, part):
                a.add(name, torch.from_numpy(base[name]), torch.from_numpy(ckpt[name]))
    for acc, a, b in zip(whole, *halves):
        merged = a.merge(b).result()
        expected = acc.result()
        if "rel_l2" in expected:
            assert merged["rel_l2"] == pytest.approx(expected["rel_l2"], rel=1e-12)
            assert math.isclose(merged["base_l2"], expected["base_l2"], rel_tol=1e-12)
        else:
            assert merged == expected
    with pytest.raises(ValueError, match="top_k must be >= 1"):
        TopKAccumulator(0)
