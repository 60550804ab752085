"""What es-lightning says on the console besides its results: one line each, on stderr.

A run's results (the before/after table, ``analyze``'s summary) go to stdout, so that
``es-lightning fit ... > table.txt`` holds the table alone; everything else, the progress bars and
status lines included, goes to stderr. Our warnings are one line each, ``es-lightning: warning:
<message>``, said by the first process of a launch (not Python ``warnings``,
whose lines start with a source path and repeat on every rank)::

    warn("ES sees no signal: ...")      # es-lightning: warning: ES sees no signal: ...
    say("done; runs/demo_cpu: ...")      # es-lightning: done; runs/demo_cpu: ...
"""

from __future__ import annotations

import os
import sys

_said: set[str] = set()


def first_process() -> bool:
    """Whether this is the first process of a launch (``RANK``, ``LOCAL_RANK`` and ``NODE_RANK``
    unset or 0)."""
    ranks = (os.environ.get(name, "") for name in ("RANK", "LOCAL_RANK", "NODE_RANK"))
    return not any(r.strip().isdigit() and int(r) > 0 for r in ranks)


def say(message: str, once: bool = False) -> None:
    """``es-lightning: <message>`` on stderr from the first process of a launch (``once``: at most
    once per process for the same message)."""
    if not first_process() or (once and message in _said):
        return
    _said.add(message)
    print(f"es-lightning: {_one_line(message)}", file=sys.stderr, flush=True)


def warn(message: str, once: bool = True) -> None:
    """``es-lightning: warning: <message>`` on stderr from the first process of a launch (``once``:
    at most once per process for the same message; a warning that its caller already gives once
    per run passes ``False``, so that a second run in the same process says it too)."""
    say(f"warning: {message}", once=once)


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())
