"""HotpotQA: multi-hop question answering with a short free-text answer (after the **last**
``Answer:``), rewarded by exact match after SQuAD normalisation; ``extra["f1"]`` is the token F1."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from es_lightning.errors import ConfigError
from es_lightning.tasks.base import Score
from es_lightning.tasks.data import DataSource
from es_lightning.tasks.families import DatasetTask
from es_lightning.tasks.registry import register_task

_ANSWER = re.compile(r"answer\s*:", re.IGNORECASE)
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD answer normalisation (lowercase, no punctuation, no articles, single spaces)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def extract_answer(completion: str) -> str | None:
    """The raw answer text of ``completion`` (module rules), or ``None`` when it is empty."""
    matches = list(_ANSWER.finditer(completion))
    if matches:
        text = completion[matches[-1].end() :].strip().split("\n", 1)[0]
    else:
        lines = [line for line in completion.splitlines() if line.strip()]
        text = lines[-1] if lines else ""
    boxed = re.fullmatch(r"\s*\\boxed\{(.*)\}\s*\.?\s*", text)
    text = (boxed.group(1) if boxed else text).replace("**", "").strip()
    return text or None


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD token F1 between two raw answers (formula in the module docstring)."""
    pred_norm, gold_norm = normalize_answer(prediction), normalize_answer(gold)
    if pred_norm in ("yes", "no", "noanswer") or gold_norm in ("yes", "no", "noanswer"):
        return float(pred_norm == gold_norm)
    pred_tokens, gold_tokens = pred_norm.split(), gold_norm.split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _format_context(context: Any) -> str:
    """Context as text: a string, or HotpotQA's titles and sentences as one paragraph per document."""
    if context is None or isinstance(context, str):
        return context or ""
    if isinstance(context, dict) and {"title", "sentences"} <= set(context):
        if len(context["title"]) != len(context["sentences"]):
            raise ConfigError(
                f"hotpotqa: 'context' has {len(context['title'])} titles for "
                f"{len(context['sentences'])} sentence lists"
            )
        pairs = list(zip(context["title"], context["sentences"], strict=True))
    elif isinstance(context, (list, tuple)) and all(
        isinstance(p, (list, tuple)) and len(p) == 2 for p in context
    ):
        pairs = [(title, sentences) for title, sentences in context]
    else:
        raise ConfigError(
            "hotpotqa: 'context' must be a string, a {'title', 'sentences'} dict or a list of "
            f"[title, sentences] pairs; got {type(context).__name__}"
        )
    return "\n\n".join(f"{title}: {s if isinstance(s, str) else ''.join(s)}".strip() for title, s in pairs)


@register_task
class HotpotQA(DatasetTask):
    """HotpotQA (Yang et al. 2018): rows ``question``, ``answer`` and optionally ``context``.

    Args:
        train: training rows; ``None`` uses ``hotpotqa/hotpot_qa`` config ``distractor`` split
            ``train``.
        test: evaluation rows; ``None`` uses the same config's split ``validation``.
    """

    name = "hotpotqa"
    default_template = (
        "{question}\n\nThink step by step, then give a short final answer (a few words) on the "
        'last line as "Answer: <answer>".'
    )
    required_columns = ("question", "answer")
    column_types = {"question": str, "answer": str}
    default_train = DataSource(path="hotpotqa/hotpot_qa", name="distractor", split="train")
    default_test = DataSource(path="hotpotqa/hotpot_qa", name="distractor", split="validation")

    def validate_row(self, row: dict[str, Any], where: str = "row") -> None:
        """The columns, and a ``context`` (when given) in one of the accepted shapes."""
        super().validate_row(row, where)
        try:
            _format_context(row.get("context"))
        except ConfigError as err:
            raise ConfigError(f"{where}: {err}") from None

    def question(self, row: dict[str, Any]) -> str:
        context = _format_context(row.get("context"))
        question = str(row["question"]).strip()
        return f"{context}\n\nQuestion: {question}" if context else question

    def score(self, completion: str, row: dict[str, Any]) -> Score:
        answer = extract_answer(completion)
        if answer is None:
            return Score(reward=0.0, answer=None, extra={"f1": 0.0})
        gold = str(row["answer"])
        exact = normalize_answer(answer) == normalize_answer(gold)
        return Score(
            reward=float(exact), answer=normalize_answer(answer), extra={"f1": token_f1(answer, gold)}
        )
