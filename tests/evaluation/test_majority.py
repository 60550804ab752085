import itertools
import random
from fractions import Fraction
from math import comb

import pytest

from es_lightning.evaluation.majority import maj_at_k, majority_vote, win_share
from es_lightning.evaluation.pass_at_k import pass_at_k


def test_plain_majority():
    assert majority_vote(["3", "5", "5", "7"]) == "5"


def test_tie_goes_to_the_answer_seen_first():
    assert majority_vote(["4", "5", None, "5", "4"]) == "4"
    assert majority_vote(["5", "4", "4", "5"]) == "5"
    assert majority_vote(["b", "a"]) == "b"  # not alphabetical
    # repeated calls and equal lists give the same winner
    assert {majority_vote(["x", "y", "z", "z", "y", "x"]) for _ in range(20)} == {"x"}


def test_none_never_wins():
    assert majority_vote([None, None, "2"]) == "2"
    assert majority_vote([None, None]) is None
    assert majority_vote([]) is None


def brute_force_maj_at_k(answers, correct, k) -> Fraction:
    """The definition, naively: every k-subset votes; ties share the credit evenly; the winner earns
    the fraction of its voters in the subset that were scored correct."""
    total, subsets = Fraction(0), 0
    for subset in itertools.combinations(range(len(answers)), k):
        subsets += 1
        votes: dict[str, list[int]] = {}
        for j in subset:
            if answers[j] is not None:
                votes.setdefault(answers[j], []).append(j)
        if not votes:
            continue
        most = max(len(v) for v in votes.values())
        tied = [voters for voters in votes.values() if len(voters) == most]
        for voters in tied:
            total += Fraction(sum(correct[j] for j in voters), len(voters)) / len(tied)
    return total / subsets


# answers, correct, {k: maj@k worked by hand}
HAND_WORKED = [
    (
        # "7" right (3 samples), "3" wrong (2), one sample without an answer; M = 6
        ["7", "3", "3", None, "7", "7"],
        [True, False, False, False, True, True],
        {
            1: Fraction(1, 2),  # 3 of 6 single samples say "7"
            2: Fraction(9, 15),  # 15 pairs: 6 won by "7" ({7,7} or {7,None}), 6 ties {7,3} at 1/2
            3: Fraction(13, 20),  # 20 triples: 1 {7,7,7} + 9 two 7s + 3·(two of {3,3,N} split 1-1)/2
            4: Fraction(21, 30),  # leave two out of 15 ways: 6 {7,3} + 1 {3,3} + 2 {3,N} + 3 ties/2
            5: Fraction(3, 4),  # leave one out: a 7 (tie 2-2, 3 ways at 1/2), a 3 or None (win)
            6: Fraction(1),  # "7" 3 votes to 2
        },
    ),
    (
        # a verifier that rejects one of two "9"s: the winner earns the correctness of its voters
        ["9", "1", "9"],
        [False, False, True],
        {1: Fraction(1, 3), 2: Fraction(1, 3), 3: Fraction(1, 2)},  # k=2: {9a,1}: 0, {9b,1}: 1/2, {9,9}: 1/2
    ),
    # k=2: {4,N} -> "4" (0), {4,5} tie (1/2), {N,5} -> "5" (1); k=3: tie "4"/"5"
    (["4", None, "5"], [False, False, True], {1: Fraction(1, 3), 2: Fraction(1, 2), 3: Fraction(1, 2)}),
    ([None, "2"], [False, True], {1: Fraction(1, 2), 2: Fraction(1)}),
    ([None, None, None], [False, False, False], {1: Fraction(0), 3: Fraction(0)}),
    (["a", "b", "c", "d"], [True, False, False, False], {k: Fraction(1, 4) for k in range(1, 5)}),
]


@pytest.mark.parametrize(("answers", "correct", "expected"), HAND_WORKED)
def test_maj_at_k_hand_worked(answers, correct, expected):
    for k, value in expected.items():
        assert brute_force_maj_at_k(answers, correct, k) == value, k  # the worked numbers are right
        assert maj_at_k(answers, correct, k) == float(value), k


def test_maj_at_k_equals_brute_force_on_random_prompts():
    rng = random.Random(0)
    for _ in range(150):
        m = rng.randint(1, 9)
        pool = [None] + [str(i) for i in range(rng.randint(1, 5))]
        answers = [rng.choice(pool) for _ in range(m)]
        correct = [rng.random() < 0.4 for _ in range(m)]
        for k in range(1, m + 1):
            assert maj_at_k(answers, correct, k) == float(brute_force_maj_at_k(answers, correct, k)), (
                answers,
                correct,
                k,
            )


def test_win_shares_are_exact_probabilities():
    """Σ_a W(n_a) is the chance a k-subset holds any answer: 1 - C(abstain, k) / C(M, k)."""
    sizes, abstain = (1, 1, 2, 3, 5), 4  # M = 16
    for k in range(1, 17):
        total = sum(win_share(n, sizes, abstain, k) for n in sizes)
        assert total == 1 - Fraction(comb(abstain, k), comb(16, k)), k


def test_maj_at_1_is_pass_at_1_and_maj_at_m_the_full_vote():
    rng = random.Random(1)
    for _ in range(50):
        m = rng.randint(1, 40)
        truth = str(rng.randint(0, 3))
        answers = [str(rng.randint(0, 3)) for _ in range(m)]
        correct = [a == truth for a in answers]
        assert maj_at_k(answers, correct, 1) == pytest.approx(pass_at_k(m, sum(correct), 1), abs=1e-15)
        counts = {a: answers.count(a) for a in set(answers)}
        most = max(counts.values())
        tied = [a for a, n in counts.items() if n == most]
        assert maj_at_k(answers, correct, m) == pytest.approx((truth in tied) / len(tied), abs=1e-15)


def test_large_m_all_answers_different():
    """64 samples, all different answers (the costliest shape for the program): by symmetry each
    answer wins a k-subset's vote with chance 1/64."""
    answers = [str(i) for i in range(64)]
    correct = [i == 0 for i in range(64)]
    for k in (1, 16, 32, 64):
        assert maj_at_k(answers, correct, k) == pytest.approx(1 / 64, abs=1e-15)


def test_large_m_two_answers_against_the_hypergeometric_sum():
    """Two answers (25 right, 35 wrong of M = 60): maj@k = P(X > k - X) + P(X = k - X) / 2 with X
    the right answers among k drawn, X ~ Hypergeometric(60, 25, k), summed plainly."""
    answers = ["right"] * 25 + ["wrong"] * 35
    correct = [a == "right" for a in answers]
    for k in range(1, 61):
        total = comb(60, k)
        expected = sum(
            comb(25, x) * comb(35, k - x) / total * (1.0 if 2 * x > k else 0.5 if 2 * x == k else 0.0)
            for x in range(0, min(25, k) + 1)
        )
        assert maj_at_k(answers, correct, k) == pytest.approx(expected, abs=1e-12), k


def test_errors():
    with pytest.raises(ValueError, match="2 answers but 1 correct"):
        maj_at_k(["1", "2"], [True], 1)
    with pytest.raises(ValueError, match="k must be"):
        maj_at_k(["1", "2"], [True, False], 3)
    with pytest.raises(ValueError, match="k must be"):
        maj_at_k(["1", "2"], [True, False], 0)
