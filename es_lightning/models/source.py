"""Is a model name usable? A local folder, a built-in name, or a hub id in the cache (or on the
hub), checked before anything expensive (:func:`check_model_source`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.models.loading import cached_config, hub_cache, hub_offline, looks_local

if TYPE_CHECKING:
    from es_lightning.models.loading import ModelLoading

BUILTIN_PREFIX = "es-lightning/"
HUB_TIMEOUT_S = 10.0
"""How long the hub may take to say whether an id that is not cached exists."""


def needs_remote_code(config: dict[str, Any]) -> bool:
    """Whether transformers needs the model's own code to load this config.json."""
    if "auto_map" not in config:
        return False
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    return config.get("model_type") not in CONFIG_MAPPING


def check_model_source(name: str, setting: str = "module.model", loading: ModelLoading | None = None) -> None:
    """Refuse ``name`` (the value of ``setting``) unless usable, saying where it looked."""
    revision = loading.revision if loading is not None else None
    trusted = loading is not None and loading.trust_remote_code
    if looks_local(name):
        folder = Path(name).expanduser()
        if not (folder / "config.json").is_file():
            what = "has no config.json" if folder.is_dir() else "does not exist (no config.json)"
            raise MissingPathError(
                f"{setting}: model folder {name!r} {what}; give a folder written by "
                "save_pretrained, a built-in name or a hub id"
            )
        _check_remote_code(folder / "config.json", name, setting, trusted)
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
    config = cached_config(name, revision)
    if config is not None:
        _check_remote_code(Path(config), name, setting, trusted)
        return
    at = f" at revision {revision!r}" if revision is not None else ""
    where = (
        f"{setting}: {name!r}{at} is no local folder (relative to {os.getcwd()}), no built-in name, "
        f"and not in the local HF cache ({hub_cache()})"
    )
    download = f"hf download {name}" + (f" --revision {revision}" if revision is not None else "")
    if hub_offline():
        raise ConfigError(
            f"{where}; HF_HUB_OFFLINE=1 forbids downloading it. Download it where there is "
            f"network (`{download}`) or fix the name"
        )
    _ask_hub(name, where, revision, download)


def _check_remote_code(config_file: Path, name: str, setting: str, trusted: bool) -> None:
    if trusted:
        return
    try:
        config = json.loads(config_file.read_text())
    except (OSError, ValueError):
        return  # transformers says what is wrong with it
    if isinstance(config, dict) and needs_remote_code(config):
        raise ConfigError(
            f"{setting}: {name!r} needs its own code to load (its config.json has an auto_map for "
            f"model_type {config.get('model_type')!r}, which transformers does not know); read that "
            f"code, and if you trust it set {_sibling(setting, 'trust_remote_code')} true"
        )


def _sibling(setting: str, option: str) -> str:
    """How the user sets ``option`` beside ``setting`` (``module.model`` -> ``module.trust_remote_code:``)."""
    if setting.startswith("--"):
        return f"--{option}"
    return f"{setting.rpartition('.')[0] or 'module'}.{option}:"


def _ask_hub(name: str, where: str, revision: str | None = None, download: str = "") -> None:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        HfApi().model_info(name, timeout=HUB_TIMEOUT_S, **({"revision": revision} if revision else {}))
    except GatedRepoError:
        return  # it exists; the download says whether this user may have it
    except RepositoryNotFoundError:
        raise ConfigError(f"{where}, and the hub has no model of that name (or it is private)") from None
    except RevisionNotFoundError:
        raise ConfigError(f"{where}, and the hub has no revision {revision!r} of it") from None
    except HfHubHTTPError:
        return  # the hub answered oddly (rate limit, outage): let the download try
    except Exception as err:  # no network: DNS, connection, timeout
        raise ConfigError(
            f"{where}, and the hub cannot be reached ({type(err).__name__}: {err}). Download it where "
            f"there is network (`{download or 'hf download ' + name}`), point HF_HUB_CACHE at a cache "
            "that has it, or give a local folder"
        ) from None
