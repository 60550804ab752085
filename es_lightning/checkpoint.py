"""Checkpoints: their layout, writing one atomically, finding one to resume from, reading it back.

Layout of ``{output_dir}/checkpoints/step-000004/``::

    config.json  generation_config.json  tokenizer files   # the source model's; dtype = serving dtype
    model.safetensors                                      # the weights in the serving dtype (HF, vLLM)
    {strategy}_state/master.safetensors                    # the same weights in fp32 (resume, analysis)
    {strategy}_state/...                                   # the strategy's own state (optimizer)
    callbacks.pt  trainer_state.json  hparams.yaml
    manifest.json                                          # every file's size and CRC-32, written last

A checkpoint is written into a temporary folder and renamed into place, so none is half written;
later damage is found by the manifest, and a resume falls back to the newest intact one.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch

from es_lightning.checkpoint_manifest import (
    MANIFEST_FILE,
    DamagedCheckpointError,
    Verdict,
    atomic_write_text,
    fsync_path,
    verify_checkpoint,
    write_manifest,
)
from es_lightning.checkpoint_space import refuse_full_disk
from es_lightning.console import say, warn
from es_lightning.errors import MissingPathError
from es_lightning.ranks import fail_together
from es_lightning.weight_files import (
    SHARD_BYTES,
    STATE_FILE,
    iter_weights,
    served_files,
    weight_files,
    write_weights,
)

if TYPE_CHECKING:
    from es_lightning.models.loading import ModelLoading

HPARAMS_FILE = "hparams.yaml"
CALLBACKS_FILE = "callbacks.pt"
WeightsView = Literal["stored", "served"]


def state_folder(strategy_name: str) -> str:
    """The checkpoint subfolder holding ``strategy_name``'s fp32 master and own state."""
    return f"{strategy_name}_state"


def checkpoints_root(output_dir: str | Path) -> Path:
    return Path(output_dir) / "checkpoints"


class Checkpoint:
    """A complete checkpoint folder, read back (``stored``: the fp32 master; ``served``: as served)."""

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
    """The checkpoint a run continues from (``None``: a fresh run), checked against its manifest:
    ``true``/``auto`` take the newest intact one, a path that one (refused when damaged).

    Raises:
        MissingPathError: no checkpoint to resume, or ``resume`` names a folder that is none.
        DamagedCheckpointError: the named checkpoint, or every checkpoint, is damaged.
    """
    if resume is False or resume in ("", "false", "False"):
        return None
    if resume == "auto" or resume is True or resume in ("true", "True", "latest"):
        found = newest_intact_checkpoint(output_dir)
        if found is None and resume != "auto":  # auto: the newest checkpoint, else a fresh run
            raise MissingPathError(
                f"trainer.resume: no checkpoint in {checkpoints_root(output_dir)} to resume from"
            )
        return found
    path = Path(str(resume)).expanduser()
    if not (path / STATE_FILE).is_file() and not (path / MANIFEST_FILE).is_file():
        what = "does not exist" if not path.exists() else f"is not a checkpoint folder (no {STATE_FILE})"
        raise MissingPathError(
            f"trainer.resume: {path} {what}; give a checkpoints/step-NNNNNN folder, `true` for the "
            "newest checkpoint in trainer.output_dir, or `auto` (the newest if there is one)"
        )
    verdict = verify_checkpoint(path)
    if not verdict.intact:
        raise DamagedCheckpointError(
            f"trainer.resume: checkpoint {path} is damaged: {verdict.problem}; name another "
            "checkpoint, or give `true` to resume from the newest intact one"
        )
    say(_resuming_line(verdict), once=True)
    return path


def check_if_checkpoint(path: str | Path | None, what: str) -> None:
    """Check an es-lightning checkpoint at ``path`` against its manifest (other models pass)."""
    folder = Path(str(path)).expanduser() if path is not None else None
    if folder is None or not ((folder / STATE_FILE).is_file() or (folder / MANIFEST_FILE).is_file()):
        return
    verdict = verify_checkpoint(folder)
    if not verdict.intact:
        raise DamagedCheckpointError(f"{what}: checkpoint {folder} is damaged: {verdict.problem}")
    if not verdict.verified:
        warn(f"checkpoint {folder} is unverified (no {MANIFEST_FILE}: written by an older version)")


