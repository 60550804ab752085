"""The CPU demo recipes, reduced to a couple of updates, end to end as a user runs them."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from es_lightning.training.loggers import read_metrics
from tests.helpers import subprocess_env

REPO = Path(__file__).resolve().parents[2]
CLI = [
    sys.executable,
    "-c",
    "import sys, warnings; warnings.filterwarnings('error', module='es_lightning');"
    " from es_lightning.cli import main; sys.exit(main())",
]
"""``es-lightning`` with every warning raised in our modules (``es_lightning.*``, the built-in
callbacks included) turned into an error."""
INSTRUMENTS_EVERY_2 = json.dumps(
    [
        {
            "class_path": "es_lightning.callbacks.TokenEntropy",
            "init_args": {"every_n_updates": 2, "num_prompts": 8},
        },
        {"class_path": "es_lightning.callbacks.ParameterDrift", "init_args": {"every_n_updates": 2}},
        {
            "class_path": "es_lightning.callbacks.PopulationDiversity",
            "init_args": {"every_n_updates": 2, "num_prompts": 8},
        },
    ]
)
"""The demo's instruments (``callbacks: demo_cpu``), each at update 2 on fewer probe prompts."""
PYTHON_WARNING = re.compile(r"\w+Warning: ")
"""A line Python's ``warnings`` prints (``path:line: UserWarning: message``)."""
TABLE_LINE = re.compile(r"^(task +metric +before( +\S+)+|\S+ +\S+( +(-|[+-]?[\d.]+%?))+)$")
"""A line of the results table: its header (``task metric before after change``, or a pipeline's
``before  after grpo  after es``) or a metric's row (percentages, plain numbers, ``-`` for none)."""
DEMOS = ["demo_cpu.yaml", "demo_cpu_grpo.yaml", "demo_cpu_es_then_grpo.yaml", "demo_cpu_grpo_then_es.yaml"]
KS = [1, 2, 4, 8, 16]
# a couple of updates on a smaller batch and test set; the recipes' model, task and sampling
REDUCED = [
    "--trainer.max_steps", "2",
    "--trainer.batch_size", "32",
    "--trainer.progress_bar", "false",
    "--module.task.init_args.n_test", "24",
]  # fmt: skip


def _parse(recipe: str):
    from es_lightning.cli import build_parser

    parser = build_parser()
    return parser.parse_args(["fit", "--config", str(REPO / "recipes" / recipe)]).fit


def test_demos_share_model_data_evaluation_and_budget():
    configs = {name: _parse(name) for name in DEMOS}
    first = configs["demo_cpu.yaml"]
    module = first.module.init_args
    assert module.model == "es-lightning/tiny-arithmetic" and module.task.init_args.seed == 0
    assert first.rollout.class_path == "es_lightning.rollout.hf.HFRollout"  # the faster backend here
    assert list(first.evaluation.ks) == KS and first.evaluation.greedy
    for name, cfg in configs.items():
        mine = cfg.module.init_args
        assert (mine.model, mine.task, mine.dtype) == (module.model, module.task, module.dtype), name
        assert cfg.evaluation == first.evaluation, name
        assert cfg.trainer.max_steps == first.trainer.max_steps, name  # the same total updates
        assert cfg.trainer.batch_size == first.trainer.batch_size, name
        assert cfg.trainer.seed == first.trainer.seed and cfg.rollout == first.rollout, name
        assert (cfg.strategy is None) == name.endswith(("then_grpo.yaml", "then_es.yaml")), name


