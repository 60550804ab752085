import pytest

from es_lightning.evaluation.summary import average_over_tasks, metric_names, summarize
from es_lightning.tasks.base import Score


def S(reward, answer, **extra):
    return Score(reward=reward, answer=answer, extra=extra)


SCORES = [
    # prompt A: 1 correct of 3; the majority over all three is the wrong "3"
    [S(1.0, "7", f1=1.0), S(0.0, "3", f1=0.0), S(0.0, "3", f1=0.5)],
    # prompt B: none correct; a reward of 0.99 is not correct
    [S(0.0, "2"), S(0.99, None), S(0.0, "2")],
    # prompt C: 2 correct of 3
    [S(1.0, "5"), S(1.0, "5"), S(0.0, "6")],
]
GREEDY = [S(1.0, "7", f1=0.25), S(0.0, "2", f1=0.75), S(1.0 - 1e-12, "5")]


def test_hand_worked_example():
    out = summarize(SCORES, greedy=GREEDY)
    expected = {
        "n_prompts": 3.0,
        "n_samples": 3.0,
        "mean_reward": 3.99 / 9,
        # c = [1, 0, 2], n = 3
        "pass@1": (1 / 3 + 0 + 2 / 3) / 3,  # 1/3
        "pass@2": ((1 - 1 / 3) + 0 + 1) / 3,  # 5/9
        "pass@3": 2 / 3,
        "maj@1": 2 / 3,  # "7" ok, "2" wrong, "5" ok
        "maj@2": 2 / 3,  # A: tie "7"/"3" -> "7" (first)
        "maj@3": 1 / 3,  # A: "3" wins
        "greedy": 2 / 3,  # 1 - 1e-12 counts as correct
        "greedy_f1": 0.5,
        "f1": 0.5,  # mean over the samples that report f1
    }
    assert set(out) == set(expected)
    for key, value in expected.items():
        assert out[key] == pytest.approx(value, abs=1e-12), key


def test_selected_ks_and_no_greedy():
    out = summarize(SCORES, ks=[2])
    assert "greedy" not in out and "pass@1" not in out and "maj@3" not in out
    assert out["pass@2"] == pytest.approx(5 / 9)
    assert out["maj@2"] == pytest.approx(2 / 3)


def test_errors():
    with pytest.raises(ValueError, match="prompt 1 has 2 samples but prompt 0 has 3"):
        summarize([SCORES[0], SCORES[1][:2]])
    with pytest.raises(ValueError, match="empty"):
        summarize([])
    with pytest.raises(ValueError, match="2 greedy scores for 3 prompts"):
        summarize(SCORES, greedy=GREEDY[:2])
    with pytest.raises(ValueError, match="k must be <= n"):
        summarize(SCORES, ks=[4])
    with pytest.raises(ValueError, match="clashes"):
        summarize([[S(1.0, "1", **{"pass@1": 1.0})]])


def test_metric_names():
    names = metric_names("gsm8k", {"pass@1": 0.5, "maj@4": 0.25, "greedy": 1.0, "n_prompts": 3.0})
    assert names == {
        "eval/gsm8k/pass@1": 0.5,
        "eval/gsm8k/maj@4": 0.25,
        "eval/gsm8k/greedy": 1.0,
        "eval/gsm8k/n_prompts": 3.0,
    }
    with pytest.raises(ValueError, match="task name"):
        metric_names("a/b", {})


def test_average_over_tasks():
    summaries = {
        "gsm8k": {"pass@1": 0.2, "pass@4": 0.6, "maj@4": 0.4, "greedy": 0.3, "n_prompts": 10.0},
        "math": {"pass@1": 0.4, "pass@2": 0.5, "maj@4": 0.2, "f1": 0.9},
    }
    out = average_over_tasks(summaries)
    assert out["gsm8k"] == summaries["gsm8k"] and out["math"] == summaries["math"]
    assert out["average"] == pytest.approx({"pass@1": 0.3, "maj@4": 0.3})
    with pytest.raises(ValueError, match="no task"):
        average_over_tasks({})
    with pytest.raises(ValueError, match="average"):
        average_over_tasks({"average": {"pass@1": 1.0}})
