"""Tasks by name: ``get_task("gsm8k")``, and ``@register_task`` to add your own."""

from __future__ import annotations

from typing import Any, TypeVar

from es_lightning.errors import UnknownNameError
from es_lightning.tasks.base import Task

TASKS: dict[str, type[Task]] = {}
"""Registered task classes by their ``name``."""

_T = TypeVar("_T", bound=type[Task])


def register_task(cls: _T) -> _T:
    """Class decorator adding a :class:`Task` subclass to :data:`TASKS` under ``cls.name``."""
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise TypeError(f"register_task: {cls!r} is not a subclass of es_lightning.tasks.Task")
    name = getattr(cls, "name", "")
    if not name or name == Task.name:
        raise ValueError(f"register_task: {cls.__qualname__} needs its own `name` class attribute")
    known = TASKS.get(name)
    if known is not None and _path(known) != _path(cls):
        raise ValueError(f"register_task: name {name!r} of {_path(cls)} is taken by {_path(known)}")
    TASKS[name] = cls
    return cls


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def get_task(name: str, **kwargs: Any) -> Task:
    """A new instance of the task registered as ``name`` (UnknownNameError listing the known ones)."""
    if name not in TASKS:
        raise UnknownNameError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    return TASKS[name](**kwargs)
