"""Fixtures shared by the training tests."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture()
def meta_dir(tmp_path: Path) -> Path:
    """The model metadata a checkpoint copies (a config.json is enough for the checkpoint layer)."""
    meta = tmp_path / "meta"
    meta.mkdir()
    (meta / "config.json").write_text('{"model_type": "toy"}')
    return meta
