"""The commands that read a checkpoint check it against its manifest first: a damaged one is
refused in one line naming the file, with status 2 and no traceback."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from es_lightning.checkpoint import save_checkpoint
from tests.helpers import CLI, subprocess_env


@pytest.fixture()
def damaged(tmp_path: Path) -> Path:
    meta = tmp_path / "meta"
    meta.mkdir()
    (meta / "config.json").write_text('{"model_type": "toy"}')
    folder = save_checkpoint(
        tmp_path / "run",
        2,
        iter([("w", torch.ones(64, 64))]),
        serving_dtype=torch.float32,
        meta_dir=meta,
        strategy_name="es",
        write_state=lambda folder: None,
        trainer_state={},
    )
    master = folder / "es_state" / "master.safetensors"
    with open(master, "r+b") as f:
        f.truncate(100)
    return folder


def _refused(tmp_path: Path, *args: str) -> str:
    env = subprocess_env()
    env.pop("ES_LIGHTNING_DEBUG", None)
    proc = subprocess.run([*CLI, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("es-lightning: error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    return errors[0]


def test_evaluate_and_analyze_refuse_a_damaged_checkpoint(tmp_path, damaged):
    recorded = json.loads((damaged / "manifest.json").read_text())["files"]["es_state/master.safetensors"]
    assert recorded["size"] > 64 * 64 * 4  # the whole fp32 tensor and its header were recorded
    expected = (
        f"checkpoint {damaged} is damaged: es_state/master.safetensors is 100 bytes, the manifest "
        f"says {recorded['size']}"
    )
    line = _refused(tmp_path, "evaluate", "--task", "echo", "--model", str(damaged), "--output", "e.json")
    assert line == f"es-lightning: error: evaluate --model: {expected}"
    line = _refused(
        tmp_path,
        "analyze",
        "--base",
        "es-lightning/tiny-random",
        "--checkpoint",
        str(damaged),
        "--output",
        "a.json",
    )
    assert line == f"es-lightning: error: analyze --checkpoint: {expected}"
    assert not (tmp_path / "e.json").exists() and not (tmp_path / "a.json").exists()
