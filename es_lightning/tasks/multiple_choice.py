"""Multiple-choice questions (CommonsenseQA, GPQA): the model answers with an option letter.

Rows have ``question``, ``choices`` (a list, or ``{"label", "text"}``) and ``answer`` (an index, a
label or an option's text), or GPQA's ``correct_column`` and ``incorrect_columns``, shuffled with
``shuffle_seed``. The last ``answer is (C)``, ``Answer: C``, ``\\boxed{C}`` or lone letter counts.
"""

from __future__ import annotations

import hashlib
import random
import re
import string
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Score
from es_lightning.tasks.data import DataSource
from es_lightning.tasks.families import DatasetTask
from es_lightning.tasks.registry import register_task

_LETTERS = string.ascii_uppercase
_PATTERNS = (
    re.compile(r"(?i:answer)(?:\s+is)?\s*[:：]?\s*(?:\*\*|\(|\[)?\s*([A-Z])\b(?![.']\w)"),
    re.compile(r"\\boxed\s*\{\s*(?:\\text(?:bf)?\s*\{)?\s*\(?([A-Z])\)?\s*\}?\s*\}"),
    re.compile(r"(?:^|\n)[ \t]*(?:\*\*)?\(?([A-Z])\)?[.:]?(?:\*\*)?[ \t]*$"),
)


def extract_letter(completion: str, n_choices: int) -> str | None:
    """The option letter ``completion`` answers with (module rules), or ``None``."""
    allowed = _LETTERS[:n_choices]
    found = [
        (match.start(1), match.group(1))
        for pattern in _PATTERNS
        for match in pattern.finditer(completion.rstrip())
        if match.group(1) in allowed
    ]
    return max(found)[1] if found else None


@register_task
class MultipleChoice(DatasetTask):
    """Multiple-choice questions with lettered options (see the module docstring for row formats).

    It has no default sets: give ``train``/``test`` sources.

    Args:
        correct_column: for rows without ``choices``: the column holding the correct option text.
        incorrect_columns: for rows without ``choices``: the columns holding the wrong options.
        shuffle_seed: shuffle the options of each row with this seed (``None``: keep the dataset
            order, which must then not give the answer away).
        **kwargs: ``train``, ``test``, ``system_prompt``, ``prompt_template`` of
            :class:`~es_lightning.tasks.families.DatasetTask`.
    """

    name = "multiple_choice"
    default_template = (
        "{question}\n\nThink step by step, then finish with "
        '"The answer is (X)" where X is the letter of the correct option.'
    )
    required_columns = ("question",)
    column_types = {"question": str}

    def __init__(
        self,
        *,
        correct_column: str | None = None,
        incorrect_columns: list[str] | None = None,
        shuffle_seed: int | None = None,
        **kwargs: Any,
    ) -> None:
        if (correct_column is None) != (not incorrect_columns):
            raise ConfigError(
                f"{self.name}: set correct_column and incorrect_columns together "
                f"(got correct_column={correct_column!r}, incorrect_columns={incorrect_columns!r})"
            )
        super().__init__(**kwargs)
        self.correct_column = correct_column
        self.incorrect_columns = list(incorrect_columns or [])
        self.shuffle_seed = shuffle_seed

    def validate_row(self, row: dict[str, Any], where: str = "row") -> None:
        super().validate_row(row, where)
        try:
            self.options(row)
        except ConfigError as err:
            raise ConfigError(f"{where}: {err}") from None

    def options(self, row: dict[str, Any]) -> tuple[list[str], int]:
        """The option texts of ``row`` in display order and the index of the correct one."""
        if "choices" in row:
            texts, labels = _choice_texts(row["choices"], self.name)
            if "answer" not in row:
                raise ConfigError(f"{self.name}: row has 'choices' but no 'answer'; it has {sorted(row)}")
            gold = _gold_index(row["answer"], texts, labels, self.name)
        elif self.correct_column is not None:
            missing = [c for c in [self.correct_column, *self.incorrect_columns] if c not in row]
            if missing:
                raise ConfigError(f"{self.name}: row lacks option column(s) {missing}; it has {sorted(row)}")
            texts = [str(row[c]).strip() for c in [self.correct_column, *self.incorrect_columns]]
            gold = 0
        else:
            raise ConfigError(
                f"{self.name}: row has no 'choices' column and no correct_column/incorrect_columns "
                f"are set; it has {sorted(row)}"
            )
        if len(texts) > len(_LETTERS):
            raise ConfigError(f"{self.name}: {len(texts)} options; at most {len(_LETTERS)} are supported")
        if self.shuffle_seed is None:
            return texts, gold
        digest = hashlib.sha256(f"{self.shuffle_seed}\0{row['question']}".encode()).digest()
        order = list(range(len(texts)))
        random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
        return [texts[i] for i in order], order.index(gold)

    def question(self, row: dict[str, Any]) -> str:
        texts, _ = self.options(row)
        listed = "\n".join(f"{_LETTERS[i]}. {text}" for i, text in enumerate(texts))
        return f"{str(row['question']).strip()}\n\n{listed}"

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        texts, gold = self.options(row)
        letter = extract_letter(completion, len(texts))
        return Score(reward=float(letter == _LETTERS[gold]), answer=letter)


