"""The arguments an object was built with, so that a run started from Python can write the same
``config.yaml`` as the command line: :class:`RecordsInit` keeps a constructor call's arguments and
:func:`to_config` turns an object back into what a recipe says::

    to_config(Echo(n_train=64))   # {"class_path": "es_lightning.tasks.Echo",
                                  #  "init_args": {"length": 4, "n_train": 64, "n_test": 64, ...}}
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib
import inspect
import os
from typing import Any


class RecordsInit:
    """Keeps the arguments of the constructor call (``recorded_init_args``), for :func:`to_config`."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        obj = super().__new__(cls)
        obj.__dict__["_init_call"] = (args, kwargs)
        return obj


def recorded_init_args(obj: Any) -> dict[str, Any] | None:
    """The arguments ``obj``'s constructor was called with, or ``None``."""
    call = obj.__dict__.get("_init_call") if hasattr(obj, "__dict__") else None
    if call is None:
        return None
    args, kwargs = call
    try:
        signature = inspect.signature(type(obj).__init__)
        arguments = dict(signature.bind_partial(obj, *args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {f"arg{i}": a for i, a in enumerate(args)} | dict(kwargs)
    arguments.pop(next(iter(signature.parameters)), None)  # self
    for name, parameter in signature.parameters.items():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD and name in arguments:
            arguments.update(arguments.pop(name))
        elif parameter.kind is inspect.Parameter.VAR_POSITIONAL and name in arguments:
            arguments[name] = list(arguments[name])
    return arguments


def class_path(kind: type) -> str:
    """The shortest import path of ``kind`` (``es_lightning.tasks.Echo``, not ``...tasks.echo.Echo``)."""
    parts = kind.__module__.split(".")
    for end in range(1, len(parts)):
        try:
            module = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        if getattr(module, kind.__qualname__, None) is kind:
            return f"{module.__name__}.{kind.__qualname__}"
    return f"{kind.__module__}.{kind.__qualname__}"


def to_config(value: Any) -> Any:
    """``value`` as a recipe writes it (``{class_path, init_args}``, an import path, a description)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, datetime.timedelta):  # as jsonargparse writes one: "0:30:00"
        return str(value)
    if isinstance(value, (list, tuple)):
        return [to_config(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_config(v) for k, v in value.items()}
    recorded = recorded_init_args(value)  # first: a strategy is also a dataclass of its settings
    if recorded is not None:
        arguments = {**signature_defaults(type(value)), **recorded}
        return {"class_path": class_path(type(value)), "init_args": to_config(arguments)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_config(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    if inspect.isroutine(value) or isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    describe = getattr(value, "describe", None)
    if callable(describe):
        return str(describe())
    kind = type(value).__name__
    if kind in ("Dataset", "IterableDataset"):  # as es_lightning.tasks.rows_source describes them
        size = f"{len(value)} rows" if hasattr(value, "__len__") else "rows read to the end"
        columns = getattr(value, "column_names", None)
        return f"a {kind} in memory ({size}{f', columns {columns}' if columns else ''})"
    return {"class_path": class_path(type(value))}


def signature_defaults(kind: type) -> dict[str, Any]:
    """Every constructor parameter of ``kind`` with a default, following ``**kwargs`` up the MRO."""
    out: dict[str, Any] = {}
    for klass in kind.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        try:
            parameters = list(inspect.signature(init).parameters.values())[1:]  # self
        except (TypeError, ValueError):
            break
        for p in parameters:
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.default is not p.empty:
                out.setdefault(p.name, p.default)
        if not any(p.kind is p.VAR_KEYWORD for p in parameters):
            break
    return out
