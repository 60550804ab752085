"""Built-in models by name, shipped with the package or built locally on first use (nothing is
downloaded): ``es-lightning/tiny-arithmetic``, ``tiny-countdown``, ``tiny-countdown-arithmetic``
(trained checkpoints, see each ``TRAINING.md``) and ``tiny-random`` (built in
``$ES_LIGHTNING_CACHE``); any other name passes through.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from es_lightning.models.tiny import TinyConfig, build_tiny_model

ASSETS = Path(__file__).resolve().parent / "assets"
"""The folder of the packaged checkpoints (package data)."""

PACKAGED_MODELS: dict[str, Path] = {
    "es-lightning/tiny-arithmetic": ASSETS / "tiny-arithmetic",
    "es-lightning/tiny-countdown": ASSETS / "tiny-countdown",
    "es-lightning/tiny-countdown-arithmetic": ASSETS / "tiny-countdown-arithmetic",
}
"""Checkpoints shipped inside the package, used in place (read-only)."""

BUILTIN_MODELS: dict[str, Callable[[Path], Path]] = {
    "es-lightning/tiny-random": lambda path: build_tiny_model(path, TinyConfig()),
}


def cache_dir() -> Path:
    return Path(os.environ.get("ES_LIGHTNING_CACHE", Path.home() / ".cache" / "es_lightning"))


def resolve_model(name: str) -> str:
    """A local folder for a built-in model name (packaged, or built once then cached); other names unchanged."""
    packaged = PACKAGED_MODELS.get(name)
    if packaged is not None:
        return str(packaged)
    build = BUILTIN_MODELS.get(name)
    if build is None:
        return name
    folder = cache_dir() / name.replace("/", "--")
    if not (folder / "config.json").is_file():
        tmp = folder.with_name(folder.name + f".tmp-{os.getpid()}")
        build(tmp)
        try:
            tmp.rename(folder)
        except OSError:  # another process finished first
            import shutil

            shutil.rmtree(tmp, ignore_errors=True)
    return str(folder)
