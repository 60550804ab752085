"""Disk space for checkpoints, met on a real full disk: a small tmpfs that bubblewrap mounts for one
child process (``bwrap --size N --tmpfs DIR``), so every ``ENOSPC`` below comes from the kernel."""

from __future__ import annotations

import errno
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from es_lightning.checkpoint_manifest import verify_checkpoint
from es_lightning.checkpoint_space import DiskSpaceError, human_bytes, refuse_full_disk
from es_lightning.errors import ConfigError
from tests.helpers import REPO, subprocess_env


def small_disk(folders: dict[Path, int]) -> list[str]:
    """The command prefix that runs a command with a tmpfs of ``size`` bytes on each folder."""
    mounts = [
        arg for folder, size in folders.items() for arg in ("--size", str(size), "--tmpfs", str(folder))
    ]
    return ["bwrap", "--dev-bind", "/", "/", *mounts, "--"]


@pytest.fixture()
def tmpfs(tmp_path: Path) -> None:
    """Skips where bubblewrap cannot mount a tmpfs (no bwrap, no user namespaces)."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    probe = tmp_path / "probe"
    probe.mkdir()
    proc = subprocess.run([*small_disk({probe: 2**20}), "true"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"bubblewrap cannot mount a tmpfs here: {proc.stderr.strip()}")


SCRIPT = textwrap.dedent(
    """
    import os, shutil, sys
    from pathlib import Path
    import torch
    from lightning.fabric import Fabric
    from es_lightning.checkpoint import save_checkpoint
    from es_lightning.checkpoint_space import DiskSpaceError, check_checkpoint_space

    disk, keep, meta = (Path(a) for a in sys.argv[1:4])

    def save(out, step):
        weights = {"w": torch.arange(65536, dtype=torch.float32)}  # 256 kB fp32 + 128 kB served
        return save_checkpoint(
            out, step, iter(weights.items()), serving_dtype=torch.bfloat16, meta_dir=meta,
            strategy_name="es", write_state=lambda folder: None, trainer_state={}, keep_last=3,
        )

    def said(what, call):
        try:
            call()
        except DiskSpaceError as error:
            print(f"{what}: {error}")

    first = save(disk / "run", 1)
    needed = sum(p.stat().st_blocks * 512 for p in first.rglob("*") if p.is_file())
    with open(disk / "filler", "wb") as f:  # leave half of what the next checkpoint takes
        f.write(b"x" * (shutil.disk_usage(disk).free - needed // 2))
    root = disk / "run" / "checkpoints"
    said("precheck", lambda: check_checkpoint_space(Fabric(accelerator="cpu", devices=1), root, "step-000002", 3))
    said("write", lambda: save(disk / "run", 2))
    said("first", lambda: save(disk / "other", 1))
    (disk / "filler").unlink()
    shutil.copytree(disk, keep)
    """
)


@pytest.mark.integration
def test_a_full_disk_ends_in_one_line_and_keeps_the_previous_checkpoint(tmp_path, tmpfs):
    disk, keep, meta_dir = tmp_path / "disk", tmp_path / "keep", tmp_path / "meta"
    disk.mkdir()
    meta_dir.mkdir()
    (meta_dir / "config.json").write_text('{"model_type": "toy"}')
    proc = subprocess.run(
        [*small_disk({disk: 2 * 2**20}), sys.executable, "-c", SCRIPT, str(disk), str(keep), str(meta_dir)],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines())
    assert set(lines) == {"precheck", "write", "first"}, proc.stdout
    root = disk / "run" / "checkpoints"
    first = root / "step-000001"
    advice = (
        f"the newest intact checkpoint is {first}; free space there, or keep fewer checkpoints with "
        "--trainer.keep_last N (now 3), then continue with --trainer.resume true"
    )
    needed = sum(
        p.stat().st_blocks * 512 for p in (keep / "run/checkpoints/step-000001").rglob("*") if p.is_file()
    )
    assert lines["precheck"].startswith(
        f"checkpoint step-000002 needs about {human_bytes(needed)} in {root}, "
    )
    assert lines["precheck"].endswith(advice)
    assert lines["write"].startswith(
        f"writing checkpoint step-000002 into {root} failed, the disk is full (No space left on device): "
        f"it needs about {human_bytes(needed)}, "
    )
    assert lines["write"].endswith(advice)
    assert lines["first"].startswith(
        f"writing checkpoint step-000001 into {disk / 'other/checkpoints'} failed, the disk is full"
    )
    assert "more than the " in lines["first"] and "no checkpoint has been written yet" in lines["first"]
    kept = keep / "run" / "checkpoints"
    assert sorted(p.name for p in kept.iterdir()) == ["latest", "step-000001"]  # no partial folder
    assert (kept / "latest").read_text() == "step-000001\n"
    assert verify_checkpoint(kept / "step-000001").verified
    assert verify_checkpoint(kept / "step-000001").intact
    assert list((keep / "other" / "checkpoints").iterdir()) == []


def test_a_full_disk_error_is_a_user_error_and_other_failures_pass_through(tmp_path):
    root = tmp_path / "checkpoints"
    root.mkdir()
    partial = root / ".tmp-step-000001"
    partial.mkdir()
    (partial / "model.safetensors").write_bytes(b"x" * 5000)
    with pytest.raises(DiskSpaceError) as raised:
        with refuse_full_disk(root, "step-000001", [partial], keep_last=None):
            raise OSError(errno.EDQUOT, "Disk quota exceeded")
    assert isinstance(raised.value, ConfigError) and isinstance(raised.value, OSError)
    assert "the disk is full (Disk quota exceeded)" in str(raised.value)
    assert "(now all are kept)" in str(raised.value)
    assert not partial.exists()
    partial.mkdir()
    with pytest.raises(PermissionError):  # not a full disk: unchanged, nothing removed
        with refuse_full_disk(root, "step-000001", [partial], keep_last=None):
            raise PermissionError(errno.EACCES, "Permission denied")
    assert partial.exists()


def test_human_bytes():
    assert [human_bytes(n) for n in (0, 999, 2_523_136, 30e9)] == ["0 B", "999 B", "2.5 MB", "30.0 GB"]
