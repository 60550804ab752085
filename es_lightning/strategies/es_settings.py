"""ES's settings, each field written once with its default, its check and its docstring (the
``--help``). The annotations are evaluated: jsonargparse reads the ``__init__`` types from them.
"""

import math
from dataclasses import dataclass
from typing import Literal, get_args

from es_lightning.checked import checked, field_values, one_of, refuse_invalid
from es_lightning.errors import ConfigError
from es_lightning.es.control import REWARD_CONTROLS, RewardControl
from es_lightning.es.lowrank import LOWRANK_TARGETS, PERTURBATIONS, LowRankTargets, Perturbation
from es_lightning.es.noise_table import NOISE_SOURCES, NoiseSource
from es_lightning.es.normalize import Normalization
from es_lightning.es.update import ANTITHETIC_BUDGETS, AntitheticBudget
from es_lightning.es.weights import OptimizerName
from es_lightning.strategies.es_update import UPDATE_MODES, UpdateMode

Estimator = Literal["one_point", "antithetic"]
MemberSamplingSeeds = Literal["common", "independent"]
MemberRollouts = Literal["regenerate", "fixed"]


def _positive(value: float) -> bool:
    return math.isfinite(value) and value > 0


def _whole_rank(r: int) -> bool:
    return isinstance(r, int) and not isinstance(r, bool) and r >= 1


