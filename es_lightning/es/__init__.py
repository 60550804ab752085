"""Evolution Strategies core: seeded noise, reward normalisation, the update and the ES centre."""

from es_lightning.es.noise import noise_like, param_seed, seed_schedule
from es_lightning.es.normalize import NORMALIZATIONS, Normalization, is_degenerate, normalize_rewards
from es_lightning.es.update import (
    Population,
    apply_es_update,
    assign_es_grad_,
    kappa_pair,
    member_coefficients,
)

__all__ = [
    "NORMALIZATIONS",
    "Normalization",
    "Population",
    "apply_es_update",
    "assign_es_grad_",
    "is_degenerate",
    "kappa_pair",
    "member_coefficients",
    "noise_like",
    "normalize_rewards",
    "param_seed",
    "seed_schedule",
]
