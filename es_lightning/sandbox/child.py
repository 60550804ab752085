"""The child side of the code sandbox: a standard-library script, ``python -I -S -B child.py``,
holding no secret (never an expected value). It drops privileges, sets the rlimits, runs its phase
and writes one JSON report; model code can rewrite all of it, so the parent trusts the report only
as plain data.
"""

import collections
import json
import os
import resource
import signal
import sys
import traceback

FORMAT = "es-sandbox/1"
_LIMITS = {
    "memory": resource.RLIMIT_AS,
    "cpu": resource.RLIMIT_CPU,
    "fsize": resource.RLIMIT_FSIZE,
    "core": resource.RLIMIT_CORE,
    "nproc": resource.RLIMIT_NPROC,
}
# Exact types, captured before model code runs (model code could still rebind these; see the
# module docstring for why that does not matter).
_SCALARS = (type(None), bool, str)
_SEQUENCES = {list: "l", tuple: "t", set: "S", frozenset: "F"}
_DICTS = (dict, collections.Counter, collections.OrderedDict, collections.defaultdict)  # == as dicts
_ITERATOR_MODULES = ("builtins", "itertools")


class NotPlain(Exception):
    """A probe's value is not plain data (a model-defined class, a subclass of a builtin, ...)."""


def encode(value, caps):
    """``value`` in the tagged encoding (:class:`NotPlain` for anything else)."""
    budget = [caps["nodes"]]
    return _encode(value, caps, 0, budget)


def _encode(value, caps, depth, budget):
    budget[0] -= 1
    if depth > caps["depth"] or budget[0] < 0:
        raise NotPlain("the value is nested too deeply or has too many elements")
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is int:
        if value.bit_length() > 4 * caps["int_hex"]:
            raise NotPlain("the integer is too large")
        return ["i", hex(value)]
    if kind is float:
        return ["f", value.hex()]
    if kind is complex:
        return ["c", value.real.hex(), value.imag.hex()]
    if kind is bytes:
        return ["b", value.hex()]
    if kind in _SEQUENCES:
        return [_SEQUENCES[kind], *(_encode(item, caps, depth + 1, budget) for item in value)]
    if kind in _DICTS:
        out = ["d"]
        for key, item in value.items():
            out += [_encode(key, caps, depth + 1, budget), _encode(item, caps, depth + 1, budget)]
        return out
    if kind is range:
        return ["r", hex(value.start), hex(value.stop), hex(value.step)]
    if getattr(kind, "__module__", None) in _ITERATOR_MODULES and hasattr(kind, "__next__"):
        out = ["it"]
        for item in value:  # a builtin iterator or generator: materialised up to the cap
            if len(out) > caps["iterator"]:
                raise NotPlain("the iterator yields too many items")
            out.append(_encode(item, caps, depth + 1, budget))
        return out
    raise NotPlain(f"a {kind.__module__}.{kind.__qualname__} is not plain data")


def _phase1(job):
    namespace = {"__name__": "solution"}  # skips the code's `if __name__ == "__main__":` demo
    try:
        exec(compile(job["code"], "<solution>", "exec"), namespace)
        exec(compile(job["setup"], "<setup>", "exec"), namespace)
    except BaseException:  # noqa: B036 - SystemExit and friends in model code are failures too
        traceback.print_exc()
        return [FORMAT, "1", False, []]
    items = []
    for i, source in enumerate(job["probes"]):
        try:
            items.append(["v", encode(eval(compile(source, f"<probe {i}>", "eval"), namespace), job["caps"])])
        except BaseException as error:  # noqa: B036
            items.append(["x", _describe(error, i)])
    return [FORMAT, "1", True, items]


def _describe(error, i):
    """The failure's name for the report (printing its traceback first); never raises."""
    try:
        if isinstance(error, NotPlain):
            print(f"probe {i}: {error}", file=sys.stderr)
        else:
            traceback.print_exc()
        return str(type(error).__name__)[:100]
    except BaseException:  # noqa: B036 - a hostile __str__ or __name__
        return "error"


def _phase2(job):
    import ast
    import builtins

    namespace = {"__name__": "solution"}
    for source in job["imports"]:
        try:
            exec(compile(source, "<import>", "exec"), namespace)
        except BaseException:  # noqa: B036 - a module that is not there
            pass
    for name in set(namespace) & set(dir(builtins)) - {"__builtins__", "__name__"}:
        del namespace[name]  # imports never shadow builtins in phase 2
    try:
        statements = ast.parse(job["setup"]).body
    except (SyntaxError, ValueError):
        statements = []
    for statement in statements:  # setup that needs model code fails alone, statement by statement
        try:
            exec(compile(ast.Module([statement], []), "<setup>", "exec"), namespace)
        except BaseException:  # noqa: B036
            traceback.print_exc()
    verdicts = []
    for i, test in enumerate(job["tests"]):
        try:
            exec(compile(test, f"<test {i}>", "exec"), namespace)
            verdicts.append(True)
        except BaseException:  # noqa: B036
            traceback.print_exc()
            verdicts.append(False)
    return [FORMAT, "2", verdicts]


def _drop_privileges(uid, gid):
    """Become ``uid``/``gid`` and check no capability is left; the effective capability mask."""
    if os.getuid() != uid:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    with open("/proc/self/status", encoding="ascii") as f:
        status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    caps = [status.get(name, "?").strip() for name in ("CapPrm", "CapEff", "CapAmb")]
    if (
        os.getuid() != uid
        or os.getgid() != gid
        or os.getgroups() not in ([], [gid])
        or caps != ["0" * 16] * 3
    ):
        raise SystemExit(f"sandbox: could not drop to uid {uid}/gid {gid} without capabilities")
    return caps[1]


def main():
    job = json.loads(sys.stdin.buffer.read())
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    report_fd = job["report_fd"]
    os.closerange(3, report_fd)
    os.closerange(report_fd + 1, 1 << 16)
    cap_eff = "" if job.get("uid") is None else _drop_privileges(job["uid"], job["gid"])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an over-long write fails instead of killing us
    for name, value in job["limits"].items():
        resource.setrlimit(_LIMITS[name], (value, value))
    phase = job["phase"]
    if phase == 0:
        report = [FORMAT, "0", hex(os.getuid()), hex(os.getgid()), cap_eff]
    else:
        report = _phase1(job) if phase == 1 else _phase2(job)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: B036 - model code may have replaced or closed the streams
            pass
    data = json.dumps(report, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")
    try:
        while data:
            data = data[os.write(report_fd, data) :]
    except OSError:
        pass  # over the size limit: the parent sees a truncated, malformed report
    os._exit(0)


if __name__ == "__main__":
    main()
