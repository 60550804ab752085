"""The code sandbox as a security boundary: hostile snippets score 0 and leave no trace on the host
(no file written, no process left), while a correct solution still scores 1.

Everything here runs the real sandbox (bubblewrap; the tests that need it skip, naming why, where
it cannot run), except the planner tests, which test pure functions; the wire format is tested in
test_protocol.py."""

import ast
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from es_lightning import console
from es_lightning.sandbox import isolation as sandbox_isolation
from es_lightning.sandbox import sandbox as sandbox_module
from es_lightning.sandbox.sandbox import Sandbox, SandboxUnavailableError
from tests.sandbox.conftest import ADD_TESTS, CORRECT_ADD, survivors


# -- values that are not plain data -----------------------------------------------------------------
@pytest.mark.integration
@pytest.mark.parametrize(
    "snippet",
    [
        "class E:\n    __eq__ = lambda s, o: True\n    __hash__ = lambda s: 0\ndef add(a, b):\n    return E()",
        "class S(str):\n    def __eq__(self, o):\n        return True\n    __hash__ = str.__hash__\n"
        "def add(a, b):\n    return S('x')",
        "class I(int):\n    def __eq__(self, o):\n        return True\n    __hash__ = int.__hash__\n"
        "def add(a, b):\n    return I(7)",
        "class L(list):\n    __eq__ = lambda s, o: True\ndef add(a, b):\n    return L()",
        "class E:\n    __eq__ = lambda s, o: True\ndef add(a, b):\n    return (x for x in [E()])",
        "class E:\n    __eq__ = lambda s, o: True\ndef add(a, b):\n    return [1, {2: E()}]",
    ],
    ids=["always-equal", "str-subclass", "int-subclass", "list-subclass", "generator-of-it", "nested"],
)
def test_objects_that_are_not_plain_data_fail(attack, snippet):
    result = attack(snippet)
    assert "not plain data" in result.stderr


@pytest.mark.integration
def test_frame_inspection_finds_no_secret_and_forged_reports_fail(sandbox, marker):
    secret = f"{marker}_expected"
    snippet = f"""
import gc, inspect, json, os, sys
needle = {marker!r} + "_exp"
found = [o for o in gc.get_objects() if isinstance(o, str) and needle in o and o != needle]
for frame in inspect.stack():
    found += [v for v in frame.frame.f_locals.values() if isinstance(v, str) and needle in v and v != needle]
f = sys._getframe()
while f:
    found += [v for v in f.f_globals.values() if isinstance(v, str) and needle in v and v != needle]
    f = f.f_back
print("FOUND", found)
sys.stdout.flush()
forged = json.dumps(["es-sandbox/1", "1", True, [["v", True], ["v", ["i", "0x5"]]]]).encode()
for fd in range(3, 256):
    try:
        os.write(fd, forged)
    except OSError:
        pass
for name in ("report", "report.txt", "result.json", "/tmp/report"):
    try:
        open(name, "w").write("0" * 32 + " 2 2\\n")
    except OSError:
        pass
def add(a, b):
    return found[0] if found else None
os._exit(0)
"""
    tests = [f"assert add(1, 2) == {secret!r}", f"assert add(3, 4) == {secret + '2'!r}"]
    bad = sandbox.run(snippet, tests)
    assert bad.passed == 0
    assert "FOUND []" in bad.stdout
    good = sandbox.run(f"def add(a, b):\n    return {secret!r} if a == 1 else {secret + '2'!r}", tests)
    assert good.all_passed, good.stderr


@pytest.mark.integration
def test_host_files_are_not_readable(sandbox, attack):
    here = os.path.abspath(__file__)
    dataset = os.path.join(os.path.dirname(here), "..", "assets", "mbpp", "mbpp.jsonl")
    home = [os.path.join("/root", n) for n in os.listdir("/root")] if os.access("/root", os.R_OK) else []
    paths = ["/work/shared/data/mbpp/mbpp.jsonl", os.path.abspath(dataset), here, "/etc/shadow",
             "/etc/passwd", os.path.expanduser("~/.bashrc"), *home]  # fmt: skip
    snippet = f"""
import json, os
LEAKS = []
for path in {paths!r}:
    try:
        with open(path) as f:
            LEAKS.append(path + ": " + f.read(40))
    except OSError:
        pass
REFERENCE = None
for path in {paths[:2]!r}:  # the cheat: look the reference solution up in the dataset
    try:
        for line in open(path):
            row = json.loads(line)
            if "similar_elements" in row["code"]:
                REFERENCE = row["code"]
    except OSError:
        pass
if REFERENCE:
    exec(REFERENCE)
print("LEAKS", LEAKS)
"""
    tests = ["assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)"]
    correct = "def similar_elements(a, b):\n    return tuple(set(a) & set(b))"
    result = attack(snippet, tests, correct)
    assert "LEAKS []" in result.stdout
    view = sandbox.run(
        "import os\nprint(sorted(os.listdir('/')))\nprint(os.listdir('/etc'))", ["assert True"]
    )
    top, etc = view.stdout.splitlines()
    top = set(ast.literal_eval(top))
    system = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev", "tmp"}
    prefix_top = sys.base_prefix.strip("/").split("/")[0]
    assert top <= system | {prefix_top, "es_sandbox_child.py"}, top
    assert ast.literal_eval(etc) in ([], ["ld.so.cache"])


