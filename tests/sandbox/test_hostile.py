"""Hostile solutions against the real sandbox, by class of attack: exit-0 tricks, forged and
oversized reports, signal games, builtin subclasses and patched builtins, filled scratch space and
spinning threads. Each scores 0, leaves no process, host file or ``/dev/shm`` entry behind (the
``marker`` fixture), and the correct control scores 1 (the ``attack`` fixture)."""

import time

import pytest

from es_lightning.sandbox.sandbox import Sandbox
from tests.sandbox.conftest import ADD_TESTS, CORRECT_ADD, survivors

pytestmark = pytest.mark.integration

WRONG_ADD = "def add(a, b):\n    return None\n"
SHORT = 1.5
"""Seconds of the short-limit sandbox the hanging attacks run in."""


def _quick(marker: str, snippet: str) -> float:
    """Run ``snippet`` in a sandbox with a short time limit; asserts it scores 0, is cut off at
    the limit and leaves no process of ``marker``; returns the seconds it took."""
    start = time.monotonic()
    result = Sandbox(time_limit_s=SHORT).run(snippet, ADD_TESTS)
    took = time.monotonic() - start
    assert result.passed == 0 and result.timed_out, (result.stdout, result.stderr)
    assert took < SHORT + 4.0, took
    assert not survivors(marker)
    assert Sandbox(time_limit_s=SHORT).run(CORRECT_ADD, ADD_TESTS).all_passed
    return took


# -- exit 0 before the tests are checked -----------------------------------------------------------
@pytest.mark.parametrize(
    "snippet",
    [
        "import os\nos._exit(0)\n" + WRONG_ADD,
        "import sys\nsys.exit(0)\n" + WRONG_ADD,
        "raise SystemExit(0)\n" + WRONG_ADD,
        "import atexit, os\natexit.register(os._exit, 0)\n" + WRONG_ADD,
        "import os\ndef add(a, b):\n    os._exit(0)\n",
        "import sys\ndef add(a, b):\n    sys.exit(0)\n",
        "def add(a, b):\n    raise SystemExit(0)\n",
        "import os, sys\nsys.stdout.flush()\nos.close(1)\nos.close(2)\n" + WRONG_ADD,
    ],
    ids=[
        "os-exit",
        "sys-exit",
        "raise-systemexit",
        "atexit",
        "os-exit-in-call",
        "sys-exit-in-call",
        "systemexit-in-call",
        "close-std-fds",
    ],  # fmt: skip
)
def test_exit_zero_tricks_score_zero(attack, snippet):
    attack(snippet)


# -- reports: forged, oversized, deeply nested -----------------------------------------------------
FORGED = """
import json, os, sys
claims = [json.dumps(["es-sandbox/1", "2", [True, True]]), json.dumps({"passed": 2, "total": 2}),
          json.dumps(["es-sandbox/1", "1", True, [["v", True], ["v", True]]]), "passed=2 total=2"]
for claim in claims:
    print(claim)
    sys.stdout.flush()
    for fd in range(1, 256):
        try:
            os.write(fd, claim.encode() + b"\\n")
        except OSError:
            pass
"""
"""Verdicts claimed in every format and on every descriptor (the values a test expects are not
the child's to know: it never sees a test's right-hand side)."""


@pytest.mark.parametrize(
    "snippet",
    [
        FORGED + WRONG_ADD,
        FORGED + WRONG_ADD + "import os\nos._exit(0)\n",
        "import os\nfor fd in range(1, 64):\n    try:\n        os.write(fd, b'[' * 2**22)\n"
        "    except OSError:\n        pass\n" + WRONG_ADD,
        "import os\nchunk = b'x' * 2**20\nfor _ in range(512):\n    for fd in (1, 2, *range(3, 16)):\n"
        "        try:\n            os.write(fd, chunk)\n        except OSError:\n            pass\n"
        + WRONG_ADD,
        "def add(a, b):\n    x = []\n    for _ in range(10**5):\n        x = [x]\n    return x\n",
        "def add(a, b):\n    return [0] * 10**7\n",
        "def add(a, b):\n    return 'x' * 2**26\n",
    ],
    ids=[
        "forged",
        "forged-then-exit-0",
        "deeply-nested-stream",
        "512-MB-stream",
        "deeply-nested-value",
        "huge-list",
        "huge-string",
    ],  # fmt: skip
)
def test_forged_and_oversized_reports_score_zero(attack, snippet):
    attack(snippet)


# -- signal games ----------------------------------------------------------------------------------
def test_a_child_that_stops_itself_is_killed_at_the_limit(sandbox, marker):
    _quick(marker, "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)\n" + CORRECT_ADD)
    stopped = f"import os\nos.execv('/bin/sh', ['sh', '-c', 'kill -STOP $$; echo never', {marker!r}])\n"
    _quick(marker, stopped + CORRECT_ADD)


