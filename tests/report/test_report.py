"""The report on synthetic run folders: every table number equals its input, figures exist."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from es_lightning.report import DriftSettings, run_report
from es_lightning.report.pareto import dominates
from es_lightning.report.verdicts import CATEGORIES, category
from tests.report.conftest import PASS1, SEEDS
from tests.report.synthetic import TASK, greedy_of, summary, write_single

KS = [1, 2, 4, 8, 16, 32]
METHODS = ["base", *PASS1]


# -- reading REPORT.md back ---------------------------------------------------------------------
def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a ``## `` or ``### `` line) up to the next heading."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip() == heading)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")), len(lines))
    return "\n".join(lines[start + 1 : end])


def tables(text: str) -> list[list[dict[str, str]]]:
    """Every Markdown table in ``text`` as a list of ``{header: cell}`` rows."""
    out, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif block:
            header, rows = block[0], block[2:]
            out.append([dict(zip(header, row)) for row in rows])
            block = []
    return out


def _tolerance(token: str) -> float:
    """Half a unit in the last printed digit."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (-decimals) * 10.0 ** (int(exponent) if exponent else 0) + 1e-12


def assert_cell(cell: str, values: list[float], scale: float = 1.0) -> None:
    """``cell`` shows mean ± sample sd of ``values`` (× ``scale``) to its printed precision."""
    tokens = cell.split(" ± ")
    mean = float(np.mean(values)) * scale
    assert abs(float(tokens[0]) - mean) <= _tolerance(tokens[0]), (cell, mean)
    if len(values) > 1:
        sd = float(np.std(values, ddof=1)) * scale
        assert len(tokens) == 2 and abs(float(tokens[1]) - sd) <= _tolerance(tokens[1]), (cell, sd)
    else:
        assert len(tokens) == 1


@pytest.fixture(scope="module")
def md(synthetic_report) -> str:
    return (synthetic_report["dir"] / "REPORT.md").read_text()


@pytest.fixture(scope="module")
def inputs(synthetic_report) -> dict[str, Any]:
    return synthetic_report["inputs"]


def final_pass(inputs: dict, method: str, k: int) -> list[float]:
    source = inputs["before"] if method == "base" else inputs["after"][method]
    return [source[s][f"pass@{k}"] for s in SEEDS]


# -- the tables -----------------------------------------------------------------------------------
def test_pass_at_k_table(md, inputs):
    [rows, diffs, intervals] = tables(section(md, f"Pass@K on `{TASK}`"))
    assert [r["method"] for r in rows] == METHODS
    for row in rows:
        assert row["seeds"] == str(len(SEEDS))
        for k in KS:
            assert_cell(row[f"pass@{k}"], final_pass(inputs, row["method"], k), 100)
    for row in diffs:
        for k in KS:
            paired = np.subtract(final_pass(inputs, row["method"], k), final_pass(inputs, "base", k))
            assert_cell(row[f"Δ pass@{k}"], list(paired), 100)
    # the bootstrap's estimate is the pooled mean: the mean over seeds of each evaluation's Pass@K
    assert [r["method"] for r in intervals] == METHODS
    for row in intervals:
        for k in (1, 16, 32):
            estimate, bounds = row[f"pass@{k}"].split(" [")
            assert_cell(estimate, [float(np.mean(final_pass(inputs, row["method"], k)))], 100)
            low, high = (float(x) for x in bounds.rstrip("]").split(", "))
            assert low <= float(estimate) <= high


@pytest.mark.parametrize("k", [16, 32])
def test_pareto_tables_mark_exactly_the_non_dominated_means(md, inputs, k):
    [rows] = tables(section(md, f"Pass@1 vs Pass@{k}"))
    means = {m: (np.mean(final_pass(inputs, m, 1)), np.mean(final_pass(inputs, m, k))) for m in METHODS}
    for row in rows:
        m = row["method"]
        assert_cell(row["pass@1"], final_pass(inputs, m, 1), 100)
        assert_cell(row[f"pass@{k}"], final_pass(inputs, m, k), 100)
        beaten = any(dominates(means[o], means[m]) for o in METHODS if o != m)
        assert row["non-dominated (mean)"] == ("no" if beaten else "yes")
        per_seed = sum(
            not any(
                dominates(
                    (inputs_pass(inputs, o, s, 1), inputs_pass(inputs, o, s, k)),
                    (inputs_pass(inputs, m, s, 1), inputs_pass(inputs, m, s, k)),
                )
                for o in METHODS
                if o != m
            )
            for s in SEEDS
        )
        assert row["non-dominated seeds"] == f"{per_seed} of {len(SEEDS)}"


