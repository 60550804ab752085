"""Supervised warm starts of the packaged tiny models, each a script that rebuilds its model bit for bit.

``arithmetic`` (``es-lightning/tiny-arithmetic``), ``countdown`` (``es-lightning/tiny-countdown``)
and ``two_tasks`` (``es-lightning/tiny-countdown-arithmetic``) build their own examples and train
with the one deterministic loop of :mod:`~es_lightning.warmstart.loop`::

    python -m es_lightning.warmstart.arithmetic --output runs/tiny-arithmetic --evaluate
"""
