"""Verify untrusted Python (model-written code) against test statements, with a reward the code
cannot forge: model code never runs in this process, its values cross only as strictly decoded
plain data, and the verdict is computed where the code cannot reach (:mod:`~es_lightning.sandbox.plan`).
Isolation is bubblewrap (fail closed) or an explicit, unsafe ``process`` opt-out.
"""

from __future__ import annotations

import ast
import os
import shutil
import threading
from dataclasses import dataclass
from typing import Literal

import es_lightning.sandbox.isolation as isolation_
from es_lightning.console import warn
from es_lightning.errors import ConfigError
from es_lightning.sandbox.plan import Plan, plan
from es_lightning.sandbox.protocol import (
    CAPS,
    FORMAT,
    Failure,
    Malformed,
    decode_phase1,
    decode_phase2,
    parse_report,
)

Isolation = Literal["bwrap", "process"]
BWRAP = "bwrap"
"""The bubblewrap executable, looked up on ``PATH`` when isolation is first probed."""


class SandboxUnavailableError(ConfigError, RuntimeError):
    """The configured isolation cannot run here; the message says what is missing and how to fix it."""


@dataclass(frozen=True)
class SandboxResult:
    """Outcome of one sandboxed run."""

    passed: int
    """Test statements that passed."""
    total: int
    """Test statements given."""
    timed_out: bool = False
    """A time limit ended the run (no test passes then)."""
    stdout: str = ""
    """The last characters of the code's stdout."""
    stderr: str = ""
    """The last characters of its stderr (tracebacks), then a line per failed test."""

    @property
    def all_passed(self) -> bool:
        return self.total > 0 and self.passed == self.total


@dataclass(frozen=True)
class Sandbox:
    """Limits and isolation of a sandboxed run (the module docstring says what each enforces).

    Args:
        time_limit_s: wall-clock seconds per child (phase 1, and phase 2 when needed), interpreter
            start-up included.
        memory_mb: address-space limit of the child, in MiB.
        max_output_kb: largest file (stdout, stderr and the report included) the child may write, in KiB.
        max_processes: most processes and threads at once in one sandbox, the child itself included.
        scratch_mb: size of the sandbox's private ``/tmp`` (its cwd), in MiB (``bwrap`` only).
        isolation: ``"bwrap"`` (a bubblewrap sandbox; the default) or ``"process"`` (a plain child
            process: an explicit opt-out that is not a security boundary).
    """

    time_limit_s: float = 5.0
    memory_mb: int = 1024
    max_output_kb: int = 1024
    max_processes: int = 16
    scratch_mb: int = 64
    isolation: Isolation = "bwrap"

    def __post_init__(self) -> None:
        for name in ("time_limit_s", "memory_mb", "max_output_kb", "max_processes", "scratch_mb"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"Sandbox: {name} must be positive, got {getattr(self, name)}")
        if self.isolation not in ("bwrap", "process"):
            raise ConfigError(f"Sandbox: isolation must be 'bwrap' or 'process', got {self.isolation!r}")

    def _limits(self) -> isolation_.Limits:
        return isolation_.Limits(
            time_limit_s=self.time_limit_s,
            memory_bytes=self.memory_mb * 2**20,
            output_bytes=self.max_output_kb * 2**10,
            max_processes=self.max_processes,
            scratch_bytes=self.scratch_mb * 2**20,
        )

    def check(self) -> None:
        """Raise :class:`SandboxUnavailableError` now when the configured isolation cannot run here."""
        if self.isolation == "bwrap":
            bwrap_backend(self._limits())

    def run(self, code: str, tests: list[str], setup: str = "") -> SandboxResult:
        """Verify ``code`` against each test statement (after ``setup``)."""
        limits = self._limits()
        if self.isolation == "bwrap":
            backend: isolation_.Backend | None = bwrap_backend(limits)
        else:
            warn("Sandbox(isolation='process') is not a security boundary: model code can read and "
                 "write the trainer's files, use the network and leave processes behind")  # fmt: skip
            backend = None
        tests, setup = [str(t) for t in tests], str(setup or "")
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
            return SandboxResult(0, len(tests), stderr=f"sandbox: the code does not parse: {error}")
        steps = plan(tree, tests, setup)
        job = {"phase": 1, "code": code, "setup": setup, "probes": steps.probes, "caps": CAPS}
        first = isolation_.run_child(job, limits, backend)
        if first.timed_out:
            return SandboxResult(0, len(tests), True, first.stdout, first.stderr)
        notes: list[str] = []
        try:
            values = decode_phase1(first.report, len(steps.probes), limits.output_bytes)
        except Malformed as error:
            values, notes = None, [f"sandbox: no test passes: {error}"]
        passed, rewritten = steps.verdicts(len(tests), values)
        stderr, timed_out = first.stderr, False
        if rewritten:
            order = sorted(rewritten)
            job = {
                "phase": 2,
                "imports": steps.imports,
                "setup": setup,
                "tests": [rewritten[i] for i in order],
            }
            second = isolation_.run_child(job, limits, backend)
            timed_out = second.timed_out
            if second.stderr:
                stderr = f"{stderr.rstrip()}\n-- phase 2 (no model code) --\n{second.stderr}".lstrip("\n")
            try:
                for i, ok in zip(order, decode_phase2(second.report, len(order), limits.output_bytes)):
                    passed[i] = ok
            except Malformed as error:
                notes.append(f"sandbox: phase 2 gave no verdicts: {error}")
        if values is not None:
            notes += [_why(i, tests[i], steps, values) for i, ok in enumerate(passed) if not ok]
        stderr = "\n".join([s for s in (stderr.rstrip("\n"), *notes) if s])
        return SandboxResult(0 if timed_out else sum(passed), len(tests), timed_out, first.stdout, stderr)

    def run_many(self, jobs: list[tuple[str, list[str], str]], max_workers: int = 4) -> list[SandboxResult]:
        """:meth:`run` over ``(code, tests, setup)`` jobs, at most ``max_workers`` at a time."""
        from concurrent.futures import ThreadPoolExecutor

        if max_workers < 1:
            raise ConfigError(f"Sandbox: max_workers must be at least 1, got {max_workers}")
        self.check()  # probe once, before the threads
        with ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="sandbox") as pool:
            return list(pool.map(lambda job: self.run(*job), jobs))