def inputs_pass(inputs: dict, method: str, seed: int, k: int) -> float:
    return (inputs["before"] if method == "base" else inputs["after"][method])[seed][f"pass@{k}"]


def _series(records: list[dict], key: str) -> list[float]:
    return [r[key] for r in records if key in r]


def test_curve_tables(md, inputs):
    entropy, heldout = tables(section(md, "Training curves"))
    # curves.methods (es, grpo) and the permuted control, which the entropy claim reads
    assert [(r["task"], r["method"]) for r in entropy] == [
        (TASK, "es"),
        (TASK, "grpo"),
        (TASK, "es_permuted"),
    ]
    for row in entropy:
        changes = [_series(inputs["metrics"][row["method"]][s], f"entropy/{TASK}") for s in SEEDS]
        assert_cell(row["Δ entropy"], [c[-1] - c[0] for c in changes])
    assert len(heldout) == 6  # k 1 and 16 × es, grpo, es_permuted
    for row in heldout:
        finals = [
            _series(inputs["metrics"][row["method"]][s], f"heldout/{TASK}/pass@{row['k']}")[-1] for s in SEEDS
        ]
        assert_cell(row["pass@k"], finals, 100)


def test_drift_tables(md, inputs):
    text = section(md, "Drift from the starting model")
    main, kinds, curve = tables(text)
    analysis = inputs["analysis"]
    taus = ["0.0001", "0.0005", "0.001", "0.0015", "0.005"]
    for row in main:
        m, view = row["method"], row["view"]
        if m not in analysis:  # a pipeline without analysis: the last drift/rel_l2 of its last stage
            assert row["source"] == "metrics.jsonl" and view == "stored"
            last = [_series(inputs["metrics"][m][s][-1], "drift/rel_l2")[-1] for s in SEEDS]
            assert_cell(row["rel-L2"], last)
            continue
        source = {
            "stored": lambda d: d,
            "bf16": lambda d: d["bf16"],
            "random-walk null": lambda d: d["null"],
        }[view]
        if view == "random-walk null" and not analysis[m][0]["null"].get("modelled"):
            assert row["source"] == "n/a: not an ES run" and row["rel-L2"] == "–"
            continue
        assert_cell(row["rel-L2"], [source(analysis[m][s])["rel_l2"] for s in SEEDS])
        for t in taus:
            assert_cell(row[f"s_τ {t} (%)"], [source(analysis[m][s])["sparsity"][t] for s in SEEDS], 100)
    views = [(r["method"], r["view"]) for r in main if r["method"] in analysis]
    assert views == [
        ("es", "stored"),
        ("es", "bf16"),
        ("es", "random-walk null"),
        ("grpo", "stored"),
        ("grpo", "bf16"),
        ("grpo", "random-walk null"),
        ("es_permuted", "stored"),
        ("es_permuted", "bf16"),
        ("es_permuted", "random-walk null"),
    ]
    ratio = re.search(r"rel-L2 ratio es / grpo \(paired by seed\): (\S+ ± \S+)", text).group(1)
    assert_cell(ratio, [analysis["es"][s]["rel_l2"] / analysis["grpo"][s]["rel_l2"] for s in SEEDS])
    assert [r["method"] for r in kinds] == [
        "es",
        "es (null: parameter share)",
        "grpo",
        "es_permuted",
        "es_permuted (null: parameter share)",
        "parameter share (%)",
    ]
    for row in kinds:
        for kind in ("norm", "embedding", "mlp", "attention"):
            if row["method"] == "parameter share (%)":
                assert_cell(row[kind], [analysis["es"][0]["null"]["top_k_enrichment"][kind]["share"]], 100)
                continue
            if row["method"].endswith(" (null: parameter share)"):
                m = row["method"].split(" ")[0]
                assert_cell(row[kind], [analysis[m][s]["null"]["top_k_by_kind"][kind] for s in SEEDS])
                continue
            counts = [analysis[row["method"]][s]["top_k_by_kind"].get(kind) for s in SEEDS]
            if None in counts:
                assert row[kind] == "–"
            else:
                assert_cell(row[kind], counts)
    assert curve[-1]["τ"] == "base"  # every update reverted, scored as the exports
    for row in curve:
        points = [
            analysis["es"][s]["sparsity_curve_base"]
            if row["τ"] == "base"
            else next(p for p in analysis["es"][s]["sparsity_curve"] if f"{p['tau']:g}" == row["τ"])
            for s in SEEDS
        ]
        assert_cell(row["pass@1"], [p["pass@1"] for p in points], 100)
        assert_cell(row["s_tau"], [p["s_tau"] for p in points], 100)


