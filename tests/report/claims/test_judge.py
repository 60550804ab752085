"""The whole judgement: every family listed with how many claims it tested, the intervals block,
and the same verdicts when a saved report is judged again."""

from __future__ import annotations

import json

import numpy as np
import pytest

from es_lightning.report.claims import FAMILIES, judge
from tests.report.claims.reports import STEPS, base_chances, build, draw, grpo_path, shifted


def _report() -> dict:
    rng = np.random.default_rng(9)
    p = base_chances()
    counts = {"base": draw(p, rng), **grpo_path(p, rng), "es_permuted": draw(p, rng)}
    counts["es"] = draw(shifted(p, 0.025), rng)
    return build(counts, steps=STEPS)


def test_families_and_intervals():
    report = _report()
    judged = judge(report)
    assert set(judged["families"]) == set(FAMILIES)
    tested = {}
    for c in judged["claims"]:
        if c.get("test"):
            tested[c["test"]["family"]] = tested.get(c["test"]["family"], 0) + 1
            assert c["test"]["m"] == judged["families"][c["test"]["family"]]["tested"]
    assert tested == {"grpo": 2, "primary": 1, "coverage": 2}  # Pass@16 on the path, ES vs its control
    assert {name: f["tested"] for name, f in judged["families"].items() if f["tested"]} == tested
    intervals = judged["intervals"]
    assert intervals["ks"] == [1, 2, 4, 8, 16, 32]
    es = intervals["difference_to_base"]["es"]["1"]
    counts = report["outcomes"]["counts"]
    per_seed = [(np.mean(counts["es"][str(s)]) - np.mean(counts["base"][str(s)])) / 32 for s in (0, 1, 2)]
    assert es["per_seed"] == pytest.approx(per_seed) and es["low"] <= es["estimate"] <= es["high"]
    assert "grpo@5" in intervals["pass_at_k"] and "grpo@5" not in intervals["difference_to_base"]


def test_a_saved_report_is_judged_the_same_again():
    report = _report()
    first = judge(report)
    saved = json.loads(json.dumps({**report, **first}))
    again = judge(saved)
    assert [(c["claim"], c["verdict"]) for c in again["claims"]] == [
        (c["claim"], c["verdict"]) for c in first["claims"]
    ]
    assert json.loads(json.dumps(again["claims"])) == json.loads(json.dumps(first["claims"]))
