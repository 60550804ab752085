"""The user's loggers (a fit recipe's ``loggers:``): a missing package is refused with its ``pip
install`` before anything starts, and a relative default ``save_dir`` goes inside the run folder."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path
from typing import Any

from es_lightning.errors import ConfigError

OPTIONAL_PACKAGES: dict[str, tuple[str, str | None]] = {
    "WandbLogger": ("wandb", "wandb"),
    "MLFlowLogger": ("mlflow", "mlflow"),
    "CometLogger": ("comet_ml", None),
    "NeptuneLogger": ("neptune", None),
}
"""Logger class name -> (the module it needs, the es-lightning extra that installs it or None)."""


def _entries(loggers: Any) -> list[Any]:
    """The ``{class_path, init_args}`` entries of a parsed ``loggers`` value."""
    return [e for e in (loggers or []) if getattr(e, "class_path", None)]


def _logger_class(class_path: str) -> type | None:
    module, _, name = class_path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):  # the parser has already named a path that does not import
        return None


def check_logger_packages(loggers: Any) -> None:
    """Refuse (ConfigError) a logger whose package is missing (:data:`OPTIONAL_PACKAGES`)."""
    for entry in _entries(loggers):
        name = entry.class_path.rpartition(".")[2]
        if name not in OPTIONAL_PACKAGES:
            continue
        package, extra = OPTIONAL_PACKAGES[name]
        if importlib.util.find_spec(package) is None:
            install = f"pip install 'es-lightning[{extra}]'" if extra else f"pip install {package}"
            raise ConfigError(
                f"loggers: {entry.class_path} needs the {package!r} package, which is not installed; "
                f"{install} (or remove the logger)"
            )


def default_save_dirs(loggers: Any, output_dir: str | Path) -> None:
    """Move every ``save_dir`` left at its class's relative default into ``output_dir`` (in place)."""
    for entry in _entries(loggers):
        init_args = getattr(entry, "init_args", None)
        cls = _logger_class(entry.class_path)
        if init_args is None or cls is None or "save_dir" not in init_args:
            continue
        parameter = inspect.signature(cls).parameters.get("save_dir")
        default = None if parameter is None else parameter.default
        if not isinstance(default, str) or Path(default).is_absolute():
            continue
        if init_args["save_dir"] in (None, default):
            init_args["save_dir"] = str(Path(output_dir) / default)  # "." -> output_dir itself


def prepare_user_loggers(parser: Any) -> Any:
    """Make ``fit``'s ``parser`` check and place the ``loggers`` on each instantiation."""
    instantiate = parser.instantiate

    def instantiate_with_loggers(cfg: Any, *args: Any, **kwargs: Any) -> Any:
        loggers = cfg.get("loggers")
        check_logger_packages(loggers)
        output_dir = cfg.get("trainer.output_dir")
        if output_dir is not None:
            default_save_dirs(loggers, output_dir)
        return instantiate(cfg, *args, **kwargs)

    parser.instantiate = instantiate_with_loggers
    return parser