@pytest.mark.integration
def test_guard_and_realpath_rebinding_give_no_escape(attack, marker, tmp_path):
    target = tmp_path / f"{marker}_written"
    snippet = f"""
import os, os.path, subprocess, sys
os.path.realpath = lambda p: "/tmp/inside"
main = sys.modules["__main__"].__dict__
main.update(_guard=None, _PROCESS_EVENTS=(), _PATH_EVENTS={{}}, _LIMITS={{}})
sys.addaudithook(lambda *a: None)
for path in ({str(target)!r}, "/{marker}_root", "/usr/{marker}", os.getcwd() + "/../{marker}"):
    try:
        open(path, "w").write("escaped")
    except OSError as e:
        print("blocked", e)
subprocess.run(["/bin/sh", "-c", "echo escaped > {target}; echo escaped > /tmp/../{marker}"])
subprocess.Popen(["/bin/sh", "-c", "sleep 30", {marker!r}])  # left running after the run
def add(a, b):
    return 5 if os.path.exists({str(target)!r}) else None
"""
    attack(snippet)
    assert not target.exists()
    assert not os.path.exists(f"/{marker}_root")


@pytest.mark.integration
@pytest.mark.parametrize("setsid", [True, False], ids=["setsid", "double-fork"])
def test_orphaned_grandchild_does_not_survive(sandbox, marker, tmp_path, setsid):
    host_file = tmp_path / f"{marker}_grandchild"
    loop = f"while :; do echo x >> {host_file}; echo x >> /tmp/{marker}; sleep 0.05; done"
    fork = f"""
import os, time
if os.fork() == 0:
    {"os.setsid()" if setsid else "pass"}
    if os.fork() == 0:
        os.execv("/bin/sh", ["sh", "-c", {loop!r}, {marker!r}])
    os._exit(0)
time.sleep(0.2)
"""
    box = Sandbox(time_limit_s=1.0)
    start = time.monotonic()
    hung = box.run(fork + "while True:\n    pass\n" + CORRECT_ADD, ADD_TESTS)
    assert hung.timed_out and hung.passed == 0 and time.monotonic() - start < 4.0
    assert not survivors(marker)
    finished = box.run(fork + CORRECT_ADD, ADD_TESTS)  # a correct solution that leaves a process behind
    assert finished.all_passed, finished.stderr
    assert not survivors(marker) and not host_file.exists()


@pytest.mark.integration
def test_fork_flood_is_bounded(sandbox, attack, marker):
    snippet = f"""
import os
n = 0
for i in range(1000):
    try:
        if os.fork() == 0:
            os.execv("/bin/sh", ["sh", "-c", "sleep 30", {marker!r}])
    except OSError:
        break
    n += 1
print("FORKED", n)
def add(a, b):
    return None
"""
    result = attack(snippet)
    forked = int(result.stdout.split("FORKED", 1)[1].split()[0])
    assert 0 < forked < sandbox.max_processes  # the child itself is one of them
    bomb = f"import os\nos.execv('/bin/sh', ['sh', '-c', 'b() {{ b | b & }}; b; sleep 30', {marker!r}])"
    start = time.monotonic()
    exploded = Sandbox(time_limit_s=1.5).run(bomb, ADD_TESTS)
    assert exploded.passed == 0 and time.monotonic() - start < 5.0
    assert not survivors(marker)
    assert subprocess.run(["true"]).returncode == 0  # the host still forks


@pytest.mark.integration
def test_no_network_to_a_loopback_server(attack, capsys):
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)
    port = server.getsockname()[1]
    accepted = []
    thread = threading.Thread(target=lambda: accepted.append(server.accept()[0].close()), daemon=True)
    thread.start()
    snippet = f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    CONNECTED = True
except OSError as e:
    print("no connection:", e)
    CONNECTED = False
def add(a, b):
    return a + b if CONNECTED else None
