import random

import pytest
import torch

from es_lightning.evaluation.metric import PassAtK
from es_lightning.evaluation.pass_at_k import pass_at_k_curve
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
        # maj@k: the vote of k samples averaged over the C(3, k) subsets, ties split evenly
        "maj@1": (1 / 3 + 0 + 2 / 3) / 3,  # = pass@1: single samples
        "maj@2": (1 / 3 + 0 + 2 / 3) / 3,  # A: {7,3} twice at 1/2, {3,3} 0; C: {5,5} 1, {5,6} twice at 1/2
        "maj@3": 1 / 3,  # A: "3" wins; C: "5" wins
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
    assert out["maj@2"] == pytest.approx(1 / 3)


def test_correct_counts_go_through_the_pass_at_k_metric(monkeypatch):
    seen = []
    update = PassAtK.update

    def spy(self, correct):
        seen.append(correct.clone())
        update(self, correct)

    monkeypatch.setattr(PassAtK, "update", spy)
    summarize(SCORES, ks=[1, 3])
    # one update with the (P, M) matrix; 0.99 is not correct
    assert len(seen) == 1
    assert torch.equal(seen[0], torch.tensor([[1, 0, 0], [0, 0, 0], [1, 1, 0]], dtype=torch.bool))


@pytest.mark.parametrize("ks", [None, [5, 1, 12]])
def test_pass_at_k_is_exactly_the_estimator(ks):
    rng = random.Random(0)
    scores = [[S(float(rng.random() < q), str(j)) for j in range(12)] for q in (0.0, 0.1, 0.5, 0.9, 1.0) * 3]
    counts = [sum(s.reward == 1.0 for s in prompt) for prompt in scores]
    out = summarize(scores, ks=ks)
    expected = pass_at_k_curve(counts, n=12, ks=ks)
    assert [k for k in out if k.startswith("pass@")] == [f"pass@{k}" for k in expected]
    for k, value in expected.items():
        assert out[f"pass@{k}"] == value  # bit-identical, not approximately


def test_summarize_does_not_sync_across_ranks(monkeypatch):
    """A rank that evaluates alone must not wait on the others: no gather even under a process group."""
    expected = summarize(SCORES)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    assert summarize(SCORES) == expected  # a sync would call into the (absent) process group and fail


def test_errors():
    with pytest.raises(ValueError, match="prompt 1 has 2 samples but prompt 0 has 3"):
        summarize([SCORES[0], SCORES[1][:2]])
    with pytest.raises(ValueError, match="empty"):
        summarize([])
    with pytest.raises(ValueError, match="2 greedy scores for 3 prompts"):
        summarize(SCORES, greedy=GREEDY[:2])
    with pytest.raises(ValueError, match=r"every k must be in \[1, M=3\].*ks=\[4\]"):
        summarize(SCORES, ks=[4])
    with pytest.raises(ValueError, match=r"every k must be in \[1, M=3\].*ks=\[0, 1\]"):
        summarize(SCORES, ks=[0, 1])
    with pytest.raises(ValueError, match=r"ks=\[\]"):
        summarize(SCORES, ks=[])
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


def test_majority_false_leaves_maj_at_k_out():
    """A task that extracts no answer (e.g. reward functions) has no maj@k at all, not zeros."""
    out = summarize(SCORES, greedy=GREEDY, majority=False)
    assert not [key for key in out if key.startswith("maj@")]
    assert out == {k: v for k, v in summarize(SCORES, greedy=GREEDY).items() if not k.startswith("maj@")}
