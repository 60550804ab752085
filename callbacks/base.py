"""The callback contract, as users import it: ``from es_lightning.callbacks.base import Callback``.

It is defined beside the trainer that drives it, in :mod:`es_lightning.training.callbacks`; this
module only re-exports it (the built-in callbacks import it from there)."""

from es_lightning.training.callbacks import HOOKS, Callback, TrainerView, check_callbacks

__all__ = ["HOOKS", "Callback", "TrainerView", "check_callbacks"]