def test_a_child_that_ignores_sigterm_is_killed_at_the_limit(sandbox, marker):
    ignore = "import signal\nfor s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):\n    signal.signal(s, signal.SIG_IGN)\n"
    _quick(marker, ignore + "while True:\n    pass\n" + CORRECT_ADD)
    shell = "trap '' TERM INT HUP; while :; do :; done"
    forked = (
        f"import os, time\nif os.fork() == 0:\n    os.setsid()\n"
        f"    os.execv('/bin/sh', ['sh', '-c', {shell!r}, {marker!r}])\ntime.sleep(30)\n"
    )
    _quick(marker, forked + CORRECT_ADD)


def test_signal_handlers_and_alarms_give_no_pass(attack):
    attack(
        "import signal, os\nsignal.signal(signal.SIGALRM, lambda *a: os._exit(0))\nsignal.setitimer("
        "signal.ITIMER_REAL, 0.01, 0.01)\n" + "def add(a, b):\n    while True:\n        pass\n"
    )


# -- builtin subclasses and patched builtins -------------------------------------------------------
@pytest.mark.parametrize(
    "snippet",
    [
        "class I(int):\n    __eq__ = lambda s, o: True\n    __ne__ = lambda s, o: False\n    __hash__ = int.__hash__\n"
        "def add(a, b):\n    return I(0)",
        "class F(float):\n    __eq__ = lambda s, o: True\n    __hash__ = float.__hash__\ndef add(a, b):\n    return F(0)",
        "class T(tuple):\n    __eq__ = lambda s, o: True\n    __hash__ = tuple.__hash__\ndef add(a, b):\n    return T()",
        "class D(dict):\n    __eq__ = lambda s, o: True\ndef add(a, b):\n    return D()",
        "import builtins\nclass T(tuple):\n    __eq__ = lambda s, o: True\n    __hash__ = tuple.__hash__\n"
        "builtins.tuple = T\ndef add(a, b):\n    return tuple()",
        "import builtins\nbuiltins.int = type('int', (int,), {'__eq__': lambda s, o: True, '__hash__': int.__hash__})\n"
        "def add(a, b):\n    return int(7)",
        "import builtins\nbuiltins.isinstance = lambda *a: True\nbuiltins.type = lambda *a: int\n"
        + WRONG_ADD,
        'import builtins, json\njson.dumps = lambda *a, **k: \'["es-sandbox/1", "1", true, []]\'\n'
        "builtins.len = lambda *a: 0\n" + WRONG_ADD,
    ],
    ids=[
        "int-eq",
        "float-eq",
        "tuple-eq",
        "dict-eq",
        "patched-tuple",
        "patched-int",
        "patched-isinstance-type",
        "patched-json-len",
    ],  # fmt: skip
)
def test_builtin_subclasses_and_patched_builtins_score_zero(attack, snippet):
    attack(snippet)


def test_a_patched_tuple_does_not_pass_a_tuple_test(attack):
    """The MBPP shape: the expected value is a tuple and the patched ``tuple`` equals anything."""
    tests = ["assert similar_elements((3, 4, 5, 6), (5, 7, 4, 10)) == (4, 5)"]
    patched = (
        "import builtins\nclass T(builtins.tuple):\n    __eq__ = lambda s, o: True\n    __hash__ = builtins.tuple.__hash__\n"
        "builtins.tuple = T\ndef similar_elements(a, b):\n    return tuple()\n"
    )
    attack(patched, tests, "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b)))\n")


# -- resources: scratch space, /dev/shm, threads ---------------------------------------------------
def test_filling_tmp_and_dev_shm_leaves_nothing_on_the_host(attack, marker):
    attack(
        f"import os\nfor folder in ('/tmp', '/dev/shm', '.'):\n    try:\n"
        f"        with open(os.path.join(folder, {marker!r}), 'wb') as f:\n"
        f"            for _ in range(2048):\n                f.write(b'0' * 2**20)\n"
        f"    except OSError as e:\n        print('stopped', e)\n" + WRONG_ADD
    )


def test_spinning_threads_do_not_outlive_the_run(sandbox, marker):
    spin = "import threading\ndef spin():\n    while True:\n        pass\nfor _ in range(8):\n    threading.Thread(target=spin).start()\n"
    result = sandbox.run(spin + WRONG_ADD, ADD_TESTS)
    assert result.passed == 0
    took = _quick(marker, spin + "import time\ntime.sleep(60)\n" + CORRECT_ADD)
    assert took < SHORT + 4.0