def test_ablation_tables(md, inputs):
    for name, data in inputs["ablations"].items():
        [rows] = tables(section(md, name))
        for row in rows:
            label = row[next(iter(row))]
            if label not in data:
                assert row["runs"] == "0" and row["final reward"] == "–"
                continue
            runs = [data[label][s] for s in SEEDS]
            assert row["runs"] == str(len(SEEDS))
            assert_cell(
                row["final reward"], [np.mean(_series(r["metrics"], "train/reward_mean")[-5:]) for r in runs]
            )
            for k in (1, 16):
                assert_cell(row[f"pass@{k} (%)"], [r["after"][f"pass@{k}"] for r in runs], 100)
            if name == "kappa_pair":
                assert_cell(row["κ_pair"], [np.mean(_series(r["metrics"], "es/kappa_pair")) for r in runs])
                assert row["paper κ_pair"] == {"common": "1.9870", "small_sigma": "0.8194"}[label]
            else:
                assert row["κ_pair"] == "–"


def test_claims_quote_the_numbers_they_judge(md, inputs, synthetic_report):
    families, rows = tables(section(md, "The honest reading"))  # Holm's families, then the claims
    assert {f["family"] for f in families} >= {"grpo", "es_mechanism"}
    by_claim = {r["claim"]: r for r in rows}
    grpo = by_claim["GRPO raises Pass@1"]
    estimate, bounds = re.search(r"= (\S+) \[(.+)\]", grpo["measured here"]).groups()
    pooled = np.mean(final_pass(inputs, "grpo", 1)) - np.mean(final_pass(inputs, "base", 1))
    assert_cell(estimate, [pooled], 100)
    low = float(bounds.split(", ")[0])
    assert grpo["verdict"] == ("**reproduced**" if low > 0 else grpo["verdict"])
    assert low > 0 and grpo["verdict"] == "**reproduced**"  # +21 points over 60 problems × 3 seeds
    assert by_claim["κ_pair kappa_pair/small_sigma on the paper's side of 2"]["verdict"] == "**reproduced**"
    # synthetic κ 2.1–2.2 against the paper's 1.987 (< 2): on the other side of 2
    assert by_claim["κ_pair kappa_pair/common on the paper's side of 2"]["verdict"] == "**not reproduced**"
    assert by_claim["A larger population reaches a higher reward"]["measured here"].startswith(
        "final reward 16 − 8 = "
    )
    # ES (Pass@1 0.62) beat the base and its permuted control (0.45): the ES-relative claims are judged
    assert synthetic_report["report"]["premise"]["verdict"] == "ES learned"
    assert "Verdict: **ES learned**." in section(md, "ES's premise")
    for name in (
        "ES keeps its entropy (against its permuted control)",
        "ES drifts further than GRPO (rel-L2)",
        "Most ES updates are tiny",
    ):
        assert not by_claim[name]["verdict"].startswith(("**vacuous", "**insufficient")), name
    # GRPO's 10 updates with its update-5 checkpoint: the pipelines (5 + 5) are judged on that path
    sequential = by_claim["es_then_grpo is non-dominated by GRPO's trajectory (Pass@1 vs Pass@16)"]
    assert "GRPO at update 5" in sequential["measured here"]
    assert not sequential["verdict"].startswith("**insufficient")
    for claim in synthetic_report["report"]["claims"]:
        assert category(claim["verdict"]) in CATEGORIES, claim


def _numbers(data: Any) -> list[float]:
    if isinstance(data, dict):
        return [x for v in data.values() for x in _numbers(v)]
    if isinstance(data, list):
        return [x for v in data for x in _numbers(v)]
    if isinstance(data, int | float) and not isinstance(data, bool):
        return [float(data)]
    return []


