"""A callback that writes each update's CPU seconds of the trainer process (all its threads) to a
JSON file: the time between consecutive ``on_train_batch_end`` calls, by ``time.process_time``.

Wall seconds per update move with the machine's other load; CPU seconds much less. Used by
``benchmarks/measures/trl_grpo.py`` beside ``time/step``::

    es-lightning fit ... --callbacks '[{class_path: benchmarks.measures.update_clock.UpdateClock,
                                        init_args: {path: clock.json}}]'
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


class UpdateClock:
    """CPU seconds per update, appended to ``path`` after every update (rank 0's process)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.cpu_s: list[float] = []
        self._last = time.process_time()

    def on_fit_start(self, trainer: Any) -> None:
        self._last = time.process_time()

    def on_train_batch_end(self, trainer: Any, step: int, metrics: dict[str, float]) -> None:
        now = time.process_time()
        self.cpu_s.append(now - self._last)
        self._last = now
        self.path.write_text(json.dumps({"cpu_s": self.cpu_s}))
