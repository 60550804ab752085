"""ES's signal per update in the report: pooled reliability, flip rate and skips per run group,
against hand-worked numbers, and its REPORT.md section."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.report.markdown import _signal
from es_lightning.report.signal import collect_signal, run_signal
from tests.report.synthetic import summary, write_pipeline, write_single


def _es_records(correlations, flips, skipped, key="es/reward_split_half_corr"):
    records = []
    for t, (c, f, s) in enumerate(zip(correlations, flips, skipped), start=1):
        record = {"step": t, "train/reward_mean": 0.3, "es/flip_rate": f, "es/skipped": s}
        if c is not None:
            record[key] = c
        records.append(record)
    return records


def _run(path, records, rng):
    write_single(path, summary(0.3, rng), summary(0.3, rng), records)
    return path


def test_run_signal_by_hand(tmp_path):
    rng = np.random.default_rng(0)
    # r_ab 0.1 and 0.3 (one update without a defined value): mean 0.2 -> 2·0.2/1.2
    run = _run(tmp_path / "es", _es_records([0.1, None, 0.3], [0.02, 0.04, 0.06], [0.0, 1.0, 0.0]), rng)
    assert run_signal(run) == {
        "updates": 3.0,
        "skipped": pytest.approx(1 / 3),
        "reliability": pytest.approx(0.4 / 1.2),
        "flip_rate": pytest.approx(0.04),
    }
    # a run logged before es/reward_split_half_corr existed: r_ab is ρ/(2 − ρ)
    rho = [2 * 0.1 / 1.1, 2 * 0.3 / 1.3]
    old = _run(tmp_path / "old", _es_records(rho, [0.0, 0.0], [0.0, 0.0], key="es/reward_reliability"), rng)
    assert run_signal(old)["reliability"] == pytest.approx(0.4 / 1.2)
    # no ES update (a GRPO run): no signal row
    assert run_signal(_run(tmp_path / "grpo", [{"step": 1, "train/reward_mean": 0.3}], rng)) is None


def test_collect_signal_over_seeds_groups_and_pipelines(tmp_path):
    rng = np.random.default_rng(1)
    es = {
        seed: _run(tmp_path / "es" / f"seed{seed}", _es_records([c, c], [0.1, 0.1], [0.0, 0.0]), rng)
        for seed, c in ((0, 0.0), (1, 0.2))
    }
    grpo = {0: _run(tmp_path / "grpo" / "seed0", [{"step": 1, "train/reward_mean": 0.3}], rng)}
    pipeline = tmp_path / "grpo_then_es" / "seed0"
    write_pipeline(pipeline, ["grpo", "es"], [2, 2], summary(0.3, rng), summary(0.4, rng),
                   [[{"step": 1, "train/reward_mean": 0.3}], _es_records([0.5, 0.5], [0.2, 0.2], [0.0, 1.0])])  # fmt: skip
    ablation = {"population_size": {"8": {0: _run(tmp_path / "n8", _es_records([-0.1], [0.0], [0.0]), rng)}}}
    found = collect_signal({"es": es, "grpo": grpo, "grpo_then_es": {0: pipeline}}, {"es": es}, ablation)
    assert list(found) == ["es", "grpo_then_es", "forgetting/es", "population_size/8"]
    assert found["es"]["reliability"]["values"] == [0.0, pytest.approx(0.4 / 1.2)]
    assert found["es"]["reliability"]["mean"] == pytest.approx(0.2 / 1.2)
    assert found["grpo_then_es"]["skipped"]["mean"] == 0.5 and found["grpo_then_es"]["updates"]["mean"] == 2
    assert found["population_size/8"]["reliability"]["mean"] == pytest.approx(-0.2 / 0.9)
    section = "\n".join(_signal({"signal": found}))
    assert "## ES's signal per update" in section and "a method that did nothing" in section
    assert "| es | 2 | 0.167 ± 0.236 | 10.0 ± 0.0 | 0.0 ± 0.0 |" in section
    assert _signal({}) == []  # a report without ES runs (or judged from an older report.json)
