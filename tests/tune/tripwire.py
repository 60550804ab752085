"""Tasks that fail the run the moment anything reads their test split (for recipes in the tests).

Their generators still keep the other splits apart from the test problems (through
``split_rows``, not ``load``): only a reader of the test split trips them.
"""

from __future__ import annotations

from typing import Any

from es_lightning.tasks import Arithmetic, Echo


class _NoTestSplit:
    def load(self, split: str = "train") -> list[dict[str, Any]]:
        if split == "test":
            raise RuntimeError(f"{self.name}: the test split was read")  # type: ignore[attr-defined]
        return super().load(split)  # type: ignore[misc]


class EchoWithoutTest(_NoTestSplit, Echo):
    """``echo`` whose test split must never be read."""


class ArithmeticWithoutTest(_NoTestSplit, Arithmetic):
    """``arithmetic`` whose test split must never be read."""
