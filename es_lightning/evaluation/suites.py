"""Named evaluation suites: the paper's task sets, defined once and referenced by name.

A recipe names a suite instead of listing its tasks::

    eval_tasks: easy                       # GSM8K + the easy held-out suite
    eval_tasks: [hard_math, hard_heldout]  # several suites, merged in order

A :class:`Suite` maps metric names (the ``{name}`` of ``eval/{name}/pass@k``) to task factories and
says which of its tasks are *held out* (outside the training domain). The paper reports the
held-out tasks' mean separately from the training-domain task(s); :func:`average_groups` gives
those groups for :func:`~es_lightning.evaluation.summary.average_over_tasks`::

    groups = average_groups(summaries, training_task="gsm8k")  # {"heldout_average": [...]}
    summaries = average_over_tasks(summaries, groups=groups)

Built-in suites (``SUITES``):

==============  =====================================================  =========================
name            tasks (metric names)                                   held out
==============  =====================================================  =========================
easy            gsm8k, commonsense_qa, hotpotqa, countdown, gpqa, mbpp  all but gsm8k
easy_heldout    commonsense_qa, hotpotqa, countdown, gpqa, mbpp         all
hard            math500, aime24, aime25, amc23, gpqa, mbpp,             gpqa, mbpp,
                commonsense_qa, countdown                               commonsense_qa, countdown
hard_math       math500, aime24, aime25, amc23                          none
hard_heldout    gpqa, mbpp, commonsense_qa, countdown                   all
==============  =====================================================  =========================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from es_lightning.errors import ConfigError
from es_lightning.evaluation.summary import AVERAGE_KEY
from es_lightning.named import Registry
from es_lightning.tasks import GPQA, GSM8K, MBPP, CommonsenseQA, Countdown, DataSource, HotpotQA, MathTask
from es_lightning.tasks.base import Task

HELDOUT_AVERAGE_KEY = "heldout_average"
"""Summary key of the mean over the evaluated held-out tasks."""
IN_DOMAIN_AVERAGE_KEY = "in_domain_average"
"""Summary key of the mean over the evaluated training-domain tasks (two or more, e.g. the hard
setting's four maths sets)."""

TaskFactory = Callable[[], Task]


def math500() -> Task:
    """MATH-500 (``HuggingFaceH4/MATH-500``, split ``test``, 500 problems): MathTask's default."""
    return MathTask()


def aime24() -> Task:
    """AIME 2024 (``HuggingFaceH4/aime_2024``, its only split ``train``, 30 problems)."""
    return MathTask(test=DataSource(path="HuggingFaceH4/aime_2024", split="train"))


def aime25() -> Task:
    """AIME 2025 (``math-ai/aime25``, split ``test``, 30 problems; columns ``problem``, ``answer``)."""
    return MathTask(test=DataSource(path="math-ai/aime25", split="test"))


def amc23() -> Task:
    """AMC 2023 (``math-ai/amc23``, split ``test``, 40 problems; ``question`` mapped onto ``problem``)."""
    return MathTask(test=DataSource(path="math-ai/amc23", split="test", column_map={"question": "problem"}))


@dataclass(frozen=True)
class Suite:
    """A named set of evaluation tasks."""

    name: str
    """How recipes refer to it (``eval_tasks: <name>``)."""
    tasks: Mapping[str, TaskFactory]
    """Metric name -> a callable building a fresh :class:`Task` (a task class, or a function)."""
    heldout: tuple[str, ...] = ()
    """The tasks outside the training domain, averaged on their own under ``heldout_average``."""
    description: str = ""
    """One line for listings and error messages."""

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

    def build(self) -> dict[str, Task]:
        """``{metric name: a new Task}`` in suite order."""
        return {name: factory() for name, factory in self.tasks.items()}


SUITES: Registry[Suite] = Registry("evaluation suite", "suites", sort=True)
"""Registered suites by name."""


def register_suite(suite: Suite) -> Suite:
    """Add ``suite`` to :data:`SUITES`; a different suite under a taken name is refused."""
    return SUITES.register(suite, "register_suite")


def get_suite(name: str) -> Suite:
    """The suite registered as ``name``.

    Raises:
        UnknownNameError: no suite has that name (a ``ValueError``); the message lists the known ones.
    """
    return SUITES.find(name)


def resolve_eval_tasks(eval_tasks: Mapping[str, Task] | str | Sequence[str] | None) -> dict[str, Task] | None:
    """Tasks by metric name from a suite name, a list of suite names, or the mapping itself.

    ``None`` stays ``None`` (the trainer then evaluates the training task). Suites in a list are
    merged in order; a metric name two suites share must come from the same factory (e.g. ``gpqa``
    in ``easy`` and ``hard_heldout``) and is built once.

    Raises:
        ConfigError: an unknown suite name, an empty list, or two suites defining one name differently.
    """
    if eval_tasks is None:
        return None
    if isinstance(eval_tasks, Mapping):
        return dict(eval_tasks)
    names = [eval_tasks] if isinstance(eval_tasks, str) else list(eval_tasks)
    if not names:
        raise ConfigError("eval_tasks: an empty list of suites; give suite names or leave eval_tasks unset")
    factories: dict[str, tuple[str, TaskFactory]] = {}
    for suite in map(get_suite, names):
        for metric, factory in suite.tasks.items():
            first = factories.setdefault(metric, (suite.name, factory))
            if first[1] is not factory:
                raise ConfigError(
                    f"eval_tasks: suites {first[0]!r} and {suite.name!r} define {metric!r} differently"
                )
    return {metric: factory() for metric, (_, factory) in factories.items()}


def heldout_task_names() -> frozenset[str]:
    """Every metric name some registered suite holds out."""
    return frozenset(t for suite in SUITES.values() for t in suite.heldout)


def in_domain_task_names() -> frozenset[str]:
    """Every metric name some registered suite counts as training domain."""
    return frozenset(t for suite in SUITES.values() for t in suite.training_domain)


def average_groups(task_names: Iterable[str], training_task: str | None = None) -> dict[str, list[str]]:
    """Named groups of the evaluated tasks for ``average_over_tasks(summaries, groups=...)``.

    * ``heldout_average``: the tasks some suite holds out (never ``training_task``);
    * ``in_domain_average``: the tasks some suite counts as training domain, plus ``training_task``.

    A group is returned only when two or more of its tasks were evaluated (the mean of one task
    would repeat its row). Tasks in neither group (custom names) count in the overall average only.

    Args:
        task_names: the evaluated metric names (a summaries dict works: its keys are iterated).
        training_task: the training task's metric name, e.g. ``module.task.name``.
    """
    names = [n for n in task_names if n != AVERAGE_KEY]
    heldout_names, in_domain_names = heldout_task_names(), in_domain_task_names()
    heldout = [n for n in names if n in heldout_names and n != training_task]
    in_domain = [n for n in names if n not in heldout and (n in in_domain_names or n == training_task)]
    groups = {HELDOUT_AVERAGE_KEY: heldout, IN_DOMAIN_AVERAGE_KEY: in_domain}
    return {key: members for key, members in groups.items() if len(members) >= 2}


_EASY_HELDOUT: dict[str, TaskFactory] = {
    "commonsense_qa": CommonsenseQA,
    "hotpotqa": HotpotQA,
    "countdown": Countdown,
    "gpqa": GPQA,  # gated on the hub: accept its terms and `hf auth login`
    "mbpp": MBPP,
}
_HARD_MATH: dict[str, TaskFactory] = {"math500": math500, "aime24": aime24, "aime25": aime25, "amc23": amc23}
_HARD_HELDOUT: dict[str, TaskFactory] = {
    "gpqa": GPQA,
    "mbpp": MBPP,
    "commonsense_qa": CommonsenseQA,
    "countdown": Countdown,
}

for _suite in (
    Suite(
        "easy",
        {"gsm8k": GSM8K, **_EASY_HELDOUT},
        heldout=tuple(_EASY_HELDOUT),
        description="the easy setting: GSM8K (training domain) + the easy held-out suite",
    ),
    Suite(
        "easy_heldout",
        dict(_EASY_HELDOUT),
        heldout=tuple(_EASY_HELDOUT),
        description="the easy held-out suite: CommonsenseQA, HotpotQA, Countdown, GPQA, MBPP",
    ),
    Suite(
        "hard",
        {**_HARD_MATH, **_HARD_HELDOUT},
        heldout=tuple(_HARD_HELDOUT),
        description="the hard setting: MATH-500, AIME24, AIME25, AMC23 + the hard held-out suite",
    ),
    Suite(
        "hard_math",
        dict(_HARD_MATH),
        description="the hard setting's maths sets: MATH-500, AIME24, AIME25, AMC23",
    ),
    Suite(
        "hard_heldout",
        dict(_HARD_HELDOUT),
        heldout=tuple(_HARD_HELDOUT),
        description="the hard held-out suite: GPQA, MBPP, CommonsenseQA, Countdown",
    ),
):
    register_suite(_suite)
