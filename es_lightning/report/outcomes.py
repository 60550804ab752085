"""Per-problem outcomes: each evaluation's correct counts (rewards ≥ 1 − 1e-9 of ``M``) and greedy
outcomes, read from its saved completions or the summaries' counts files. Problems are identified
by a hash of the row, so methods pair by problem whatever the order.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from es_lightning.evaluation.offline import COMPLETIONS_KEY, GREEDY_KEY, GREEDY_REWARD_KEY, REWARDS_KEY
from es_lightning.evaluation.summary import CORRECT_THRESHOLD
from es_lightning.report.readers import stages

SAMPLE_KEYS = (COMPLETIONS_KEY, REWARDS_KEY, GREEDY_KEY, GREEDY_REWARD_KEY)
COUNTS_SUFFIX = "_counts.json"


@dataclass(frozen=True)
class Outcomes:
    """One evaluation: problem ids, correct counts in the same order, samples per problem."""

    problems: list[str]
    counts: list[int]
    m: int
    greedy: list[int] | None = None
    """Per problem, 1 when its greedy answer was correct (``None``: the evaluation had no greedy pass)."""


def _first_file(folder: Path, names: list[str]) -> Path | None:
    return next((Path(folder) / name for name in names if (Path(folder) / name).is_file()), None)


def completions_file(eval_dir: Path, tag: str, task: str) -> Path | None:
    """``{tag}_{task}_completions.jsonl`` (a run's), else ``{tag}_completions.jsonl`` (evaluate's)."""
    return _first_file(eval_dir, [f"{tag}_{task}_completions.jsonl", f"{tag}_completions.jsonl"])


def counts_name(completions_name: str) -> str:
    """The counts file of a completions file (``after_x_completions.jsonl`` → ``after_x_counts.json``)."""
    if completions_name.endswith("_completions.jsonl"):
        return completions_name.removesuffix("_completions.jsonl") + COUNTS_SUFFIX
    return "counts-" + completions_name.removeprefix("completions-").removesuffix(".jsonl") + ".json"


def counts_file(eval_dir: Path, tag: str, task: str) -> Path | None:
    """``{tag}_{task}_counts.json``, else ``{tag}_counts.json`` (what the summaries keep of them)."""
    return _first_file(eval_dir, [f"{tag}_{task}{COUNTS_SUFFIX}", f"{tag}{COUNTS_SUFFIX}"])


def problem_id(row: dict[str, Any]) -> str:
    """A short hash of the row's content (the sample fields left out)."""
    content = {k: v for k, v in row.items() if k not in SAMPLE_KEYS}
    return hashlib.sha1(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:12]


def correct(reward: Any) -> bool:
    """The evaluation's rule: a reward of at least ``1 − 1e-9`` (``null``, a NaN or inf, is not)."""
    return reward is not None and float(reward) >= CORRECT_THRESHOLD


def read_outcomes(path: Path | None) -> Outcomes | None:
    """The outcomes of a completions file; ``None`` when absent, unreadable or without rewards."""
    if path is None:
        return None
    problems, counts, greedy, seen = [], [], [], {}
    m = None
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            return None
        rewards = row.get(REWARDS_KEY) if isinstance(row, dict) else None
        if not isinstance(rewards, list) or not rewards or (m is not None and len(rewards) != m):
            return None
        m = len(rewards)
        base = problem_id(row)
        seen[base] = seen.get(base, 0) + 1
        problems.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
        counts.append(sum(correct(r) for r in rewards))
        greedy.append(int(correct(row[GREEDY_REWARD_KEY])) if GREEDY_REWARD_KEY in row else None)
    if not m:
        return None
    return Outcomes(problems, counts, m, None if None in greedy else greedy)


def counts_record(outcomes: Outcomes) -> dict[str, Any]:
    """What a counts file holds: ``{"m", "problems", "counts", "greedy"}``."""
    return {"m": outcomes.m} | {key: getattr(outcomes, key) for key in ("problems", "counts", "greedy")}


def read_counts(path: Path | None) -> Outcomes | None:
    """The outcomes a counts file holds; ``None`` when absent, unreadable or inconsistent."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("m"), int) or record["m"] < 1:
        return None
    problems, counts, greedy = record.get("problems"), record.get("counts"), record.get("greedy")
    lists = [x for x in (problems, counts, greedy) if x is not None]
    if problems is None or counts is None:
        return None
    if not all(isinstance(x, list) and len(x) == len(problems) for x in lists):
        return None
    return Outcomes(
        list(problems), [int(c) for c in counts], record["m"], greedy and [int(g) for g in greedy]
    )


def evaluation_outcomes(eval_dir: Path, tag: str, task: str) -> Outcomes | None:
    """The outcomes of evaluation ``tag`` of ``task`` in ``eval_dir``, from completions or counts."""
    found = read_outcomes(completions_file(eval_dir, tag, task))
    return found if found is not None else read_counts(counts_file(eval_dir, tag, task))


def run_outcomes(run_dir: Path, tag: str, task: str) -> Outcomes | None:
    """A run's ``before`` (its first stage's) or ``after`` (its last stage's) outcomes."""
    stage = stages(run_dir)[0 if tag == "before" else -1][0]
    return evaluation_outcomes(stage / "eval", tag, task)


def aligned(outcomes: Outcomes, problems: list[str], m: int) -> list[int] | str:
    """The counts in the order of ``problems``, or why they cannot be (other problems, other M)."""
    if outcomes.m != m:
        return f"{outcomes.m} samples per problem, not {m}"
    where = dict(zip(outcomes.problems, outcomes.counts))
    if set(where) != set(problems):
        return f"other problems ({len(set(where) ^ set(problems))} differ)"
    return [where[p] for p in problems]


def collect_outcomes(
    evaluations: dict[str, dict[int, Outcomes | None]], task: str | None
) -> dict[str, Any] | None:
    """The report's ``outcomes`` block from ``{method: {seed: Outcomes}}`` (``base`` first)."""
    first = next((o for seeds in evaluations.values() for o in seeds.values() if o), None)
    if first is None or task is None:
        return None
    block: dict[str, Any] = {"task": task, "m": first.m, "problems": first.problems}
    block.update(counts={}, greedy={}, missing={})
    for method, seeds in evaluations.items():
        for seed, outcomes in sorted(seeds.items()):
            if outcomes is None:
                block["missing"].setdefault(method, f"seed {seed}: no completions with rewards")
                continue
            counts = aligned(outcomes, first.problems, first.m)
            if isinstance(counts, str):
                block["missing"].setdefault(method, f"seed {seed}: {counts}")
                continue
            block["counts"].setdefault(method, {})[str(seed)] = counts
            if outcomes.greedy is not None:
                where = dict(zip(outcomes.problems, outcomes.greedy))
                block["greedy"].setdefault(method, {})[str(seed)] = [where[p] for p in first.problems]
    return block
