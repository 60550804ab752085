"""PopulationDiversity: how differently the members of each ES population succeed (ES only).

From every update's per-member, per-prompt success rates p_i(x) (the strategy hands them to
``on_population_end``), logs the population's coverage P_pop, the coverage P_same of N members all
at the mean rate, their gap, the verifier-projected Jensen–Shannon diversity and the covariance of
the members' normalised rewards z_i with their success (the alignment condition); formulas in
:mod:`es_lightning.es.diversity`. Metrics ``diversity/{p_pop,p_same,gap,js,weight_success_cov}``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from es_lightning.callbacks.base import Callback
from es_lightning.errors import ConfigError
from es_lightning.es.diversity import population_diversity

if TYPE_CHECKING:
    from es_lightning.strategies.base import PopulationResult
    from es_lightning.training.trainer import Trainer


class PopulationDiversity(Callback):
    """Population coverage and diversity of every (``every_n_updates``-th) ES update.

    Args:
        every_n_updates: log after every this many updates.
    """

    def __init__(self, every_n_updates: int = 1) -> None:
        if every_n_updates < 1:
            raise ConfigError(f"PopulationDiversity: every_n_updates must be >= 1, got {every_n_updates}")
        self.every_n_updates = every_n_updates

    def on_population_end(self, trainer: Trainer, step: int, population: PopulationResult) -> None:
        if step % self.every_n_updates == 0:
            trainer.log(population_diversity(population.member_prompt_success, population.z), step=step)