def newest_intact_checkpoint(output_dir: str | Path) -> Path | None:
    """The newest checkpoint of ``output_dir`` that matches its manifest (``None``: there are none)."""
    root = checkpoints_root(output_dir)
    candidates = sorted(
        (p for p in root.glob("step-*") if (p / STATE_FILE).is_file() or (p / MANIFEST_FILE).is_file()),
        reverse=True,
    )
    pointer = root / "latest"
    named = root / pointer.read_text().strip() if pointer.is_file() else None
    if named in candidates:  # ``latest`` first, then older ones (newer ones are another attempt's)
        candidates = [p for p in candidates if p.name <= named.name]
    damaged: list[Verdict] = []
    for folder in candidates:
        verdict = verify_checkpoint(folder)
        if verdict.intact:
            for bad in damaged:
                warn(f"checkpoint {bad.path} is damaged ({bad.problem}); skipped")
            say(_resuming_line(verdict), once=True)
            return folder
        damaged.append(verdict)
    if damaged:
        raise DamagedCheckpointError(
            f"trainer.resume: every checkpoint in {root} is damaged; the newest, {damaged[0].path}: "
            f"{damaged[0].problem}"
        )
    return None


def _resuming_line(verdict: Verdict) -> str:
    if verdict.verified:
        return f"resuming from {verdict.path} (files match its manifest)"
    return (
        f"warning: resuming from {verdict.path} unverified (no {MANIFEST_FILE}: written by an older version)"
    )


# -- writing ------------------------------------------------------------------------------------
def write_model_meta(
    model: str, tokenizer: Any, dtype: torch.dtype, directory: str | Path, loading: ModelLoading | None = None
) -> Path:
    """Config, generation config, tokenizer and own code of ``model`` into ``directory``."""
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


def _seal(
    tmp: Path,
    final: Path,
    trainer_state: dict[str, Any],
    hparams: dict[str, Any] | None,
    callbacks_state: dict[str, Any] | None,
) -> None:
    """The writer's last files and the manifest into ``tmp``, renamed to ``final``, ``latest`` set."""
    import yaml

    if callbacks_state:
        torch.save(callbacks_state, tmp / CALLBACKS_FILE)
    (tmp / HPARAMS_FILE).write_text(yaml.safe_dump(hparams or {}, sort_keys=False))
    (tmp / STATE_FILE).write_text(json.dumps(trainer_state, indent=2))
    write_manifest(tmp)  # last: it lists every file above with its size and checksum
    for root, _, files in os.walk(tmp):
        for name in files:
            fsync_path(Path(root, name))
    fsync_path(tmp)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    fsync_path(final.parent)
    atomic_write_text(final.parent / "latest", final.name + "\n")


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
    keep_last: int | None = None,
) -> Path:
    """Write checkpoint ``step`` (every rank calls it, the writer rank writes); returns the folder.
    DiskSpaceError when the disk filled (the partial folder removed)."""

    root = checkpoints_root(output_dir)
    final = root / f"step-{step:06d}"
    tmp = root / f".tmp-step-{step:06d}"
    partial = (tmp, root / ".latest.tmp")  # what a failed write leaves (atomic_write_text)
    state_dir = tmp / state_folder(strategy_name)

    def writes() -> AbstractContextManager[None]:  # the writer's: a full disk becomes one line
        return refuse_full_disk(root, final.name, partial, keep_last) if is_writer else nullcontext()

    stream = iter(weights)
    with fail_together(), writes():  # the weights: the writer's disk may fail, and every rank learns it
        try:
            if is_writer:
                root.mkdir(parents=True, exist_ok=True)
                shutil.rmtree(tmp, ignore_errors=True)
                shutil.copytree(meta_dir, tmp)
                write_weights(tmp, stream, serving_dtype, state_dir, shard_bytes)
        finally:
            for _ in stream:  # every rank takes part in the stream's gathers, whatever happened here
                pass
    with fail_together(), writes():
        write_state(state_dir)  # the strategy's own state, on every rank
    with fail_together(), writes():  # the rest is the writer's; the other ranks wait for its verdict
        if is_writer:
            state = {
                **trainer_state,
                "step": step,
                "strategy": strategy_name,
                "serving_dtype": str(serving_dtype),
            }
            _seal(tmp, final, state, hparams, callbacks_state)
    return final