@dataclass(eq=False)
class ESSettings:
    """How ES perturbs, scores and steps, and the process group's backend."""

    population_size: int = checked(32, lambda n: n >= 2, ">= 2: z-scores of one reward are undefined")
    """N, perturbations per update (split over the ranks; >= 2, even for ``antithetic``)."""
    sigma: float = checked(1.5e-3, _positive, "> 0")
    """σ, the perturbation scale (> 0)."""
    learning_rate: float = checked(2.5e-4, _positive, "> 0")
    """α, the step size (it absorbs 1/σ; > 0)."""
    normalization: Normalization = one_of("zscore", get_args(Normalization))
    """how rewards are normalised within the population."""
    estimator: Estimator = one_of("one_point", get_args(Estimator))
    """``one_point`` (N seeds, the default) or ``antithetic`` (±ε pairs)."""
    antithetic_budget: AntitheticBudget = one_of("rollouts", ANTITHETIC_BUDGETS)
    """what ``antithetic`` holds equal to a one-point population of N: ``rollouts`` (the default: N
    members = N/2 directions × ±, the same generations) or ``directions`` (N directions × ± = 2N
    members: the same noise draws and update cost, twice the generations). The update's 1/N is over
    the members in both."""
    responses_per_prompt: int = checked(1, lambda n: n >= 1, ">= 1")
    """responses generated per prompt for each member."""
    member_sampling_seeds: MemberSamplingSeeds = one_of("common", get_args(MemberSamplingSeeds))
    """``common`` (every member samples with the same seed: common random numbers, the default) or
    ``independent`` (a seed per member), e.g. to measure κ_pair."""
    member_rollouts: MemberRollouts = one_of("regenerate", get_args(MemberRollouts))
    """``regenerate`` (each member generates its own responses: the paper) or ``fixed`` (the centre
    samples once per update and every member re-scores those responses, see
    :mod:`es_lightning.es.rescoring`), e.g. to measure κ_pair."""
    optimizer: OptimizerName = one_of("sgd", get_args(OptimizerName))
    """``sgd`` (plain ES, the paper) or ``adam`` on the ES direction."""
    update: UpdateMode = one_of("accumulate", UPDATE_MODES)
    """``accumulate`` (the default): each member's ε, drawn for its perturbation, is folded into
    running sums once R_i is known, and the update reads them (z-score and no normalisation, true
    rewards; three fp32 master-sized buffers per rank, 12 bytes per parameter); ``redraw``: the
    update draws every ε again from its seed (no extra memory; also what rank normalisation and
    ``reward_control: permuted`` use). The two differ only in the order of float32 sums."""
    reward_control: RewardControl = one_of("none", REWARD_CONTROLS)
    """``none`` (the default) or ``permuted``: each update shuffles the N member rewards among the
    members (a permutation drawn from (run seed, update), replayed on resume) before normalising
    them: a zero-signal control run with the same compute. The logged ``train/``/``es/member_``
    metrics and the population's ``rewards`` stay the true ones; the population's ``z`` are the ones
    the update applied."""
    signal_window: int | None = checked(20, lambda n: n is None or n >= 1, "null or >= 1")
    """the no-signal warning's pace: it fires when most of the last this many updates were skipped,
    and judges the run-level signal every this many updates (``None``: no warning). It restarts
    when a run resumes."""
    signal_threshold: float = checked(2.0, _positive, "> 0")
    """the no-signal warning fires when the upper end of the 95% interval of the run's signal
    √(ρ̄·N·T) (the expected z of its summed updates' gain against a random walk's:
    :mod:`es_lightning.es.run_signal`) stays below this (> 0) at two looks in a row."""
    checksum_tolerance: float = checked(0.0, lambda t: t >= 0, ">= 0")
    """largest allowed difference of the centre's checksum across ranks (0: bit-identical, the
    default)."""
    perturbation: Perturbation = one_of("full", PERTURBATIONS)
    """``full`` (the default: a full-rank ε_i per tensor, the paper) or ``lowrank`` (EGGROLL: every
    weight matrix W (d_out × d_in) moves by σ·A_i B_iᵀ/√r, A_i (d_out × r) and B_i (d_in × r)
    standard normal from the tensor's (seed, name) generator; 1-D tensors (norm weights, biases) are
    neither perturbed nor updated; the update is α·(1/N)·Σ z_i A_i B_iᵀ/√r, drawn again from the
    seeds; the transformers rollout generates all of a rank's members in one call, the vLLM rollout
    serves them as LoRA adapters in one call)."""
    rank: int = checked(1, _whole_rank, "an integer >= 1")
    """r, the rank of the low-rank directions (>= 1; ``perturbation: lowrank`` only)."""
    lowrank_targets: LowRankTargets = one_of("matrices", LOWRANK_TARGETS)
    """which matrices low-rank ES moves: ``matrices`` (every 2-D tensor, the embedding and output
    head included; the transformers rollout) or ``linear`` (all but the input embedding and the
    output head: what vLLM serves as LoRA, needed with the vLLM rollout)."""
    noise: NoiseSource = one_of("generator", NOISE_SOURCES)
    """where full-rank ε comes from: ``generator`` (the default: ε of each tensor drawn by a
    generator seeded with (member seed, parameter name); independent across members and tensors)
    or ``table`` (Salimans et al. 2017: one table of ``noise_table_size`` Gaussian numbers built
    once per process from a fixed seed, ε a slice of it at an offset drawn from (member seed,
    parameter name); reading a slice is far cheaper than drawing it on a CPU, and an accumulated
    update holds no ε. The price: slices of one table overlap, so members and tensors are not
    independent (two members' ε of an n-number tensor share about n/noise_table_size of their
    numbers, at shifted positions). Not with ``perturbation: lowrank``)."""
    noise_table_size: int = checked(2**26, _whole_rank, "an integer >= 1")
    """numbers in the table of ``noise: table`` (4 bytes each, per process: 256 MiB by default);
    at least the largest tensor's (checked once the engine holds the model); the larger, the less
    the slices overlap."""
    process_group_backend: str | None = None
    """``gloo``/``nccl``; default: NCCL on GPU, gloo on CPU."""

    def __post_init__(self) -> None:
        refuse_invalid("ESStrategy", field_values(self), ESSettings)
        if self.antithetic and self.antithetic_budget == "rollouts" and self.population_size % 2:
            raise ConfigError(
                f"ESStrategy: antithetic needs an even population_size (N/2 directions × ±), got "
                f"{self.population_size}; or antithetic_budget: directions (N directions, 2N members)"
            )
        if self.noise == "table" and self.perturbation == "lowrank":
            raise ConfigError(
                "ESStrategy: noise: table gives full-rank ε, and perturbation: lowrank draws its "
                "factors from a generator per matrix; use noise: generator with perturbation: lowrank"
            )

    @property
    def antithetic(self) -> bool:
        """Whether the members are ±ε pairs (``estimator: antithetic``)."""
        return self.estimator == "antithetic"