def test_every_table_number_is_in_report_json(synthetic_report, md):
    saved = json.loads((synthetic_report["dir"] / "report.json").read_text())
    known = np.array(sorted(set(_numbers(saved))))
    pattern = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
    checked = 0
    for table in tables(md):
        for row in table:
            for header, cell in row.items():
                if header in ("τ", "run", "claim", "paper") or not re.fullmatch(
                    r"[-+]?[\d.]+(e[-+]?\d+)?( ± [\d.]+(e[-+]?\d+)?)?", cell
                ):
                    continue
                for token in pattern.findall(cell):
                    value = float(token)
                    tol = _tolerance(token)
                    assert np.any(np.abs(known - value) <= tol) or np.any(
                        np.abs(100 * known - value) <= tol
                    ), (header, cell)
                    checked += 1
    assert checked > 300


def test_figures_are_valid_pngs(synthetic_report):
    from matplotlib.image import imread

    report = synthetic_report["report"]
    expected = [
        "pass_at_k.png",
        "pareto_pass1_pass16.png",
        "pareto_pass1_pass32.png",
        "entropy.png",
        "heldout.png",
        "drift.png",
        "ablations.png",
    ]
    assert sorted(report["figures"]) == sorted(expected) and report["skipped_figures"] == {}
    for name in expected:
        path = synthetic_report["dir"] / name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        image = imread(path)
        assert image.shape[0] > 200 and image.shape[1] > 200
        assert image.std() > 0.01  # not blank


def test_absent_inputs_skip_figures_and_say_so(tmp_path):
    rng = np.random.default_rng(0)
    evaluation = {TASK: summary(0.5, rng)}
    for k in (32, 16):  # evaluated with M = 8: no Pass@16 or Pass@32
        evaluation[TASK].pop(f"pass@{k}")
    for k in range(9, 32):
        evaluation[TASK].pop(f"pass@{k}", None)
    write_single(
        tmp_path / "runs" / "es" / "seed0",
        evaluation[TASK],
        evaluation[TASK],
        [{"step": 1, "train/reward_mean": 0.5}],
    )
    report = run_report(
        methods={"es": "es.yaml"}, output_dir=tmp_path, seeds=1, drift=DriftSettings(enabled=False)
    )
    assert list(report["figures"]) == ["pass_at_k.png"]
    for name in (
        "pareto_pass1_pass16.png",
        "pareto_pass1_pass32.png",
        "entropy.png",
        "heldout.png",
        "drift.png",
        "ablations.png",
    ):
        assert name in report["skipped_figures"]
        assert not (tmp_path / name).exists()
    text = (tmp_path / "REPORT.md").read_text()
    assert "*`entropy.png` not drawn: no run logged entropy/<task>.*" in text
    assert "1 seed per method" in text and "Command:" not in text


def test_trajectory_table(md, inputs):
    [rows] = tables(section(md, "GRPO's trajectory"))
    assert [(r["update"], r["point"]) for r in rows] == [("0", "base"), ("5", "grpo@5"), ("10", "grpo")]
    for row in rows:
        pooled = np.mean(
            [np.mean(inputs["counts"][row["point"]][s]) / 32 for s in SEEDS]
        )  # Pass@1 = mean c/M
        assert_cell(row["pass@1"].split(" [")[0], [pooled], 100)


def test_compute_table(md):
    [rows] = tables(section(md, "Compute per method"))
    assert {r["method"] for r in rows} == set(PASS1)
    assert all(r["training seconds"] == "not recorded" for r in rows)  # the synthetic runs log no time/step


def test_report_json_keeps_the_per_seed_inputs(synthetic_report, inputs):
    saved = json.loads(Path(synthetic_report["dir"] / "report.json").read_text())
    for method in PASS1:
        for k in KS:
            assert saved["evaluations"]["pass_at_k"][method][str(k)]["values"] == pytest.approx(
                final_pass(inputs, method, k), abs=1e-12
            )
    assert saved["config"]["seeds"] == SEEDS


def test_outcomes_keep_each_evaluations_greedy_answers_per_problem(synthetic_report, inputs):
    outcomes = synthetic_report["report"]["outcomes"]
    for method in [m for m in PASS1 if m != "es_permuted"]:  # es_permuted's evaluations had no greedy pass
        for seed in SEEDS:
            want = greedy_of(inputs["counts"][method][seed]).tolist()
            assert outcomes["greedy"][method][str(seed)] == want, (method, seed)
    assert [outcomes["greedy"]["base"][str(s)] for s in SEEDS] == [
        greedy_of(inputs["counts"]["base"][s]).tolist() for s in SEEDS
    ]  # each seed's first run's evaluation of the start
    assert "es_permuted" not in outcomes["greedy"] and "grpo@5" not in outcomes["greedy"]
