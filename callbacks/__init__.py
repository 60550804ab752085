"""Built-in callbacks of es-lightning, installed as ``es_lightning.callbacks``.

Attach them from a recipe by class path, e.g.::

    callbacks:
      - class_path: es_lightning.callbacks.ParameterDrift
        init_args: {every_n_updates: 5}

See ``callbacks/README.md`` for every hook and how to write your own; the hook contract
(:class:`Callback`, :data:`HOOKS`) is defined in :mod:`es_lightning.training.callbacks`.
"""

from es_lightning.callbacks.attribution import LayerAttribution
from es_lightning.callbacks.diversity import PopulationDiversity
from es_lightning.callbacks.drift import ParameterDrift
from es_lightning.callbacks.entropy import TokenEntropy
from es_lightning.callbacks.heldout import HeldOutPassAtK
from es_lightning.training.callbacks import HOOKS, Callback, TrainerView, check_callbacks

__all__ = [
    "HOOKS",
    "Callback",
    "HeldOutPassAtK",
    "LayerAttribution",
    "ParameterDrift",
    "PopulationDiversity",
    "TokenEntropy",
    "TrainerView",
    "check_callbacks",
]
