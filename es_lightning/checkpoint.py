"""Where weights are written and read: checkpoints, fp32 masters, and weights streamed by name.

Every module that saves or loads weights goes through here: the trainer (checkpoints, resume), the
pipeline (a stage starts from the previous stage's checkpoint), the strategies (their fp32 start),
the rollouts (the ES master) and the analysis (drift between two checkpoints).

Layout of ``{output_dir}/checkpoints/step-000004/``::

    config.json  generation_config.json  tokenizer files   # the source model's; dtype = serving dtype
    *.py                                                   # the model's own code, if it ships some
    model.safetensors                                      # the weights in the serving dtype (HF, vLLM)
    {strategy}_state/master.safetensors                    # the same weights in fp32 (resume, analysis)
    {strategy}_state/...                                   # the strategy's own state (optimizer)
    callbacks.pt                                           # callbacks' state (curves, θ_0 norms, ...)
    trainer_state.json                                     # update index, seed, strategy, source model
    hparams.yaml                                           # the run's resolved settings

Weights larger than ``shard_bytes`` are split as transformers does (``model-00001-of-00003.safetensors``
+ ``model.safetensors.index.json``; ``master-…`` likewise), so no more than one shard is ever held
in memory: weights arrive as an iterator of ``(name, tensor)`` pairs and leave the same way
(:func:`iter_weights`, :meth:`Checkpoint.named_weights`).

A checkpoint is written into a temporary folder, its files fsynced, then renamed into place, and
``latest`` is replaced atomically, so a crash never leaves a half-written ``step-*`` folder.
Every rank calls :func:`save_checkpoint` (sharded strategies gather weights and optimizer state
collectively); only the writer rank touches the disk.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch

from es_lightning.errors import MissingPathError

if TYPE_CHECKING:
    from es_lightning.models.loading import ModelLoading

STATE_FILE = "trainer_state.json"
HPARAMS_FILE = "hparams.yaml"
CALLBACKS_FILE = "callbacks.pt"
MASTER_PREFIX = "master"
SHARD_BYTES = 4 * 2**30
"""Largest weights file written; bigger models are split into shards of at most this size."""
WeightsView = Literal["stored", "served"]


def state_folder(strategy_name: str) -> str:
    """The checkpoint subfolder holding ``strategy_name``'s fp32 master and own state."""
    return f"{strategy_name}_state"


def checkpoints_root(output_dir: str | Path) -> Path:
    return Path(output_dir) / "checkpoints"


# -- reading ------------------------------------------------------------------------------------
def _safetensors_in(folder: Path, prefix: str) -> list[str]:
    single = folder / f"{prefix}.safetensors"
    if single.is_file():
        return [str(single)]
    return sorted(str(f) for f in folder.glob(f"{prefix}-*-of-*.safetensors"))


def master_files(model: str | Path) -> list[str]:
    """The fp32 master files of an es-lightning checkpoint folder (empty for any other model)."""
    folder = Path(model)
    for sub in sorted(folder.glob("*_state")) if folder.is_dir() else []:
        files = _safetensors_in(sub, MASTER_PREFIX)
        if files:
            return files
    return []


def served_files(model: str | Path, revision: str | None = None) -> list[str]:
    """The ``*.safetensors`` weights of a local folder or of a hub id in the local cache (at
    ``revision``, default ``main``; a local folder has no revision)."""
    folder = Path(model)
    if not folder.is_dir():
        from huggingface_hub import snapshot_download

        folder = Path(
            snapshot_download(
                str(model), revision=revision, allow_patterns=["*.safetensors"], local_files_only=True
            )
        )
    files = sorted(str(f) for f in folder.glob("*.safetensors"))
    if not files:
        raise MissingPathError(f"no *.safetensors weights in {folder}")
    return files


def weight_files(model: str | Path, revision: str | None = None) -> list[str]:
    """The most precise weights of ``model``: an es-lightning checkpoint's fp32 master when it has
    one, else its ``*.safetensors`` files (local folder, or hub cache at ``revision``)."""
    return master_files(model) or served_files(model, revision)


