"""ES variants (low-rank ES): ES's coverage claims asked of each, gated on the variant learning,
judged in the ``variants`` family."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.errors import ConfigError
from es_lightning.report.claims.coverage import SLOW_GRPO
from es_lightning.report.config import ReportPlan
from es_lightning.report.markdown import _reading
from es_lightning.report.verdicts import NOT_REPRODUCED, REPRODUCED, VACUOUS
from tests.report.claims.reports import base_chances, build, draw, grpo_path, verdicts_of

STEPS = [0, 5, 10, 15, 20, 25, 30]
V = "es_lowrank"
ROWS = (
    f"{V} keeps Pass@32 (against its permuted control)",
    f"{V} covers more than GRPO at Pass@32 (matched Pass@1)",
    f"{V} keeps ES's Pass@32",
)


def _counts(variant_shift: float | None, seed: int = 0) -> tuple[dict, np.ndarray, np.random.Generator]:
    rng = np.random.default_rng(seed)
    p = base_chances()
    counts = {"base": draw(p, rng), **grpo_path(p, rng)}
    counts["es"] = draw(np.clip(p + 0.06, 0, 1), rng)  # ES learned, coverage kept
    counts["es_permuted"] = draw(p, rng)
    if variant_shift is not None:
        counts[V] = draw(np.clip(p + variant_shift, 0, 1), rng)
    return counts, p, rng


def _report(counts: dict) -> dict:
    report = build(counts, steps=STEPS)
    report["config"]["es_variants"] = [V]
    return report


def test_a_variant_that_did_nothing_passes_no_row():
    counts, _, _ = _counts(None)
    counts[V] = counts["base"]  # the same evaluation as the starting model
    verdicts = verdicts_of(_report(counts))
    for row in ROWS:
        assert verdicts[row] == f"vacuous: {V} did not learn", row
    assert not any(name.startswith(f"{V} is non-dominated") for name in verdicts)  # not a sequential run


def test_a_variant_no_better_than_the_control_is_vacuous():
    counts, p, rng = _counts(None, seed=1)
    counts["es_permuted"] = draw(np.clip(p + 0.06, 0, 1), rng)  # shuffled rewards rose as far
    counts[V] = counts["es_permuted"]
    verdicts = verdicts_of(_report(counts))
    assert verdicts[ROWS[0]] == f"vacuous: {V} did not beat its permuted-reward control"


def test_a_variant_that_learned_and_kept_coverage():
    counts, _, _ = _counts(0.12, seed=2)  # above ES
    report = _report(counts)
    verdicts = verdicts_of(report)
    assert [verdicts[row] for row in ROWS] == [REPRODUCED] * 3
    rows = [next(c for c in report["claims"] if c["claim"] == name) for name in ROWS]
    assert [r["test"]["family"] for r in rows] == ["variants"] * 3 and rows[0]["test"]["m"] == 3
    assert rows[0]["paper"] == rows[1]["paper"] == f"ES's claim, asked of {V}"
    assert report["families"]["variants"]["tested"] == 3
    row = rows[2]
    assert row["paper"] == "not in the paper"
    summary = "\n".join(_reading(report))
    assert f"{ROWS[2]} (not in the paper)" in summary and f"{ROWS[1]} (not in the paper)" not in summary
    assert row["numbers"]["difference"]["estimate"] == pytest.approx(
        report["intervals"]["pass_at_k"][V]["32"]["estimate"]
        - report["intervals"]["pass_at_k"]["es"]["32"]["estimate"]
    )


def test_a_variant_on_grpo_s_path_is_not_above_it_and_loses_es_s_coverage():
    counts, _, _ = _counts(None, seed=3)
    counts[V] = counts["grpo"]  # learned like GRPO: Pass@1 up, coverage traded away
    verdicts = verdicts_of(_report(counts))
    assert verdicts[ROWS[1]] == SLOW_GRPO.replace(
        "ES", V
    )  # its Pass@K is GRPO's at its own Pass@1: the path's end
    assert verdicts[ROWS[0]] == verdicts[ROWS[2]] == NOT_REPRODUCED


def test_the_last_row_rests_on_es_learning_too():
    counts, p, rng = _counts(0.12, seed=5)
    counts["es"] = counts["base"]  # ES did nothing; the variant learned
    verdicts = verdicts_of(_report(counts))
    assert verdicts[ROWS[0]] == REPRODUCED
    assert verdicts[ROWS[2]] == VACUOUS


def test_without_es_variants_the_method_is_judged_as_a_sequential_run():
    counts, _, _ = _counts(0.06, seed=4)
    verdicts = verdicts_of(build(counts, steps=STEPS))  # a report.json written before es_variants
    assert f"{V} is non-dominated by GRPO's trajectory (Pass@1 vs Pass@32)" in verdicts
    assert not any(name.startswith(f"{V} keeps") for name in verdicts)


@pytest.mark.parametrize("bad", [["es_other"], ["es"], ["es_permuted"], ["grpo"]])
def test_es_variants_must_name_other_methods(tmp_path, bad):
    methods = {m: f"{m}.yaml" for m in ("es", "grpo", "es_permuted", V)}
    with pytest.raises(ConfigError, match=f"es_variants.*{bad[0]}"):
        ReportPlan(output_dir=tmp_path, methods=methods, seeds=[0], overrides=[], es_variants=bad)
