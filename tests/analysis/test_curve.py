"""The sparsity curve: --evaluate arithmetic on the packaged tiny model through HFRollout."""

from __future__ import annotations

import json

import pytest
import torch

from es_lightning.analysis.command import run_analyze
from es_lightning.analysis.curve import plot_sparsity_curve
from es_lightning.evaluation.runner import EvalConfig, evaluate_rows
from es_lightning.models.registry import resolve_model
from es_lightning.module import ReasoningModule
from es_lightning.rollout.hf import HFRollout
from es_lightning.tasks import get_task
from tests.analysis.conftest import sparse_noise, write_checkpoint

EVALUATION = EvalConfig(num_samples=4, max_tokens=32, limit=6, ks=[1, 4], seed=7)


@pytest.fixture(autouse=True)
def _one_thread():
    """One intra-op thread: the tiny model gains nothing from more, and shared cores stall spinning ones."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _completions(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_sparsity_curve_with_hf_rollout(tmp_path):
    base = resolve_model("es-lightning/tiny-arithmetic")
    ckpt = write_checkpoint(base, tmp_path / "es", sparse_noise(3e-3), seed=0)
    out = tmp_path / "analysis" / "es.json"
    result = run_analyze(
        base,
        str(ckpt),
        out,
        taus="1e-3",
        top_k=5,
        export_thresholded="1e-3,1",
        evaluate="arithmetic",
        evaluation=EVALUATION,
        rollout=HFRollout(),
        device="cpu",
        progress=False,
    )
    curve = result["sparsity_curve"]
    assert [p["tau"] for p in curve] == [0.0, 1e-3, 1.0]
    assert [p["s_tau"] for p in curve] == [0.0, pytest.approx(result["sparsity"]["0.001"]), 1.0]
    assert all(0.0 <= p["pass@1"] <= 1.0 and p["n_prompts"] == 6 for p in curve)
    assert json.loads(out.read_text())["sparsity_curve"] == curve
    png = out.with_name("es_sparsity_curve.png")
    assert result["sparsity_curve_png"] == str(png) and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # each point is its own model: the engine's τ = 0 and τ = 1 samples match fresh engines'
    completions = tmp_path / "analysis" / "es_thresholded" / "completions"
    task = get_task("arithmetic")
    rows = task.load("test")
    for tau, folder in ((0, ckpt), (1, tmp_path / "analysis" / "es_thresholded" / "thresholded-1")):
        fresh = HFRollout()
        fresh.setup(str(folder), torch.device("cpu"), torch.float32)
        again = evaluate_rows(ReasoningModule(model=str(folder), task=task), fresh, rows, EVALUATION)
        assert [
            r["completions"] for r in _completions(completions / f"completions-tau-{tau}.jsonl")
        ] == again.completions
        assert again.summary["pass@1"] == curve[0 if tau == 0 else 2]["pass@1"]
    # reverting every update gives the base model back: its samples differ from the checkpoint's
    assert _completions(completions / "completions-tau-0.jsonl") != _completions(
        completions / "completions-tau-1.jsonl"
    )
    # the base itself, scored last on the same engine, is that point: the same samples, s_τ = 1
    base_point = result["sparsity_curve_base"]
    assert base_point["base"] is True and base_point["tau"] is None and base_point["s_tau"] == 1.0
    assert base_point["reverted"] == base_point["nonzero"] == result["nonzero"]
    assert _completions(completions / "completions-base.jsonl") == _completions(
        completions / "completions-tau-1.jsonl"
    )
    assert {k: v for k, v in base_point.items() if k.startswith(("pass@", "maj@", "greedy"))} == {
        k: v for k, v in curve[2].items() if k.startswith(("pass@", "maj@", "greedy"))
    }
    assert json.loads(out.read_text())["sparsity_curve_base"] == base_point


def test_keep_exports_false_deletes_each_export(tmp_path):
    base = resolve_model("es-lightning/tiny-arithmetic")
    ckpt = write_checkpoint(base, tmp_path / "es", sparse_noise(1e-3), seed=1)
    small = EvalConfig(num_samples=1, max_tokens=4, limit=1, greedy=False)
    result = run_analyze(
        base,
        str(ckpt),
        tmp_path / "o.json",
        export_thresholded="1e-3",
        evaluate="arithmetic",
        evaluation=small,
        rollout=HFRollout(),
        device="cpu",
        keep_exports=False,
        progress=False,
        export_dir=tmp_path / "exports",
    )
    assert len(result["sparsity_curve"]) == 2 and result["sparsity_curve_base"]["base"]
    assert not (tmp_path / "exports" / "thresholded-0.001").exists()
    assert (tmp_path / "exports" / "completions" / "completions-tau-0.001.jsonl").is_file()


def test_plot_refuses_an_empty_curve(tmp_path):
    with pytest.raises(ValueError, match="no point"):
        plot_sparsity_curve([], tmp_path / "x.png")
