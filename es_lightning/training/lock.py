"""One run per folder at a time: an advisory ``flock`` on ``{output_dir}/.es-lightning.lock``,
released by the kernel however its process dies; a second run is refused naming the holder's pid."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from es_lightning.errors import ConfigError

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
