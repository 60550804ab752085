"""Presets by name: evaluation suites, evaluation protocols and instrument sets, defined once::

    eval_tasks: [hard_math, hard_heldout]             # suites, merged in order
    evaluation: {protocol: paper, max_tokens: 64}     # a protocol, with some fields changed
    callbacks: [weight_change, {class_path: my_pkg.MyCallback}]   # instrument sets and entries

Names are expanded inside the ``fit`` parser's type check (:func:`accept_names`), so the resolved
configuration holds the values; docs/running.md says what each stands for.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import yaml

from es_lightning.cli_hints import expand_names
from es_lightning.errors import ConfigError, UnknownNameError
from es_lightning.evaluation.runner import EvalConfig
from es_lightning.evaluation.summary import AVERAGE_KEY
from es_lightning.tasks import GPQA, GSM8K, MBPP, CommonsenseQA, Countdown, DataSource, HotpotQA, MathTask
from es_lightning.tasks.base import Task

HELDOUT_AVERAGE_KEY = "heldout_average"
"""Summary key of the mean over the evaluated held-out tasks."""
IN_DOMAIN_AVERAGE_KEY = "in_domain_average"
"""Summary key of the mean over the evaluated training-domain tasks (two or more, e.g. the hard
setting's four maths sets)."""
PROTOCOL_KEY = "protocol"
"""The key of an ``evaluation`` mapping that names the protocol its other keys change."""
CALLBACKS = "es_lightning.callbacks"
"""The package of the built-in callbacks (the repository's ``callbacks/`` folder)."""
_NAME = re.compile(r"[a-z][a-z0-9_]*")
"""What a set name looks like; a class name (``ParameterDrift``) or path (``pkg.Cls``) does not."""


class Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...


T = TypeVar("T", bound=Named)


class Registry(dict[str, T], Generic[T]):
    """Registered things by name; another under a taken name is refused, an unknown name listed."""

    def __init__(self, kind: str, plural: str, hint: str = "", sort: bool = False) -> None:
        super().__init__()
        self.kind, self.plural, self.hint, self.sort = kind, plural, hint, sort

    def register(self, thing: T, caller: str = "register") -> T:
        """Add ``thing`` under its name (``ValueError`` for another thing under a taken name)."""
        known = self.get(thing.name)
        if known is not None and known != thing:
            raise ValueError(f"{caller}: the name {thing.name!r} is taken by another {self.kind.split()[-1]}")
        self[thing.name] = thing
        return thing

    def find(self, name: str) -> T:
        """The thing registered as ``name`` (:class:`UnknownNameError` listing the known ones)."""
        if name not in self:
            names = sorted(self) if self.sort else list(self)
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; known {self.plural}: {', '.join(names)}{self.hint}"
            )
        return self[name]

    def describe(self) -> str:
        """``name (description)`` of every thing, for ``--help``."""
        return "; ".join(f"{t.name} ({t.description})" for t in self.values())


# -- evaluation suites ----------------------------------------------------------------------------
TaskFactory = Callable[[], Task]


@dataclass(frozen=True)
class Suite:
    """A named set of evaluation tasks (metric name → task factory) and which are held out."""

    name: str
    tasks: Mapping[str, TaskFactory]
    heldout: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self) -> None:
        if not self.name or not self.tasks:
            raise ValueError(f"Suite {self.name!r}: needs a name and at least one task")
        unknown = [t for t in self.heldout if t not in self.tasks]
        if unknown:
            raise ValueError(
                f"Suite {self.name!r}: held-out {unknown} are not among its tasks {list(self.tasks)}"
            )

    @property
    def training_domain(self) -> tuple[str, ...]:
        """The tasks that are not held out, in suite order."""
        return tuple(t for t in self.tasks if t not in self.heldout)


SUITES: Registry[Suite] = Registry("evaluation suite", "suites", sort=True)


def register_suite(suite: Suite) -> Suite:
    return SUITES.register(suite, "register_suite")


def resolve_eval_tasks(eval_tasks: Mapping[str, Task] | str | Sequence[str] | None) -> dict[str, Task] | None:
    """Tasks by metric name from a suite name, a list of them (merged in order), or the mapping."""
    if eval_tasks is None or isinstance(eval_tasks, Mapping):
        return None if eval_tasks is None else dict(eval_tasks)
    names = [eval_tasks] if isinstance(eval_tasks, str) else list(eval_tasks)
    if not names:
        raise ConfigError("eval_tasks: an empty list of suites; give suite names or leave eval_tasks unset")
    factories: dict[str, tuple[str, TaskFactory]] = {}
    for suite in map(SUITES.find, names):
        for metric, factory in suite.tasks.items():
            first = factories.setdefault(metric, (suite.name, factory))
            if first[1] is not factory:
                raise ConfigError(
                    f"eval_tasks: suites {first[0]!r} and {suite.name!r} define {metric!r} differently"
                )
    return {metric: factory() for metric, (_, factory) in factories.items()}


