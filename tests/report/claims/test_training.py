"""Entropy claims: GRPO's falls (direction), ES keeps its own (non-inferiority, gated)."""

from __future__ import annotations

import numpy as np

from es_lightning.report.stats import stat
from es_lightning.report.verdicts import NOT_REPRODUCED, REPRODUCED, UNRESOLVED, VACUOUS
from tests.report.claims.reports import base_chances, build, draw, verdicts_of

KEEPS, FALLS = "ES keeps its entropy", "GRPO's token entropy falls"


def _counts(es_learned: bool) -> dict:
    rng = np.random.default_rng(0)
    p = base_chances()
    counts = {"base": draw(p, rng), "es_permuted": draw(p, rng), "grpo": draw(p, rng)}
    counts["es"] = draw(np.clip(p + 0.08, 0, 1), rng) if es_learned else counts["base"]
    return counts


def _curves(es: list[float], grpo: list[float]) -> dict:
    change = {m: stat(dict(enumerate(v))).to_json() for m, v in (("es", es), ("grpo", grpo))}
    return {"entropy_change": {"t": change}}


def test_entropy_claims():
    report = build(_counts(True), curves=_curves([-0.001, 0.001, 0.0], [-0.011, -0.009, -0.013]))
    verdicts = verdicts_of(report)
    assert verdicts[FALLS] == REPRODUCED
    assert verdicts[KEEPS] == REPRODUCED  # within ±0.002 of 0: above −0.005 nats
    verdicts = verdicts_of(build(_counts(True), curves=_curves([-0.02, -0.025, -0.022], [0.01, -0.01, 0.0])))
    assert verdicts[KEEPS] == NOT_REPRODUCED and verdicts[FALLS] == UNRESOLVED


def test_a_method_that_does_not_train_keeps_its_entropy_vacuously():
    report = build(_counts(False), curves=_curves([0.0, 0.0, 0.0], [-0.011, -0.009, -0.013]))
    verdicts = verdicts_of(report)
    assert verdicts[KEEPS] == VACUOUS
