"""Named evaluation suites: their tasks, resolution from recipes, and the held-out average."""

import pytest

from es_lightning.evaluation.summary import AVERAGE_KEY, average_over_tasks
from es_lightning.presets import (
    HELDOUT_AVERAGE_KEY,
    IN_DOMAIN_AVERAGE_KEY,
    SUITES,
    Suite,
    average_groups,
    resolve_eval_tasks,
)
from es_lightning.tasks import GPQA, GSM8K, MBPP, CommonsenseQA, Countdown, HotpotQA, MathTask

EASY_HELDOUT = ["commonsense_qa", "hotpotqa", "countdown", "gpqa", "mbpp"]
HARD_MATH = ["math500", "aime24", "aime25", "amc23"]
HARD_HELDOUT = ["gpqa", "mbpp", "commonsense_qa", "countdown"]


@pytest.mark.parametrize(
    ("name", "tasks", "heldout"),
    [
        ("easy", ["gsm8k", *EASY_HELDOUT], EASY_HELDOUT),
        ("easy_heldout", EASY_HELDOUT, EASY_HELDOUT),
        ("hard", [*HARD_MATH, *HARD_HELDOUT], HARD_HELDOUT),
        ("hard_math", HARD_MATH, []),
        ("hard_heldout", HARD_HELDOUT, HARD_HELDOUT),
    ],
)
def test_suites_hold_the_papers_tasks(name, tasks, heldout):
    suite = SUITES.find(name)
    assert list(suite.tasks) == tasks
    assert list(suite.heldout) == heldout
    assert list(suite.training_domain) == [t for t in tasks if t not in heldout]
    assert list(resolve_eval_tasks(name)) == tasks


def test_hard_setting_has_no_hotpotqa_and_all_four_maths_sets():
    hard = resolve_eval_tasks("hard")
    assert "hotpotqa" not in hard
    assert all(isinstance(hard[name], MathTask) for name in HARD_MATH)
    sources = {name: (hard[name].test.path, hard[name].test.split) for name in HARD_MATH}
    assert sources == {
        "math500": ("HuggingFaceH4/MATH-500", "test"),
        "aime24": ("HuggingFaceH4/aime_2024", "train"),
        "aime25": ("math-ai/aime25", "test"),
        "amc23": ("math-ai/amc23", "test"),
    }
    assert hard["amc23"].test.column_map == {"question": "problem"}
    kinds = {name: type(hard[name]) for name in HARD_HELDOUT}
    assert kinds == {"gpqa": GPQA, "mbpp": MBPP, "commonsense_qa": CommonsenseQA, "countdown": Countdown}


def test_easy_suite_builds_fresh_tasks_of_the_right_kinds():
    first, second = resolve_eval_tasks("easy"), resolve_eval_tasks("easy")
    assert isinstance(first["gsm8k"], GSM8K) and isinstance(first["hotpotqa"], HotpotQA)
    assert all(first[name] is not second[name] for name in first)  # no task object shared between runs


def test_a_list_of_suites_merges_in_order_and_builds_shared_tasks_once():
    tasks = resolve_eval_tasks(["hard_math", "hard_heldout", "easy_heldout"])
    assert list(tasks) == [*HARD_MATH, *HARD_HELDOUT, "hotpotqa"]
    assert resolve_eval_tasks(["hard_math", "hard_heldout"]).keys() == resolve_eval_tasks("hard").keys()


def test_a_mapping_or_none_passes_through():
    task = GSM8K()
    assert resolve_eval_tasks({"mine": task}) == {"mine": task}
    assert resolve_eval_tasks(None) is None


def test_unknown_suite_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match="no_such_suite") as err:
        resolve_eval_tasks(["easy", "no_such_suite"])
    for name in SUITES:
        assert name in str(err.value)
    with pytest.raises(ValueError, match="empty list"):
        resolve_eval_tasks([])


def test_two_suites_defining_one_name_differently_are_refused(monkeypatch):
    other = Suite("other_gsm8k", {"gsm8k": lambda: GSM8K(prompt_template="{question}")})
    monkeypatch.setitem(SUITES, other.name, other)
    with pytest.raises(ValueError, match="'gsm8k' differently"):
        resolve_eval_tasks(["easy", "other_gsm8k"])


def test_suite_checks_its_heldout_names():
    with pytest.raises(ValueError, match="not among its tasks"):
        Suite("broken", {"gsm8k": GSM8K}, heldout=("gpqa",))


def test_average_groups_of_the_papers_settings():
    assert average_groups(["gsm8k", *EASY_HELDOUT], training_task="gsm8k") == {
        HELDOUT_AVERAGE_KEY: EASY_HELDOUT
    }
    assert average_groups([*HARD_MATH, *HARD_HELDOUT], training_task="math") == {
        HELDOUT_AVERAGE_KEY: HARD_HELDOUT,
        IN_DOMAIN_AVERAGE_KEY: HARD_MATH,
    }
    # A task trained on is never held out; a one-task group would repeat its row and is left out.
    assert average_groups(["countdown", "gpqa", "mbpp"], training_task="countdown") == {
        HELDOUT_AVERAGE_KEY: ["gpqa", "mbpp"]
    }
    assert average_groups(["gsm8k", "gpqa"], training_task="gsm8k") == {}
    assert average_groups(["gsm8k", "mine", AVERAGE_KEY]) == {}


def _summary(pass1, greedy, **more):
    return {"n_prompts": 10.0, "pass@1": pass1, "pass@16": min(1.0, 2 * pass1), "greedy": greedy, **more}


def test_heldout_average_is_the_plain_mean_of_the_heldout_tasks():
    summaries = {
        "gsm8k": _summary(0.80, 0.85),
        "commonsense_qa": _summary(0.60, 0.62),
        "hotpotqa": _summary(0.20, 0.25, f1=0.4),
        "countdown": _summary(0.10, 0.05),
        "gpqa": _summary(0.30, 0.28),
        "mbpp": _summary(0.40, 0.45),
    }
    out = average_over_tasks(summaries, groups=average_groups(summaries, training_task="gsm8k"))
    assert set(out) == {*summaries, AVERAGE_KEY, HELDOUT_AVERAGE_KEY}
    assert out[HELDOUT_AVERAGE_KEY] == pytest.approx(
        {"pass@1": 0.32, "pass@16": 0.60, "greedy": 0.33}
    )  # (0.6+0.2+0.1+0.3+0.4)/5, (1+0.4+0.2+0.6+0.8)/5, (0.62+0.25+0.05+0.28+0.45)/5
    assert out[AVERAGE_KEY]["pass@1"] == pytest.approx((0.80 + 1.6) / 6)
    # Without groups the result is what it always was.
    assert average_over_tasks(summaries) == {k: v for k, v in out.items() if k != HELDOUT_AVERAGE_KEY}


def test_group_errors_are_named():
    summaries = {"gpqa": _summary(0.3, 0.3), "mbpp": _summary(0.4, 0.4)}
    with pytest.raises(ValueError, match="'heldout_average' needs tasks"):
        average_over_tasks(summaries, groups={HELDOUT_AVERAGE_KEY: ["gpqa", "hotpotqa"]})
    with pytest.raises(ValueError, match="needs tasks"):
        average_over_tasks(summaries, groups={HELDOUT_AVERAGE_KEY: []})
    with pytest.raises(ValueError, match="takes the name"):
        average_over_tasks(summaries, groups={"gpqa": ["mbpp"]})
    with pytest.raises(ValueError, match="takes the name"):
        average_over_tasks(summaries, groups={AVERAGE_KEY: ["mbpp"]})
