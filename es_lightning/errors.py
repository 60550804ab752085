"""Errors that are the user's to fix: a setting, a path or a data file is wrong. The command prints
one as ``es-lightning: error: <message>`` and exits 2; they subclass the built-in exceptions the
same checks raised before (``ValueError``, ``FileNotFoundError``, ``KeyError``).
"""

from __future__ import annotations

from collections.abc import Iterator

USER_ERROR_STATUS = 2
"""Exit status of a run refused for a wrong setting, path or data file (as for a parse error)."""


class ConfigError(ValueError):
    """A setting, a path or an input file the user gave is invalid; the message says which and why."""


class MissingPathError(ConfigError, FileNotFoundError):
    """A path the settings name does not exist (a ``FileNotFoundError`` too)."""


class UnknownNameError(ConfigError, KeyError):
    """A name nothing is registered under (a ``KeyError`` too); the message lists the known names."""

    __str__ = ValueError.__str__  # the message as given, not KeyError's quoted repr


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def find_config_error(error: BaseException) -> ConfigError | None:
    """``error`` or the first ConfigError it was raised from or while handling, else ``None``."""
    return next((e for e in _chain(error) if isinstance(e, ConfigError)), None)
