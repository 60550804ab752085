"""A pipeline stage's settings on the command line: ``--stages.<name>.<key> VALUE`` (jsonargparse
addresses only a list's last item), given back as one type-checked ``--stages LIST``::

    es-lightning fit --config recipes/coverage_cpu_es_then_grpo.yaml \\
        --stages.es.strategy.init_args.learning_rate 3.0e-3
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from es_lightning.errors import ConfigError

STAGE_ARG = re.compile(r"^--stages\.(?!init_args\.|class_path)(\w+)\.([A-Za-z_][\w.]*)(?:=(.*))?$", re.DOTALL)
"""``--stages.<name or position>.<dotted key>`` (``=VALUE`` or VALUE as the next token)."""

StageArg = tuple[str, str, str]
"""``(stage name or position, dotted key, value as given)``."""


def split_stage_args(args: list[str]) -> tuple[list[str], list[StageArg]]:
    """``args`` without the ``--stages.<name>.<key>`` arguments, and those arguments in order."""
    rest: list[str] = []
    found: list[StageArg] = []
    tokens = iter(args)
    for token in tokens:
        match = STAGE_ARG.match(token)
        if match is None:
            rest.append(token)
            continue
        value = match.group(3)
        if value is None:
            value = next(tokens, None)
            if value is None:
                raise ConfigError(f"{token}: give a value")
        found.append((match.group(1), match.group(2), value))
    return rest, found


def stage_names(stages: list[dict[str, Any]]) -> list[str]:
    """Each resolved stage's name: its ``name``, else its strategy's short name (``es``)."""
    from es_lightning.cli_hints import ALIASES

    short = {path: name for name, path in ALIASES["strategy"].items()}
    names = []
    for stage in stages:
        strategy = stage.get("strategy") or {}
        path = strategy.get("class_path", "") if isinstance(strategy, dict) else str(strategy)
        names.append(stage.get("name") or short.get(path, path.rsplit(".", 1)[-1].lower()))
    return names


def stage_index(stages: list[dict[str, Any]], selector: str) -> int:
    """The position in ``stages`` of the stage ``selector`` names (a name, or a position from 1)."""
    names = stage_names(stages)
    if selector.isdigit():
        if not 1 <= int(selector) <= len(stages):
            raise ConfigError(f"--stages.{selector}: the pipeline has stages 1..{len(stages)} ({names})")
        return int(selector) - 1
    where = [i for i, name in enumerate(names) if name == selector]
    if not where:
        raise ConfigError(f"--stages.{selector}: no stage of that name; the stages are {names}")
    if len(where) > 1:
        numbers = ", ".join(str(i + 1) for i in where)
        raise ConfigError(f"--stages.{selector}: stages {numbers} share that name; give the position")
    return where[0]


def set_key(stage: dict[str, Any], key: str, value: str) -> None:
    """Set the dotted ``key`` of ``stage`` to ``value`` read as YAML (as the command line reads values)."""
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        parsed = value
    *path, last = key.split(".")
    node = stage
    for part in path:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[last] = parsed


def expand_stage_args(parser: Any, args: list[str]) -> list[str]:
    """``args`` with the ``--stages.<name>.<key>`` arguments turned into one ``--stages LIST``."""
    rest, found = split_stage_args(args)
    if not found or any(a in ("-h", "--help") for a in rest):
        return args
    resolving = [a for a in rest if not a.startswith("--print_config")]
    dumped = yaml.safe_load(parser.dump(parser.parse_args(resolving), skip_unset=False))
    stages = dumped.get("stages")
    if not stages:
        raise ConfigError(
            f"--stages.{found[0][0]}.{found[0][1]}: the recipe has no stages (a single strategy: "
            "set --strategy.init_args...)"
        )
    for selector, key, value in found:
        set_key(stages[stage_index(stages, selector)], key, value)
    return [*rest, "--stages", json.dumps(stages)]
