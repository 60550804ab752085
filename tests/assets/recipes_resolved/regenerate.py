"""Write the resolved configuration of each recipe in ``recipes/`` beside this file.

Each ``<name>.yaml`` here is what ``es-lightning <command> --config recipes/<name>.yaml
--print_config`` prints: the recipe with every default filled in, every short name expanded. The
test ``tests/test_recipes_resolved.py`` checks that each recipe still resolves to its file, so a
rewrite of a recipe (shorter, named protocols and instrument sets) that changes nothing passes, and
one that changes a setting fails, naming the key.

Regenerate after a deliberate change of a recipe or of a default it resolves to (review the diff)::

    python -m tests.assets.recipes_resolved.regenerate                   # every recipe
    python -m tests.assets.recipes_resolved.regenerate coverage_cpu_es   # only the named ones

The command is chosen by the recipe's prefix (:data:`COMMAND_BY_PREFIX`; everything else is a
``fit`` recipe); parsing only resolves names and types, no model or data is loaded.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
RECIPES = REPO / "recipes"
GOLDEN_DIR = Path(__file__).resolve().parent
COMMAND_BY_PREFIX = {"eval_": "evaluate", "report_": "report", "tune_": "tune"}
"""Recipe name prefix -> the command whose parser reads it; other recipes are ``fit``'s."""
HEADER = "# {command} --config recipes/{name}.yaml, resolved; regenerate: {regenerate}\n"
REGENERATE = "python -m tests.assets.recipes_resolved.regenerate {name}"


def command_of(name: str) -> str:
    """The ``es-lightning`` subcommand that reads ``recipes/<name>.yaml``."""
    return next((cmd for prefix, cmd in COMMAND_BY_PREFIX.items() if name.startswith(prefix)), "fit")


def _parser_factories() -> dict[str, Callable[[], Any]]:
    from es_lightning.evaluation.command import evaluate_parser
    from es_lightning.report.command import report_parser
    from es_lightning.training.command import fit_parser
    from es_lightning.tune.command import tune_parser

    return {"fit": fit_parser, "evaluate": evaluate_parser, "report": report_parser, "tune": tune_parser}


class Resolver:
    """Resolves recipes with each command's parser, built once on first use."""

    def __init__(self) -> None:
        self._factories = _parser_factories()
        self._parsers: dict[str, Any] = {}

    def resolve(self, recipe: Path) -> str:
        """The YAML ``--print_config`` prints for ``recipe`` (no header)."""
        import es_lightning.strategies  # noqa: F401  (as the command does: registers `es` with Fabric)

        command = command_of(recipe.stem)
        if command not in self._parsers:
            self._parsers[command] = self._factories[command]()
        parser = self._parsers[command]
        cfg = parser.parse_args(["--config", str(recipe)])
        return parser.dump(cfg, skip_unset=False)


def recipe_names() -> list[str]:
    """Every recipe in ``recipes/``, by name (file stem), sorted."""
    return sorted(p.stem for p in RECIPES.glob("*.yaml"))


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.yaml"


def write_golden(name: str, resolver: Resolver) -> Path:
    """Resolve ``recipes/<name>.yaml`` and write it, with a header, to :func:`golden_path`."""
    recipe = RECIPES / f"{name}.yaml"
    if not recipe.is_file():
        raise SystemExit(f"regenerate: no recipe {recipe}; known: {', '.join(recipe_names())}")
    header = HEADER.format(
        command=f"es-lightning {command_of(name)}", name=name, regenerate=REGENERATE.format(name=name)
    )
    path = golden_path(name)
    path.write_text(header + resolver.resolve(recipe))
    return path


def main(names: Sequence[str]) -> None:
    """Write the golden file of each recipe in ``names`` (every recipe when empty)."""
    import warnings

    warnings.filterwarnings("ignore", module="jsonargparse")
    resolver = Resolver()
    for name in [n.removesuffix(".yaml").removeprefix("recipes/") for n in names] or recipe_names():
        print(write_golden(name, resolver).relative_to(REPO))


if __name__ == "__main__":
    main(sys.argv[1:])
