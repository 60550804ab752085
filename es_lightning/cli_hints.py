"""Short names (``strategy: es``, ``rollout: hf``; :data:`ALIASES`), and parse errors of one line
that say which values would parse (:func:`hint`)."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable
from inspect import isabstract
from typing import Any

from es_lightning.console import one_line

ALIASES: dict[str, dict[str, str]] = {
    "strategy": {
        "es": "es_lightning.strategies.ESStrategy",
        "grpo": "es_lightning.strategies.GRPOStrategy",
        "grpo_fsdp": "es_lightning.strategies.GRPOFSDPStrategy",
    },
    "rollout": {
        "vllm": "es_lightning.rollout.vllm.VLLMRollout",
        "hf": "es_lightning.rollout.hf.HFRollout",
    },
}
"""``{option: {short name: class path}}`` accepted in recipes and on the command line."""

_CLASS_PATHS: dict[str, list[str]] = {
    "loggers": [
        "lightning.pytorch.loggers.CSVLogger",
        "lightning.pytorch.loggers.WandbLogger",
        "lightning.pytorch.loggers.MLFlowLogger",
        "lightning.fabric.loggers.TensorBoardLogger",
    ],
    "callbacks": [
        "es_lightning.callbacks.TokenEntropy",
        "es_lightning.callbacks.ParameterDrift",
        "es_lightning.callbacks.LayerAttribution",
        "es_lightning.callbacks.HeldOutPassAtK",
        "es_lightning.callbacks.PopulationDiversity",
    ],
}


def expand_names(parser: Any, dest: str, expand: Callable[[Any], Any], note: str) -> bool:
    """Let ``parser``'s typed argument ``dest`` take names: jsonargparse's type check of a value runs
    on ``expand(value)``, and ``note`` ends its help. Whether ``parser`` has such an argument."""
    action = next((a for a in parser._actions if a.dest == dest), None)
    if action is None or not hasattr(action, "_check_type"):
        return False
    check = action._check_type

    @functools.wraps(check)
    def check_expanded(value: Any, *args: Any, **kwargs: Any) -> Any:
        return check(expand(value), *args, **kwargs)

    action._check_type = check_expanded
    action.help = f"{action.help or ''} {note}"
    return True


def accept_short_names(parser: Any) -> Any:
    """Let ``parser``'s ``strategy`` and ``rollout`` take the short names of :data:`ALIASES`."""
    for option, names in ALIASES.items():

        def expand(value: Any, names: dict[str, str] = names) -> Any:
            return names.get(value, value) if isinstance(value, str) else value

        expand_names(parser, option, expand, f"Short names: {', '.join(names)}.")
    return parser


def _task_class_paths() -> list[str]:
    import es_lightning.tasks as tasks
    from es_lightning.tasks.base import Task

    names = getattr(tasks, "__all__", dir(tasks))
    found = [n for n in names if isinstance(getattr(tasks, n, None), type)]
    concrete = [n for n in found if issubclass(getattr(tasks, n), Task) and not isabstract(getattr(tasks, n))]
    return [f"es_lightning.tasks.{n}" for n in concrete]


def hint(message: str) -> str | None:
    """One line of values that would parse for the key ``message`` complains about, or ``None``."""
    keys = re.findall(r'Parser key "([^"]+)"', message)
    if not keys:
        return None
    key = keys[-1] if keys[-1] in ALIASES or keys[-1] in _CLASS_PATHS or keys[-1] == "task" else keys[0]
    leaf = key.split(".")[-1]
    if leaf in ALIASES:
        names = ALIASES[leaf]
        return (
            f"use: --{leaf} {' | '.join(names)}, or class_path: {' | '.join(names.values())} "
            f"(see --{leaf}.help CLASS)"
        )
    if leaf == "task":
        return f"use: class_path: one of {', '.join(_task_class_paths())} (or your own Task subclass)"
    if leaf in _CLASS_PATHS:
        return f"use: a list of class_path entries, e.g. {', '.join(_CLASS_PATHS[leaf])}"
    return None


def hinting_parser_class() -> type:
    """An ``ArgumentParser`` whose parse errors are one line ending with :func:`hint`'s."""
    from jsonargparse import ArgumentParser
    from jsonargparse._common import debug_mode_active

    class HintingArgumentParser(ArgumentParser):
        def error(self, message: str, ex: Exception | None = None):  # type: ignore[override]
            extra = hint(message)
            if extra and extra not in message:  # nested parsers raise through the outer one
                message = f"{message}\n{extra}"
            if not self.exit_on_error or debug_mode_active():
                super().error(message, ex)  # raises: an outer parser or --debug reports it
            parser = getattr(ex, "subcommand_parser", None) or self
            command = parser.prog.replace(" [options]", "")
            print(f"es-lightning: error: {one_line(message)}; see {command} --help", file=sys.stderr)
            sys.exit(2)

    return HintingArgumentParser


def prepare_parsing() -> None:
    """Field docstrings as ``--help``, and the built-in rollouts and callbacks imported."""
    import importlib

    from jsonargparse import set_parsing_settings

    set_parsing_settings(docstring_parse_attribute_docstrings=True)
    import es_lightning.rollout.hf  # noqa: F401
    import es_lightning.rollout.vllm  # noqa: F401

    try:
        importlib.import_module("es_lightning.callbacks")
    except ModuleNotFoundError as err:
        if err.name != "es_lightning.callbacks":
            raise


def command_parser(description: str, prog: str | None = None) -> Any:
    """An empty parser for one of the ``es-lightning`` commands, ``prog`` naming it."""
    prepare_parsing()
    return hinting_parser_class()(prog=prog, description=description)
