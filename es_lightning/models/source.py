"""Is a model name usable? A local folder, a built-in name, or a hub id in the cache (or on the hub).

:func:`check_model_source` runs before anything expensive (Fabric, engines, data) and refuses,
naming the model and where it looked, a value that transformers and vLLM would fail on later:

* a local folder (a path that exists, starts with ``.``, ``/`` or ``~``, or has more than one
  ``/``) must hold a ``config.json``;
* an ``es-lightning/...`` name must be a built-in one;
* a hub id (``org/name``) must be in the local HF cache (``$HF_HUB_CACHE``); when it is not, the
  hub is asked whether it exists (short timeout), unless ``HF_HUB_OFFLINE=1`` forbids it.
"""

from __future__ import annotations

import os
from pathlib import Path

from es_lightning.errors import ConfigError, MissingPathError

BUILTIN_PREFIX = "es-lightning/"
HUB_TIMEOUT_S = 10.0
"""How long the hub may take to say whether an id that is not cached exists."""
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


def is_cached(repo_id: str) -> bool:
    """Whether ``repo_id``'s ``config.json`` is in the local HF hub cache."""
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)


def check_model_source(name: str, setting: str = "module.model") -> None:
    """Refuse ``name`` (the value of ``setting``) unless it is a model folder with a
    ``config.json``, a built-in name, or a hub id that is cached or exists on the hub.

    Raises:
        MissingPathError: a local-looking path without ``config.json``.
        ConfigError: an unknown built-in name, an invalid hub id, or a hub id that is neither
            cached nor (reachable) on the hub; the message says where it looked.
    """
    if looks_local(name):
        folder = Path(name).expanduser()
        if not (folder / "config.json").is_file():
            what = "has no config.json" if folder.is_dir() else "does not exist (no config.json)"
            raise MissingPathError(
                f"{setting}: model folder {name!r} {what}; give a folder written by "
                "save_pretrained, a built-in name or a hub id"
            )
        return
    if name.startswith(BUILTIN_PREFIX):
        from es_lightning.models.registry import BUILTIN_MODELS, PACKAGED_MODELS

        known = sorted({*BUILTIN_MODELS, *PACKAGED_MODELS})
        if name in known:
            return
        raise ConfigError(f"{setting}: unknown built-in model {name!r}; built-in models: {', '.join(known)}")
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError as err:
        raise ConfigError(
            f"{setting}: {name!r} is no local folder (relative to {os.getcwd()}), built-in name or "
            f"valid hub id ({err})"
        ) from None
    if is_cached(name):
        return
    where = (
        f"{setting}: {name!r} is no local folder (relative to {os.getcwd()}), no built-in name, and "
        f"not in the local HF cache ({hub_cache()})"
    )
    if hub_offline():
        raise ConfigError(
            f"{where}; HF_HUB_OFFLINE=1 forbids downloading it. Download it where there is "
            f"network (`hf download {name}`) or fix the name"
        )
    _ask_hub(name, where)


def _ask_hub(name: str, where: str) -> None:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        HfApi().model_info(name, timeout=HUB_TIMEOUT_S)
    except GatedRepoError:
        return  # it exists; the download says whether this user may have it
    except RepositoryNotFoundError:
        raise ConfigError(f"{where}, and the hub has no model of that name (or it is private)") from None
    except HfHubHTTPError:
        return  # the hub answered oddly (rate limit, outage): let the download try
    except Exception as err:  # no network: DNS, connection, timeout
        raise ConfigError(
            f"{where}, and the hub cannot be reached ({type(err).__name__}: {err}). Download it where "
            f"there is network (`hf download {name}`), point HF_HUB_CACHE at a cache that has it, or "
            "give a local folder"
        ) from None
