"""Calls into your callbacks and loggers: a failure in their code is yours to fix and is said in
one line naming the method and where it raised (exit status 2); es-lightning's own failures keep
their tracebacks."""

from __future__ import annotations

import inspect
import sysconfig
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError, find_config_error
from es_lightning.tasks.reward_calls import describe

_PACKAGE = Path(__file__).resolve().parents[1]
_INSTALLED = {Path(p).resolve() for p in (sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])}


class UserHookError(ConfigError):
    """A callback's hook or a logger's method of yours raised."""


def call_hook(fabric: Any, callbacks: Iterable[Any], hook: str, **kwargs: Any) -> None:
    """``fabric.call(hook, **kwargs)``; a failure in your code becomes a one-line UserHookError."""
    try:
        fabric.call(hook, **kwargs)
    except Exception as error:
        raise _said(error, callbacks) from error


def log_metrics(fabric: Any, metrics: dict[str, float], step: int) -> None:
    """``fabric.log_dict(metrics, step)``; a failure in your logger's code becomes one line."""
    try:
        fabric.log_dict(metrics, step=step)
    except Exception as error:
        raise _said(error, fabric.loggers) from error


def _said(error: Exception, objects: Iterable[Any]) -> Exception:
    """``error`` as one :class:`UserHookError` line when it came out of your code, else as it is."""
    if find_config_error(error) is not None:
        return error
    culprit = _culprit(error, objects)
    if culprit is None:
        return error
    owner, name, file, line = culprit
    message = str(error).splitlines()[0] if str(error) else ""
    return UserHookError(f"{describe(owner)}.{name} ({file}:{line}) raised {type(error).__name__}: {message}")


def _culprit(error: BaseException, objects: Iterable[Any]) -> tuple[type, str, str, int] | None:
    """Your class, method and raising line in ``error``'s traceback, among ``objects``' classes."""
    codes: dict[Any, tuple[type, str]] = {}
    for obj in objects:
        for klass in type(obj).__mro__:
            if _yours(klass):
                for name, value in vars(klass).items():
                    code = getattr(value, "__code__", None)
                    if code is not None:
                        codes[code] = (klass, name)
    frames = list(traceback.walk_tb(error.__traceback__))
    for frame, _ in frames:
        if frame.f_code in codes:
            klass, name = codes[frame.f_code]
            file = frame.f_code.co_filename
            line = next(n for f, n in reversed(frames) if f.f_code.co_filename == file)
            return klass, name, file, line
    return None


def _yours(klass: type) -> bool:
    """A class written outside es-lightning and the installed packages (``object`` included)."""
    module = getattr(klass, "__module__", "") or ""
    if module == "builtins" or module.startswith("es_lightning."):
        return False
    try:
        source = Path(inspect.getfile(klass)).resolve()
    except (TypeError, OSError):
        return False
    return not any(source.is_relative_to(root) for root in (_PACKAGE, *_INSTALLED))
