"""What es-lightning says on the console besides its results: one line each, on stderr, from the
first process of a launch (results go to stdout)::

    warn("ES sees no signal: ...")      # es-lightning: warning: ES sees no signal: ...
"""

from __future__ import annotations

import os
import sys

_said: set[str] = set()


def launched_rank() -> int:
    """The largest of the launch variables' ranks (0 in a single process or the first of a launch)."""
    ranks = [os.environ.get(name, "") for name in ("RANK", "LOCAL_RANK", "NODE_RANK")]
    return max((int(r) for r in ranks if r.strip().isdigit()), default=0)


def say(message: str, once: bool = False) -> None:
    """``es-lightning: <message>`` on stderr from the first process (``once`` per process)."""
    if launched_rank() > 0 or (once and message in _said):
        return
    _said.add(message)
    print(f"es-lightning: {one_line(message)}", file=sys.stderr, flush=True)


def warn(message: str, once: bool = True) -> None:
    """``es-lightning: warning: <message>`` on stderr from the first process (``once`` per process)."""
    say(f"warning: {message}", once=once)


def one_line(message: str) -> str:
    r"""A multi-line message (a parse error) as one line: its lines stripped and joined by spaces.

    >>> one_line('Parser key "sigma":\n  Expected a <class \'float\'>. Got value: x')
    'Parser key "sigma": Expected a <class \'float\'>. Got value: x'
    """
    return " ".join(line.strip() for line in str(message).splitlines() if line.strip())
