"""The forgetting claim: vacuous unless ES learned its training task, then non-inferiority."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.report.verdicts import INSUFFICIENT, NOT_REPRODUCED, REPRODUCED
from tests.report.claims.reports import SEEDS, M, base_chances, build, draw, verdicts_of

NAME = "ES's held-out skill does not collapse"


def _block(in_shift: float, ood_shift: float, seed: int = 0, grpo: bool = True) -> dict:
    """Outcomes of a two-task setting: ES's (and GRPO's) runs before and after, per task."""
    rng = np.random.default_rng(seed)
    tasks = {"countdown_tiny": (base_chances(1), in_shift), "arithmetic": (base_chances(2) + 0.3, ood_shift)}
    outcomes = {}
    for task, (p, shift) in tasks.items():
        p = np.clip(p, 0, 1)
        counts = {}
        for method in ["es", "grpo"] if grpo else ["es"]:
            counts[f"{method}/before"] = draw(p, rng)
            counts[f"{method}/after"] = draw(np.clip(p + shift, 0, 1), rng)
        outcomes[task] = {
            "task": task,
            "m": M,
            "problems": [f"{task}{i}" for i in range(len(p))],
            "counts": {n: {str(s): c.tolist() for s, c in by.items()} for n, by in counts.items()},
            "missing": {},
        }
    return {
        "methods": {"es": "es.yaml", "grpo": "grpo.yaml"} if grpo else {"es": "es.yaml"},
        "in_domain": "countdown_tiny",
        "out_of_domain": "arithmetic",
        "ks": [1, 16, 32],
        "margin": 0.05,
        "outcomes": outcomes,
    }


def _report(block: dict | None) -> dict:
    rng = np.random.default_rng(5)
    p = base_chances()
    counts = {"base": draw(p, rng), "es": draw(p, rng), "grpo": draw(p, rng)}
    return build(counts) if block is None else build(counts, forgetting=block)


def test_an_es_that_did_not_learn_its_task_cannot_pass():
    report = _report(_block(in_shift=0.0, ood_shift=0.0))
    assert verdicts_of(report)[NAME] == "vacuous: ES did not learn its training task"


def test_learned_in_domain_and_kept_out_of_domain_is_reproduced():
    report = _report(_block(in_shift=0.12, ood_shift=0.0))
    assert verdicts_of(report)[NAME] == REPRODUCED


def test_a_collapsed_held_out_skill_is_not_reproduced():
    report = _report(_block(in_shift=0.12, ood_shift=-0.25))
    assert verdicts_of(report)[NAME] == NOT_REPRODUCED


def test_without_the_setting_the_claim_says_so():
    verdict = verdicts_of(_report(None))[NAME]
    assert verdict.startswith(INSUFFICIENT) and "forgetting" in verdict


def test_changes_equal_a_plain_computation_from_the_counts():
    block = _block(in_shift=0.1, ood_shift=-0.05, seed=3)
    report = _report(block)
    verdicts_of(report)
    changes = report["forgetting"]["changes"]
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


def test_only_es_is_judged_grpo_is_tabulated():
    report = _report(_block(in_shift=0.12, ood_shift=0.0))
    verdicts_of(report)
    assert [c["claim"] for c in report["claims"]].count(NAME) == 1
    assert set(report["forgetting"]["changes"]) == {"es", "grpo"}
