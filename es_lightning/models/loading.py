"""How a model is loaded: its hub revision, its remote code, and transformers' loading options,
one :class:`ModelLoading` for every place that reads the model (never a revision for a folder); and
where a model name points: a local folder (:func:`looks_local`), or a hub id and its ``config.json``
in the local HF cache (:func:`cached_config`)."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError

_OWN_SETTINGS = {
    "dtype": "module.dtype",
    "torch_dtype": "module.dtype",
    "revision": "module.revision",
    "trust_remote_code": "module.trust_remote_code",
    "pretrained_model_name_or_path": "module.model",
    "device_map": "trainer.devices (Fabric places the model)",
}
"""``model_kwargs`` keys that another setting owns, and that setting."""
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


@dataclass(frozen=True)
class ModelLoading:
    """Options every loader of the model gets (see the module docstring for who gets what)."""

    revision: str | None = None
    """Branch, tag or commit of the hub model (and of its own tokenizer); not applied to local folders."""
    trust_remote_code: bool = False
    """Run the Python code a model ships for its architecture (``auto_map`` in its config.json)."""
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    """Further ``AutoModelForCausalLM.from_pretrained`` options (e.g. ``attn_implementation``)."""

    def __post_init__(self) -> None:
        if self.revision is not None and not str(self.revision).strip():
            raise ConfigError("module.revision: empty; give a branch, tag or commit, or leave it unset")
        owned = {k: v for k, v in _OWN_SETTINGS.items() if k in self.model_kwargs}
        if owned:
            raise ConfigError(
                "module.model_kwargs: "
                + "; ".join(f"{key!r} is set by {setting}" for key, setting in owned.items())
            )

    def hub_kwargs(self, path: str) -> dict[str, Any]:
        """For ``AutoTokenizer``/``AutoConfig``/``GenerationConfig.from_pretrained(path, ...)``."""
        kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
        if self.revision is not None and not looks_local(str(path)):
            kwargs["revision"] = self.revision
        return kwargs

    def model_kwargs_for(self, path: str) -> dict[str, Any]:
        """For ``AutoModelForCausalLM.from_pretrained(path, dtype=..., ...)``."""
        return {**self.model_kwargs, **self.hub_kwargs(path)}

    def vllm_kwargs(self, path: str) -> dict[str, Any]:
        """For ``vllm.LLM(model=path, ...)`` (which reads the tokenizer from the same repository)."""
        kwargs = self.hub_kwargs(path)
        if "revision" in kwargs:
            kwargs["tokenizer_revision"] = kwargs["revision"]
        return kwargs

    def hparams(self) -> dict[str, Any]:
        """The settings as plain data (non-plain ``model_kwargs`` values as text)."""
        return json.loads(json.dumps(asdict(self), default=str))


def model_folder(model: str, revision: str | None = None) -> Path | None:
    """The folder holding ``model``'s files (a hub snapshot at ``revision``), or ``None``."""
    if looks_local(model):
        folder = Path(model).expanduser()
        return folder if folder.is_dir() else None
    try:
        from huggingface_hub import snapshot_download

        return Path(
            snapshot_download(
                model, revision=revision, allow_patterns=["*.py"], local_files_only=hub_offline()
            )
        )
    except Exception:  # offline and not cached, or the hub cannot be reached: what the cache holds
        config = cached_config(model, revision)
        return Path(config).parent if config is not None else None


def copy_model_code(model: str, directory: str | Path, revision: str | None = None) -> list[Path]:
    """Copy a model's own code into ``directory`` so the folder loads alone; returns the copies."""
    directory = Path(directory)
    config_file = directory / "config.json"
    config = json.loads(config_file.read_text())
    auto_map = config.get("auto_map")
    source = model_folder(model, revision) if auto_map else None
    if source is None:
        return []
    copied = []
    for file in sorted(source.glob("*.py")):
        target = directory / file.name
        if file.resolve() != target.resolve():
            shutil.copyfile(file, target)
        copied.append(target)
    prefix = f"{model}--"

    def local(reference: Any) -> Any:
        if isinstance(reference, list):
            return [local(r) for r in reference]
        if isinstance(reference, str) and reference.startswith(prefix):
            module = reference[len(prefix) :].split(".")[0]
            if (directory / f"{module}.py").is_file():
                return reference[len(prefix) :]
        return reference

    rewritten = {key: local(value) for key, value in auto_map.items()}
    if rewritten != auto_map:
        config["auto_map"] = rewritten
        config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return copied