def average_groups(task_names: Iterable[str], training_task: str | None = None) -> dict[str, list[str]]:
    """The ``heldout_average`` and ``in_domain_average`` groups of ``task_names`` with two tasks or more."""
    names = [n for n in task_names if n != AVERAGE_KEY]
    heldout_names = {t for suite in SUITES.values() for t in suite.heldout}
    in_domain_names = {t for suite in SUITES.values() for t in suite.training_domain}
    heldout = [n for n in names if n in heldout_names and n != training_task]
    in_domain = [n for n in names if n not in heldout and (n in in_domain_names or n == training_task)]
    groups = {HELDOUT_AVERAGE_KEY: heldout, IN_DOMAIN_AVERAGE_KEY: in_domain}
    return {key: members for key, members in groups.items() if len(members) >= 2}


def _math(path: str, split: str = "test", **column_map: str) -> TaskFactory:
    """A maths set of the hard setting from the hub (MATH-500 is MathTask's default)."""
    return lambda: MathTask(test=DataSource(path=path, split=split, column_map=dict(column_map)))


_EASY_HELDOUT: dict[str, TaskFactory] = {
    "commonsense_qa": CommonsenseQA,
    "hotpotqa": HotpotQA,
    "countdown": Countdown,
    "gpqa": GPQA,  # gated on the hub: accept its terms and `hf auth login`
    "mbpp": MBPP,
}
_HARD_MATH: dict[str, TaskFactory] = {
    "math500": MathTask,  # HuggingFaceH4/MATH-500, split test, 500 problems
    "aime24": _math("HuggingFaceH4/aime_2024", split="train"),  # its only split, 30 problems
    "aime25": _math("math-ai/aime25"),  # 30 problems; columns problem, answer
    "amc23": _math("math-ai/amc23", question="problem"),  # 40 problems
}
_HARD_HELDOUT: dict[str, TaskFactory] = {
    k: _EASY_HELDOUT[k] for k in ("gpqa", "mbpp", "commonsense_qa", "countdown")
}

for _name, _tasks, _heldout, _description in (
    (
        "easy",
        {"gsm8k": GSM8K, **_EASY_HELDOUT},
        _EASY_HELDOUT,
        "the easy setting: GSM8K (training domain) + the easy held-out suite",
    ),
    (
        "easy_heldout",
        _EASY_HELDOUT,
        _EASY_HELDOUT,
        "the easy held-out suite: CommonsenseQA, HotpotQA, Countdown, GPQA, MBPP",
    ),
    (
        "hard",
        {**_HARD_MATH, **_HARD_HELDOUT},
        _HARD_HELDOUT,
        "the hard setting: MATH-500, AIME24, AIME25, AMC23 + the hard held-out suite",
    ),
    ("hard_math", _HARD_MATH, {}, "the hard setting's maths sets: MATH-500, AIME24, AIME25, AMC23"),
    (
        "hard_heldout",
        _HARD_HELDOUT,
        _HARD_HELDOUT,
        "the hard held-out suite: GPQA, MBPP, CommonsenseQA, Countdown",
    ),
):
    register_suite(Suite(_name, dict(_tasks), tuple(_heldout), _description))


# -- evaluation protocols -------------------------------------------------------------------------
@dataclass(frozen=True)
class EvalProtocol:
    """A named :class:`EvalConfig` (the schema: every field typed and checked)."""

    name: str
    config: EvalConfig
    description: str = ""

    def settings(self) -> dict[str, Any]:
        """The settings as the mapping a recipe would spell out (a fresh copy)."""
        return dataclasses.asdict(self.config)


PROTOCOLS: Registry[EvalProtocol] = Registry(
    "evaluation protocol",
    "protocols",
    " (or give the settings: num_samples, temperature, max_tokens, ks, ...)",
)


def register_protocol(protocol: EvalProtocol) -> EvalProtocol:
    return PROTOCOLS.register(protocol, "register_protocol")


