"""Settings fields that carry their own check, so each setting is written once::

    group_size: int = checked(8, lambda g: g >= 2, ">= 2")
    \"\"\"G, responses per prompt (>= 2).\"\"\"

:func:`refuse_invalid` names every bad value at once in a ConfigError; :func:`plain_values` gives
the values back as ``hparams.yaml`` records them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import field, fields, is_dataclass
from typing import Any, TypeVar

from es_lightning.errors import ConfigError

T = TypeVar("T")

CHECK = "check"
"""The metadata key of a field's check: ``(ok(value) -> bool, what is accepted)``."""


def checked(default: T, ok: Callable[[Any], bool], rule: str) -> T:
    """A dataclass field with ``default`` whose values must pass ``ok``, ``rule`` saying what is."""
    return field(default=default, metadata={CHECK: (ok, rule)})


def one_of(default: T, choices: Sequence[Any]) -> T:
    """A :func:`checked` field whose values must be one of ``choices``."""
    names = [str(c) for c in choices]
    rule = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    return checked(default, lambda value: value in choices, rule)


def invalid_settings(values: Mapping[str, Any], *classes: type) -> list[str]:
    """``name=value (must be rule)`` for every value failing its same-named checked field."""
    checks: dict[str, tuple[Callable[[Any], bool], str]] = {}
    for cls in classes:
        if not is_dataclass(cls):
            raise TypeError(f"{cls!r} is not a dataclass")
        checks.update({f.name: f.metadata[CHECK] for f in fields(cls) if CHECK in f.metadata})
    bad = []
    for name, value in values.items():
        if name in checks:
            ok, rule = checks[name]
            if not ok(value):
                shown = list(value) if isinstance(value, tuple) else value  # YAML's and the CLI's spelling
                bad.append(f"{name}={shown!r} (must be {rule})")
    return bad


def refuse_invalid(owner: str, values: Mapping[str, Any], *classes: type) -> None:
    """Raise ``ConfigError("{owner}: invalid a=…; b=…")`` naming every bad value, or nothing."""
    bad = invalid_settings(values, *classes)
    if bad:
        raise ConfigError(f"{owner}: invalid {'; '.join(bad)}")


def field_values(settings: Any) -> dict[str, Any]:
    """``{field name: value}`` of a settings dataclass instance (shallow: nested dataclasses stay)."""
    return {f.name: getattr(settings, f.name) for f in fields(settings)}


def plain_values(settings: Any) -> dict[str, Any]:
    """``{field name: plain value}`` of a settings dataclass, as ``hparams.yaml`` records it."""
    return {name: _plain(value) for name, value in field_values(settings).items()}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if is_dataclass(value) and not isinstance(value, type):
        return plain_values(value)
    return value
