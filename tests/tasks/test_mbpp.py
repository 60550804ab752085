import builtins
import os
import time

import pytest

from es_lightning.sandbox.sandbox import Sandbox, SandboxUnavailableError
from es_lightning.tasks import MBPP, DataSource
from es_lightning.tasks.mbpp import extract_code
from tests.helpers import ASSETS

QUIET_PROCESS = pytest.mark.filterwarnings(
    "ignore:Sandbox\\(isolation='process'\\) is not a security boundary"
)


@pytest.fixture(scope="module")
def bwrap():
    """Skips a test that scores with the default (bubblewrap) isolation where it cannot run."""
    try:
        Sandbox().check()
    except SandboxUnavailableError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="module")
def mbpp_rows():
    """The first 20 MBPP rows and the two that need setup code, verbatim (``tests/assets/mbpp``)."""
    return DataSource(path=str(ASSETS / "mbpp" / "mbpp.jsonl")).load()


def fenced(code):
    return f"Here is my solution:\n```python\n{code}\n```\nIt passes the tests."


def test_reference_solutions_pass(bwrap, mbpp_rows):
    task = MBPP(max_workers=4)
    rows = mbpp_rows[:20] + [r for r in mbpp_rows if r["test_setup_code"]]  # two rows need setup code
    scores = task.score_many([fenced(r["code"]) for r in rows], rows)
    failed = [(r["task_id"], s) for r, s in zip(rows, scores, strict=True) if s.reward != 1.0]
    assert not failed
    assert all(s.extra["tests_passed"] == 1.0 and s.answer is None for s in scores)


def test_wrong_function_fails(bwrap, mbpp_rows):
    task = MBPP()
    row = mbpp_rows[1]  # similar_elements
    wrong = "def similar_elements(a, b):\n    return tuple(a)"
    score = task.score(fenced(wrong), row)
    assert (score.reward, score.extra["tests_passed"]) == (0.0, 0.0)
    partial = "def similar_elements(a, b):\n    return (4, 5)"  # right for the first test only
    score = task.score(fenced(partial), row)
    assert score.reward == 0.0 and score.extra["tests_passed"] == pytest.approx(1 / 3)
    assert task.score(fenced("def similar_elements(a, b) return"), row).reward == 0.0


def test_challenge_tests_are_opt_in(mbpp_rows):
    row = next(r for r in mbpp_rows if r["challenge_test_list"])
    assert MBPP().tests(row) == row["test_list"]
    assert MBPP(use_challenge_tests=True).tests(row) == row["test_list"] + row["challenge_test_list"]


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        ("```python\na = 1\n```\ntext\n```python\nb = 2\n```", "b = 2\n"),
        ("```py\nc = 3\n```\n```text\nnot code\n```", "c = 3\n"),
        ("```\nd = 4\n```", "d = 4\n"),
        ("e = 5", "e = 5"),
        ("Sure.\n```python\nf = 6\n", "f = 6\n"),  # truncated: no closing fence
    ],
)
def test_extract_code(completion, expected):
    assert extract_code(completion) == expected


@pytest.mark.integration
def test_infinite_loop_is_killed_in_time(bwrap):
    task = MBPP(time_limit_s=1.0)
    start = time.monotonic()
    score = task.score(
        fenced("def f():\n    return 1\nwhile True:\n    pass"),
        {"text": "t", "test_list": ["assert f() == 1"]},
    )
    elapsed = time.monotonic() - start
    assert (score.reward, score.extra["timed_out"]) == (0.0, 1.0)
    assert 1.0 <= elapsed < 4.0


@pytest.mark.integration
def test_infinite_loop_inside_a_test_is_killed(bwrap):
    result = Sandbox(time_limit_s=1.0).run("def f():\n    while True: pass", ["assert f() is None"])
    assert result.timed_out and not result.all_passed


@pytest.mark.integration
def test_memory_limit(bwrap):
    sandbox = Sandbox(memory_mb=256)
    small = sandbox.run("x = bytearray(32 * 2**20)", ["assert len(x) == 33554432"])
    assert small.all_passed, small.stderr
    huge = sandbox.run("x = bytearray(4 * 2**30)", ["assert len(x) > 0"])
    assert not huge.all_passed and "MemoryError" in huge.stderr