def _why(i: int, test: str, steps: Plan, values: list[object]) -> str:
    """One line on why test ``i`` failed."""
    if i in steps.expected:
        value = values[steps.expected[i][0]]
        reason = f"raised {value.error}" if isinstance(value, Failure) else f"got {repr(value)[:120]}"
    elif i in steps.two_phase:
        failures = [v.error for _, p in steps.two_phase[i][1] if isinstance(v := values[p], Failure)]
        reason = f"a probe raised {failures[0]}" if failures else "the rewritten test failed"
    else:
        reason = "it does not parse"
    return f"sandbox: test {i} failed ({reason}): {test[:200]}"


_BACKENDS: dict[tuple[str, str], isolation_.Backend | str] = {}
"""Probe results by (:data:`BWRAP`, ``PATH``): a working backend, or why none works."""
_LOCK = threading.Lock()


def bwrap_backend(limits: isolation_.Limits) -> isolation_.Backend:
    """The bubblewrap set-up that works here, probed once per process."""
    key = (BWRAP, os.environ.get("PATH", ""))
    with _LOCK:
        if key not in _BACKENDS:
            found = shutil.which(BWRAP)
            reasons = [] if found else [f"no `{BWRAP}` executable on PATH"]
            candidates = [True, False] if found and os.geteuid() == 0 else [False] if found else []
            for mapped in candidates:
                backend = isolation_.Backend(found, mapped)  # type: ignore[arg-type]
                probe = isolation_.run_child({"phase": 0}, limits, backend)
                try:
                    doc = parse_report(probe.report, 4096)
                    ids = [FORMAT, "0", hex(isolation_.SANDBOX_UID), hex(isolation_.SANDBOX_GID)]
                    if doc[:4] == ids and len(doc) == 5 and int(doc[4], 16) == 0:
                        _BACKENDS[key] = backend
                        break
                    raise Malformed(f"unexpected probe report {doc!r}")
                except (Malformed, ValueError, TypeError) as error:
                    reasons.append(f"{found} ({'mapped ids' if mapped else 'own ids'}) failed: "
                                   f"{probe.stderr.strip()[-400:] or error}")  # fmt: skip
            else:
                _BACKENDS[key] = "; ".join(reasons)
        result = _BACKENDS[key]
    if isinstance(result, str):
        raise SandboxUnavailableError(
            f"Sandbox: bubblewrap isolation is unavailable here: {result}. Install bubblewrap 0.8 or "
            "later (`apt-get install bubblewrap`) on a kernel that allows user namespaces, or opt "
            "out explicitly with Sandbox(isolation='process') (MBPP: `isolation: process`), which "
            "is not a security boundary."
        )
    if not result.mapped and os.geteuid() == 0:
        warn("Sandbox: bwrap maps the sandbox user to root here, so RLIMIT_NPROC is not enforced (the "
             "kernel exempts root); the process count is unlimited")  # fmt: skip
    return result
