"""Names a ``fit`` recipe may use for its parts, expanded by the parser before it checks types.

* ``evaluation: paper`` (or ``{protocol: paper, max_tokens: 64}``): a named evaluation protocol,
  :mod:`es_lightning.evaluation.protocols`;
* ``callbacks: paper_instruments`` (or names among the list's entries): named instrument sets,
  :mod:`es_lightning.training.instruments`.

:func:`accept_names` hooks the expansion into the parser's own check of each of those arguments,
so it applies wherever a value comes from (the recipe, ``--evaluation paper`` on the command line,
``--callbacks+=weight_change``, the recipes ``report`` and ``tune`` resolve), before jsonargparse
validates the expanded value against the types of :func:`~es_lightning.training.command.run_fit`.
A later ``--evaluation.max_tokens 64`` changes one field of the expanded protocol. An unknown name
fails the parse with a message listing the known ones; ``--help`` lists them too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from es_lightning.cli_hints import expanding
from es_lightning.evaluation.protocols import describe_protocols, expand_protocol
from es_lightning.training.instruments import describe_instrument_sets, expand_instruments

EXPANSIONS: dict[str, tuple[Callable[[Any], Any], Callable[[], str]]] = {
    "evaluation": (expand_protocol, describe_protocols),
    "callbacks": (expand_instruments, describe_instrument_sets),
}
"""``{argument: (expand its value, describe its names for --help)}``."""


def accept_names(parser: Any) -> Any:
    """Let ``parser``'s ``evaluation`` and ``callbacks`` arguments take names (see the module
    docstring); their ``--help`` lists the names. Returns ``parser``.

    Raises:
        ValueError: ``parser`` has no such argument (it is not the ``fit`` parser).
    """
    for dest, (expand, describe) in EXPANSIONS.items():
        action = next((a for a in parser._actions if a.dest == dest), None)
        if action is None or not hasattr(action, "_check_type"):
            raise ValueError(f"accept_names: the parser has no typed argument {dest!r}")
        action._check_type = expanding(action._check_type, expand)
        action.help = f"{action.help or ''} Names: {describe()}."
    return parser