def _choice_texts(choices: Any, task: str) -> tuple[list[str], list[str]]:
    """Option texts and their labels from a list or a ``{"label", "text"}`` dict."""
    if isinstance(choices, dict):
        if "text" not in choices:
            raise ConfigError(
                f"{task}: dict choices need a 'text' key (and optionally 'label'); got {sorted(choices)}"
            )
        texts = [str(t).strip() for t in choices["text"]]
        labels = [str(x).strip() for x in choices.get("label") or _LETTERS[: len(texts)]]
        if len(labels) != len(texts):
            raise ConfigError(f"{task}: {len(labels)} labels for {len(texts)} choice texts")
        return texts, labels
    if isinstance(choices, (list, tuple)) and choices:
        texts = [str(t).strip() for t in choices]
        return texts, list(_LETTERS[: len(texts)])
    raise ConfigError(f"{task}: 'choices' must be a non-empty list or a label/text dict, got {choices!r}")


def _gold_index(answer: Any, texts: list[str], labels: list[str], task: str) -> int:
    """Index of the correct option (``answer`` rules of the module docstring)."""
    if isinstance(answer, int) and not isinstance(answer, bool):
        if not 0 <= answer < len(texts):
            raise ConfigError(f"{task}: answer index {answer} is outside the {len(texts)} options")
        return answer
    text = str(answer).strip()
    if text in labels:
        return labels.index(text)
    if texts.count(text) == 1:
        return texts.index(text)
    raise ConfigError(
        f"{task}: answer {answer!r} is neither an option label {labels} nor the text of exactly one option"
    )


@register_task
class CommonsenseQA(MultipleChoice):
    """CommonsenseQA (Talmor et al. 2019): five options with a ``{"label", "text"}`` dict.

    Default sets: ``tau/commonsense_qa`` ``train``, and ``validation`` as test (the hub's test has
    no answers).

    Args:
        shuffle_seed: shuffle the options of each row with this seed (``None``: the dataset order).
        **kwargs: ``train``, ``test``, ``system_prompt``, ``prompt_template`` of
            :class:`~es_lightning.tasks.families.DatasetTask`.
    """

    name = "commonsense_qa"
    default_train = DataSource(path="tau/commonsense_qa", split="train", column_map={"answerKey": "answer"})
    default_test = DataSource(
        path="tau/commonsense_qa", split="validation", column_map={"answerKey": "answer"}
    )

    def __init__(self, *, shuffle_seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(correct_column=None, incorrect_columns=None, shuffle_seed=shuffle_seed, **kwargs)


@register_task
class GPQA(MultipleChoice):
    """GPQA (Rein et al. 2023): four options from ``Correct Answer`` and ``Incorrect Answer 1..3``,
    shuffled per question with ``shuffle_seed``.

    Default test set: ``Idavidrein/gpqa`` ``gpqa_diamond`` (gated: accept its terms and log in).

    Args:
        shuffle_seed: shuffle the options of each row with this seed.
        **kwargs: ``train``, ``test``, ``system_prompt``, ``prompt_template`` of
            :class:`~es_lightning.tasks.families.DatasetTask`.
    """

    name = "gpqa"
    default_test = DataSource(
        path="Idavidrein/gpqa", name="gpqa_diamond", split="train", column_map={"Question": "question"}
    )

    def __init__(self, *, shuffle_seed: int = 0, **kwargs: Any) -> None:
        super().__init__(
            correct_column="Correct Answer",
            incorrect_columns=[f"Incorrect Answer {i}" for i in (1, 2, 3)],
            shuffle_seed=shuffle_seed,
            **kwargs,
        )
