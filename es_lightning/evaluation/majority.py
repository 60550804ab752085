"""Majority vote (self-consistency) over the final answers of a prompt's samples.

``maj@k`` asks whether the most frequent answer among the first ``k`` samples is a correct one
(Wang et al., 2023, "Self-Consistency Improves Chain of Thought Reasoning")::

    maj@k = 1[ majority_vote(answers[:k]) ∈ {a_j : sample j is correct} ]

Answers are the normalised strings of :attr:`es_lightning.tasks.base.Score.answer`; ``None`` (no
answer found) never takes part in the vote::

    majority_vote(["4", "5", None, "5", "4"])   # "4": tied with "5" at two votes, and seen first
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence


def majority_vote(answers: Sequence[str | None]) -> str | None:
    """The most frequent non-``None`` answer, ``argmax_a #{j : answers[j] = a}``.

    Ties are broken deterministically: among the answers with the highest count, the one whose
    first occurrence comes earliest in ``answers`` wins (so the result never depends on hashing
    or set order).

    Args:
        answers: final answers of the samples, ``None`` where a sample gave none.

    Returns:
        The winning answer, or ``None`` when ``answers`` is empty or holds only ``None``.
    """
    counts: dict[str, int] = {}  # dicts keep insertion order: first occurrence order
    for answer in answers:
        if answer is not None:
            counts[answer] = counts.get(answer, 0) + 1
    if not counts:
        return None
    best = max(counts.values())
    return next(answer for answer, count in counts.items() if count == best)


def maj_at_k(answers: Sequence[str | None], correct: Sequence[bool], k: int) -> float:
    """``maj@k`` of one prompt: 1.0 if the majority answer of the first ``k`` samples is correct.

    An answer is correct when any sample of the prompt (among all of ``answers``, not only the
    first ``k``) giving that answer was scored correct; the verdict belongs to the answer, not to
    the vote. A vote with no non-``None`` answer scores 0.

    Args:
        answers: final answers of the prompt's ``M`` samples (``None`` where none was found).
        correct: whether each sample was scored correct, aligned with ``answers``.
        k: how many leading samples vote, ``1 <= k <= M``.

    Returns:
        1.0 or 0.0.

    Raises:
        ValueError: when ``answers`` and ``correct`` differ in length or ``k`` is out of range.
    """
    if len(answers) != len(correct):
        raise ValueError(f"maj_at_k: {len(answers)} answers but {len(correct)} correct flags")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= len(answers):
        raise ValueError(
            f"maj_at_k: k must be an int in [1, {len(answers)}] (the number of answers), got k={k!r}"
        )
    winner = majority_vote(answers[:k])
    if winner is None:
        return 0.0
    correct_answers = {a for a, ok in zip(answers, correct, strict=True) if ok and a is not None}
    return 1.0 if winner in correct_answers else 0.0