"""
    try:
        attack(snippet)
        assert not accepted
        console._said.clear()  # the warning is said once per process: say it again
        capsys.readouterr()
        control = Sandbox(isolation="process").run(snippet, ADD_TESTS)
        assert "es-lightning: warning: Sandbox(isolation='process') is not a security boundary" in (
            capsys.readouterr().err
        )
        assert control.all_passed, control.stderr  # control: the sandbox is what blocks it
        thread.join(5)
        assert accepted
    finally:
        server.close()


# -- fail closed ------------------------------------------------------------------------------------
@pytest.mark.integration
def test_missing_bwrap_fails_closed_and_process_isolation_still_works(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(sandbox_module, "BWRAP", "es-no-such-bwrap")
    with pytest.raises(SandboxUnavailableError, match="apt-get install bubblewrap") as raised:
        Sandbox().run(CORRECT_ADD, ADD_TESTS)
    assert "es-no-such-bwrap" in str(raised.value) and "isolation='process'" in str(raised.value)
    assert isinstance(raised.value, ValueError | RuntimeError)
    monkeypatch.setattr(sandbox_module, "BWRAP", "bwrap")
    fake = tmp_path / "bwrap"  # a bwrap that cannot create namespaces
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailableError, match="No permissions to creating new namespace"):
        Sandbox().check()
    from es_lightning.tasks import MBPP

    with pytest.raises(SandboxUnavailableError):
        MBPP().score(f"```python\n{CORRECT_ADD}```", {"text": "t", "test_list": ADD_TESTS})
    monkeypatch.setattr(console, "_said", set())
    capsys.readouterr()
    result = Sandbox(isolation="process").run(CORRECT_ADD, ADD_TESTS)
    warned = [line for line in capsys.readouterr().err.splitlines() if "not a security boundary" in line]
    assert len(warned) == 1 and warned[0].startswith("es-lightning: warning: Sandbox(isolation='process')")
    assert result.all_passed, result.stderr
    assert not Sandbox(isolation="process").run("def add(a, b):\n    return 4", ADD_TESTS).all_passed


@pytest.mark.integration
def test_process_isolation_keeps_the_protocol():
    box = Sandbox(isolation="process")
    always_equal = "class E:\n    __eq__ = lambda s, o: True\ndef add(a, b):\n    return E()"
    assert box.run(always_equal, ADD_TESTS).passed == 0
    assert box.run("import os\nos._exit(0)\n" + CORRECT_ADD, ADD_TESTS).passed == 0


# -- the two-phase path -----------------------------------------------------------------------------
TWO_PHASE = ["assert f(1)", "assert not f(0)", "assert math.isclose(f(2), 0.5)"]
RIGHT_F = "import math\ndef f(x):\n    return 1 / x if x else 0\n"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("code", "passed"),
    [
        (RIGHT_F, 3),
        ("def f(x):\n    return x\n", 2),  # no `import math`: the isclose test has no `math`
        ("import math\ndef f(x):\n    return x\n", 2),
        (
            "class T:\n    __bool__ = lambda s: True\n    __eq__ = lambda s, o: True\ndef f(x):\n    return T()\n",
            0,
        ),
        ("import math\nmath.isclose = lambda *a, **k: True\ndef f(x):\n    return 7 if x else 0\n", 2),
        (
            "import json, os, sys\nfor fd in range(3, 64):\n    try:\n        os.write(fd, json.dumps("
            "['es-sandbox/1', '2', [True] * 3]).encode())\n    except OSError:\n        pass\nos._exit(0)\n",
            0,
        ),
    ],
    ids=["right", "wrong-no-import", "wrong", "truthy-object", "rebind-isclose", "forged-verdicts"],
)
def test_two_phase_tests(sandbox, code, passed):
    result = sandbox.run(code, TWO_PHASE)
    assert result.passed == passed, result.stderr


@pytest.mark.integration
def test_two_phase_ignores_shadowed_helpers_and_renamed_imports(sandbox):
    tests = ["assert set(f(1)) == set([1, 2])", "assert isclose(g(2), 0.5)", "x = g(4)", "assert x == 0.25"]
    right = "from math import isclose\ndef f(x):\n    return [x, 2]\ndef g(x):\n    return 1 / x\n"
    assert sandbox.run(right, tests).all_passed
    rigged = (
        "from operator import is_not as isclose\nset = lambda *a: 0\n"
        "def f(x):\n    return [9]\ndef g(x):\n    return 9\n"
    )
    result = sandbox.run(rigged, tests)
    assert result.passed == 1, result.stderr  # only the statement `x = g(4)`
    assert all(f"test {i} failed" in result.stderr for i in (0, 1, 3))


# -- the decoder and the encoding, as pure functions -------------------------------------------------
def test_code_that_does_not_parse_scores_zero_without_running():
    result = Sandbox(isolation="process").run("def f(:\n", ["assert f() == 1"])
    assert result.passed == 0 and "does not parse" in result.stderr


def test_the_sandbox_runs_the_real_base_interpreter_not_the_virtualenv():
    exe, prefix = sandbox_isolation.interpreter()
    assert exe == os.path.realpath(exe) and prefix == os.path.realpath(sys.base_prefix)
    if sys.prefix != sys.base_prefix:
        assert not exe.startswith(os.path.realpath(sys.prefix) + os.sep)
