"""Verifiable reasoning tasks: datasets, prompts and verifiers; importing the package registers the
built-in tasks (``get_task(name)``, ``@register_task``)."""

from es_lightning.tasks.arithmetic import Arithmetic
from es_lightning.tasks.base import Score, Task
from es_lightning.tasks.countdown import Countdown
from es_lightning.tasks.countdown_tiny import CountdownTiny
from es_lightning.tasks.data import DataSource
from es_lightning.tasks.echo import Echo
from es_lightning.tasks.families import DatasetTask, GeneratedTask
from es_lightning.tasks.function import FunctionTask
from es_lightning.tasks.gsm8k import GSM8K
from es_lightning.tasks.hotpotqa import HotpotQA
from es_lightning.tasks.math import MathTask
from es_lightning.tasks.mbpp import MBPP
from es_lightning.tasks.multiple_choice import GPQA, CommonsenseQA, MultipleChoice
from es_lightning.tasks.registry import TASKS, get_task, register_task

__all__ = [
    "GPQA",
    "MBPP",
    "TASKS",
    "Arithmetic",
    "CommonsenseQA",
    "Countdown",
    "CountdownTiny",
    "DataSource",
    "DatasetTask",
    "Echo",
    "FunctionTask",
    "GSM8K",
    "GeneratedTask",
    "HotpotQA",
    "MathTask",
    "MultipleChoice",
    "Score",
    "Task",
    "get_task",
    "register_task",
]
