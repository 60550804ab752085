"""Every recipe resolves to its golden configuration, and the single-strategy recipes stay short.

The golden files (``tests/assets/recipes_resolved/<name>.yaml``) are what ``es-lightning <command>
--config recipes/<name>.yaml --print_config`` printed when they were written: a recipe rewritten
with named protocols and instrument sets must resolve to exactly the same settings. After a
deliberate change of a recipe or of a default, regenerate the file and review its diff::

    python -m tests.assets.recipes_resolved.regenerate NAME
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import yaml

from tests.assets.recipes_resolved.regenerate import REGENERATE, Resolver, golden_path, recipe_names
from tests.helpers import REPO

MAX_LINES = 45
"""The most lines of a single-strategy recipe, its header comment (launch command) included."""
LENGTH_EXEMPT: tuple[str, ...] = ()
"""Recipe name prefixes kept at their own length (none)."""


@pytest.fixture(scope="module")
def resolver() -> Resolver:
    return Resolver()


def differences(got: Any, want: Any, key: str = "") -> list[str]:
    """The keys (dotted, ``[i]`` for list items) where ``got`` and ``want`` differ, with both values."""
    if isinstance(got, dict) and isinstance(want, dict):
        return [
            line
            for k in sorted(set(got) | set(want), key=str)
            for line in differences(got.get(k, "<absent>"), want.get(k, "<absent>"), f"{key}.{k}".lstrip("."))
        ]
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [line for i, (g, w) in enumerate(zip(got, want)) for line in differences(g, w, f"{key}[{i}]")]
    return [] if got == want else [f"{key or '<top>'}: {got!r} (golden: {want!r})"]


def test_differences_names_each_changed_key():
    want = {"a": {"b": 1, "c": [1, 2]}, "d": None}
    assert differences(want, want) == []
    got = {"a": {"b": 2, "c": [1, 3]}, "e": 0}
    assert differences(got, want) == [
        "a.b: 2 (golden: 1)",
        "a.c[1]: 3 (golden: 2)",
        "d: '<absent>' (golden: None)",
        "e: 0 (golden: '<absent>')",
    ]


@pytest.mark.parametrize("name", recipe_names())
def test_recipe_resolves_to_its_golden_configuration(name: str, resolver: Resolver):
    golden = golden_path(name)
    assert golden.is_file(), (
        f"no golden file for recipes/{name}.yaml; write it: {REGENERATE.format(name=name)}"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = yaml.safe_load(resolver.resolve(REPO / "recipes" / f"{name}.yaml"))
    diff = differences(got, yaml.safe_load(golden.read_text()))
    assert not diff, (
        f"recipes/{name}.yaml no longer resolves to {golden.relative_to(REPO)}:\n  "
        + "\n  ".join(diff)
        + f"\nif the change is meant, regenerate: {REGENERATE.format(name=name)}"
    )


def test_every_golden_file_has_its_recipe():
    goldens = {p.stem for p in golden_path("x").parent.glob("*.yaml")}
    assert goldens - set(recipe_names()) == set(), "golden files of deleted recipes: remove them"


def single_strategy_recipes() -> list[str]:
    """The ``fit`` recipes with one ``strategy`` (not ``stages``), but the exempt ones."""
    recipes = {name: REPO / "recipes" / f"{name}.yaml" for name in recipe_names()}
    return [
        name
        for name, path in recipes.items()
        if not name.startswith(LENGTH_EXEMPT) and "strategy" in (yaml.safe_load(path.read_text()) or {})
    ]


@pytest.mark.parametrize("name", single_strategy_recipes())
def test_single_strategy_recipe_reads_in_one_screen(name: str):
    lines = (REPO / "recipes" / f"{name}.yaml").read_text().splitlines()
    assert len(lines) <= MAX_LINES, (
        f"recipes/{name}.yaml has {len(lines)} lines (at most {MAX_LINES}): name its parts "
        "(evaluation: paper, callbacks: paper_instruments, ...; see es-lightning fit --help)"
    )
