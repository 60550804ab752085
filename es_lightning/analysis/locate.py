"""Where a model's weights are: a folder, a built-in name or a hub id in the local cache; read from
the headers first, so a wrong folder or mismatched pair is refused before any tensor."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from es_lightning.analysis.pair import TensorSpec, tensor_specs
from es_lightning.analysis.threshold import served_dtype
from es_lightning.errors import ConfigError
from es_lightning.weight_files import master_files, served_files, weight_files


@dataclass
class ModelWeights:
    """One model's folder, its stored-view files and their headers."""

    given: str
    """The model as the user named it."""
    folder: Path
    """The folder holding its config (and tokenizer) files."""
    files: list[str]
    """The stored view's safetensors files."""
    specs: dict[str, TensorSpec]
    """``{name: (shape, dtype)}`` from those files' headers."""
    stored_as: str
    """``fp32 master`` or the served files' dtype (``bfloat16 model.safetensors``)."""


def locate_model(model: str, option: str) -> ModelWeights:
    """``model``'s stored weights and headers; ValueError naming ``--option`` when it is no model."""
    from es_lightning.models.registry import resolve_model

    resolved = resolve_model(str(model))
    path = Path(resolved).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ConfigError(f"--{option} {model}: not a model folder (no config.json)")
        if not master_files(path) and not any(path.glob("*.safetensors")):
            raise ConfigError(f"--{option} {model}: not a model folder (no *.safetensors weights)")
        folder = path
    elif path.exists() or resolved.startswith((".", "/", "~")):
        why = "a file" if path.exists() else "no such folder"
        raise ConfigError(f"--{option} {model}: not a model folder ({why})")
    else:
        try:
            folder = Path(served_files(resolved)[0]).parent
        except Exception as err:  # any hub-cache failure means "not available here"
            raise ConfigError(
                f"--{option} {model}: neither a model folder nor a model in the local Hugging Face cache ({err})"
            ) from None
    files = weight_files(folder)
    specs = tensor_specs(files)
    if master_files(folder):
        stored_as = "fp32 master"
    else:
        stored_as = f"{str(served_dtype(specs)).removeprefix('torch.')} model.safetensors"
    return ModelWeights(str(model), folder, files, specs, stored_as)
