"""ES's signal in the report: pooled reliability with its interval over updates, the share of
updates left out, the run-level signal √(ρ̄NT) and the antithetic pairs' reliability per run group,
against hand-worked numbers and a plain recomputation from the committed coverage runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from es_lightning.es.student_t import t_quantile
from es_lightning.report.markdown import render
from es_lightning.report.signal import collect_signal, es_settings, run_signal, signal_section
from tests.report.synthetic import summary, write_pipeline, write_single

ROOT = Path(__file__).resolve().parents[2]


def _es_records(correlations, flips, skipped, key="es/reward_split_half_corr"):
    records = []
    for t, (c, f, s) in enumerate(zip(correlations, flips, skipped), start=1):
        record = {"step": t, "train/reward_mean": 0.3, "es/flip_rate": f, "es/skipped": s}
        if c is not None:
            record[key] = c
        records.append(record)
    return records


def _es_config(path: Path, population_size: int, estimator: str = "one_point", control: str = "none") -> None:
    (path / "config.yaml").write_text(
        "strategy:\n  class_path: es_lightning.strategies.ESStrategy\n  init_args:\n"
        f"    population_size: {population_size}\n    estimator: {estimator}\n    antithetic_budget: rollouts\n"
        f"    reward_control: {control}\n"
    )


def _run(path, records, rng, population_size=None, estimator="one_point"):
    write_single(path, summary(0.3, rng), summary(0.3, rng), records)
    if population_size is not None:
        _es_config(path, population_size, estimator)
    return path


def test_run_signal_by_hand(tmp_path):
    rng = np.random.default_rng(0)
    # r_ab 0.1 and 0.3 (one update without a defined value): mean 0.2 -> 2·0.2/1.2
    run = _run(tmp_path / "es", _es_records([0.1, None, 0.3], [0.02, 0.04, 0.06], [0.0, 0.0, 0.0]), rng)
    assert run_signal(run) == {
        "updates": 3.0,
        "skipped": 0.0,
        "reliability": pytest.approx(0.4 / 1.2),
        "flip_rate": pytest.approx(0.04),
    }
    # a skipped update (all member rewards tied: its halves mirror, r_ab = −1) is left out of ρ̄
    skipped = _run(tmp_path / "skip", _es_records([0.1, -1.0, 0.3], [0.0] * 3, [0.0, 1.0, 0.0]), rng)
    assert run_signal(skipped)["reliability"] == pytest.approx(0.4 / 1.2)
    assert run_signal(skipped)["skipped"] == pytest.approx(1 / 3)
    # a run logged before es/reward_split_half_corr existed: r_ab is ρ/(2 − ρ)
    rho = [2 * 0.1 / 1.1, 2 * 0.3 / 1.3]
    old = _run(tmp_path / "old", _es_records(rho, [0.0, 0.0], [0.0, 0.0], key="es/reward_reliability"), rng)
    assert run_signal(old)["reliability"] == pytest.approx(0.4 / 1.2)
    # no ES update (a GRPO run): no signal row
    assert run_signal(_run(tmp_path / "grpo", [{"step": 1, "train/reward_mean": 0.3}], rng)) is None


def _sb(r: float) -> float:
    return -1.0 if r <= -1 / 3 else 2 * r / (1 + r)


def test_collect_signal_pools_updates_over_seeds(tmp_path):
    """ES seed 0: r_ab 0.0, −1 (skipped), undefined, 0.1; seed 1: 0.2; N = 4. Pooled over the 3
    measured updates: mean 0.1, sd 0.1, t(0.975, 2) = 4.3027 → r_ab 0.1 ± 0.248418 → ρ̄ 0.181818
    [−0.348567, 0.516783]; 2 of 5 updates left out; T = 4 applied / 2 runs = 2 → √(ρ̄·4·2) =
    1.20605 [0, 2.03327]. Antithetic ablation (N = 8 members = 4 pairs): the pairs' r_ab 0.3, 0.5,
    0.4 → ρ̄_d 0.571429 [0.263253, 0.786717], T = 3 → √(ρ̄_d·4·3) = 2.61861 [1.77737, 3.07257]."""
    rng = np.random.default_rng(1)
    es = {
        0: _run(
            tmp_path / "es" / "seed0", _es_records([0.0, -1.0, None, 0.1], [0.1] * 4, [0, 1, 0, 0]), rng, 4
        ),
        1: _run(tmp_path / "es" / "seed1", _es_records([0.2], [0.1], [0.0]), rng, 4),
    }
    grpo = {0: _run(tmp_path / "grpo" / "seed0", [{"step": 1, "train/reward_mean": 0.3}], rng)}
    pipeline = tmp_path / "grpo_then_es" / "seed0"
    write_pipeline(pipeline, ["grpo", "es"], [2, 2], summary(0.3, rng), summary(0.4, rng),
                   [[{"step": 1, "train/reward_mean": 0.3}], _es_records([0.5, 0.5], [0.2, 0.2], [0.0, 1.0])])  # fmt: skip
    pairs = _es_records([0.0, 0.1, -0.1], [0.0] * 3, [0.0] * 3)
    for record, c in zip(pairs, (0.3, 0.5, 0.4)):
        record["es/antithetic_diff_split_half_corr"] = c
    antithetic = _run(tmp_path / "anti", pairs, rng, 8, "antithetic")
    ablation = {"estimator": {"antithetic": {0: antithetic}}}
    found = collect_signal({"es": es, "grpo": grpo, "grpo_then_es": {0: pipeline}}, {"es": es}, ablation)
    assert list(found) == ["es", "grpo_then_es", "forgetting/es", "estimator/antithetic"]

    pooled = found["es"]["pooled"]
    half = 4.3027 * 0.1 / math.sqrt(3)
    assert pooled["reliability"] == pytest.approx(0.2 / 1.1)
    assert pooled["low"] == pytest.approx(_sb(0.1 - half), rel=1e-4)
    assert pooled["high"] == pytest.approx(_sb(0.1 + half), rel=1e-4)
    assert (pooled["measured"], pooled["updates"], pooled["directions"]) == (3, 5, 4)
    assert pooled["excluded"] == pytest.approx(0.4) and pooled["applied_per_run"] == 2.0
    assert pooled["signal"] == pytest.approx(math.sqrt(0.2 / 1.1 * 8))
    assert pooled["signal_low"] == 0.0
    assert pooled["signal_high"] == pytest.approx(math.sqrt(_sb(0.1 + half) * 8), rel=1e-4)
    assert found["es"]["antithetic"] is None
    # each seed alone; seed 1 has one measured update: no interval
    assert found["es"]["per_seed"]["0"]["pooled"]["reliability"] == pytest.approx(_sb(0.05))
    assert found["es"]["per_seed"]["1"]["pooled"]["low"] is None
    # the seed Stats stay: ρ̄ per run (the skipped −1 left out), over seeds
    assert found["es"]["reliability"]["values"] == [pytest.approx(_sb(0.05)), pytest.approx(0.4 / 1.2)]

    # a pipeline without the ES settings in its config: ρ̄ but no signal (N unknown)
    assert (
        found["grpo_then_es"]["pooled"]["signal"] is None and found["grpo_then_es"]["skipped"]["mean"] == 0.5
    )

    anti = found["estimator/antithetic"]
    assert anti["pooled"]["signal"] is None  # the members' ρ̄ is not what an antithetic update weighs
    assert anti["antithetic"]["reliability"] == pytest.approx(0.8 / 1.4)
    assert anti["antithetic"]["low"] == pytest.approx(_sb(0.4 - half), rel=1e-4)
    assert anti["antithetic"]["directions"] == 4
    assert anti["antithetic"]["signal"] == pytest.approx(math.sqrt(0.8 / 1.4 * 12))
    assert anti["antithetic"]["signal_high"] == pytest.approx(math.sqrt(_sb(0.4 + half) * 12), rel=1e-4)

    section = "\n".join(signal_section({"signal": found}))
    assert "## ES's signal: per update and over the run" in section
    assert (
        "| es | 2 | 40.0 | 0.182 [-0.349, 0.517] | 1.2 [0.0, 2.0] | – | 10.0 ± 0.0 | 12.5 ± 17.7 |" in section
    )
    assert (
        "| estimator/antithetic | 3 | 0.0 | 0.000 [-0.661, 0.398] | 2.6 [1.8, 3.1] | 0.571 [0.263, 0.787] |"
        in section
    )
    assert signal_section({}) == []  # a report without ES runs


def test_a_permuted_control_has_no_run_level_signal(tmp_path):
    """Its ρ̄ is that of its true member rewards (the same as ES's here), but the update applies
    rewards shuffled among the members: the signal is 0 by construction."""
    rng = np.random.default_rng(2)
    runs = {}
    for name, control in (("es", "none"), ("es_permuted", "permuted")):
        runs[name] = {0: _run(tmp_path / name, _es_records([0.2, 0.3, 0.1], [0.0] * 3, [0.0] * 3), rng)}
        _es_config(runs[name][0], 32, control=control)
    found = collect_signal(runs, {}, {})
    assert (
        found["es"]["pooled"]["reliability"]
        == found["es_permuted"]["pooled"]["reliability"]
        == pytest.approx(0.4 / 1.2)
    )
    assert found["es"]["pooled"]["signal"] == pytest.approx(math.sqrt(0.4 / 1.2 * 32 * 3))
    permuted = found["es_permuted"]["pooled"]
    assert permuted["rewards_permuted"] and permuted["signal"] == permuted["signal_high"] == 0.0
    assert "| es_permuted | 3 | 0.0 | 0.333 [" in "\n".join(signal_section({"signal": found}))
    assert "| 0 (rewards permuted) |" in "\n".join(signal_section({"signal": found}))


def test_an_older_report_json_still_renders(tmp_path):
    """A report.json saved before the pooled blocks existed: its rows render with dashes."""
    old = {"es": {"updates": {"mean": 120, "sd": 0, "n": 3, "values": [120] * 3},
                  "reliability": {"mean": 0.027, "sd": 0.007, "n": 3, "values": [0.02, 0.03, 0.03]},
                  "flip_rate": None, "skipped": None}}  # fmt: skip
    section = "\n".join(signal_section({"signal": old}))
    assert "| es | 120 | – | – | – | – | – | – |" in section


def test_es_settings_reads_single_runs_and_pipelines(tmp_path):
    _es_config(tmp_path, 16)
    assert es_settings(tmp_path)["population_size"] == 16
    assert es_settings(tmp_path / "absent") is None
    committed = ROOT / "docs" / "report" / "cpu" / "runs" / "es_then_grpo" / "seed0"
    if committed.is_dir():
        assert es_settings(committed)["population_size"] == 32


def _v2_runs() -> Path | None:
    for candidate in (ROOT / "results" / "report_cpu_v2" / "runs", ROOT / "docs" / "report" / "cpu" / "runs"):
        if (candidate / "es" / "seed0" / "metrics.jsonl").is_file():
            return candidate
    return None


def test_signal_of_the_committed_coverage_runs_against_a_plain_recomputation():
    """ES's three 120-update runs (N = 32): ρ̄, its interval and √(ρ̄NT) recomputed with plain loops
    from the metrics files (r_ab = ρ/(2 − ρ) of each logged es/reward_reliability): ρ̄ about 0.027
    with an interval that holds 0, and a run-level signal about 10 whose lower bound is 0 (the data
    cannot exclude a signal of 0, nor rule out one far above 2: ES gained +1.3 points of Pass@1
    over its permuted control on each seed)."""
    runs = _v2_runs()
    if runs is None:
        pytest.skip("the coverage report's run logs are not in this checkout")
    dirs = {seed: runs / "es" / f"seed{seed}" for seed in range(3)}
    found = collect_signal({"es": dirs}, {}, {})["es"]["pooled"]
    values = []
    for seed in range(3):
        for line in (dirs[seed] / "metrics.jsonl").read_text().splitlines():
            record = json.loads(line)
            if "es/skipped" in record and record.get("es/reward_reliability") is not None:
                rho = record["es/reward_reliability"]
                values.append(rho / (2 - rho))
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    assert n == 360 and found["measured"] == 360 and found["excluded"] == 0.0
    assert found["reliability"] == pytest.approx(_sb(mean))
    assert (found["low"], found["high"]) == (pytest.approx(_sb(mean - half)), pytest.approx(_sb(mean + half)))
    assert found["signal"] == pytest.approx(math.sqrt(_sb(mean) * 32 * 120))
    assert found["signal_high"] == pytest.approx(math.sqrt(_sb(mean + half) * 32 * 120))
    assert 0.02 < found["reliability"] < 0.035 and found["low"] < 0 < found["high"]
    assert found["signal_low"] == 0.0 and 8 < found["signal"] < 12 and found["signal_high"] > 12
    control = collect_signal(
        {"es_permuted": {s: runs / "es_permuted" / f"seed{s}" for s in range(3)}}, {}, {}
    )
    pooled = control["es_permuted"]["pooled"]
    assert pooled["rewards_permuted"] and pooled["signal"] == 0.0 and 0.02 < pooled["reliability"] < 0.035


def test_report_renders_the_signal_section_in_place():
    report = {
        "config": {"methods": {"es": "r.yaml"}, "seeds": [0], "quick": False, "ks": [1], "pareto_ks": []},
        "claims": [],
        "evaluations": {},
        "runs": [],
        "budgets": {},
        "signal": {"es": {"updates": {"mean": 2, "sd": 0, "n": 1, "values": [2]}}},
    }
    text = render(report)
    assert text.index("## ES's premise") < text.index("## ES's signal: per update") < text.index("## Runs")
