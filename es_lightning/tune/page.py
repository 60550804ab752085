"""``TUNE.md``: the rule, then per method a table of its configurations and the one chosen,
rendered from ``tune.json`` alone."""

from __future__ import annotations

from typing import Any

COMPUTE_COLUMNS = (
    ("rollouts", "rollouts", ".0f"),
    ("generated_tokens", "tokens", ".0f"),
    ("wall_seconds", "wall s", ".0f"),
    ("peak_rss_mb", "peak RSS MiB", ".0f"),
)


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _method_table(method: str, summary: dict[str, Any], trials: list[dict[str, Any]]) -> list[str]:
    parameters = list(summary["grid"])
    chosen = (summary.get("chosen") or {}).get("label")
    paired = any("control" in c for c in summary["candidates"])  # over_control: scored against a control
    header = [
        "configuration",
        *parameters,
        "control after" if paired else "before",
        "after",
        "score (after − control's)" if paired else "Δ (score)",
        "score's one-sided 95% bounds" if paired else "Δ one-sided 95% bounds",
        "beats its control" if paired else "learned",
        *(c[1] for c in COMPUTE_COLUMNS),
        "trials",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for candidate in summary["candidates"]:
        runs = [t for t in trials if t["method"] == method and t["label"] == candidate["label"]]
        finished = [t for t in runs if t["before"] is not None]
        label = f"**{candidate['label']}** (chosen)" if candidate["label"] == chosen else candidate["label"]
        cells = [label, *(str(candidate["settings"][p]) for p in parameters)]
        if "control" in candidate:
            twins = [t for t in trials if t["method"] == method and t["label"] == candidate["control"]]
            reference = [t["after"] for t in twins if t["after"] is not None]
        else:
            reference = [t["before"] for t in finished]
        cells += [_number(_mean(reference), ".3f"), _number(_mean([t["after"] for t in finished]), ".3f")]
        cells.append(_number(candidate["score"], "+.3f"))
        interval = candidate.get("delta_interval")
        cells.append("-" if not interval else f"[{interval['low']:+.3f}, {interval['high']:+.3f}]")
        learned = candidate.get("learned")
        cells.append("-" if learned is None else ("yes" if learned else "no"))
        cells += [
            _number(_mean([t["compute"].get(key) for t in runs]), spec) for key, _, spec in COMPUTE_COLUMNS
        ]
        cells.append(", ".join(f"seed {t['seed']}: {t['status']}" for t in runs))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _learning_note(method: str, summary: dict[str, Any]) -> list[str]:
    """Whether any configuration learned on validation (its Δ's lower bound above 0)."""
    learned = [c.get("learned") for c in summary["candidates"]]
    if not learned or any(v is None for v in learned):
        return []
    if any(learned):
        names = [c["label"] for c in summary["candidates"] if c.get("learned")]
        return [f"Learned on validation (Δ's one-sided 95% lower bound above 0): {', '.join(names)}.", ""]
    return [
        f"**No configuration of {method} learned on validation**: every Δ's one-sided 95% lower bound "
        "(paired bootstrap over validation problems, pooled over seeds) is at or below 0. The rule still "
        "chooses one; results from it are those of a method that did not learn here.",
        "",
    ]


def _method_section(
    method: str, summary: dict[str, Any], trials: list[dict[str, Any]], trial_callbacks: bool
) -> list[str]:
    """One method's section: its recipe, its configurations' table and what was chosen."""
    lines = [f"## {method}", "", f"Recipe `{summary['recipe']}`."]
    if summary.get("removed_callbacks"):
        why = "they may read the test split" if trial_callbacks else "trial_callbacks: false"
        lines.append(f"Callbacks removed from its trials ({why}): {', '.join(summary['removed_callbacks'])}.")
    lines += ["", *_method_table(method, summary, trials), ""]
    chosen = summary.get("chosen")
    if chosen is None and summary.get("below_min_score") is not None:
        lines += [
            f"Nothing chosen: no configuration's score reached the rule's minimum, "
            f"{summary['below_min_score']:g}.",
            "",
        ]
        return lines
    if chosen is None:
        unfinished = summary.get("unfinished") or []
        lines += [
            f"Not yet chosen: {len(unfinished)} of {len(summary['candidates'])} configurations have not "
            f"finished on every seed ({', '.join(unfinished)}); the rule is applied to the whole grid only.",
            "",
        ]
        return lines
    lines += _learning_note(method, summary)
    lines += [
        f"Chosen: **{chosen['label']}** (score {chosen['score']:+.3f}), i.e. `{' '.join(chosen['overrides'])}`; "
        f"its recipe (the method's recipe, the budget and these values; evaluating the test split): `{chosen['recipe']}`.",
        "",
    ]
    return lines


def render(tune: dict[str, Any]) -> str:
    """The markdown text of ``TUNE.md`` for the content of ``tune.json``."""
    config = tune["config"]
    lines = ["# Tuning on the validation split", ""]
    if tune.get("command"):
        lines += ["```", tune["command"], "```", ""]
    lines += [
        f"**Selection rule** (fixed in the config before any trial ran): {config['selection']['description']}.",
        "",
        f"Every trial: `es-lightning fit` on its method's recipe with `--evaluation.split validation`; "
        f"seeds {config['seeds']}; the same budget for every method: `{' '.join(config['budget']) or '(none)'}`; "
        f"validation evaluation: `{' '.join(config['validation_overrides']) or '(the recipe’s)'}`. "
        "No trial reads a test split.",
        "",
    ]
    for method, summary in tune["methods"].items():
        lines += _method_section(method, summary, tune["trials"], config.get("trial_callbacks", True))
    recipes = {m: s["chosen"]["recipe"] for m, s in tune["methods"].items() if s.get("chosen")}
    if recipes:
        lines += ["## For `es-lightning report`", "", "```yaml", "methods:"]
        lines += [f"  {method}: {recipe}" for method, recipe in recipes.items()]
        lines += ["```", ""]
    failed = [t for t in tune["trials"] if t["status"] in ("failed", "missing")]
    if failed:
        lines += ["## Trials that did not finish", ""]
        lines += [
            f"- {t['method']}/{t['label']}/seed{t['seed']}: {(t['error'] or t['status']).splitlines()[0]}"
            for t in failed
        ]
        lines.append("")
    return "\n".join(lines)
