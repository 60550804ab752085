import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from es_lightning.tasks import MathTask
from es_lightning.tasks import math as math_task
from es_lightning.tasks.math import is_equivalent, last_boxed, normalize_boxed
from tests.helpers import REPO, subprocess_env

ROW = {"problem": "Compute 1/2.", "answer": "\\frac{1}{2}"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("so \\boxed{\\frac{1}{2}}.", "\\frac{1}{2}"),
        ("\\boxed{1} then \\boxed{\\sqrt{\\frac{a}{b}}}", "\\sqrt{\\frac{a}{b}}"),
        ("\\fbox{3}", "3"),
        ("$\\boxed 5$", "5"),
        ("\\boxed {x+1}", "x+1"),
        ("\\boxed{2} and then the truncated \\boxed{3", "2"),
        ("no box, the answer is 4", None),
    ],
)
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


@pytest.mark.parametrize(
    ("completion", "reward"),
    [
        ("The answer is \\boxed{0.5}.", 1.0),
        ("\\boxed{\\dfrac12}", 1.0),
        ("\\boxed{\\frac{2}{4}}", 1.0),
        ("first \\boxed{0.5}, no: \\boxed{0.6}", 0.0),
        ("\\boxed{\\frac{1}{3}}", 0.0),
        ("the answer is 1/2", 0.0),
    ],
)
def test_math_verify_equivalence(completion, reward):
    assert MathTask().score(completion, ROW).reward == reward


def test_symbolic_and_nested_answers():
    task = MathTask()
    row = {"problem": "p", "answer": "\\frac{\\sqrt{3}}{2}"}
    assert task.score("\\boxed{\\dfrac{\\sqrt{3}}{2}}", row).reward == 1.0
    assert task.score("\\boxed{\\frac{\\sqrt{2}}{2}}", row).reward == 0.0
    assert task.score("\\boxed{1+x^2}", {"problem": "p", "answer": "x^2+1"}).reward == 1.0


def test_gold_from_solution_column():
    task = MathTask()
    row = {"problem": "p", "solution": "Since $x=\\boxed{\\frac{14}{3}}$ we are done."}
    assert task.gold(row) == "\\frac{14}{3}"
    assert task.score("\\boxed{\\frac{28}{6}}", row).reward == 1.0
    with pytest.raises(ValueError, match="no gold answer"):
        task.gold({"problem": "p", "solution": "no box"})
    with pytest.raises(ValueError, match="neither an 'answer' nor a 'solution'"):
        task.validate_row({"problem": "p"})


def test_answer_for_majority_vote():
    task = MathTask()
    assert (
        task.score("\\boxed{\\dfrac{1}{2}}", ROW).answer == task.score("\\boxed{ \\frac{1}{2} }", ROW).answer
    )
    assert task.score("no box", ROW).answer is None


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("\\dfrac{1}{2}", "\\frac{1}{2}"),
        ("1,000", "1000"),
        ("0.50", "0.5"),
        ("90^\\circ", "90"),
        ("\\text{(C)}", "(C)"),
        ("\\left( 1, 2 \\right)", "(1,2)"),
        ("x = 3.", "x=3"),
    ],
)
def test_normalize_boxed(content, expected):
    assert normalize_boxed(content) == expected


def test_a_verification_timeout_is_one_console_warning_line(monkeypatch, capsys):
    monkeypatch.setattr(math_task, "call_within", lambda *args, **kwargs: None)  # the worker timed out
    assert is_equivalent("3", "x^{x^{x}} timing out", timeout_s=2) is False
    assert capsys.readouterr().err.splitlines() == [
        "es-lightning: warning: math: verification timed out after 6s; scoring 0 (pred 'x^{x^{x}} timing out')"
    ]


def test_scoring_off_the_main_thread():
    task = MathTask()
    cases = [("\\boxed{0.5}", 1.0), ("\\boxed{\\dfrac12}", 1.0), ("\\boxed{0.7}", 0.0)]
    results, errors = [], []

    def work():
        try:
            results.extend(task.score(c, ROW).reward for c, _ in cases)
        except Exception as err:  # surfaced below; a thread's exception would otherwise vanish
            errors.append(err)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(60)
    assert not errors, errors
    assert results == [r for _, r in cases]
    with ThreadPoolExecutor(max_workers=2) as pool:
        rewards = list(pool.map(lambda c: task.score(c, ROW).reward, [c for c, _ in cases]))
    assert rewards == [r for _, r in cases]


TOWER = textwrap.dedent(
    """
    import threading, time
    from es_lightning.tasks import MathTask

    task, row = MathTask(timeout_s=1), {"problem": "p", "answer": "3"}

    def timed(name):
        assert task.score("\\\\boxed{3}", row).reward == 1.0  # this thread's worker is up
        start = time.monotonic()
        reward = task.score("\\\\boxed{9^{9^{9}}}", row).reward  # sympy would expand it in C
        print(name, reward, round(time.monotonic() - start, 1), task.score("\\\\boxed{3}", row).reward)

    helper = threading.Thread(target=timed, args=("thread",))
    helper.start()
    helper.join()
    timed("main")
    """
)


@pytest.mark.integration
def test_a_power_tower_answer_cannot_stall_scoring_on_any_thread():
    """math-verify's 3 s limit is ``signal.alarm``: nothing off the main thread, nothing in C."""
    proc = subprocess.run(
        [sys.executable, "-c", TOWER],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line.split() for line in proc.stdout.splitlines()]
    assert [(name, reward, after) for name, reward, _, after in lines] == [
        ("thread", "0.0", "1.0"),
        ("main", "0.0", "1.0"),
    ]
    assert all(float(seconds) < 15 for _, _, seconds, _ in lines), (
        lines
    )  # 3 s and the kill, on a busy machine


def test_defaults_and_prompt():
    task = MathTask()
    assert task.test.path == "HuggingFaceH4/MATH-500" and task.test.split == "test"
    assert task.train.path == "agentica-org/DeepScaleR-Preview-Dataset"
    assert "\\boxed{}" in task.prompt(ROW)
    with pytest.raises(ValueError, match="timeout_s"):
        MathTask(timeout_s=0)


def _seconds(n: int) -> float:
    """Best of 3 timings of ``last_boxed`` on ``n`` unclosed ``\\boxed{`` after a closed one."""
    text = "\\boxed{1} " + "\\boxed{" * n
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        assert last_boxed(text) == "1"
        best = min(best, time.perf_counter() - start)
    return best


def test_degenerate_completions_take_linear_time():
    # measured side by side, so a loaded machine slows both: 10x the input costs about 10x when
    # the scan is linear, 100x when it is quadratic
    assert _seconds(20000) < 40 * _seconds(2000)
