"""Supervised warm starts of the packaged tiny models, each rebuilding its model bit for bit.

``arithmetic`` (``es-lightning/tiny-arithmetic``), ``countdown`` (``es-lightning/tiny-countdown``)
and ``two_tasks`` (``es-lightning/tiny-countdown-arithmetic``) build their own examples and share
their data helpers, training loop and evaluation (:mod:`scripts.warmstart.common`) and one entry
point, run from the repository's root::

    python -m scripts.warmstart arithmetic --output runs/tiny-arithmetic --evaluate

They are not part of the installed package: the models ship ready-made with it.
"""
