"""Things of one kind registered by name (evaluation suites, evaluation protocols, instrument sets).

A :class:`Registry` is a ``{name: thing}`` dict whose things carry their ``name``; registering a
different thing under a taken name is refused, and asking for an unknown name raises
:class:`~es_lightning.errors.UnknownNameError` listing the known ones (what a misspelt recipe
needs to read).
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

from es_lightning.errors import UnknownNameError


class Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=Named)


class Registry(dict[str, T], Generic[T]):
    """Registered things by name.

    Args:
        kind: what one thing is called in messages (``"evaluation protocol"``).
        plural: what several are called in the list of known names (``"protocols"``).
        hint: appended to the unknown-name message (e.g. how to spell the thing out instead).
        sort: list the known names sorted (else in registration order).
    """

    def __init__(self, kind: str, plural: str, hint: str = "", sort: bool = False) -> None:
        super().__init__()
        self.kind, self.plural, self.hint, self.sort = kind, plural, hint, sort

    def register(self, thing: T, caller: str = "register") -> T:
        """Add ``thing`` under its name; the same thing again is fine, another one is refused."""
        known = self.get(thing.name)
        if known is not None and known != thing:
            noun = self.kind.split()[-1]
            raise ValueError(f"{caller}: the name {thing.name!r} is taken by another {noun}")
        self[thing.name] = thing
        return thing

    def find(self, name: str) -> T:
        """The thing registered as ``name``.

        Raises:
            UnknownNameError: no thing has that name; the message lists the known ones.
        """
        try:
            return self[name]
        except KeyError:
            names = sorted(self) if self.sort else list(self)
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; known {self.plural}: {', '.join(names)}{self.hint}"
            ) from None
