"""A checkpoint's manifest: every file's size and CRC-32, written last, so truncation and corruption
are found before a checkpoint is used (:func:`verify_checkpoint`); files written whole or not at all
(:func:`atomic_write_text`)."""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from es_lightning.errors import ConfigError

MANIFEST_FILE = "manifest.json"
MANIFEST_FORMAT = 1
_CHUNK = 16 * 2**20


class DamagedCheckpointError(ConfigError):
    """A checkpoint's files differ from its manifest; the message names the first damaged file."""


@dataclass(frozen=True)
class Verdict:
    """What :func:`verify_checkpoint` found in ``path``."""

    path: Path
    problem: str | None = None
    """The first damaged file and how (``None``: intact)."""
    verified: bool = True
    """``False``: the folder has no manifest (written before checkpoints recorded one)."""

    @property
    def intact(self) -> bool:
        return self.problem is None


def file_crc32(path: Path) -> str:
    """The CRC-32 of ``path``'s bytes, as 8 hex digits (read in 16 MiB chunks)."""
    crc = 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


def write_manifest(folder: str | Path) -> Path:
    """Record every file under ``folder`` in ``manifest.json``, atomically."""
    folder = Path(folder)
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST_FILE)
    entries = {
        p.relative_to(folder).as_posix(): {"size": p.stat().st_size, "crc32": file_crc32(p)} for p in files
    }
    manifest = {"format": MANIFEST_FORMAT, "checksum": "crc32", "files": entries}
    atomic_write_text(folder / MANIFEST_FILE, json.dumps(manifest, indent=1))
    return folder / MANIFEST_FILE


def fsync_path(path: Path) -> None:
    """fsync a file or folder by its path."""
    fd = os.open(path, os.O_RDONLY)
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
    fsync_path(path.parent)


_verdicts: dict[Path, tuple[tuple, Verdict]] = {}


def verify_checkpoint(folder: str | Path) -> Verdict:
    """Check ``folder``'s files against its manifest (the module docstring says how)."""
    folder = Path(folder)
    manifest_path = folder / MANIFEST_FILE
    if not manifest_path.is_file():
        return Verdict(folder, verified=False)
    try:
        manifest = json.loads(manifest_path.read_text())
        entries: dict[str, dict] = dict(manifest["files"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        return Verdict(folder, f"{MANIFEST_FILE} is unreadable ({err})")
    stats = {}
    for name, entry in entries.items():  # every size first: a truncated file is named at once
        file = folder / name
        try:
            stat = file.stat()
        except FileNotFoundError:
            return Verdict(folder, f"{name} is missing")
        if stat.st_size != entry.get("size"):
            return Verdict(folder, f"{name} is {stat.st_size} bytes, the manifest says {entry.get('size')}")
        stats[name] = (stat.st_size, stat.st_mtime_ns)
    key = (manifest_path.stat().st_mtime_ns, tuple(sorted(stats.items())))
    cached = _verdicts.get(folder.resolve())
    if cached is not None and cached[0] == key:
        return cached[1]
    verdict = Verdict(folder)
    for name, entry in entries.items():
        crc = file_crc32(folder / name)
        if crc != entry.get("crc32"):
            verdict = Verdict(
                folder, f"{name} does not match its checksum (crc32 {crc}, recorded {entry.get('crc32')})"
            )
            break
    _verdicts[folder.resolve()] = (key, verdict)
    return verdict
