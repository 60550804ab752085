"""The forgetting claims: gated on ES learning its training task (over before and over its
permuted control), then held-out Pass@1 against the control and against GRPO's checkpoints at
matched in-domain Pass@1 (``forgetting`` family)."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.report.verdicts import INSUFFICIENT, NOT_REPRODUCED, ONE_SEED, REPRODUCED
from tests.report.claims.reports import (
    SEEDS,
    M,
    base_chances,
    build,
    claim_of,
    draw,
    outcomes_block,
    shifted,
    verdicts_of,
)

KEEPS = "ES's held-out skill does not collapse"
LESS = "ES forgets less than GRPO at the same in-domain gain"
IN, OUT = "countdown_tiny", "arithmetic"
GRPO = {
    "grpo/before": (0.0, 0.0),
    "grpo@5": (0.05, -0.05),
    "grpo@10": (0.10, -0.10),
    "grpo/after": (0.15, -0.15),
}
"""GRPO's checkpoints: (in-domain, held-out) change of every problem's chance."""


def setting(
    es: tuple[float, float],
    control: tuple[float, float] | None = (0.0, 0.0),
    seed: int = 0,
    seeds: list[int] = SEEDS,
) -> dict:
    """Both tasks' outcomes: ES, its permuted control and GRPO's path, each (in, held-out) change."""
    rng = np.random.default_rng(seed)
    rows = {"es/before": (0.0, 0.0), "es/after": es, **GRPO}
    if control is not None:
        rows.update({"es_permuted/before": (0.0, 0.0), "es_permuted/after": control})
    outcomes = {}
    for i, (task, p) in enumerate(((IN, base_chances(1)), (OUT, np.clip(base_chances(2) + 0.3, 0, 1)))):
        counts = {name: draw(shifted(p, change[i]), rng, seeds) for name, change in rows.items()}
        outcomes[task] = outcomes_block(counts, task)
    return {
        "methods": {
            m: f"{m}.yaml" for m in ("es", "grpo", "es_permuted") if control is not None or m != "es_permuted"
        },
        "in_domain": IN,
        "out_of_domain": OUT,
        "ks": [1, 16, 32],
        "margin": 0.05,
        "outcomes": outcomes,
        "trajectory": {"method": "grpo", "steps": [5, 10], "points": ["grpo@5", "grpo@10"]},
    }


def _report(block: dict | None) -> dict:
    rng = np.random.default_rng(5)
    p = base_chances()
    counts = {"base": draw(p, rng), "es": draw(p, rng), "grpo": draw(p, rng)}
    return build(counts) if block is None else build(counts, forgetting=block)


def test_es_that_learned_and_kept_its_held_out_skill():
    report = _report(setting(es=(0.08, 0.0)))
    verdicts = verdicts_of(report)
    assert verdicts[KEEPS] == verdicts[LESS] == REPRODUCED
    less = claim_of(report, LESS)
    assert less["numbers"]["matched"]["estimate"] == pytest.approx(0.08, abs=0.02)  # GRPO at +8 in: −8 out
    assert less["test"]["family"] == claim_of(report, KEEPS)["test"]["family"] == "forgetting"
    assert less["test"]["m"] == 2 and report["families"]["forgetting"]["tested"] == 2


def test_a_collapsed_held_out_skill_is_not_reproduced():
    verdicts = verdicts_of(_report(setting(es=(0.08, -0.25))))
    assert verdicts[KEEPS] == NOT_REPRODUCED  # 25 points below the control: past the 5-point margin
    assert verdicts[LESS] == NOT_REPRODUCED  # GRPO lost 8 at that in-domain gain, ES 25


def test_the_premise_of_the_setting():
    verdicts = verdicts_of(_report(setting(es=(0.0, 0.0))))
    assert verdicts[KEEPS] == verdicts[LESS] == "vacuous: ES did not learn its training task"
    verdicts = verdicts_of(_report(setting(es=(0.08, 0.0), control=(0.08, 0.0))))
    beat = "vacuous: ES did not beat its permuted-reward control on its training task"
    assert verdicts[KEEPS] == verdicts[LESS] == beat
    verdicts = verdicts_of(_report(setting(es=(0.08, 0.0), control=None)))
    assert (
        verdicts[KEEPS] == "insufficient data: no permuted control ('es_permuted') in the forgetting setting"
    )
    verdicts = verdicts_of(_report(setting(es=(0.08, 0.0), seeds=[0])))
    assert verdicts[KEEPS] == verdicts[LESS] == ONE_SEED
    block = setting(es=(0.08, 0.0))
    del block["outcomes"][IN]["counts"]["es/before"]
    verdicts = verdicts_of(_report(block))
    assert (
        verdicts[KEEPS]
        == "insufficient data: no per-problem outcomes of es before training in the forgetting setting"
    )


def test_grpos_checkpoints_are_needed_on_both_tasks():
    block = setting(es=(0.08, 0.0))
    del block["trajectory"]
    verdicts = verdicts_of(_report(block))
    assert verdicts[LESS] == "insufficient data: no GRPO checkpoints evaluated in the forgetting setting"
    assert verdicts[KEEPS] == REPRODUCED
    block = setting(es=(0.08, 0.0))
    del block["outcomes"][OUT]["counts"]["grpo@5"]
    verdicts = verdicts_of(_report(block))
    assert verdicts[LESS] == "insufficient data: GRPO's forgetting checkpoints lack outcomes on a task"


def test_without_the_setting_the_claims_say_so():
    verdicts = verdicts_of(_report(None))
    for name in (KEEPS, LESS):
        assert verdicts[name].startswith(INSUFFICIENT) and "forgetting" in verdicts[name]


def test_changes_equal_a_plain_computation_from_the_counts():
    block = setting(es=(0.1, -0.05), seed=3)
    report = _report(block)
    verdicts_of(report)
    changes = report["forgetting"]["changes"]
    assert set(changes) == {"es", "grpo", "es_permuted"}  # every method tabulated; ES alone judged
    for method in ("es", "grpo"):
        for task, outcomes in block["outcomes"].items():
            before = np.array([outcomes["counts"][f"{method}/before"][str(s)] for s in SEEDS])
            after = np.array([outcomes["counts"][f"{method}/after"][str(s)] for s in SEEDS])
            expected = (after.mean() - before.mean()) / M
            delta = changes[method][task]["delta@1"]
            assert delta["estimate"] == pytest.approx(expected, abs=1e-12)
            assert delta["low"] < delta["estimate"] < delta["high"]
            # Pass@M: a problem counts once any of its M samples is correct
            assert changes[method][task]["after@32"]["estimate"] == pytest.approx(float((after > 0).mean()))
    assert [c["claim"] for c in report["claims"]].count(KEEPS) == 1
