"""The commands that read a checkpoint check it against its manifest first: a damaged one is
refused in one line naming the file, with status 2 and no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from es_lightning.checkpoint import save_checkpoint
from tests.helpers import run_main


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


def _refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``es-lightning ARGS`` in this process; asserts a one-line refusal and returns it."""
    proc = run_main(capsys, *args)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("es-lightning: error: ")]
    assert len(errors) == 1, proc.stderr[-3000:]
    return errors[0]


def test_evaluate_and_analyze_refuse_a_damaged_checkpoint(tmp_path, damaged, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ES_LIGHTNING_DEBUG", raising=False)
    recorded = json.loads((damaged / "manifest.json").read_text())["files"]["es_state/master.safetensors"]
    assert recorded["size"] > 64 * 64 * 4  # the whole fp32 tensor and its header were recorded
    expected = (
        f"checkpoint {damaged} is damaged: es_state/master.safetensors is 100 bytes, the manifest "
        f"says {recorded['size']}"
    )
    line = _refused(capsys, "evaluate", "--task", "echo", "--model", str(damaged), "--output", "e.json")
    assert line == f"es-lightning: error: evaluate --model: {expected}"
    line = _refused(
        capsys,
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