def _run(tmp_path: Path, recipe: str, *extra: str) -> tuple[Path, str]:
    """The recipe, reduced, as ``es-lightning fit`` runs it (our warnings raised as errors): its
    console has no Python warning line and its stdout holds the results table alone."""
    out = tmp_path / Path(recipe).stem
    cmd = [
        *CLI,
        "fit",
        "--config",
        str(REPO / "recipes" / recipe),
        "--trainer.output_dir",
        str(out),
        *REDUCED,
        *extra,
    ]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    warned = [line for line in (proc.stdout + proc.stderr).splitlines() if PYTHON_WARNING.search(line)]
    assert warned == [], warned
    assert proc.stdout.strip() and all(TABLE_LINE.match(line) for line in proc.stdout.strip().splitlines()), (
        proc.stdout
    )
    return out, proc.stdout


def _evals(run_dir: Path) -> list[dict]:
    return [m for m in read_metrics(run_dir / "metrics.jsonl") if "eval/arithmetic/pass@1" in m]


@pytest.mark.integration
def test_reduced_es_demo(tmp_path):
    out, stdout = _run(tmp_path, "demo_cpu.yaml", "--callbacks", INSTRUMENTS_EVERY_2)
    train = [m for m in read_metrics(out / "metrics.jsonl") if "train/reward_mean" in m]
    assert [m["step"] for m in train] == [1, 2]
    # a warm-started model: members earn real, varying rewards (not a random model's zeros)
    assert all(m["train/reward_max"] > 0.2 and m["train/reward_std"] > 0 for m in train)
    # an update is skipped exactly when all N member rewards tie (members share a sampling seed
    # and differ by σ = 1e-3; on 32 prompts that happens), and at least one update moves θ
    for m in train:
        assert (m["es/skipped"] == 1) == (m["es/member_reward_std"] == 0), m
        assert (m["es/update_norm"] > 0) == (m["es/skipped"] == 0), m
    assert any(m["es/skipped"] == 0 for m in train)
    before, after = _evals(out)
    for m in (before, after):
        assert {f"eval/arithmetic/pass@{k}" for k in KS} | {"eval/arithmetic/greedy"} <= set(m)
        assert 0.05 < m["eval/arithmetic/pass@1"] <= m["eval/arithmetic/pass@16"]
    assert before["step"] == 0 and after["step"] == 2
    probed = [m for m in read_metrics(out / "metrics.jsonl") if "diversity/js" in m]  # the instruments ran
    assert [m["step"] for m in probed] == [2]
    if train[1]["es/skipped"] == 0:  # the transfer margin (its sqrt once warned) of an applied update
        assert math.isfinite(probed[0]["diversity/transfer_margin"])
    # the before/after table, the TensorBoard files and the HF checkpoint
    assert "before" in stdout and "after" in stdout and "pass@16" in stdout and "greedy" in stdout
    assert list((out / "tensorboard").glob("events.out.tfevents.*"))
    assert (out / "checkpoints" / "step-000002" / "model.safetensors").is_file()
    summary = json.loads((out / "eval" / "after.json").read_text())["arithmetic"]
    assert summary["pass@1"] == pytest.approx(after["eval/arithmetic/pass@1"])


@pytest.mark.integration
def test_reduced_grpo_then_es_demo(tmp_path):
    out, stdout = _run(tmp_path, "demo_cpu_grpo_then_es.yaml")
    plan = json.loads((out / "pipeline.json").read_text())
    assert plan["pipeline"] == "grpo_then_es" and [s["updates"] for s in plan["stages"]] == [1, 1]
    grpo = [m for m in read_metrics(out / "stage1_grpo" / "metrics.jsonl") if "train/reward_mean" in m]
    es = [m for m in read_metrics(out / "stage2_es" / "metrics.jsonl") if "train/reward_mean" in m]
    assert len(grpo) == len(es) == 1 and grpo[0]["train/reward_max"] == 1.0
    assert "train/entropy" in grpo[0] and es[0]["es/update_norm"] > 0
    assert len(_evals(out / "stage1_grpo")) == 2 and len(_evals(out / "stage2_es")) == 1
    # the pipeline's table: the start next to each stage's result
    header = next(line for line in stdout.splitlines() if "after grpo" in line)
    assert "before" in header and "after es" in header
