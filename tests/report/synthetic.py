"""Synthetic run folders in the formats ``es-lightning fit`` and ``es-lightning analyze`` write.

Every number is drawn from a seeded generator and returned, so tests can compare the report
against the inputs without reading the folders back through the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from es_lightning.evaluation.pass_at_k import pass_at_k_curve

TASK = "arithmetic"
KS = list(range(1, 33))


def summary(pass1: float, rng: np.random.Generator) -> dict[str, float]:
    """An ``eval/*.json`` task summary: pass@1..32 rising from ``pass1``, maj@k, greedy."""
    curve = {k: min(1.0, 1 - (1 - pass1) ** (k**0.6) + 0.01 * rng.random()) for k in KS}
    curve[1] = pass1
    out = {"n_prompts": 50.0, "n_samples": 32.0, "mean_reward": pass1}
    out.update({f"pass@{k}": v for k, v in curve.items()})
    out.update({f"maj@{k}": pass1 for k in (1, 16, 32)})
    out["greedy"] = min(1.0, pass1 + 0.1)
    return out


def counts_summary(counts: np.ndarray, m: int = 32) -> dict[str, float]:
    """An ``eval/*.json`` task summary computed from per-problem correct counts (as summarize does)."""
    curve = pass_at_k_curve([int(c) for c in counts], m)
    out = {"n_prompts": float(len(counts)), "n_samples": float(m), "mean_reward": float(np.mean(counts) / m)}
    out.update({f"pass@{k}": v for k, v in curve.items()})
    out["greedy"] = float(np.mean(greedy_of(counts, m)))
    return out


def greedy_of(counts: np.ndarray, m: int = 32) -> np.ndarray:
    """The synthetic evaluations' greedy outcome per problem: 1 where more than half the samples are
    correct (as :func:`counts_summary`'s ``greedy``)."""
    return (np.asarray(counts) > m / 2).astype(int)


def draw_counts(p: np.ndarray, rng: np.random.Generator, m: int = 32) -> np.ndarray:
    """Correct counts of one evaluation: Binomial(m, p_i) per problem."""
    return rng.binomial(m, p)


def write_outcomes(
    eval_dir: Path,
    tag: str,
    counts: np.ndarray,
    m: int = 32,
    order: list[int] | None = None,
    greedy: np.ndarray | None = None,
) -> Path:
    """``{tag}_{TASK}_completions.jsonl``: problem ``i`` is ``{"question": "q<i>"}`` with ``counts[i]``
    rewards of 1 among its ``m`` (in the order ``order``, default 0..P−1), and with ``greedy`` a
    greedy answer whose reward is ``greedy[i]``."""
    rows = []
    for i in order if order is not None else range(len(counts)):
        rewards = [1.0] * int(counts[i]) + [0.0] * (m - int(counts[i]))
        row = {"question": f"q{i}", "completions": ["x"] * m, "rewards": rewards}
        if greedy is not None:
            row |= {"greedy": "g", "greedy_reward": float(greedy[i])}
        rows.append(json.dumps(row))
    path = Path(eval_dir) / f"{tag}_{TASK}_completions.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n")
    return path


def write_single(
    run_dir: Path,
    before: dict | None,
    after: dict | None,
    metrics: list[dict[str, Any]],
    model: str = "es-lightning/tiny-arithmetic",
    max_steps: int = 10,
    before_counts: np.ndarray | None = None,
    after_counts: np.ndarray | None = None,
    greedy: bool = False,
) -> None:
    """A single run folder: config.yaml, metrics.jsonl, eval/before.json, eval/after.json, a checkpoint
    (and the evaluations' completions with rewards when their counts are given; with ``greedy`` a
    greedy answer per problem, correct where more than half the samples are: :func:`greedy_of`)."""
    (run_dir / "eval").mkdir(parents=True, exist_ok=True)
    for tag, counts in (("before", before_counts), ("after", after_counts)):
        if counts is not None:
            write_outcomes(run_dir / "eval", tag, counts, greedy=greedy_of(counts) if greedy else None)
    (run_dir / "config.yaml").write_text(f"module:\n  model: {model}\ntrainer:\n  max_steps: {max_steps}\n")
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    if before is not None:
        (run_dir / "eval" / "before.json").write_text(json.dumps({TASK: before}))
    if after is not None:
        (run_dir / "eval" / "after.json").write_text(json.dumps({TASK: after}))
    step = max((m["step"] for m in metrics), default=0)
    checkpoint = run_dir / "checkpoints" / f"step-{step:06d}"
    checkpoint.mkdir(parents=True, exist_ok=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"step": step}))
    (run_dir / "checkpoints" / "latest").write_text(checkpoint.name)


def training_metrics(
    rng: np.random.Generator, steps: int, entropy_slope: float, kappa: float | None = None
) -> list[dict]:
    """``metrics.jsonl`` records: reward, entropy, held-out Pass@k, drift every step."""
    records = []
    for t in range(1, steps + 1):
        record = {
            "step": t,
            "train/reward_mean": 0.4 + 0.02 * t + 0.01 * rng.random(),
            f"entropy/{TASK}": 1.0 + entropy_slope * t + 0.01 * rng.random(),
            f"heldout/{TASK}/pass@1": 0.3 + 0.01 * t + 0.01 * rng.random(),
            f"heldout/{TASK}/pass@16": 0.8 + 0.005 * t + 0.01 * rng.random(),
            "drift/rel_l2": 1e-4 * t * (1 + rng.random()),
        }
        if kappa is not None:
            record["es/kappa_pair"] = kappa + 0.1 * rng.random()
        records.append(record)
        if t == steps:
            records.append({"step": t, f"eval/{TASK}/pass@1": 0.5})  # an evaluation line at the same step
    return records


def write_pipeline(
    run_dir: Path,
    names: list[str],
    updates: list[int],
    before: dict,
    after: dict,
    stage_metrics: list[list[dict]],
    before_counts: np.ndarray | None = None,
    after_counts: np.ndarray | None = None,
    greedy: bool = False,
) -> None:
    """A pipeline folder: pipeline.json and one single-run folder per stage."""
    run_dir.mkdir(parents=True, exist_ok=True)
    stages = [
        {"name": n, "updates": u, "output_dir": str(run_dir / f"stage{i + 1}_{n}")}
        for i, (n, u) in enumerate(zip(names, updates))
    ]
    (run_dir / "pipeline.json").write_text(json.dumps({"pipeline": "_then_".join(names), "stages": stages}))
    (run_dir / "config.yaml").write_text("module:\n  model: es-lightning/tiny-arithmetic\n")
    for i, (stage, metrics) in enumerate(zip(stages, stage_metrics)):
        last = i == len(stages) - 1
        mid = summary(0.5, np.random.default_rng(i))
        write_single(
            Path(stage["output_dir"]),
            before if i == 0 else None,
            after if last else mid,
            metrics,
            before_counts=before_counts if i == 0 else None,
            after_counts=after_counts if last else None,
            greedy=greedy,
        )


def write_analysis(
    path: Path, rng: np.random.Generator, scale: float, top_kind: str, curve: bool = False, null: bool = False
) -> dict:
    """An ``es-lightning analyze`` output (with the random-walk null block of an ES run when ``null``)."""
    taus = ["0.0001", "0.0005", "0.001", "0.0015", "0.005"]
    data = {
        "rel_l2": scale * (1 + 0.2 * rng.random()),
        "rel_l2_by_kind": {"attention": scale * rng.random(), "mlp": scale * rng.random()},
        "nonzero": 1000,
        "sparsity": {t: min(1.0, 0.5 + 0.1 * i + 0.05 * rng.random()) for i, t in enumerate(taus)},
        "top_k": [
            {"name": "model.layers.0.input_layernorm.weight", "kind": top_kind, "layer": 0, "abs_delta": 0.1}
        ],
        "top_k_by_kind": {top_kind: 60 + int(10 * rng.random()), "mlp": 30, "attention": 10},
        "bf16": {
            "rel_l2": scale * (1.1 + 0.1 * rng.random()),
            "sparsity": {t: min(1.0, 0.4 + 0.1 * i + 0.05 * rng.random()) for i, t in enumerate(taus)},
            "null": {"modelled": False, "reason": "not modelled: bf16"},
        },
    }
    if null:  # as es-lightning analyze writes it for an ES run (es_lightning/analysis/null.py)
        shares = {"attention": 0.3, "mlp": 0.6, "norm": 0.01, "embedding": 0.09}
        data["null"] = {
            "modelled": True,
            "variance_source": "closed form: T_applied·α²/N·c",
            "rel_l2": scale * (0.9 + 0.2 * rng.random()),
            "sparsity": {t: min(1.0, 0.45 + 0.1 * i) for i, t in enumerate(taus)},
            "top_k_by_kind": {kind: 100 * share for kind, share in shares.items()},
            "top_k_enrichment": {
                kind: {"share": share, "expected": 100 * share} for kind, share in shares.items()
            },
        }
    else:
        data["null"] = {"modelled": False, "reason": "n/a: not an ES run"}
    if curve:
        data["sparsity_curve"] = [{"tau": 0.0, "s_tau": 0.0, "pass@1": 0.62}] + [
            {"tau": float(t), "s_tau": data["sparsity"][t], "pass@1": 0.6 - 0.05 * i}
            for i, t in enumerate(taus[:3])
        ]
        data["sparsity_curve_base"] = {"tau": None, "base": True, "s_tau": 1.0, "pass@1": 0.5}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return data


PATH_DEPENDENT = ("command", "runs", "failures", "config", "figures", "skipped_figures")
"""report.json keys that name the report's folder or its run records (not its numbers)."""


def assert_same_report(first: dict[str, Any], second: dict[str, Any]) -> None:
    """Two reports of the same runs in two folders hold the same numbers, outcomes and verdicts."""
    assert {k for k in first if k not in PATH_DEPENDENT} == {k for k in second if k not in PATH_DEPENDENT}
    for key in first:
        if key not in PATH_DEPENDENT:
            assert first[key] == second[key], key
    config = [{k: v for k, v in r["config"].items() if k != "output_dir"} for r in (first, second)]
    assert config[0] == config[1]