@pytest.mark.integration
@pytest.mark.parametrize(
    "exit_call", ["import sys; sys.exit(0)", "import os; os._exit(0)", "raise SystemExit"]
)
def test_early_exit_passes_nothing(bwrap, exit_call):
    result = Sandbox().run(exit_call, ["assert True"])
    assert result.passed == 0 and not result.all_passed


@pytest.mark.integration
def test_code_never_runs_in_this_process(bwrap):
    code = "import builtins, os\nbuiltins.ES_SANDBOX_PROBE = PID = os.getpid()\nSET = builtins.ES_SANDBOX_PROBE\n"
    result = Sandbox().run(code, [f"assert PID != {os.getpid()}", "assert SET == PID"])
    assert result.all_passed, result.stderr  # the code did run, in another process
    assert not hasattr(builtins, "ES_SANDBOX_PROBE")


@pytest.mark.integration
@QUIET_PROCESS
def test_private_work_directory_leaves_nothing_on_the_host(bwrap):
    name = f"inside_{os.getpid()}_{time.monotonic_ns()}.txt"
    code = f"import os\nprint(os.getcwd())\nopen({name!r}, 'w').write('ok')\n"
    tests = [f"assert open({name!r}).read() == 'ok'"]
    result = Sandbox().run(code, tests)
    assert result.all_passed, result.stderr
    assert result.stdout.strip() == "/tmp" and not os.path.exists(f"/tmp/{name}")  # a private /tmp
    process = Sandbox(isolation="process").run(code, tests)
    assert process.all_passed, process.stderr
    workdir = process.stdout.strip()
    assert os.path.basename(workdir).startswith("es_sandbox_") and workdir != os.getcwd()
    assert not os.path.exists(workdir)


def test_main_guard_demo_code_is_skipped(bwrap):
    code = (
        "def f():\n    return 1\nif __name__ == '__main__':\n    n = int(input())\n    raise SystemExit(n)\n"
    )
    assert Sandbox().run(code, ["assert f() == 1"]).all_passed


@pytest.mark.integration
@QUIET_PROCESS
def test_minimal_environment_and_closed_stdin(bwrap, monkeypatch):
    monkeypatch.setenv("ES_SANDBOX_SECRET", "leak")
    code = (
        "import os, sys\nENV = dict(os.environ)\nCWD = os.getcwd()\nISOLATED = sys.flags.isolated\n"
        "try:\n    input()\n    GOT_INPUT = True\nexcept EOFError:\n    GOT_INPUT = False\n"
    )
    tests = [
        "assert 'ES_SANDBOX_SECRET' not in ENV",
        "assert ENV['HOME'] == CWD",
        "assert ISOLATED == 1",
        "assert GOT_INPUT is False",
    ]
    for isolation in ("bwrap", "process"):
        result = Sandbox(isolation=isolation).run(code, tests)
        assert result.all_passed, (isolation, result.stderr)


def test_isolation_is_configurable_and_checked():
    assert MBPP().sandbox.isolation == "bwrap"
    assert MBPP(isolation="process").sandbox.isolation == "process"
    with pytest.raises(ValueError, match="isolation"):
        MBPP(isolation="none")


@pytest.mark.integration
def test_score_many_runs_concurrently(bwrap):
    task = MBPP(max_workers=4)
    rows = [{"text": "t", "test_list": ["assert f() == 1"]}] * 4
    start = time.monotonic()
    scores = task.score_many([fenced("import time\ndef f():\n    time.sleep(0.6)\n    return 1")] * 4, rows)
    assert [s.reward for s in scores] == [1.0] * 4
    assert time.monotonic() - start < 2.0  # serially it takes over 2.4 s


def test_reward_fn_and_prompt(bwrap, mbpp_rows):
    task = MBPP()
    rows = mbpp_rows[:2]
    columns = {k: [r[k] for r in rows] for k in rows[0]}
    assert task.reward_fn([fenced(rows[0]["code"]), "no code"], **columns) == [1.0, 0.0]
    prompt = task.prompt(rows[0])
    assert rows[0]["text"] in prompt and rows[0]["test_list"][0] in prompt and "```python" in prompt
    with pytest.raises(ValueError, match="score_many|completions"):
        task.score_many(["a"], rows)


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="max_workers"):
        MBPP(max_workers=0)
    with pytest.raises(ValueError, match="time_limit_s"):
        Sandbox(time_limit_s=0)
    with pytest.raises(ValueError, match="test_list"):
        MBPP().tests({"text": "t", "test_list": "assert True"})
