"""The README and docs/ pages: one path to start, links that resolve, and numbers that equal their source.

Facts quoted from a measured source are checked against it: a benchmark value written as
`` `key` = value `` against BENCHMARKS.md, a built-in model's percentages against its model card's
tables, the main job's table against the committed results of ``benchmarks/demo_cpu.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


def test_the_readme_starts_with_install_main_job_and_tests_within_40_lines():
    head = "\n".join((REPO / "README.md").read_text().splitlines()[:40])
    assert "bash install.sh" in head
    assert "es-lightning fit --config recipes/demo_cpu.yaml" in head
    assert ".venv/bin/python -m pytest -q" in head


def test_the_readme_test_command_is_the_one_ci_runs():
    ci = (REPO / ".ci" / "run").read_text()
    assert "install.sh cpu" in ci and ".venv/bin/python -m pytest -q" in ci


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+://", target) or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target} (no {file})")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no heading #{anchor} in {file.name})")
    assert not broken, f"{page.name}: {broken}"


def benchmark_values() -> dict[str, float]:
    """``{key: value}`` of BENCHMARKS.md's result table (first numeric cell after the key)."""
    values = {}
    for key, cell in re.findall(r"^\| `(\w+)` \| ([-\d.e]+)", (REPO / "BENCHMARKS.md").read_text(), re.M):
        values[key] = float(cell)
    return values


def test_benchmark_numbers_quoted_in_the_docs_equal_benchmarks_md():
    measured = benchmark_values()
    quoted = [(p.name, k, v) for p in PAGES for k, v in re.findall(r"`(\w+)` = ([\d.]+)", p.read_text())]
    assert quoted, "the docs quote no benchmark value"
    wrong = [
        (page, key, value, measured.get(key))
        for page, key, value in quoted
        if measured.get(key) != float(value)
    ]
    assert not wrong, f"quoted benchmark values differ from BENCHMARKS.md: {wrong}"


def card_percentages(model: str) -> set[str]:
    """Every measured number in the model card (fractions such as 0.360 and percentages such as
    81.4%), written as a percentage with one decimal and rounded to an integer."""
    card = (REPO / "es_lightning" / "models" / "assets" / model / "TRAINING.md").read_text()
    percents = [100 * float(c) for c in re.findall(r"(?<![\d.])(0\.\d+|1\.0+)(?![\d.])", card)]
    percents += [float(c) for c in re.findall(r"(\d+(?:\.\d+)?)%", card)]
    return {f"{p:.1f}%" for p in percents} | {f"{p:.0f}%" for p in percents}


@pytest.mark.parametrize("model", ["tiny-arithmetic", "tiny-countdown", "tiny-countdown-arithmetic"])
def test_built_in_model_numbers_equal_their_model_cards(model: str):
    text = (REPO / "docs" / "models.md").read_text()
    entry = text.split(f"- `es-lightning/{model}`:", 1)[1].split("\n- `", 1)[0]
    quoted = re.findall(r"\d+(?:\.\d)?%", entry)
    assert quoted, f"docs/models.md quotes no number for {model}"
    missing = sorted(set(quoted) - card_percentages(model))
    assert not missing, (
        f"docs/models.md quotes {missing} for {model}, which its model card's tables do not hold"
    )


DEMO_LABELS = {
    "demo_cpu": "`demo_cpu.yaml` (ES)",
    "demo_cpu_permuted": "`demo_cpu.yaml --strategy.init_args.reward_control permuted` (ES's null)",
    "demo_cpu_grpo": "`demo_cpu_grpo.yaml` (GRPO)",
    "demo_cpu_es_then_grpo": "`demo_cpu_es_then_grpo.yaml`",
    "demo_cpu_grpo_then_es": "`demo_cpu_grpo_then_es.yaml`",
}
DEMO_COLUMNS = ("pass@1", "pass@2", "pass@4", "pass@16", "greedy")


def _cells(summary: dict) -> list[str]:
    return [f"{100 * summary[k]:.1f}%" for k in DEMO_COLUMNS]


def test_the_main_job_table_equals_the_committed_demo_results():
    results = json.loads((REPO / "docs" / "demo_cpu" / "results.json").read_text())["runs"]
    section = (REPO / "README.md").read_text().split("### What you should see\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 1 + len(DEMO_COLUMNS) and cells[0] not in ("run", "---"):
            rows[cells[0]] = cells[1:]
    expected = {"starting model": _cells(results["demo_cpu"]["before"])}
    expected |= {DEMO_LABELS[name]: _cells(run["after"]) for name, run in results.items()}
    assert rows == expected
    starts = {tuple(_cells(run["before"])) for run in results.values()}
    assert len(starts) == 1, "every demo run starts from the same evaluation of the same model"