def iter_weights(
    files: Iterable[str],
    names: set[str] | None = None,
    device: torch.device | str = "cpu",
    dtype: torch.dtype | None = torch.float32,
) -> Iterator[tuple[str, torch.Tensor]]:
    """``(name, tensor)`` from safetensors ``files``, one tensor in memory at a time (keeping only
    ``names`` when given; cast to ``dtype`` unless it is ``None``)."""
    from safetensors import safe_open

    for f in files:
        with safe_open(f, framework="pt", device="cpu") as handle:
            for key in handle.keys():
                if names is None or key in names:
                    t = handle.get_tensor(key)
                    yield key, t.to(device=device, dtype=dtype or t.dtype)


class WeightIndex:
    """Random access by name to the tensors of several safetensors files, one tensor at a time::

    base = WeightIndex(weight_files("Qwen/Qwen2.5-1.5B-Instruct"))
    theta_0 = base.get("model.layers.0.self_attn.q_proj.weight")   # fp32, CPU
    """

    def __init__(self, files: Iterable[str]) -> None:
        from safetensors import safe_open

        self.files = list(files)
        self.where: dict[str, str] = {}
        for f in self.files:
            with safe_open(f, framework="pt", device="cpu") as handle:
                self.where.update(dict.fromkeys(handle.keys(), f))

    def __contains__(self, name: str) -> bool:
        return name in self.where

    def keys(self) -> list[str]:
        return list(self.where)

    def get(self, name: str, dtype: torch.dtype | None = torch.float32) -> torch.Tensor:
        from safetensors import safe_open

        if name not in self.where:
            raise KeyError(f"{name!r} is not in {self.files}")
        with safe_open(self.where[name], framework="pt", device="cpu") as handle:
            t = handle.get_tensor(name)
        return t if dtype is None else t.to(dtype)


def load_weights(files: Iterable[str], **kwargs: Any) -> dict[str, torch.Tensor]:
    """All tensors of ``files`` at once (see :func:`iter_weights` for the arguments)."""
    files = list(files)
    weights = dict(iter_weights(files, **kwargs))
    if not weights:
        raise ValueError(f"no tensors found in {files}")
    return weights


class Checkpoint:
    """A complete checkpoint folder (``trainer_state.json`` present), read back.

    ``named_weights("stored")`` streams the fp32 master where the checkpoint has one (else the
    served file); ``named_weights("served")`` the weights as generation served them.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not (self.path / STATE_FILE).is_file():
            raise MissingPathError(f"{self.path} is not an es-lightning checkpoint (no {STATE_FILE})")
        self.state: dict[str, Any] = json.loads((self.path / STATE_FILE).read_text())

    @property
    def step(self) -> int:
        return int(self.state["step"])

    @property
    def strategy(self) -> str | None:
        return self.state.get("strategy")

    def state_dir(self, strategy_name: str | None = None) -> Path:
        """The folder of ``strategy_name``'s own state (default: the strategy that wrote it)."""
        return self.path / state_folder(strategy_name or self.strategy or "")

    def hparams(self) -> dict[str, Any]:
        import yaml

        file = self.path / HPARAMS_FILE
        return yaml.safe_load(file.read_text()) if file.is_file() else {}

    def callbacks_state(self) -> dict[str, Any]:
        file = self.path / CALLBACKS_FILE
        return torch.load(file, weights_only=False) if file.is_file() else {}

    def weight_files(self, view: WeightsView = "stored") -> list[str]:
        return weight_files(self.path) if view == "stored" else served_files(self.path)

    def named_weights(
        self, view: WeightsView = "stored", dtype: torch.dtype | None = torch.float32
    ) -> Iterator[tuple[str, torch.Tensor]]:
        return iter_weights(self.weight_files(view), dtype=dtype)


