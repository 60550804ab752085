import pytest

from es_lightning.evaluation.majority import maj_at_k, majority_vote


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


def test_maj_at_k_hand_worked():
    answers = ["7", "3", "3", None, "7", "7"]
    correct = [True, False, False, False, True, True]
    assert maj_at_k(answers, correct, 1) == 1.0  # "7"
    assert maj_at_k(answers, correct, 2) == 1.0  # tie "7"/"3", "7" first
    assert maj_at_k(answers, correct, 3) == 0.0  # "3" twice
    assert maj_at_k(answers, correct, 4) == 0.0  # None does not vote
    assert maj_at_k(answers, correct, 5) == 1.0  # tie, "7" first
    assert maj_at_k(answers, correct, 6) == 1.0


def test_answer_correct_if_any_sample_with_it_is_correct():
    # the winner "9" is correct because sample 2 (outside the first k) with answer "9" was correct
    assert maj_at_k(["9", "1", "9"], [False, False, True], 1) == 1.0


def test_all_none_scores_zero():
    assert maj_at_k([None, None, None], [False, False, False], 3) == 0.0
    assert maj_at_k([None, "2"], [False, True], 1) == 0.0


def test_errors():
    with pytest.raises(ValueError, match="2 answers but 1 correct"):
        maj_at_k(["1", "2"], [True], 1)
    with pytest.raises(ValueError, match="k must be"):
        maj_at_k(["1", "2"], [True, False], 3)
    with pytest.raises(ValueError, match="k must be"):
        maj_at_k(["1", "2"], [True, False], 0)
