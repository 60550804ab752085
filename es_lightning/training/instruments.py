"""Named instrument sets: lists of callbacks (class path + init arguments) a recipe names at once.

A recipe names a set instead of pasting its callbacks; names and ``class_path`` entries mix, in
order::

    callbacks: paper_instruments                        # one set
    callbacks: [weight_change, population_diversity]    # several, merged in order
    callbacks:
      - weight_change
      - class_path: my_pkg.MyCallback                   # your own beside them
    es-lightning fit --config X --callbacks weight_change --callbacks+=population_diversity

A name stands for its entries: the ``fit`` parser expands it before it checks the types
(:func:`expand_instruments`), so every entry is still validated against its class's signature and
the resolved configuration (``--print_config``, ``config.yaml``, checkpoints) lists the callbacks,
never the name.

Built-in sets (``INSTRUMENT_SETS``):

====================  ==========================================================================
name                  callbacks
====================  ==========================================================================
weight_change         ParameterDrift every 10 updates; LayerAttribution top-100 |Δθ| (checkpoints)
population_diversity  PopulationDiversity (ES: coverage and JS diversity of the population)
gpqa_entropy          TokenEntropy on held-out GPQA, 64 prompts at T = 0.6, every 10 updates (Fig. 2)
paper_instruments     gpqa_entropy + weight_change + population_diversity
demo_cpu              TokenEntropy (64 prompts, 32 tokens) and ParameterDrift every 5 updates;
                      PopulationDiversity
====================  ==========================================================================
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import yaml

from es_lightning.named import Registry

CALLBACKS = "es_lightning.callbacks"
"""The package of the built-in callbacks (the repository's ``callbacks/`` folder)."""
_NAME = re.compile(r"[a-z][a-z0-9_]*")
"""What a set name looks like; a class name (``ParameterDrift``) or path (``pkg.Cls``) does not."""


@dataclass(frozen=True)
class InstrumentSet:
    """A named list of callbacks, each ``{"class_path": ..., "init_args": {...}}``."""

    name: str
    """How recipes refer to it (``callbacks: <name>`` or an item of the list)."""
    callbacks: tuple[dict[str, Any], ...]
    """The entries the name stands for, in order (checked by the parser like written ones)."""
    description: str = ""
    """One line for ``--help`` and error messages."""

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"InstrumentSet {self.name!r}: a name is lower_case_with_underscores")
        if not self.callbacks or any("class_path" not in c for c in self.callbacks):
            raise ValueError(f"InstrumentSet {self.name!r}: needs entries, each with a class_path")

    def entries(self) -> list[dict[str, Any]]:
        """The entries as a recipe would spell them out (a fresh copy)."""
        return copy.deepcopy(list(self.callbacks))


INSTRUMENT_SETS: Registry[InstrumentSet] = Registry(
    "instrument set", "sets", " (or give a callback as class_path: ...)"
)
"""Registered instrument sets by name."""


def register_instrument_set(instruments: InstrumentSet) -> InstrumentSet:
    """Add ``instruments`` to :data:`INSTRUMENT_SETS`; a different set under a taken name is refused."""
    return INSTRUMENT_SETS.register(instruments, "register_instrument_set")


def get_instrument_set(name: str) -> InstrumentSet:
    """The set registered as ``name``.

    Raises:
        UnknownNameError: no set has that name; the message lists the known ones.
    """
    return INSTRUMENT_SETS.find(name)


def expand_instruments(value: Any) -> Any:
    """``value`` with instrument set names replaced by their entries.

    * ``"paper_instruments"``: that set's entries;
    * a list: each name replaced in place by its entries, other items (``class_path`` mappings,
      class names such as ``ParameterDrift``) kept;
    * inline YAML of a list (``"[weight_change, ParameterDrift]"``, from the command line): read,
      and expanded as a list when it names a set;
    * anything else (``None``, ``null``, a class name): unchanged.

    Raises:
        UnknownNameError: a lower-case bare word that names no set (the message lists the known ones).
    """
    if isinstance(value, str) and _NAME.fullmatch(value) and isinstance(yaml.safe_load(value), str):
        return get_instrument_set(value).entries()
    if isinstance(value, str) and value.lstrip().startswith("["):  # inline YAML from the command line
        loaded = _load(value)
        expanded = expand_instruments(loaded) if isinstance(loaded, list) else loaded
        return expanded if expanded != loaded else value  # no name: jsonargparse reads the text
    if isinstance(value, list):
        out: list[Any] = []
        for item in value:
            if isinstance(item, str) and _NAME.fullmatch(item):
                out.extend(get_instrument_set(item).entries())
            else:
                out.append(item)
        return out
    return value


def _load(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None  # jsonargparse reports the text's error


def describe_instrument_sets() -> str:
    """``name (description)`` of every set, for ``--help``."""
    return "; ".join(f"{s.name} ({s.description})" for s in INSTRUMENT_SETS.values())


def _entry(name: str, **init_args: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"class_path": f"{CALLBACKS}.{name}"}
    if init_args:
        entry["init_args"] = init_args
    return entry


_WEIGHT_CHANGE = (
    _entry("ParameterDrift", every_n_updates=10),
    _entry("LayerAttribution", top_k=100),
)
_POPULATION_DIVERSITY = (_entry("PopulationDiversity"),)
_GPQA_ENTROPY = (
    _entry(
        "TokenEntropy",
        task={"class_path": "es_lightning.tasks.GPQA"},  # gated on the hub: `hf auth login`
        every_n_updates=10,
        num_prompts=64,
        temperature=0.6,
        max_tokens=2048,
    ),
)

for _set in (
    InstrumentSet(
        "weight_change",
        _WEIGHT_CHANGE,
        description="ParameterDrift (drift/rel_l2 every 10 updates) and LayerAttribution "
        "(top-100 |Δθ| per kind and layer at each checkpoint)",
    ),
    InstrumentSet(
        "population_diversity",
        _POPULATION_DIVERSITY,
        description="PopulationDiversity (ES: the population's coverage and JS diversity)",
    ),
    InstrumentSet(
        "gpqa_entropy",
        _GPQA_ENTROPY,
        description="TokenEntropy on held-out GPQA, 64 prompts at T = 0.6, 2048 tokens, every 10 "
        "updates (the paper's Figure 2)",
    ),
    InstrumentSet(
        "paper_instruments",
        (*_GPQA_ENTROPY, *_WEIGHT_CHANGE, *_POPULATION_DIVERSITY),
        description="gpqa_entropy + weight_change + population_diversity",
    ),
    InstrumentSet(
        "demo_cpu",
        (
            _entry("TokenEntropy", every_n_updates=5, num_prompts=64, temperature=0.6, max_tokens=32),
            _entry("ParameterDrift", every_n_updates=5),
            *_POPULATION_DIVERSITY,
        ),
        description="the CPU demo's: TokenEntropy (64 prompts, 32 tokens) and ParameterDrift every "
        "5 updates, PopulationDiversity",
    ),
):
    register_instrument_set(_set)
