import pytest

from es_lightning.tasks import GSM8K, TASKS, Countdown, Score, Task, get_task, register_task

BUILT_IN = {"gsm8k", "math", "countdown", "multiple_choice", "commonsense_qa", "gpqa", "hotpotqa", "mbpp"}


@pytest.fixture
def registry():
    saved = dict(TASKS)
    yield TASKS
    TASKS.clear()
    TASKS.update(saved)


def test_built_in_tasks_are_registered_under_their_names():
    assert BUILT_IN <= set(TASKS)
    assert all(TASKS[name].name == name for name in BUILT_IN)
    assert isinstance(get_task("gsm8k"), GSM8K)


def test_get_task_passes_arguments():
    task = get_task("countdown", n_train=2, n_test=3, seed=5)
    assert isinstance(task, Countdown) and len(task.load("test")) == 3


def test_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match="unknown task 'gsm9k'.*gsm8k"):
        get_task("gsm9k")


def test_register_a_user_task(registry):
    @register_task
    class Parity(Task):
        name = "parity"

        def question(self, row):
            return f"Is {row['n']} even?"

        def score(self, completion, row):
            answer = completion.strip().lower()
            return Score(reward=float(answer == ("yes" if row["n"] % 2 == 0 else "no")), answer=answer)

    task = get_task("parity")
    assert task.score("yes", {"n": 4}).reward == 1.0 and task.score("yes", {"n": 3}).reward == 0.0
    assert task.prompt({"n": 4}) == "Is 4 even?"


def test_registration_errors(registry):
    class Clash(Task):
        name = "gsm8k"

    with pytest.raises(ValueError, match="taken by"):
        register_task(Clash)
    assert TASKS["gsm8k"] is GSM8K

    class Nameless(Task):
        pass

    with pytest.raises(ValueError, match="name"):
        register_task(Nameless)
    with pytest.raises(TypeError, match="not a subclass"):
        register_task(dict)
