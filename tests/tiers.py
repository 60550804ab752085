"""The two test tiers and the guard that keeps them apart.

``integration`` marks a test that starts processes (the CLI, ``sys.executable``, torchrun, several
ranks, bwrap sandboxes), sends signals, holds file locks across processes or uses a vLLM engine.
``pytest -m "not integration"`` is the fast tier: unit and in-process tests only.

In the fast tier (a ``-m`` expression that deselects ``integration``) a test that starts a child
Python or es-lightning process, torchrun or a vLLM engine fails and names what it started, so an
unmarked CLI run, training or engine cannot slip into the quick loop; a CLI run inside a wrapper
(``bwrap ... sh -c "python -m es_lightning ..."``, ``bwrap ... python -c ...``) counts too. Three Python children are allowed
there, as parts of in-process work rather than runs: the math verifier's worker
(``es_lightning.tasks.bounded``), the code sandbox's child (``es_lightning.sandbox``) and the probe
of the import path that jsonargparse's stub resolver (typeshed_client) starts once.

A plugin (``tests/conftest.py`` names it in ``pytest_plugins``; the marker is registered in
pyproject.toml).
"""

from __future__ import annotations

import multiprocessing.process
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from _pytest.mark.expression import Expression

from es_lightning.rollout.vllm.engine import VLLMEngine
from es_lightning.sandbox.isolation import CHILD_SCRIPT

INTEGRATION = "integration"
ENGINE_FIXTURES = frozenset({"vllm_engine", "vllm_rollout"})
"""Fixtures that hand a test a vLLM engine: a test asking for one is ``integration`` by itself."""
VERIFIER_WORKER = "from es_lightning.tasks.bounded import serve_fd"
ALLOWED_CODE = (VERIFIER_WORKER, "import sys, json; print(json.dumps(sys.path))")
"""``python -c`` programs the fast tier allows: the math verifier's worker, typeshed_client's probe."""
WRAPPERS = frozenset(
    {"bwrap", "unshare", "sh", "bash", "env", "timeout", "nice", "taskset", "setsid", "stdbuf"}
)
"""Programs that run another command: the command they run is what the guard looks at."""
_PYTHON = re.compile(r"python[0-9.]*$")
_WRAPPED_CLI = re.compile(
    r"(^|[\s/;&|(])(python[0-9.]*\s+(-\S+\s+)*-m\s+es_lightning\b|es-lightning\s|torchrun\s)"
)
_violations: list[list[str]] = []
"""The running tests' refusals, innermost last (a test may run pytest inside itself)."""


def fast_tier(markexpr: str) -> bool:
    """Whether ``-m markexpr`` deselects a test whose only marker is ``integration``."""
    if not markexpr.strip():
        return False
    return not Expression.compile(markexpr).evaluate(lambda name, **_: name == INTEGRATION)


def _is_python(program: str) -> bool:
    interpreters = {
        os.path.realpath(sys.executable),
        os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
    }
    return bool(_PYTHON.match(os.path.basename(program))) or os.path.realpath(program) in interpreters


def child_kind(args: str | bytes | os.PathLike | Sequence[Any]) -> str | None:
    """What a ``subprocess.Popen(args)`` would start that the fast tier refuses, or ``None``."""
    if isinstance(args, (str, bytes, os.PathLike)):
        argv = shlex.split(os.fsdecode(args))
    else:
        argv = [os.fsdecode(a) for a in args]
    if not argv:
        return None
    program = os.path.basename(argv[0])
    if program in ("es-lightning", "torchrun"):
        return f"the {program} command"
    if not _is_python(argv[0]):
        if program not in WRAPPERS or os.path.realpath(CHILD_SCRIPT) in map(os.path.realpath, argv):
            return None  # not a wrapper; or the code sandbox (bwrap binds its child script in)
        wrapped = _WRAPPED_CLI.search(" ".join(argv[1:]))
        if wrapped:
            return f"the es-lightning CLI inside {program} ({wrapped.group(2).strip()} ...)"
        inner = next((i for i, arg in enumerate(argv[1:], 1) if _is_python(arg)), None)
        what = child_kind(argv[inner:]) if inner is not None else None
        return f"{what} inside {program}" if what else None
    if "-m" in argv[1:-1]:
        module = argv[argv.index("-m", 1) + 1]
        if module.split(".")[0] == "es_lightning":
            return f"the es-lightning CLI (python -m {module})"
        if module == "torch.distributed.run":
            return "torchrun (python -m torch.distributed.run)"
    if "-c" in argv[1:-1] and argv[argv.index("-c", 1) + 1].startswith(ALLOWED_CODE):
        return None
    if os.path.realpath(argv[-1]) == os.path.realpath(CHILD_SCRIPT):
        return None  # the code sandbox's child: how a code task runs a completion
    return f"a Python process ({shlex.join(argv)[:200]})"


def refusal(what: str) -> str:
    return (
        f"this test started {what} in the fast tier (-m 'not integration'); a test that starts the "
        "CLI, a Python child process, torchrun or a vLLM engine is an integration test: mark it "
        "@pytest.mark.integration (or the module: pytestmark = pytest.mark.integration)"
    )


def _refuse(what: str) -> None:
    message = refusal(what)
    if _violations:
        _violations[-1].append(message)
    pytest.fail(message, pytrace=False)


def _guarded_popen(original: Callable[..., None]) -> Callable[..., None]:
    def __init__(self: subprocess.Popen, args: Any, *rest: Any, **kwargs: Any) -> None:
        what = child_kind(args)
        if what is not None:
            _refuse(what)
        original(self, args, *rest, **kwargs)

    return __init__


def _guarded_process_start(original: Callable[..., None]) -> Callable[..., None]:
    def start(self: multiprocessing.process.BaseProcess) -> None:
        _refuse(f"a Python process (multiprocessing: {self.name})")
        original(self)

    return start


def _guarded_engine_start(original: Callable[..., None]) -> Callable[..., None]:
    def start(self: VLLMEngine) -> None:
        if self.llm is None:
            _refuse("a vLLM engine")
        original(self)

    return start


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that asks for the session's vLLM engine, by argument or by a parameter that names the
    fixture, is ``integration`` (marked before ``-m`` selects)."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {}).values()
        named = {p for p in params if isinstance(p, str)}  # request.getfixturevalue(param)
        if ENGINE_FIXTURES & (set(getattr(item, "fixturenames", ())) | named):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _tier_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """In the fast tier: child Python/es-lightning processes, torchrun and vLLM engines refused."""
    if not fast_tier(request.config.option.markexpr or ""):
        yield
        return
    patches = [
        (subprocess.Popen, "__init__", _guarded_popen),
        (multiprocessing.process.BaseProcess, "start", _guarded_process_start),
        (VLLMEngine, "start", _guarded_engine_start),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, guard in patches:
        setattr(owner, name, guard(getattr(owner, name)))
    try:
        yield
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


@pytest.fixture(autouse=True)
def _tier_violations() -> Iterator[None]:
    """This test's refusals, for :func:`pytest_runtest_makereport`."""
    _violations.append([])
    try:
        yield
    finally:
        _violations.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A refusal the test caught (a broad ``except``, a thread) still fails it."""
    report = yield
    if report.when == "call" and report.passed and _violations and _violations[-1]:
        report.outcome = "failed"
        report.longrepr = _violations[-1][0]
    return report
