"""Registries by name: the same thing twice is fine, another under a taken name is refused, an
unknown name lists the known ones (sorted or in registration order)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from es_lightning.errors import ConfigError, UnknownNameError
from es_lightning.presets import Registry


@dataclass(frozen=True)
class Thing:
    name: str
    value: int = 0


def test_register_find_and_refuse():
    things: Registry[Thing] = Registry("test thing", "things", " (or spell it out)")
    b, a = things.register(Thing("b")), things.register(Thing("a"))
    assert things.register(Thing("b")) == b and things.find("a") is a and list(things) == ["b", "a"]
    with pytest.raises(ValueError, match="add_thing: the name 'a' is taken by another thing"):
        things.register(Thing("a", 1), "add_thing")
    with pytest.raises(
        UnknownNameError, match=r"unknown test thing 'c'; known things: b, a \(or spell it out\)$"
    ):
        things.find("c")
    assert issubclass(UnknownNameError, ConfigError) and things.find("a").value == 0


def test_known_names_sorted_when_asked():
    things: Registry[Thing] = Registry("thing", "things", sort=True)
    for name in ("z", "m", "a"):
        things.register(Thing(name))
    with pytest.raises(UnknownNameError, match="known things: a, m, z$"):
        things.find("q")
