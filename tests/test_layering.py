"""Imports run one way: the import graph of ``es_lightning/`` and ``callbacks/`` (installed as
``es_lightning.callbacks``) has no cycle and never goes from a lower layer to a higher one.

Every import counts: at module level, inside functions and under ``TYPE_CHECKING``. A layer may
import from the layers below it and from itself; a module belongs to the layer of its subpackage
(``es_lightning.rollout.vllm.engine``: ``es_lightning.rollout``).
"""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from tests.helpers import REPO

LAYERS = (
    (
        "es_lightning.errors",
        "es_lightning.checked",
        "es_lightning.console",
        "es_lightning.init_args",
        "es_lightning.ranks",
    ),  # errors; settings that carry their own check; console lines and warnings; recorded constructor arguments; ranks
    (
        "es_lightning.weight_files",
        "es_lightning.checkpoint_manifest",
        "es_lightning.checkpoint_space",
        "es_lightning.sandbox",
    ),  # weights on disk by name; checkpoint manifests and disk space; the code sandbox
    ("es_lightning.es", "es_lightning.grpo", "es_lightning.tasks"),  # the algorithms' math; tasks, verifiers
    ("es_lightning.models", "es_lightning.checkpoint"),  # model sources and loading; checkpoint layout
    ("es_lightning.rollout",),  # generation engines (transformers, vLLM), in-engine ES
    (
        "es_lightning.module",
        "es_lightning.cli_hints",
        "es_lightning.recipe_files",
    ),  # model + task + prompt format; command parsers; recipe files checked before parsing
    ("es_lightning.evaluation", "es_lightning.presets"),  # Pass@K evaluation, ``evaluate``; presets by name
    ("es_lightning.strategies",),  # ES and GRPO as Fabric strategies
    ("es_lightning.training",),  # the trainer, its hook contract and the ``fit`` command
    ("es_lightning.analysis",),  # drift and sparsity analysis
    ("es_lightning.callbacks",),  # the built-in callbacks (the top-level callbacks/ folder)
    ("es_lightning.report",),  # the coverage study
    ("es_lightning.tune",),  # settings chosen on the validation split (runs launched as the report's)
    ("es_lightning.cli", "es_lightning.__main__", "es_lightning"),  # the command line; the lazy names
)
LAYER = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}


def modules() -> dict[str, Path]:
    """``{module name: path}`` of every module of the package and of the callbacks folder."""
    found = {}
    for folder, package in (
        (REPO / "es_lightning", "es_lightning"),
        (REPO / "callbacks", "es_lightning.callbacks"),
    ):
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            found[".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return found


def import_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    """``{module: the modules of ``found`` it imports}`` (``from pkg import submodule`` names the submodule)."""
    graph = {}
    for name, path in found.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{name}: use absolute imports"
                wanted = [
                    f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in found else node.module
                    for a in node.names
                ]
            else:
                continue
            for target in wanted:
                while target and target not in found:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def layer_of(module: str) -> int:
    room = ".".join(module.split(".")[:2])  # es_lightning.rollout.vllm.engine -> es_lightning.rollout
    assert room in LAYER, f"{module}: add {room} to LAYERS"
    return LAYER[room]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() for b in targets if layer_of(b) > layer_of(a))


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle ``[a, b, ..., a]`` (a imports b ...), or ``None``."""
    try:
        TopologicalSorter(graph).prepare()  # graph: {node: what must come before it}
    except CycleError as err:
        return err.args[1][::-1]
    return None


def test_no_import_goes_up_a_layer():
    upward = upward_imports(import_graph(modules()))
    assert not upward, "imports that go up a layer:\n" + "\n".join(upward)


def test_the_import_graph_has_no_cycle():
    cycle = find_cycle(import_graph(modules()))
    assert cycle is None, "an import cycle: " + " -> ".join(cycle or [])


def test_the_checks_see_an_upward_import_and_a_cycle():
    graph = {"es_lightning.errors": {"es_lightning.cli"}, "es_lightning.cli": {"es_lightning.errors"}}
    assert upward_imports(graph) == ["es_lightning.errors -> es_lightning.cli"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) in (
        ["a", "b", "c", "a"],
        ["b", "c", "a", "b"],
        ["c", "a", "b", "c"],
    )
    assert find_cycle({"a": {"b"}, "b": set()}) is None
