"""Weights on disk, by name: which files hold a model's weights (:func:`weight_files`: an
es-lightning checkpoint's fp32 master, else its ``*.safetensors``), read one tensor at a time and
written in shards."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from es_lightning.errors import MissingPathError

MASTER_PREFIX = "master"
STATE_FILE = "trainer_state.json"
"""The file that makes a folder an es-lightning checkpoint (update index, seed, strategy, source model;
see :mod:`es_lightning.checkpoint`)."""
SHARD_BYTES = 4 * 2**30
"""Largest weights file written; bigger models are split into shards of at most this size."""


def master_files(model: str | Path) -> list[str]:
    """The fp32 master files of an es-lightning checkpoint folder (empty for any other model)."""
    folder = Path(model)
    for sub in sorted(folder.glob("*_state")) if folder.is_dir() else []:
        single = sub / f"{MASTER_PREFIX}.safetensors"
        shards = sorted(str(f) for f in sub.glob(f"{MASTER_PREFIX}-*-of-*.safetensors"))
        files = [str(single)] if single.is_file() else shards
        if files:
            return files
    return []


def served_files(model: str | Path, revision: str | None = None) -> list[str]:
    """The ``*.safetensors`` of a local folder or of a cached hub id at ``revision``."""
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
    """The most precise weights of ``model``: a checkpoint's fp32 master, else its safetensors."""
    return master_files(model) or served_files(model, revision)


def iter_weights(
    files: Iterable[str],
    names: set[str] | None = None,
    device: torch.device | str = "cpu",
    dtype: torch.dtype | None = torch.float32,
) -> Iterator[tuple[str, torch.Tensor]]:
    """``(name, tensor)`` from ``files``, one tensor in memory at a time."""
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


class ShardedWriter:
    """Writes ``(name, tensor)`` pairs as one file or transformers-style shards, one in memory."""

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
    """``model.safetensors`` in ``serving_dtype`` and the fp32 master, from one pass; the count."""
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
