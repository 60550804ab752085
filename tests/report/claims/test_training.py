"""Entropy claims: GRPO's falls (``grpo`` family); ES keeps its own against its permuted control
and keeps more than GRPO at the same Pass@1 (``es_mechanism``, gated on the premise)."""

from __future__ import annotations

import numpy as np
import pytest

from es_lightning.report.claims.training import NO_CURVE
from es_lightning.report.stats import stat
from es_lightning.report.verdicts import NOT_REPRODUCED, ONE_SEED, REPRODUCED, UNRESOLVED, VACUOUS
from tests.report.claims.reports import (
    SEEDS,
    STEPS,
    M,
    base_chances,
    build,
    claim_of,
    draw,
    grpo_path,
    path_names,
    shifted,
    verdicts_of,
)
from tests.report.test_matched import coverage_by_loop

KEEPS = "ES keeps its entropy (against its permuted control)"
MATCHED = "ES keeps more entropy than GRPO at the same Pass@1"
FALLS = "GRPO's token entropy falls"


def _counts(es_learned: bool = True) -> dict:
    rng = np.random.default_rng(0)
    p = base_chances()
    counts = {"base": draw(p, rng), **grpo_path(p, rng), "es_permuted": draw(p, rng)}
    counts["es"] = draw(shifted(p, 0.025), rng) if es_learned else counts["base"]
    return counts


def grpo_entropy(seed: int, step: int) -> float:
    """GRPO's logged entropy: falls 0.3 nats over its 30 updates."""
    return 1.0 - 0.3 * step / 30 + 0.01 * seed


def _curves(changes: dict[str, list[float]], es_last: list[float] | None = None) -> dict:
    curves = {"entropy_change": {"t": {m: stat(dict(enumerate(v))).to_json() for m, v in changes.items()}}}
    if es_last is not None:
        by_seed = {
            "grpo": {str(s): [[step, grpo_entropy(s, step)] for step in STEPS] for s in SEEDS},
            "es": {str(s): [[0, 1.0], [30, es_last[s]]] for s in SEEDS},
        }
        curves["entropy_by_seed"] = {"t": by_seed}
    return curves


KEPT = {"es": [-0.001, 0.001, 0.0], "es_permuted": [0.0, 0.0005, -0.0005], "grpo": [-0.011, -0.009, -0.013]}


def test_entropy_against_the_control():
    verdicts = verdicts_of(build(_counts(), curves=_curves(KEPT)))
    assert verdicts[FALLS] == REPRODUCED
    assert verdicts[KEEPS] == REPRODUCED  # ES − its control within ±0.001 of 0: above −0.005 nats
    dropped = {"es": [-0.02, -0.025, -0.022], "es_permuted": [0.0, 0.0, 0.0], "grpo": [0.01, -0.01, 0.0]}
    report = build(_counts(), curves=_curves(dropped))
    verdicts = verdicts_of(report)
    assert verdicts[KEEPS] == NOT_REPRODUCED and verdicts[FALLS] == UNRESOLVED
    assert claim_of(report, KEEPS)["numbers"]["difference"]["per_seed"] == pytest.approx(
        [-0.02, -0.025, -0.022]
    )
    walk = {**dropped, "es_permuted": dropped["es"]}  # the random walk loses as much: ES kept its own
    assert verdicts_of(build(_counts(), curves=_curves(walk)))[KEEPS] == REPRODUCED


def _expected_matched(report: dict, es_last: list[float]) -> list[float]:
    """Per seed: ES's last entropy − GRPO's entropy where its path reaches ES's Pass@1 (a plain loop)."""
    counts = report["outcomes"]["counts"]
    out = []
    for s in SEEDS:
        xs = [np.mean(counts[p][str(s)]) / M for p in path_names()]
        ys = [grpo_entropy(s, step) for step in STEPS]
        out.append(es_last[s] - coverage_by_loop(xs, ys, np.mean(counts["es"][str(s)]) / M))
    return out


def test_entropy_at_matched_pass_at_1():
    es_last = [0.97, 0.98, 0.99]
    report = build(_counts(), steps=STEPS, curves=_curves(KEPT, es_last))
    verdicts = verdicts_of(report)
    matched = claim_of(report, MATCHED)
    assert matched["numbers"]["matched"]["per_seed"] == pytest.approx(_expected_matched(report, es_last))
    assert verdicts[MATCHED] == REPRODUCED and matched["test"]["family"] == "es_mechanism"
    assert matched["test"]["m"] == 2  # with "ES keeps its entropy"
    es_last = [0.6, 0.62, 0.61]  # ES's entropy fell below GRPO's at its own Pass@1
    report = build(_counts(), steps=STEPS, curves=_curves(KEPT, es_last))
    verdicts = verdicts_of(report)
    assert claim_of(report, MATCHED)["numbers"]["matched"]["per_seed"] == pytest.approx(
        _expected_matched(report, es_last)
    )
    assert verdicts[MATCHED] == NOT_REPRODUCED


def test_missing_curves_and_the_premise():
    verdicts = verdicts_of(build(_counts(), steps=STEPS))
    assert verdicts[FALLS] == verdicts[KEEPS] == NO_CURVE
    assert verdicts[MATCHED] == "insufficient data: no per-seed entropy curves of es and grpo"
    no_control = {m: v for m, v in KEPT.items() if m != "es_permuted"}
    verdicts = verdicts_of(build(_counts(), curves=_curves(no_control, [0.97, 0.98, 0.99])))
    assert verdicts[KEEPS] == "insufficient data: no entropy curve of es_permuted"
    assert verdicts[MATCHED] == "insufficient data: no GRPO trajectory"
    verdicts = verdicts_of(build(_counts(False), steps=STEPS, curves=_curves(KEPT, [0.97, 0.98, 0.99])))
    assert verdicts[KEEPS] == verdicts[MATCHED] == VACUOUS
    assert verdicts[FALLS] == REPRODUCED  # about GRPO alone: not gated


def test_one_seed_of_grpo_is_not_resolved():
    verdicts = verdicts_of(build(_counts(), curves=_curves({**KEPT, "grpo": [-0.05]})))
    assert verdicts[FALLS] == ONE_SEED