def latest_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest complete checkpoint in ``output_dir`` (``None`` when there is none)."""
    root = checkpoints_root(output_dir)
    pointer = root / "latest"
    if pointer.is_file():
        candidate = root / pointer.read_text().strip()
        if (candidate / STATE_FILE).is_file():
            return candidate
    complete = sorted(p for p in root.glob("step-*") if (p / STATE_FILE).is_file())
    return complete[-1] if complete else None


def resolve_resume(resume: bool | str, output_dir: str | Path) -> Path | None:
    """The checkpoint a run continues from, or ``None`` for a fresh run.

    Raises:
        MissingPathError: ``resume`` asks for the newest checkpoint and ``output_dir`` has none, or
            names a folder that is not a checkpoint (a ``FileNotFoundError`` and a ``ConfigError``).
    """
    if resume is False or resume in ("", "false", "False"):
        return None
    if resume == "auto":  # the newest checkpoint when there is one, else a fresh run
        return latest_checkpoint(output_dir)
    if resume is True or resume in ("true", "True", "latest"):
        found = latest_checkpoint(output_dir)
        if found is None:
            raise MissingPathError(
                f"trainer.resume: no checkpoint in {checkpoints_root(output_dir)} to resume from"
            )
        return found
    path = Path(str(resume)).expanduser()
    if not (path / STATE_FILE).is_file():
        what = "does not exist" if not path.exists() else f"is not a checkpoint folder (no {STATE_FILE})"
        raise MissingPathError(
            f"trainer.resume: {path} {what}; give a checkpoints/step-NNNNNN folder, `true` for the "
            "newest checkpoint in trainer.output_dir, or `auto` (the newest if there is one)"
        )
    return path


# -- writing ------------------------------------------------------------------------------------
def write_model_meta(
    model: str, tokenizer: Any, dtype: torch.dtype, directory: str | Path, loading: ModelLoading | None = None
) -> Path:
    """Config, generation config and tokenizer of ``model`` (dtype set to ``dtype``) into
    ``directory``, read with ``loading``'s revision and trust_remote_code; a model with its own
    code gets its Python files copied too (the folder then loads with ``trust_remote_code``)."""
    from transformers import AutoConfig, GenerationConfig

    from es_lightning.models.loading import ModelLoading, copy_model_code

    loading = loading or ModelLoading()
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    hub = loading.hub_kwargs(model)
    config = AutoConfig.from_pretrained(model, **hub)
    config.dtype = dtype
    config.save_pretrained(directory)
    try:
        revision = {"revision": hub["revision"]} if "revision" in hub else {}
        GenerationConfig.from_pretrained(model, **revision).save_pretrained(directory)
    except OSError:
        pass  # the model has no generation config
    tokenizer.save_pretrained(directory)
    copy_model_code(model, directory, hub.get("revision"))
    return directory


class ShardedWriter:
    """Writes ``(name, tensor)`` pairs as ``{prefix}.safetensors`` or, past ``shard_bytes``, as
    transformers-style shards with an index; holds at most one shard in memory."""

    def __init__(self, folder: Path, prefix: str, shard_bytes: int = SHARD_BYTES) -> None:
        self.folder, self.prefix, self.shard_bytes = Path(folder), prefix, shard_bytes
        self.folder.mkdir(parents=True, exist_ok=True)
        self.buffer: dict[str, torch.Tensor] = {}
        self.buffered = 0
        self.parts: list[tuple[Path, list[str]]] = []
        self.total = 0

    def add(self, name: str, tensor: torch.Tensor) -> None:
        tensor = tensor.detach().to("cpu").contiguous()
        size = tensor.numel() * tensor.element_size()
        if self.buffer and self.buffered + size > self.shard_bytes:
            self._flush()
        self.buffer[name] = tensor
        self.buffered += size
        self.total += size

    def _flush(self) -> None:
        from safetensors.torch import save_file

        part = self.folder / f".{self.prefix}-part{len(self.parts):05d}.safetensors"
        save_file(self.buffer, str(part), {"format": "pt"})
        self.parts.append((part, list(self.buffer)))
        self.buffer, self.buffered = {}, 0

    def close(self) -> list[Path]:
        if self.buffer or not self.parts:
            self._flush()
        if len(self.parts) == 1:
            final = [self.parts[0][0].rename(self.folder / f"{self.prefix}.safetensors")]
        else:
            n, final, weight_map = len(self.parts), [], {}
            for i, (part, names) in enumerate(self.parts):
                target = self.folder / f"{self.prefix}-{i + 1:05d}-of-{n:05d}.safetensors"
                final.append(part.rename(target))
                weight_map.update(dict.fromkeys(names, target.name))
            index = {"metadata": {"total_size": self.total}, "weight_map": weight_map}
            (self.folder / f"{self.prefix}.safetensors.index.json").write_text(json.dumps(index, indent=2))
        return final


def write_weights(
    folder: Path,
    weights: Iterable[tuple[str, torch.Tensor]],
    serving_dtype: torch.dtype,
    master_folder: Path | None,
    shard_bytes: int = SHARD_BYTES,
) -> int:
    """``model.safetensors`` in ``serving_dtype`` and, when ``master_folder`` is given, the fp32
    ``master.safetensors`` there, both from one pass over ``weights``; returns the tensor count."""
    served = ShardedWriter(folder, "model", shard_bytes)
    master = ShardedWriter(master_folder, MASTER_PREFIX, shard_bytes) if master_folder else None
    count = 0
    for name, tensor in weights:
        served.add(name, tensor.to(serving_dtype))
        if master is not None:
            master.add(name, tensor.to(torch.float32))
        count += 1
    if count == 0:
        raise ValueError("checkpoint: the strategy streamed no weights")
    served.close()
    if master is not None:
        master.close()
    return count


def _fsync_tree(folder: Path) -> None:
    for root, _, files in os.walk(folder):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    _fsync_dir(folder)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a synced temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def save_checkpoint(
    output_dir: str | Path,
    step: int,
    weights: Iterable[tuple[str, torch.Tensor]],
    *,
    serving_dtype: torch.dtype,
    meta_dir: str | Path,
    strategy_name: str,
    write_state: Callable[[Path], None],
    trainer_state: dict[str, Any],
    hparams: dict[str, Any] | None = None,
    callbacks_state: dict[str, Any] | None = None,
    is_writer: bool = True,
    shard_bytes: int = SHARD_BYTES,
) -> Path:
    """Write checkpoint ``step``; every rank calls it, the writer rank writes.

    ``weights`` is consumed on every rank (a sharded strategy's iterator gathers collectively);
    then ``write_state(folder)`` writes the strategy's own state, called on every rank with the same
    folder (the strategy decides which ranks write, e.g. through ``fabric.save``). Returns the
    final folder.
    """
    import yaml

    root = checkpoints_root(output_dir)
    final = root / f"step-{step:06d}"
    tmp = root / f".tmp-step-{step:06d}"
    state_dir = tmp / state_folder(strategy_name)
    if is_writer:
        root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(meta_dir, tmp)
        write_weights(tmp, weights, serving_dtype, state_dir, shard_bytes)
    else:
        for _ in weights:  # take part in the gathers; the writer saves
            pass
    write_state(state_dir)
    if not is_writer:
        return final
    if callbacks_state:
        torch.save(callbacks_state, tmp / CALLBACKS_FILE)
    (tmp / HPARAMS_FILE).write_text(yaml.safe_dump(hparams or {}, sort_keys=False))
    state = {**trainer_state, "step": step, "strategy": strategy_name, "serving_dtype": str(serving_dtype)}
    (tmp / STATE_FILE).write_text(json.dumps(state, indent=2))
    _fsync_tree(tmp)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    _fsync_dir(root)
    atomic_write_text(root / "latest", final.name + "\n")
    return final
