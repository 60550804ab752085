"""Named evaluation protocols: how a model is sampled and scored, defined once, named in recipes.

A recipe names a protocol instead of pasting its settings::

    evaluation: paper                                   # the paper's protocol (easy setting)
    evaluation: {protocol: paper, max_tokens: 64}       # the same, with some fields changed
    es-lightning fit --config X --evaluation paper_hard --evaluation.limit 100

A name stands for the full :class:`~es_lightning.evaluation.runner.EvalConfig` it registers: the
``fit`` parser expands it before it checks the types (:func:`expand_protocol`), so the resolved
configuration (``--print_config``, a run's ``config.yaml``, each checkpoint's hyperparameters)
holds the values, never the name, and every field stays typed and overridable.

Built-in protocols (``PROTOCOLS``); the paper evaluates M = 32 samples at T = 0.6 and reports the
unbiased Pass@K at K = 1, 16, 32, Maj@K and greedy accuracy:

==========  ======  =====  ==========  ===============  ======
name        M       T      max_tokens  ks               greedy
==========  ======  =====  ==========  ===============  ======
paper       32      0.6    2048        1, 16, 32        yes
paper_hard  32      0.6    8192        1, 16, 32        yes
demo_cpu    16      0.6    32          1, 2, 4, 8, 16   yes
smoke_cpu   4       0.6    8           1, 2, 4          yes
==========  ======  =====  ==========  ===============  ======
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import yaml

from es_lightning.errors import ConfigError
from es_lightning.evaluation.runner import EvalConfig
from es_lightning.named import Registry

PROTOCOL_KEY = "protocol"
"""The key of an ``evaluation`` mapping that names the protocol its other keys change."""


@dataclass(frozen=True)
class Protocol:
    """A named :class:`EvalConfig`."""

    name: str
    """How recipes refer to it (``evaluation: <name>``)."""
    config: EvalConfig
    """The settings the name stands for (the schema: every field typed and checked)."""
    description: str = ""
    """One line for ``--help`` and error messages."""

    def settings(self) -> dict[str, Any]:
        """The settings as the mapping a recipe would spell out (a fresh copy)."""
        return dataclasses.asdict(self.config)


PROTOCOLS: Registry[Protocol] = Registry(
    "evaluation protocol",
    "protocols",
    " (or give the settings: num_samples, temperature, max_tokens, ks, ...)",
)
"""Registered protocols by name."""


def register_protocol(protocol: Protocol) -> Protocol:
    """Add ``protocol`` to :data:`PROTOCOLS`; a different protocol under a taken name is refused."""
    return PROTOCOLS.register(protocol, "register_protocol")


def get_protocol(name: str) -> Protocol:
    """The protocol registered as ``name``.

    Raises:
        UnknownNameError: no protocol has that name; the message lists the known ones.
    """
    return PROTOCOLS.find(name)


def expand_protocol(value: Any) -> Any:
    """``value`` with a protocol name replaced by the protocol's settings.

    * ``"paper"``: the settings of ``paper``;
    * ``{"protocol": "paper", "max_tokens": 64}``: those settings with the other keys applied;
    * the same mapping as inline YAML (``"{protocol: paper, max_tokens: 64}"``, the command line);
    * anything else (a mapping of settings, ``None``, a path to a YAML file): unchanged.

    Raises:
        UnknownNameError: an unknown protocol name (the message lists the known ones).
        ConfigError: a ``protocol`` key whose value is not a name.
    """
    if isinstance(value, str) and value in PROTOCOLS:
        return get_protocol(value).settings()
    if isinstance(value, str) and _looks_like_name(value):
        get_protocol(value)  # raises, naming the known protocols
    if isinstance(value, str) and value.lstrip().startswith("{") and PROTOCOL_KEY in value:
        return expand_protocol(_load(value))  # inline YAML from the command line
    if isinstance(value, dict) and PROTOCOL_KEY in value:
        changes = dict(value)
        name = changes.pop(PROTOCOL_KEY)
        if not isinstance(name, str):
            raise ConfigError(f"evaluation.{PROTOCOL_KEY} must name a protocol, got {name!r}")
        return {**get_protocol(name).settings(), **changes}
    return value


def _load(text: str) -> Any:
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"evaluation: {text!r} does not read as YAML: {err}") from None
    return loaded if isinstance(loaded, dict) else text


def _looks_like_name(value: str) -> bool:
    """A bare word meant as a name (``paper``), not ``null``, a number, a file path or inline YAML
    (which jsonargparse reads itself)."""
    return value.replace("_", "").isalnum() and isinstance(yaml.safe_load(value), str)


def describe_protocols() -> str:
    """``name (description)`` of every protocol, for ``--help``."""
    return "; ".join(f"{p.name} ({p.description})" for p in PROTOCOLS.values())


for _protocol in (
    Protocol(
        "paper",
        EvalConfig(num_samples=32, temperature=0.6, max_tokens=2048, ks=[1, 16, 32], greedy=True),
        description="the paper's, easy setting: M = 32 at T = 0.6, 2048 tokens, Pass@1/16/32, greedy",
    ),
    Protocol(
        "paper_hard",
        EvalConfig(num_samples=32, temperature=0.6, max_tokens=8192, ks=[1, 16, 32], greedy=True),
        description="the paper's, hard setting: as paper with 8192 tokens",
    ),
    Protocol(
        "demo_cpu",
        EvalConfig(num_samples=16, temperature=0.6, max_tokens=32, ks=[1, 2, 4, 8, 16], greedy=True),
        description="the CPU demo's: M = 16 at T = 0.6, 32 tokens, Pass@1/2/4/8/16, greedy",
    ),
    Protocol(
        "smoke_cpu",
        EvalConfig(num_samples=4, temperature=0.6, max_tokens=8, ks=[1, 2, 4], greedy=True),
        description="the CPU smoke test's: M = 4 at T = 0.6, 8 tokens, Pass@1/2/4, greedy",
    ),
):
    register_protocol(_protocol)
