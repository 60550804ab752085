"""``es-lightning fit --strategy.help <strategy>``: each strategy's options, their order, types,
defaults and documentation, as the golden files in ``tests/assets/strategy_help/`` hold them.

The golden text ends after the strategy's own options (``process_group_backend``); the Fabric DDP
and FSDP arguments that GRPO passes through follow and are the installed Lightning's. After a
deliberate change of a setting, regenerate and review the diff::

    python -m tests.strategies.test_strategy_help
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest

from tests.helpers import REPO

GOLDEN_DIR = REPO / "tests" / "assets" / "strategy_help"
STRATEGIES = ("ESStrategy", "GRPOStrategy", "GRPOFSDPStrategy")
WIDTH = "100"
"""The terminal width the help is formatted for (``COLUMNS``)."""
LAST_OWN_OPTION = "  --strategy.process_group_backend"


def strategy_help(name: str) -> str:
    """What ``es-lightning fit --strategy.help <name>`` prints after its usage lines, up to the end
    of the strategy's own options."""
    from es_lightning.training.command import fit_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            fit_parser().parse_args(["--strategy.help", name])
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous
    lines = out.getvalue().splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("Help for ")) :]
    last = next(i for i, line in enumerate(lines) if line.startswith(LAST_OWN_OPTION))
    end = next((i for i in range(last + 1, len(lines)) if lines[i].startswith("  --")), len(lines))
    return "\n".join(lines[:end]).rstrip() + "\n"


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.txt"


@pytest.mark.parametrize("name", STRATEGIES)
def test_strategy_help_is_the_golden_text(name: str):
    got, want = strategy_help(name), golden_path(name).read_text()
    assert got == want, (
        f"fit --strategy.help {name} changed; if that is meant: python -m tests.strategies.test_strategy_help"
    )


def test_the_help_names_every_setting_once():
    text = strategy_help("ESStrategy")
    for option in ("population_size", "sigma", "learning_rate", "lowrank_targets", "process_group_backend"):
        assert text.count(f"  --strategy.{option} ") == 1


if __name__ == "__main__":
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for strategy in STRATEGIES:
        golden_path(strategy).write_text(strategy_help(strategy))
        print(f"wrote {golden_path(strategy).relative_to(REPO)}")
