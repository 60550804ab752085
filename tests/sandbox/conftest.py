"""Fixtures of the sandbox tests: the real sandbox, a marker word whose processes and files must not
outlive a run, and ``attack``, which runs a hostile snippet and a correct control."""

import os
import uuid

import pytest

from es_lightning.sandbox.sandbox import Sandbox, SandboxUnavailableError

ADD_TESTS = ["assert add(2, 3) == 5", "assert add(-1, 1) == 0"]
CORRECT_ADD = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox(time_limit_s=5.0)
    try:
        box.check()
    except SandboxUnavailableError as error:
        pytest.skip(str(error))
    return box


@pytest.fixture
def marker(tmp_path):
    """A unique word for the snippet's processes and files; afterwards, checks that none is left."""
    word = f"esmark{uuid.uuid4().hex[:12]}"
    yield word
    assert not survivors(word), "a sandboxed process outlived its run"
    assert not [p for p in os.listdir(tmp_path) if word in p], "a sandboxed process wrote on the host"
    assert not [p for p in os.listdir("/tmp") if word in p]
    assert not [p for p in os.listdir("/dev/shm") if word in p], "a sandboxed process wrote /dev/shm"


def survivors(word: str) -> list[int]:
    """Host processes whose command line contains ``word``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if word.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


@pytest.fixture
def attack(sandbox, marker, tmp_path):
    """``attack(snippet, tests, correct)``: the snippet (which first also tries to write a host file)
    passes no test, and ``correct`` passes them all; returns the snippet's result. The ``marker``
    fixture then checks that nothing of it is left on the host."""

    def run(snippet, tests=ADD_TESTS, correct=CORRECT_ADD):
        write = f"try:\n    open({str(tmp_path / marker)!r}, 'w').write('x')\nexcept OSError:\n    pass\n"
        bad = sandbox.run(write + snippet, tests)
        assert bad.passed == 0, (bad.stdout, bad.stderr)
        good = sandbox.run(correct, tests)
        assert good.all_passed, good.stderr
        return bad

    return run
