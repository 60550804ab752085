"""Disk space for checkpoints: refused before a checkpoint is written when the disk has less free
than the newest one takes, and a write the disk refuses ends the run in one line
(:class:`DiskSpaceError`), earlier checkpoints untouched.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from es_lightning.checkpoint_manifest import verify_checkpoint
from es_lightning.errors import ConfigError
from es_lightning.ranks import USER_ERROR_STATUS, PeerRankError

if TYPE_CHECKING:
    from lightning.fabric import Fabric

NEARLY_FULL = 2**20
"""A write that fails while its disk has fewer bytes free than this failed for lack of space."""
_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_FULL_WORDS = ("no space left on device", "disk quota exceeded", "os error 28", "os error 122")


class DiskSpaceError(ConfigError, OSError):
    """The disk of the checkpoints folder has no room for the next checkpoint (an ``OSError`` too)."""

    __str__ = ValueError.__str__  # the message as given, not OSError's


def bytes_on_disk(path: Path) -> int:
    """The space a file, or a folder's files, take on disk (allocated blocks, as ``du`` counts them;
    0 for a path that does not exist)."""
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_blocks * 512 for p in files)


def human_bytes(size: float) -> str:
    """``2.5 MB``: decimal units, as ``df -H`` prints them."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(size) < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def check_checkpoint_space(fabric: Fabric, root: Path, name: str, keep_last: int | None) -> None:
    """Before checkpoint ``name``: rank 0 checks the free space and every rank gets the verdict."""
    problem = _space_problem(root, name, keep_last) if fabric.is_global_zero else None
    if fabric.world_size > 1:
        problem = fabric.broadcast(problem, src=0)
    if problem is not None and not fabric.is_global_zero:  # rank 0 says it, the others stop with it
        raise PeerRankError(0, USER_ERROR_STATUS)
    if problem is not None:
        raise DiskSpaceError(problem)


def _space_problem(root: Path, name: str, keep_last: int | None) -> str | None:
    newest = pointed_checkpoint(root)
    if newest is None:
        return None
    needed, free = bytes_on_disk(newest), shutil.disk_usage(root).free
    if free >= needed:
        return None
    return (
        f"checkpoint {name} needs about {human_bytes(needed)} in {root}, which has "
        f"{human_bytes(free)} free; {_advice(root, keep_last)}"
    )


@contextmanager
def refuse_full_disk(root: Path, name: str, partial: Sequence[Path], keep_last: int | None) -> Iterator[None]:
    """A failure for lack of space removes ``partial`` and becomes a :class:`DiskSpaceError`."""
    try:
        yield
    except Exception as error:
        cause = None if isinstance(error, DiskSpaceError) else _full_disk_cause(error, root)
        if cause is None:
            raise
        written = sum(bytes_on_disk(p) for p in partial)
        for path in partial:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        newest = pointed_checkpoint(root)
        needed = (
            f"about {human_bytes(bytes_on_disk(newest))}"
            if newest is not None
            else f"more than the {human_bytes(written)} written before the disk filled"
        )
        raise DiskSpaceError(
            f"writing checkpoint {name} into {root} failed, the disk is full ({cause}): it "
            f"needs {needed}, {human_bytes(shutil.disk_usage(root).free)} free after removing the "
            f"partial checkpoint; {_advice(root, keep_last)}"
        ) from error


def _full_disk_cause(error: BaseException, root: Path) -> str | None:
    """What says ``error`` came from a full disk (``None``: it did not)."""
    for cause in (error, error.__cause__, error.__context__):
        if isinstance(cause, OSError) and cause.errno in _FULL_ERRNOS:
            return os.strerror(cause.errno)
        said = next((word for word in _FULL_WORDS if word in str(cause).lower()), None)
        if cause is not None and said is not None:
            return os.strerror(errno.EDQUOT if "122" in said or "quota" in said else errno.ENOSPC)
    if not isinstance(error, (OSError, RuntimeError)):
        return None
    try:
        free = shutil.disk_usage(root).free
    except OSError:
        return None
    first = (str(error).strip().splitlines() or [""])[0]
    return f"{human_bytes(free)} free after {type(error).__name__}: {first}" if free < NEARLY_FULL else None


def _advice(root: Path, keep_last: int | None) -> str:
    newest = _newest_intact(root)
    where = (
        f"the newest intact checkpoint is {newest}"
        if newest is not None
        else "no checkpoint has been written yet"
    )
    keep = f"now {keep_last}" if keep_last is not None else "now all are kept"
    return (
        f"{where}; free space there, or keep fewer checkpoints with --trainer.keep_last N ({keep}), "
        "then continue with --trainer.resume true"
    )


def pointed_checkpoint(root: Path) -> Path | None:
    """The checkpoint ``latest`` names, else the newest ``step-*`` folder (``None``: none)."""
    pointer = root / "latest"
    if pointer.is_file() and (named := root / pointer.read_text().strip()).is_dir():
        return named
    folders = sorted(p for p in root.glob("step-*") if p.is_dir())
    return folders[-1] if folders else None


def _newest_intact(root: Path) -> Path | None:
    """The newest checkpoint, ``latest`` first and older ones after it, whose files match its manifest."""
    newest = pointed_checkpoint(root)
    if newest is None:
        return None
    older = sorted((p for p in root.glob("step-*") if p.is_dir() and p.name <= newest.name), reverse=True)
    return next((p for p in older if verify_checkpoint(p).intact), None)
