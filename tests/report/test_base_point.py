"""The sparsity curve's base point scored without the run's checkpoint: the analysis's own point,
sample for sample (a real analysis and a real `es-lightning evaluate` through the transformers
rollout on the packaged tiny model)."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from es_lightning.analysis.command import run_analyze
from es_lightning.evaluation.runner import EvalConfig
from es_lightning.models.registry import resolve_model
from es_lightning.report import DriftSettings
from es_lightning.report.base_point import evaluate_args
from es_lightning.report.command import build_plan
from es_lightning.report.weight_drift import analysis_file, run_analyses
from es_lightning.rollout.hf import HFRollout
from tests.analysis.conftest import sparse_noise, write_checkpoint

EVALUATION = EvalConfig(num_samples=4, max_tokens=32, limit=6, ks=[1, 4], seed=7)
EVALUATE_ARGS = [
    "--evaluation.num_samples 4 --evaluation.max_tokens 32 --evaluation.limit 6",
    "--evaluation.ks [1,4] --evaluation.seed 7",
    "--rollout es_lightning.rollout.hf.HFRollout --device cpu",
    "--taus 1e-3",  # analyze's alone: left out
]


def _plan(tmp_path, extra_args=EVALUATE_ARGS):
    drift = DriftSettings(
        methods=["es"], export_thresholded=[1e-3], evaluate="arithmetic", extra_args=list(extra_args)
    )
    return build_plan({"es": "es.yaml"}, tmp_path, drift=drift)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture()
def analysed(tmp_path):
    """An ES-like run analysed with its sparsity curve and base point, then its checkpoint deleted
    and the base point taken out of the analysis (as one written before the point existed)."""

    def make(serving_dtype: torch.dtype = torch.float32):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        base = resolve_model("es-lightning/tiny-arithmetic")
        run_dir = tmp_path / "runs" / "es" / "seed0"
        ckpt = write_checkpoint(
            base, run_dir / "checkpoints" / "step-000010", sparse_noise(3e-3), 0, serving_dtype
        )
        out = analysis_file(_plan(tmp_path), "es", 0)
        try:
            run_analyze("es-lightning/tiny-arithmetic", str(ckpt), out, taus="1e-3", top_k=5,
                        export_thresholded="1e-3", evaluate="arithmetic", evaluation=EVALUATION,
                        rollout=HFRollout(), device="cpu", progress=False)  # fmt: skip
        finally:
            torch.set_num_threads(threads)
        analysis = json.loads(out.read_text())
        own = analysis.pop("sparsity_curve_base")
        samples = out.with_name("seed0_thresholded") / "completions" / "completions-base.jsonl"
        own_samples = _lines(samples)
        samples.unlink()
        out.write_text(json.dumps(analysis))
        shutil.rmtree(run_dir / "checkpoints")
        return run_dir, out, own, own_samples, samples

    return make


@pytest.mark.integration
def test_the_base_point_scored_alone_is_the_analysis_own(tmp_path, analysed):
    run_dir, out, own, own_samples, samples = analysed()
    plan = _plan(tmp_path)
    assert run_analyses(plan, {"es": {0: run_dir}}, launch=False)[0]["status"] == "missing"
    (record,) = run_analyses(plan, {"es": {0: run_dir}}, launch=True)
    assert record["status"] == "finished" and "base point only" in record["note"]
    point = json.loads(out.read_text())["sparsity_curve_base"]
    assert point["scored_by"].startswith("es-lightning evaluate --model es-lightning/tiny-arithmetic")
    assert {k: v for k, v in point.items() if k not in ("folder", "scored_by")} == {
        k: v for k, v in own.items() if k != "folder"
    }
    assert _lines(samples) == own_samples  # the same samples as the analysis's own engine drew
    scored = tmp_path / "analysis" / "base_point" / "es-lightning--tiny-arithmetic__arithmetic.json"
    assert scored.is_file()
    # now complete: reused, and the base is not scored again
    scored.unlink()
    assert run_analyses(plan, {"es": {0: run_dir}}, launch=True)[0]["status"] == "reused"
    assert not scored.exists()


def test_a_cast_base_needs_the_checkpoint(tmp_path, analysed):
    """Exports served in bf16 from an fp32 base: analyze scored the base cast to bf16, which a
    plain evaluation of the base would not repeat; the record says so and nothing runs."""
    run_dir, out, *_ = analysed(torch.bfloat16)
    (record,) = run_analyses(_plan(tmp_path), {"es": {0: run_dir}}, launch=True)
    assert record["status"] == "failed"
    assert "served as bfloat16, the base is stored as float32" in record["error"]
    assert "sparsity_curve_base" not in json.loads(out.read_text())
    assert not (tmp_path / "analysis" / "base_point").exists()


def test_evaluate_args_pass_what_evaluate_takes_alike():
    assert evaluate_args(EVALUATE_ARGS) == [
        "--evaluation.num_samples", "4", "--evaluation.max_tokens", "32", "--evaluation.limit", "6",
        "--evaluation.ks", "[1,4]", "--evaluation.seed", "7",
        "--rollout", "es_lightning.rollout.hf.HFRollout", "--device", "cpu",
    ]  # fmt: skip
    assert evaluate_args(["--dtype=float32", "--top_k 5"]) == ["--dtype=float32"]
    assert evaluate_args(["--compare runs/grpo"]) == (
        "drift.extra_args has --compare, which es-lightning evaluate does not take alike"
    )
