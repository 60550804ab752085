"""ES with ``noise: table`` through the CLI: exact resume, one rank = two ranks, and the settings
refused in one line (in this process: nothing is trained); ``tests/training/test_fit_es.py`` has
the same checks for ``noise: generator``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from es_lightning.training.loggers import read_metrics
from tests.helpers import TINY_ES_RECIPE, assert_bit_identical, fit, run_main

TABLE = ("--strategy.init_args.noise", "table", "--strategy.init_args.noise_table_size", "65536")
"""Twice the tiny model's largest tensor: many slices wrap past the table's end."""


def _master(out: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(out / "checkpoints" / f"step-{step:06d}" / "es_state" / "master.safetensors")


def _updated(out: Path) -> bool:
    """Whether the run applied at least one update (not every population skipped)."""
    return any(m.get("es/skipped") == 0.0 for m in read_metrics(out / "metrics.jsonl"))


@pytest.mark.integration
def test_resume_with_the_table_is_bit_exact_and_differs_from_the_generator(tmp_path, es_straight_run):
    straight = fit(tmp_path, "straight", *TABLE, "--trainer.max_steps", "4", recipe=TINY_ES_RECIPE)
    resumed = fit(tmp_path, "resumed", *TABLE, "--trainer.max_steps", "2", recipe=TINY_ES_RECIPE)
    fit(
        tmp_path,
        "resumed",
        *TABLE,
        "--trainer.max_steps",
        "4",
        "--trainer.resume",
        "true",
        recipe=TINY_ES_RECIPE,
    )
    assert_bit_identical(_master(straight, 4), _master(resumed, 4))
    assert _updated(straight)
    assert "noise: table" in (straight / "config.yaml").read_text()
    moved = _master(es_straight_run, 4)  # the same run with noise: generator
    assert any(not torch.equal(moved[n], t) for n, t in _master(straight, 4).items())


@pytest.mark.integration
def test_population_on_one_or_two_ranks_reads_the_same_table(tmp_path):
    """Redrawn: two ranks split the tensors, each reads its own tensors' slices from its own copy
    of the table; the centre is one rank's bit for bit."""
    redraw = (*TABLE, "--strategy.init_args.update", "redraw", "--trainer.max_steps", "2")
    one = fit(tmp_path, "one", *redraw, "--trainer.devices", "1", recipe=TINY_ES_RECIPE)
    two = fit(tmp_path, "two", *redraw, "--trainer.devices", "2", recipe=TINY_ES_RECIPE)
    assert_bit_identical(_master(one, 2), _master(two, 2))
    assert _updated(one)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ("--strategy.init_args.noise_table_size", "1000"),
            "noise_table_size 1000 is smaller than the tensor",
        ),
        (
            ("--strategy.init_args.perturbation", "lowrank"),
            "noise: table gives full-rank ε, and perturbation: lowrank",
        ),
    ],
)
def test_bad_table_settings_are_refused_in_one_line(tmp_path, overrides, message, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_ES_RECIPE)
    cmd = ["fit", "--config", str(config), "--trainer.output_dir", str(tmp_path / "out")]
    cmd += ["--strategy.init_args.noise", "table", *overrides]
    proc = run_main(capsys, *cmd)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if message in line]
    assert len(lines) == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
