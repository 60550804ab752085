"""Where a model name points: a local folder (:func:`looks_local`), or a hub id and its
``config.json`` in the local HF cache (:func:`cached_config`).
"""

from __future__ import annotations

import os
from pathlib import Path

_TRUE = {"1", "on", "true", "yes"}


def hub_offline() -> bool:
    """Whether downloads are off (``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE``)."""
    from huggingface_hub import constants

    env = (os.environ.get(v, "").strip().lower() for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))
    return bool(constants.HF_HUB_OFFLINE) or any(v in _TRUE for v in env)


def hub_cache() -> str:
    """The folder the HF hub cache lives in (``$HF_HUB_CACHE``, default ``~/.cache/huggingface/hub``)."""
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)


def looks_local(name: str) -> bool:
    """Whether ``name`` is meant as a path rather than a hub id."""
    return (
        name.startswith((".", "/", "~"))
        or name.count("/") > 1
        or "\\" in name
        or Path(name).expanduser().exists()
    )


def cached_config(repo_id: str, revision: str | None = None) -> str | None:
    """The cached ``config.json`` of ``repo_id`` at ``revision`` (default ``main``), or ``None``."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    return found if isinstance(found, str) else None
