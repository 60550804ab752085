"""Majority vote (self-consistency) over the final answers of a prompt's samples.

``maj@k`` is the expected correctness of a majority vote among ``k`` of a prompt's ``M`` samples,
averaged over all ``C(M, k)`` subsets of size ``k`` (Wang et al., 2023, "Self-Consistency Improves
Chain of Thought Reasoning"; the subset average is verl's, computed here exactly instead of by
bootstrap)::

    maj@k = (1 / C(M, k)) Σ_{S ⊆ {1..M}, |S| = k} vote(S)
    vote(S) = Σ_{a ∈ T(S)} (1 / |T(S)|) · c_a(S) / x_a(S)

where ``x_a(S)`` is how many samples of ``S`` answered ``a``, ``c_a(S)`` how many of those were
scored correct, and ``T(S) = argmax_a x_a(S)`` the answers tied for the most votes. So:

* a tie is broken uniformly at random, i.e. each tied answer gets a ``1 / |T|`` share (fractional
  credit, never an order-dependent rule);
* the winning answer earns the correctness of one of its voters drawn uniformly (``c_a / x_a``;
  simply ``1[a is correct]`` when the verifier gives every sample with the same answer the same
  verdict, the usual case);
* ``None`` (no answer found) never votes; a subset with no answer at all scores 0.

Because the voters of an answer within ``S`` are a uniform draw from its ``n_a`` samples,
``E[c_a / x_a] = c_a / n_a`` and the average factorises into answer counts only::

    maj@k = Σ_a (c_a / n_a) · W(n_a),   W(n_a) = E_S[ 1[a ∈ T(S)] / |T(S)| ]

``W`` (an answer's expected share of the win) is computed exactly (rational arithmetic) by a
dynamic program over how many votes ``t`` the answer gets and, for the other answers, how many
samples were drawn and how many tie at ``t`` (:func:`win_share`). Hence ``maj@1 = pass@1`` on the
same samples (unless a sample without an answer is scored correct), and ``maj@M`` is the vote of
all ``M`` samples. Answers are the normalised strings of
:attr:`es_lightning.tasks.base.Score.answer`.

:func:`majority_vote` is the single vote over a list (ties to the first seen)::

    majority_vote(["4", "5", None, "5", "4"])   # "4": tied with "5" at two votes, and seen first
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from math import comb, lcm


def majority_vote(answers: Sequence[str | None]) -> str | None:
    """The most frequent non-``None`` answer, ``argmax_a #{j : answers[j] = a}``.

    Ties are broken deterministically: among the answers with the highest count, the one whose
    first occurrence comes earliest in ``answers`` wins (so the result never depends on hashing
    or set order). :func:`maj_at_k` does not use this rule: it splits ties evenly.

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
    """``maj@k`` of one prompt: the majority vote's correctness averaged over every ``k``-subset.

    ``Σ_a (c_a / n_a) · W(n_a)`` with ``n_a`` samples answering ``a``, ``c_a`` of them correct and
    ``W`` from :func:`win_share` (see the module docstring for the definition it equals).

    Args:
        answers: final answers of the prompt's ``M`` samples (``None`` where none was found).
        correct: whether each sample was scored correct, aligned with ``answers``.
        k: how many samples vote, ``1 <= k <= M``.

    Returns:
        A value in ``[0, 1]`` (exact up to the final conversion to float).

    Raises:
        ValueError: when ``answers`` and ``correct`` differ in length or ``k`` is out of range.
    """
    if len(answers) != len(correct):
        raise ValueError(f"maj_at_k: {len(answers)} answers but {len(correct)} correct flags")
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= len(answers):
        raise ValueError(
            f"maj_at_k: k must be an int in [1, {len(answers)}] (the number of answers), got k={k!r}"
        )
    n: Counter[str] = Counter()
    c: Counter[str] = Counter()
    for answer, ok in zip(answers, correct, strict=True):
        if answer is not None:
            n[answer] += 1
            c[answer] += bool(ok)
    sizes = tuple(sorted(n.values()))
    abstain = len(answers) - sum(sizes)
    total = sum(
        (Fraction(c[a], n[a]) * win_share(n[a], sizes, abstain, int(k)) for a in n if c[a]), Fraction(0)
    )
    return float(total)


@lru_cache(maxsize=4096)
def win_share(size: int, sizes: tuple[int, ...], abstain: int, k: int) -> Fraction:
    """``W``: one answer's expected share of the majority vote among ``k`` of the samples drawn
    uniformly without replacement, ``E_S[1[a ∈ T(S)] / |T(S)|]``.

    Summed over the answer's vote count ``t`` (it must hold the maximum ``t``)::

        W = (1 / C(M, k)) Σ_t C(size, t) Σ_m N(k - t, m) / (m + 1)

    where ``N(j, m)`` counts the ways to draw ``j`` samples from the other answers and the
    abstainers with no other answer above ``t`` and exactly ``m`` of them at ``t``. Other answers
    with fewer than ``t`` samples can never reach ``t`` and pool with the abstainers.

    Args:
        size: ``n_a``, the answer's number of samples (one of ``sizes``).
        sizes: the sample count of every distinct answer of the prompt, this one included (sorted,
            so that equal prompts share the cache).
        abstain: samples without an answer.
        k: samples drawn, ``1 <= k <= M = Σ sizes + abstain``.
    """
    others = list(sizes)
    others.remove(size)
    n_samples = sum(sizes) + abstain
    # N(j, ·) is kept as one integer Σ_m N(j, m)·Y^m with Y = 2^(M+1): every N(j, m) <= C(M, j)
    # < 2^M, so the digits never carry, and "one more tie" is a shift.
    bits = n_samples + 1
    lcm_ties = lcm(*range(1, len(sizes) + 1))  # tie shares 1/(m+1) as integers over lcm_ties
    total = 0
    for t in range(1, min(size, k) + 1):
        need = k - t
        pool = abstain + sum(n for n in others if n < t)
        ways = [comb(pool, j) for j in range(need + 1)]  # ways[j]: the pool alone, no tie yet
        for n in (n for n in others if n >= t):  # each other answer that could reach t votes
            grown = [0] * (need + 1)
            for j, w in enumerate(ways):
                if w:
                    for x in range(min(t, need - j) + 1):
                        grown[j + x] += (w * comb(n, x)) << (bits if x == t else 0)
            ways = grown
        digits, mask = ways[need], (1 << bits) - 1
        ties = sum(((digits >> (m * bits)) & mask) * (lcm_ties // (m + 1)) for m in range(len(sizes)))
        total += comb(size, t) * ties
    return Fraction(total, lcm_ties * comb(n_samples, k))
