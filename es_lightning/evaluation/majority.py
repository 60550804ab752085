"""Majority vote (self-consistency) over the final answers of a prompt's samples.

``maj@k`` is the expected correctness of a majority vote among ``k`` of a prompt's ``M`` samples,
averaged over all ``C(M, k)`` subsets (Wang et al. 2023; verl's subset average, computed exactly
here instead of by bootstrap)::

    maj@k = (1 / C(M, k)) Σ_{S ⊆ {1..M}, |S| = k} vote(S)
    vote(S) = Σ_{a ∈ T(S)} (1 / |T(S)|) · c_a(S) / x_a(S)

``x_a(S)`` samples of S answered ``a``, ``c_a(S)`` of them correct, ``T(S)`` the answers tied for
most votes (a tie splits the credit; ``None`` never votes). Since the voters of an answer are a
uniform draw from its ``n_a`` samples, this factorises into answer counts::

    maj@k = Σ_a (c_a / n_a) · W(n_a),   W(n_a) = E_S[ 1[a ∈ T(S)] / |T(S)| ]

with ``W`` computed exactly by a dynamic program (:func:`win_share`). Hence ``maj@1 = pass@1``.
"""

from __future__ import annotations

import numbers
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache
from math import comb, lcm


def majority_vote(answers: Sequence[str | None]) -> str | None:
    """The most frequent non-``None`` answer, ties to the first seen (``None`` when none)."""
    counts: dict[str, int] = {}  # dicts keep insertion order: first occurrence order
    for answer in answers:
        if answer is not None:
            counts[answer] = counts.get(answer, 0) + 1
    if not counts:
        return None
    best = max(counts.values())
    return next(answer for answer, count in counts.items() if count == best)


def maj_at_k(answers: Sequence[str | None], correct: Sequence[bool], k: int) -> float:
    """``maj@k`` of one prompt's ``answers`` and ``correct`` flags (module docstring)."""
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
    """``W``: one answer's expected share of the majority vote among ``k`` samples, summed over its
    vote count ``t``::

        W = (1 / C(M, k)) Σ_t C(size, t) Σ_m N(k - t, m) / (m + 1)

    ``N(j, m)``: the ways to draw ``j`` others with none above ``t`` and ``m`` at ``t``.
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
