"""Real low-rank ES runs through the CLI: exact resume, and the demo recipe's low-rank twin."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from es_lightning.training.loggers import read_metrics
from tests.helpers import REPO, TINY_ES_RECIPE, assert_bit_identical, fit

LOWRANK = ("--strategy.init_args.perturbation", "lowrank", "--strategy.init_args.rank", "2")
SIGMA = ("--strategy.init_args.sigma", "0.2")  # the random model's members must differ in reward


def _master(out: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(out / "checkpoints" / f"step-{step:06d}" / "es_state" / "master.safetensors")


def _straight_and_resumed(tmp_path: Path, *args: str) -> tuple[Path, Path]:
    """4 low-rank updates straight, and 2 then 2 more resumed; the two run folders."""
    straight = fit(tmp_path, "straight", *args, "--trainer.max_steps", "4", recipe=TINY_ES_RECIPE)
    fit(tmp_path, "resumed", *args, "--trainer.max_steps", "2", recipe=TINY_ES_RECIPE)
    resume = ("--trainer.max_steps", "4", "--trainer.resume", "true")
    return straight, fit(tmp_path, "resumed", *args, *resume, recipe=TINY_ES_RECIPE)


def _moved(out: Path) -> set[str]:
    """The tensors whose values after 4 updates differ from the starting model's."""
    from es_lightning.models.registry import resolve_model
    from es_lightning.weight_files import load_weights, weight_files

    start = load_weights(weight_files(resolve_model("es-lightning/tiny-random")))
    end = _master(out, 4)
    moved = {n for n, t in end.items() if not torch.equal(t, start[n])}
    assert moved and all(end[n].ndim == 2 for n in moved), "only matrices move"
    return moved


@pytest.mark.integration
def test_lowrank_resume_is_bit_exact(tmp_path):
    straight, resumed = _straight_and_resumed(tmp_path, *LOWRANK, *SIGMA)
    assert_bit_identical(_master(straight, 4), _master(resumed, 4))
    metrics = [m for m in read_metrics(straight / "metrics.jsonl") if "es/skipped" in m]
    assert any(m["es/skipped"] == 0.0 for m in metrics), "the run should have made at least one update"
    assert "model.embed_tokens.weight" in _moved(straight)  # lowrank_targets: matrices (the default)


@pytest.mark.integration
def test_demo_recipe_runs_two_lowrank_updates(tmp_path):
    recipe = (REPO / "recipes" / "demo_cpu.yaml").read_text()
    out = fit(
        tmp_path,
        "demo",
        *LOWRANK[:2],
        "--strategy.init_args.rank",
        "4",
        "--trainer.max_steps",
        "2",
        "--trainer.batch_size",
        "16",
        "--evaluation.limit",
        "8",
        "--evaluation.num_samples",
        "2",
        "--evaluation.ks",
        "[1, 2]",
        recipe=recipe,
    )
    updates = [m for m in read_metrics(out / "metrics.jsonl") if "es/update_norm" in m]
    assert len(updates) == 2 and all(m["time/generate"] > 0 for m in updates)


def test_lowrank_targets_vllm_cannot_serve_are_refused_before_any_engine_starts(tmp_path, monkeypatch, capfd):
    """vLLM serves LoRA on linear layers only: ``lowrank_targets: matrices`` (the embedding moves)
    is refused in one line before the engine (and its ~17 s start) is paid for. In this process;
    ``capfd`` would also hold what an engine's own processes print."""
    from tests.helpers import run_main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.yaml").write_text(TINY_ES_RECIPE)
    cmd = ["fit", "--config", "run.yaml", "--trainer.output_dir", str(tmp_path / "run")]
    cmd += ["--strategy.init_args.perturbation", "lowrank", "--rollout", "vllm"]
    proc = run_main(capfd, *cmd)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == (
        "es-lightning: error: ESStrategy: VLLMRollout serves low-rank members with lowrank_targets: "
        "linear, not matrices (vLLM serves LoRA on linear layers only, not on the embedding or the "
        "output head). Set --strategy.init_args.lowrank_targets linear, or use --rollout "
        "es_lightning.rollout.hf.HFRollout"
    )
    assert "Traceback" not in proc.stderr
    before = "\n".join(proc.stderr.strip().splitlines()[:-1])
    assert "EngineCore" not in before and "vLLM" not in before  # no engine was started
    assert not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.vllm
@pytest.mark.integration
def test_lowrank_on_vllm_resumes_bit_exactly_and_moves_only_linear_layers(tmp_path):
    """The vLLM rollout's LoRA population through the CLI: 4 updates straight equal 2 + 2 resumed,
    bit for bit, and the embedding (``lowrank_targets: linear``) and the 1-D tensors stay put."""
    vllm = ("--rollout", "vllm", "--strategy.init_args.lowrank_targets", "linear")
    straight, resumed = _straight_and_resumed(tmp_path, *LOWRANK, *SIGMA, *vllm)
    assert_bit_identical(_master(straight, 4), _master(resumed, 4))
    moved = _moved(straight)
    assert "model.embed_tokens.weight" not in moved and any("q_proj" in n for n in moved)
    updates = [m for m in read_metrics(straight / "metrics.jsonl") if "es/update_norm" in m]
    assert len(updates) == 4 and all(m["time/generate"] > 0 for m in updates)


@pytest.mark.vllm
@pytest.mark.integration
def test_lowrank_on_vllm_splits_the_population_over_two_ranks_with_the_same_update(tmp_path):
    """Two ranks' engines each serve their members as adapters: the members' rewards and the
    centre after two updates are one rank's, bit for bit."""
    args = (*LOWRANK, *SIGMA, "--rollout", "vllm", "--strategy.init_args.lowrank_targets", "linear")
    one = fit(
        tmp_path, "one", *args, "--trainer.max_steps", "2", "--trainer.devices", "1", recipe=TINY_ES_RECIPE
    )
    two = fit(
        tmp_path, "two", *args, "--trainer.max_steps", "2", "--trainer.devices", "2", recipe=TINY_ES_RECIPE
    )
    assert_bit_identical(_master(one, 2), _master(two, 2))
    m1, m2 = read_metrics(one / "metrics.jsonl"), read_metrics(two / "metrics.jsonl")
    assert [m["train/reward_mean"] for m in m1] == [m["train/reward_mean"] for m in m2]
    assert any(m.get("es/skipped") == 0.0 for m in m1), "the run should have made at least one update"
