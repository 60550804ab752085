"""Recipe files checked before the parser reads them: every ``--config`` file must be UTF-8 text
holding one YAML mapping, else one line says why."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from es_lightning.errors import ConfigError, MissingPathError


def config_paths(args: Sequence[str]) -> list[str]:
    """The values of every ``--config`` option in ``args``.

    >>> config_paths(["fit", "--config", "a.yaml", "--config=b.yaml", "--trainer.seed", "1"])
    ['a.yaml', 'b.yaml']
    """
    found = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--config"]
    return found + [a.split("=", 1)[1] for a in args if a.startswith("--config=")]


def check_recipe_files(args: Sequence[str]) -> None:
    """Check each ``--config`` file of ``args`` (ConfigError or MissingPathError saying why)."""
    for path in config_paths(args):
        check_recipe_file(Path(path))


def check_recipe_file(path: Path) -> None:
    """One recipe file (see :func:`check_recipe_files`)."""
    import yaml

    if not path.is_file():
        if any(c in str(path) for c in ":{}\n"):  # YAML given inline: the parser reads it
            return
        raise MissingPathError(f"recipe {path} does not exist (--config names a YAML file)")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        byte = raw[err.start]
        raise ConfigError(
            f"recipe {path} is not UTF-8 text (byte 0x{byte:02x} at offset {err.start}); save it as UTF-8"
        ) from None
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"recipe {path} {_yaml_problem(err, text)}") from None
    if loaded is None:
        raise ConfigError(f"recipe {path} is empty (no settings)")
    if not isinstance(loaded, dict):
        kind = "list" if isinstance(loaded, list) else f"single {type(loaded).__name__} value"
        raise ConfigError(
            f"recipe {path} is a YAML {kind}, not a mapping of settings (module:, strategy:, trainer:, ...)"
        )


def _yaml_problem(err: Exception, text: str) -> str:
    """``line N: ...`` for a YAML error: a tab indent named as such, else the parser's problem."""
    mark = getattr(err, "problem_mark", None)
    if mark is None:
        return f"is not valid YAML: {err}"
    line = text.splitlines()[mark.line] if mark.line < len(text.splitlines()) else ""
    indent = line[: len(line) - len(line.lstrip())]
    if "\t" in indent:
        return f"line {mark.line + 1}: a tab indents it; YAML indents with spaces"
    problem = getattr(err, "problem", None) or str(err)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem} (not valid YAML)"