def _read_yaml(text: str, argument: str | None = None) -> Any:
    """Inline YAML from the command line (refused naming ``argument``, or ``None``)."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as err:
        if argument is None:
            return None
        raise ConfigError(f"{argument}: {text!r} does not read as YAML: {err}") from None


def _is_word(value: str, pattern: re.Pattern[str] = re.compile(r"\w+")) -> bool:
    """A bare word meant as a name (``paper``), not ``null``, a number, a path or inline YAML."""
    return pattern.fullmatch(value) is not None and isinstance(yaml.safe_load(value), str)


def expand_protocol(value: Any) -> Any:
    """``value`` with a protocol name replaced by its settings; anything else unchanged."""
    if isinstance(value, str) and (value in PROTOCOLS or _is_word(value)):
        return PROTOCOLS.find(value).settings()
    if isinstance(value, str) and value.lstrip().startswith("{") and PROTOCOL_KEY in value:
        loaded = _read_yaml(value, "evaluation")
        return expand_protocol(loaded) if isinstance(loaded, dict) else value
    if isinstance(value, dict) and PROTOCOL_KEY in value:
        changes = dict(value)
        name = changes.pop(PROTOCOL_KEY)
        if not isinstance(name, str):
            raise ConfigError(f"evaluation.{PROTOCOL_KEY} must name a protocol, got {name!r}")
        return {**PROTOCOLS.find(name).settings(), **changes}
    return value


for _name, _samples, _tokens, _ks, _description in (
    (
        "paper",
        32,
        2048,
        [1, 16, 32],
        "the paper's, easy setting: M = 32 at T = 0.6, 2048 tokens, Pass@1/16/32, greedy",
    ),
    ("paper_hard", 32, 8192, [1, 16, 32], "the paper's, hard setting: as paper with 8192 tokens"),
    (
        "demo_cpu",
        16,
        32,
        [1, 2, 4, 8, 16],
        "the CPU demo's: M = 16 at T = 0.6, 32 tokens, Pass@1/2/4/8/16, greedy",
    ),
    ("smoke_cpu", 4, 8, [1, 2, 4], "the CPU smoke test's: M = 4 at T = 0.6, 8 tokens, Pass@1/2/4, greedy"),
):
    _config = EvalConfig(num_samples=_samples, temperature=0.6, max_tokens=_tokens, ks=_ks, greedy=True)
    register_protocol(EvalProtocol(_name, _config, _description))


# -- instrument sets ------------------------------------------------------------------------------
@dataclass(frozen=True)
class InstrumentSet:
    """A named list of callback entries, checked by the parser like written ones."""

    name: str
    callbacks: tuple[dict[str, Any], ...]
    description: str = ""

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


def register_instrument_set(instruments: InstrumentSet) -> InstrumentSet:
    return INSTRUMENT_SETS.register(instruments, "register_instrument_set")


def expand_instruments(value: Any) -> Any:
    """``value`` with instrument set names replaced by their entries; anything else unchanged."""
    if isinstance(value, str) and _is_word(value, _NAME):
        return INSTRUMENT_SETS.find(value).entries()
    if isinstance(value, str) and value.lstrip().startswith("["):
        loaded = _read_yaml(value)
        expanded = expand_instruments(loaded) if isinstance(loaded, list) else loaded
        return expanded if expanded != loaded else value  # no name: jsonargparse reads the text
    if isinstance(value, list):
        named = [
            INSTRUMENT_SETS.find(v).entries() if isinstance(v, str) and _NAME.fullmatch(v) else [v]
            for v in value
        ]
        return [entry for entries in named for entry in entries]
    return value


def _entry(name: str, **init_args: Any) -> dict[str, Any]:
    return {"class_path": f"{CALLBACKS}.{name}", **({"init_args": init_args} if init_args else {})}


_WEIGHT_CHANGE = (_entry("ParameterDrift", every_n_updates=10), _entry("LayerAttribution", top_k=100))
_DIVERSITY = (_entry("PopulationDiversity"),)
_GPQA = {"class_path": "es_lightning.tasks.GPQA"}  # gated on the hub: `hf auth login`
_GPQA_ENTROPY = (
    _entry("TokenEntropy", task=_GPQA, every_n_updates=10, num_prompts=64, temperature=0.6, max_tokens=2048),
)
_DEMO_CPU = (
    _entry("TokenEntropy", every_n_updates=5, num_prompts=64, temperature=0.6, max_tokens=32),
    _entry("ParameterDrift", every_n_updates=5),
    *_DIVERSITY,
)

for _name, _callbacks, _description in (
    (
        "weight_change",
        _WEIGHT_CHANGE,
        "ParameterDrift (drift/rel_l2 every 10 updates) and LayerAttribution (top-100 |Δθ| per kind and layer at each checkpoint)",
    ),
    (
        "population_diversity",
        _DIVERSITY,
        "PopulationDiversity (ES: the population's coverage and JS diversity)",
    ),
    (
        "gpqa_entropy",
        _GPQA_ENTROPY,
        "TokenEntropy on held-out GPQA, 64 prompts at T = 0.6, 2048 tokens, every 10 updates (the paper's Figure 2)",
    ),
    (
        "paper_instruments",
        (*_GPQA_ENTROPY, *_WEIGHT_CHANGE, *_DIVERSITY),
        "gpqa_entropy + weight_change + population_diversity",
    ),
    (
        "demo_cpu",
        _DEMO_CPU,
        "the CPU demo's: TokenEntropy (64 prompts, 32 tokens) and ParameterDrift every 5 updates, PopulationDiversity",
    ),
):
    register_instrument_set(InstrumentSet(_name, _callbacks, _description))


# -- the fit parser -------------------------------------------------------------------------------
def accept_names(parser: Any) -> Any:
    """Let ``parser``'s ``evaluation`` and ``callbacks`` take names. Returns ``parser``."""
    expansions: dict[str, tuple[Callable[[Any], Any], Registry[Any]]] = {
        "evaluation": (expand_protocol, PROTOCOLS),
        "callbacks": (expand_instruments, INSTRUMENT_SETS),
    }
    for dest, (expand, registry) in expansions.items():
        if not expand_names(parser, dest, expand, f"Names: {registry.describe()}."):
            raise ValueError(f"accept_names: the parser has no typed argument {dest!r}")
    return parser
