"""Errors that are the user's to fix: a setting, a path or a data file is wrong.

The ``es-lightning`` command prints such an error as one line, ``es-lightning: error: <message>``,
and exits with status 2, without a traceback (``--debug`` shows it); every other exception is a
bug. Raise them with a message that names the setting or file and says what would be accepted::

    raise ConfigError(f"ESStrategy: sigma must be > 0, got {sigma}")

They subclass the built-in exceptions the same checks raised before (``ValueError``, and
``FileNotFoundError`` / ``KeyError`` for the variants).
"""

from __future__ import annotations

from collections.abc import Iterator


class ConfigError(ValueError):
    """A setting, a path or an input file the user gave is invalid; the message says which and why."""


class MissingPathError(ConfigError, FileNotFoundError):
    """A path the settings name does not exist (a ``FileNotFoundError`` too)."""


class UnknownNameError(ConfigError, KeyError):
    """A name (task, suite, ...) that nothing is registered under (a ``KeyError`` too); the message
    lists the known names."""

    __str__ = ValueError.__str__  # the message as given, not KeyError's quoted repr


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)


def find_config_error(error: BaseException) -> ConfigError | None:
    """``error`` itself when it is a :class:`ConfigError`, else the first one it was raised from or
    while handling (jsonargparse wraps them); ``None`` when there is none."""
    return next((e for e in _chain(error) if isinstance(e, ConfigError)), None)
