"""The fast tier's guard (tests/tiers.py): which children it refuses, and that it fails a test."""

from __future__ import annotations

import sys

import pytest

from es_lightning.sandbox.isolation import CHILD_SCRIPT
from tests.tiers import VERIFIER_WORKER, child_kind, fast_tier


@pytest.mark.parametrize(
    ("expression", "fast"),
    [
        ("not integration", True),
        ("not integration and not cuda", True),
        ("not (integration or vllm)", True),
        ("", False),
        ("integration", False),
        ("not cuda", False),
        ("integration or not integration", False),
    ],
)
def test_the_fast_tier_is_a_selection_without_integration_tests(expression, fast):
    assert fast_tier(expression) is fast


def test_cli_runs_python_children_and_torchrun_are_refused():
    python = sys.executable
    assert child_kind([python, "-m", "es_lightning", "fit", "--config", "x.yaml"]) == (
        "the es-lightning CLI (python -m es_lightning)"
    )
    assert "python -m es_lightning.report.measure" in child_kind(
        [python, "-u", "-m", "es_lightning.report.measure"]
    )
    assert child_kind(["/usr/local/bin/es-lightning", "--help"]) == "the es-lightning command"
    assert child_kind(["torchrun", "--nproc-per-node", "2", "train.py"]) == "the torchrun command"
    assert child_kind([python, "-m", "torch.distributed.run", "x.py"]).startswith("torchrun")
    assert child_kind(f"{python} -c 'print(1)'").startswith("a Python process")
    assert child_kind(["python3.11", "script.py"]).startswith("a Python process")
    wrapped = [
        "bwrap",
        "--tmpfs",
        "/d",
        "--",
        "sh",
        "-c",
        f"({python} -m es_lightning fit --config r.yaml) &",
    ]
    assert child_kind(wrapped) == "the es-lightning CLI inside bwrap (python -m es_lightning ...)"
    assert child_kind(["sh", "-c", "es-lightning fit --config r.yaml"]).startswith(
        "the es-lightning CLI inside sh"
    )
    assert child_kind(["bwrap", "--tmpfs", "/d", "--", python, "-c", "print(1)"]) == (
        f"a Python process ({python} -c 'print(1)') inside bwrap"
    )


def test_task_verifiers_and_other_programs_are_allowed():
    assert child_kind([sys.executable, "-c", f"{VERIFIER_WORKER}; serve_fd(3)"]) is None
    assert child_kind([sys.executable, "-I", "-S", "-B", CHILD_SCRIPT]) is None
    assert child_kind([sys.executable, "-c", "import sys, json; print(json.dumps(sys.path))"]) is None
    assert child_kind(["git", "rev-parse", "HEAD"]) is None
    assert child_kind(["file", sys.executable]) is None  # vLLM's import looks at the interpreter
    inside = [
        "--ro-bind",
        CHILD_SCRIPT,
        "/sandbox/child.py",
        "--",
        "/usr/bin/python3",
        "-I",
        "/sandbox/child.py",
    ]
    assert child_kind(["bwrap", "--unshare-all", *inside]) is None  # the sandbox binds its child in
    assert child_kind(["bwrap", "--dev-bind", "/", "/", "--", "true"]) is None
    assert child_kind([]) is None


UNMARKED = """
import multiprocessing
import subprocess
import sys

import pytest

from es_lightning.rollout.vllm import VLLMRollout


def test_starts_the_cli():
    subprocess.run([sys.executable, "-m", "es_lightning", "--version"], check=True)


def test_starts_an_engine():
    VLLMRollout().start()


def test_starts_a_process_and_swallows_the_failure():
    try:
        multiprocessing.Process(target=print).start()
    except BaseException:
        pass


def test_runs_git():
    subprocess.run(["git", "--version"], check=True, capture_output=True)


@pytest.mark.integration
def test_marked():
    subprocess.run([sys.executable, "-m", "es_lightning", "--version"], check=True)


def test_asks_for_the_engine(vllm_engine):
    pass


@pytest.mark.parametrize("backend", ["hf_rollout", "vllm_rollout"])
def test_each_backend(backend):
    pass
"""


def test_an_unmarked_test_that_starts_a_process_fails_in_the_fast_tier(pytester: pytest.Pytester):
    pytester.makeconftest('pytest_plugins = ("tests.tiers",)')
    pytester.makeini("[pytest]\nmarkers =\n    integration: starts processes\n")
    pytester.makepyfile(test_unmarked=UNMARKED)
    result = pytester.runpytest_inprocess("-m", "not integration", "-p", "no:cacheprovider")
    # git and the hf_rollout case pass; marked: the marked test and the two that ask for the engine
    result.assert_outcomes(passed=2, failed=3, deselected=3)
    result.stdout.fnmatch_lines(
        [
            "*_ test_starts_the_cli _*",
            "this test started the es-lightning CLI (python -m es_lightning) in the fast tier*",
            "*_ test_starts_an_engine _*",
            "this test started a vLLM engine in the fast tier*",
            "*_ test_starts_a_process_and_swallows_the_failure _*",
            "this test started a Python process (multiprocessing: Process-*",
        ]
    )
    assert "mark it @pytest.mark.integration" in result.stdout.str()
