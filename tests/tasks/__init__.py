"""Tests of ``es_lightning.tasks``; :func:`shared_file` finds the offline data next to the repo."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
"""``<repo>/../shared/data``: real dataset files kept outside the repository."""


def shared_file(*parts: str) -> Path:
    """Path of a file under :data:`SHARED_DATA`; skips the test when it is missing."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"shared data file {path} is missing (expected in <repo>/../shared/data)")
    return path
