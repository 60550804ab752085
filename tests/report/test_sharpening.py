"""The sharpening reference: the base at other temperatures, planned, reused and collected."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from es_lightning.errors import ConfigError
from es_lightning.report.command import build_plan
from es_lightning.report.config import SharpeningSettings
from es_lightning.report.sharpening import collect_sharpening, point_name, run_sharpening, sharpening_file
from tests.report.synthetic import TASK, counts_summary, write_outcomes

CONFIG = {
    "module": {
        "class_path": "es_lightning.ReasoningModule",
        "init_args": {"model": "es-lightning/tiny-arithmetic"},
    },
    "trainer": {"accelerator": "cpu", "max_steps": 10},
    "evaluation": {"num_samples": 4, "temperature": 0.6, "ks": None, "greedy": True, "seed": 1234},
}


def _plan(tmp_path: Path, temperatures: list[float]):
    return build_plan(
        {"es": "es.yaml", "grpo": "grpo.yaml"},
        tmp_path,
        seeds=2,
        sharpening=SharpeningSettings(temperatures=temperatures),
    )


def _run(tmp_path: Path, method: str, seed: int) -> Path:
    run = tmp_path / "runs" / method / f"seed{seed}"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    return run


def test_temperatures_are_checked():
    for bad in ([0.4, 0.4], [0.0, 0.6], [-0.5]):
        with pytest.raises(ConfigError, match="sharpening.temperatures must be distinct and > 0"):
            SharpeningSettings(temperatures=bad)
    assert point_name(0.55) == "base@T0.55" and point_name(0.4) == "base@T0.4"


def test_one_evaluation_per_temperature_but_the_protocols_own(tmp_path):
    plan = _plan(tmp_path, [0.4, 0.6, 0.5])
    finished = {"es": {1: _run(tmp_path, "es", 1), 0: _run(tmp_path, "es", 0)}, "grpo": {}}
    records = run_sharpening(plan, finished, TASK, launch=False)
    assert [(r["name"], r["status"]) for r in records] == [
        ("sharpening/T0.4", "missing"),
        ("sharpening/T0.5", "missing"),
    ]  # T = 0.6 is the protocol's: the base itself, not evaluated again
    out = sharpening_file(plan, 0.5)
    out.parent.mkdir(parents=True)
    counts = np.array([4, 1, 0])
    out.write_text(json.dumps({TASK: counts_summary(counts, 4)}))
    write_outcomes(out.parent, out.stem, counts, m=4)
    assert [r["status"] for r in run_sharpening(plan, finished, TASK, launch=False)] == ["missing", "reused"]
    assert run_sharpening(plan, {}, TASK, launch=False) == []  # no finished run: no protocol yet

    block, points = collect_sharpening(plan, finished, TASK)
    assert block["temperatures"] == [0.6, 0.5, 0.4]  # highest first
    assert block["points"] == ["base", "base@T0.5", "base@T0.4"]
    assert block["protocol_temperature"] == 0.6 and block["protocol_run"] == "runs/es/seed0"
    assert block["pass_at_k"]["base@T0.5"]["1"] == pytest.approx(5 / 12)  # (1 + 1/4 + 0) / 3
    assert set(points) == {"base@T0.5", "base@T0.4"}
    assert (
        points["base@T0.5"][0].counts == points["base@T0.5"][1].counts == [4, 1, 0]
    )  # one evaluation, every seed
    assert points["base@T0.4"] == {0: None, 1: None}  # not evaluated yet: missing in the outcomes
    assert collect_sharpening(_plan(tmp_path, []), finished, TASK) == (None, {})
