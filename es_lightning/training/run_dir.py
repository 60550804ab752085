"""A run folder holds one run: a new run never mixes its logs and checkpoints into an old one's
(:func:`prepare_run_dir`), and old checkpoints are pruned (:func:`prune_checkpoints`). One run per
folder at a time: an advisory ``flock`` on ``{output_dir}/.es-lightning.lock``, released by the
kernel however its process dies; a second run is refused naming the holder's pid."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from es_lightning.checkpoint import checkpoints_root, latest_checkpoint
from es_lightning.console import launched_rank
from es_lightning.errors import ConfigError

RUN_ARTIFACTS = (
    "metrics.jsonl",
    "samples.jsonl",
    "tensorboard",
    "checkpoints",
    "eval",
    "pipeline.json",
    ".model_meta",
)
"""What a run writes into its folder (besides ``config.yaml``), and what ``overwrite`` deletes."""


def run_artifacts(output_dir: str | Path) -> list[Path]:
    """The run artefacts in ``output_dir`` (a pipeline's stage folders included)."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    found = [folder / name for name in RUN_ARTIFACTS if (folder / name).exists()]
    return found + sorted(p for p in folder.glob("stage[0-9]*_*") if p.is_dir())


def prepare_run_dir(
    output_dir: str | Path, resume: bool | str, overwrite: bool, python: bool = False
) -> None:
    """Check (for ``overwrite`` or a fresh ``resume: auto``, clear) the run folder; else ConfigError."""
    if launched_rank() > 0:
        return
    if resume == "auto":
        folders = [Path(output_dir), *Path(output_dir).glob("stage[0-9]*_*")]  # a pipeline's stages too
        if any(latest_checkpoint(folder) is not None for folder in folders):
            return
        overwrite = True
    elif resume not in (False, "", "false", "False"):
        return
    found = run_artifacts(output_dir)
    if not found:
        return
    if not overwrite:
        names = ", ".join(p.name + ("/" if p.is_dir() else "") for p in found)
        resume_it, start_over = (
            ("TrainerConfig(resume=True) (or 'auto')", "TrainerConfig(overwrite=True)")
            if python
            else ("--trainer.resume true (or auto)", "--trainer.overwrite true")
        )
        raise ConfigError(
            f"trainer.output_dir {str(output_dir)!r} already holds a run ({names}); continue it with "
            f"{resume_it}, start over with {start_over} (deletes those), or choose another output_dir"
        )
    for path in found:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def prune_checkpoints(
    output_dir: str | Path, keep_last: int | None, keep_steps: Collection[int] = ()
) -> list[Path]:
    """Delete all but the newest ``keep_last`` checkpoints, keeping ``keep_steps`` and ``latest``."""
    if keep_last is None:
        return []
    newest = latest_checkpoint(output_dir)
    pinned = {f"step-{step:06d}" for step in keep_steps}
    found = sorted(p for p in checkpoints_root(output_dir).glob("step-*") if p.is_dir())
    steps = [p for p in found if p.name not in pinned]
    deleted = []
    for path in steps[: max(0, len(steps) - keep_last)]:
        if path != newest:
            shutil.rmtree(path)
            deleted.append(path)
    return deleted


# -- the run lock ---------------------------------------------------------------------------------
LOCK_FILE = ".es-lightning.lock"


class RunLockedError(ConfigError):
    """Another live process holds the run folder's lock; the message names its pid."""


_held: dict[Path, tuple[int, int]] = {}
"""Folders this process holds: resolved path -> (open file descriptor, nesting depth)."""


def acquire_run_lock(output_dir: str | Path) -> Path:
    """Take ``output_dir``'s lock or raise :class:`RunLockedError`; re-entrant, one release each."""
    folder = Path(output_dir).expanduser().resolve()
    if folder in _held:
        fd, depth = _held[folder]
        _held[folder] = (fd, depth + 1)
        return folder
    path = folder / LOCK_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise ConfigError(
            f"trainer.output_dir {str(output_dir)!r}: cannot create its lock file {path}: "
            f"{err.strerror or err}"
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise RunLockedError(
            f"trainer.output_dir {str(output_dir)!r} is in use by another run (pid {holder}, lock "
            f"{path}); wait for it to end, stop it, or choose another output_dir"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[folder] = (fd, 1)
    return folder


def release_run_lock(output_dir: str | Path) -> None:
    """Undo one :func:`acquire_run_lock`; the last one unlocks (the file stays, empty of meaning)."""
    folder = Path(output_dir).expanduser().resolve()
    if folder not in _held:
        return
    fd, depth = _held[folder]
    if depth > 1:
        _held[folder] = (fd, depth - 1)
        return
    del _held[folder]
    os.close(fd)  # closing the last descriptor releases the flock


def holds_run_lock(output_dir: str | Path) -> bool:
    """Whether this process holds ``output_dir``'s lock."""
    return Path(output_dir).expanduser().resolve() in _held


@contextmanager
def hold_run_lock(output_dir: str | Path, enabled: bool = True) -> Iterator[None]:
    """Hold ``output_dir``'s lock for the ``with`` block (``enabled=False``: do nothing)."""
    if not enabled:
        yield
        return
    acquire_run_lock(output_dir)
    try:
        yield
    finally:
        release_run_lock(output_dir)
