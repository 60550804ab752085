"""Errors that are the user's to fix: a setting, a path or a data file is wrong.

The ``es-lightning`` command prints such an error as one line, ``es-lightning: error: <message>``,
and exits with status 2, without a traceback (``es-lightning --debug ...`` or
``ES_LIGHTNING_DEBUG=1`` shows it). Every other exception is a bug and keeps its traceback.

Raise them where settings and inputs are checked (constructors, ``__post_init__``, loaders), with a
message that names the setting or file and says what would be accepted::

    raise ConfigError(f"ESStrategy: sigma must be > 0, got {sigma}")
    raise MissingPathError(f"DataSource: local dataset file {path!r} does not exist")

They subclass the built-in exceptions the same checks raised before (``ValueError``, and
``FileNotFoundError`` / ``KeyError`` for the variants), so ``except ValueError`` keeps working.
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
    while handling (jsonargparse wraps errors raised while it instantiates classes); ``None`` when
    there is none (``raise ... from None`` hides what came before)."""
    return next((e for e in _chain(error) if isinstance(e, ConfigError)), None)
