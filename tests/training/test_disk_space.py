"""A full disk met by ``es-lightning fit`` for real: the run folder is a small tmpfs that bubblewrap
mounts for the run (``bwrap --size N --tmpfs DIR``). Too little room for the next checkpoint is
found before it is written; a write the disk refuses removes its partial folder. Either way the run
ends with one line naming the newest intact checkpoint and the space needed, exit status 2, no
traceback, and the checkpoints before it and ``latest`` intact."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from es_lightning.checkpoint import Checkpoint
from es_lightning.checkpoint_manifest import verify_checkpoint
from tests.helpers import CLI, TINY_ES_RECIPE, assert_bit_identical, fit, subprocess_env

pytestmark = pytest.mark.integration

MB = 2**20


def _fit_on_small_disks(tmp_path: Path, runs: dict[str, tuple[int, int, int]]) -> dict[str, Path]:
    """``es-lightning fit`` of the tiny ES recipe once per ``name: (disk bytes, max_steps, ranks)``,
    all at once, each into its own tmpfs; each run folder, its stderr and exit status are copied to
    ``tmp_path/kept/name`` before the tmpfs goes."""
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    (tmp_path / "run.yaml").write_text(TINY_ES_RECIPE)
    mounts, lines = [], []
    for name, (size, steps, ranks) in runs.items():
        disk, kept = tmp_path / "disks" / name, tmp_path / "kept" / name
        disk.mkdir(parents=True)
        kept.mkdir(parents=True)
        mounts += ["--size", str(size), "--tmpfs", str(disk)]
        fit = [*CLI, "fit", "--config", "run.yaml", "--trainer.output_dir", f"{disk}/run"]
        fit += ["--trainer.max_steps", str(steps), "--trainer.checkpoint_every", "1"]
        fit += ["--trainer.devices", str(ranks)]
        lines.append(f"({' '.join(fit)} 2> {kept}/stderr; echo $? > {kept}/rc; cp -a {disk}/run {kept}) &")
    proc = subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", *mounts, "--", "sh", "-c", "\n".join([*lines, "wait"])],
        cwd=tmp_path,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    if "bwrap:" in proc.stderr:
        pytest.skip(f"bubblewrap cannot mount a tmpfs here: {proc.stderr.strip()}")
    return {name: tmp_path / "kept" / name for name in runs}


def _one_error(kept: Path) -> str:
    stderr = (kept / "stderr").read_text()
    assert (kept / "rc").read_text().strip() == "2", stderr[-3000:]
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("es-lightning: error: ")]
    assert len(errors) == 1, stderr[-3000:]
    return errors[0]


@pytest.fixture(scope="module")
def small_disks(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    # a checkpoint of the tiny model takes 2.5 MB: 4 MB hold one, 1.5 MB not even that
    tmp_path = tmp_path_factory.mktemp("disks")
    runs = {"second": (4 * MB, 2, 1), "first": (3 * MB // 2, 1, 1), "two_ranks": (3 * MB // 2, 1, 2)}
    return tmp_path, _fit_on_small_disks(tmp_path, runs)


def test_a_full_disk_ends_the_run_in_one_line_with_its_checkpoints_intact(small_disks):
    tmp_path, kept = small_disks
    root = tmp_path / "disks" / "second" / "run" / "checkpoints"
    error = _one_error(kept["second"])
    assert error.startswith(f"es-lightning: error: checkpoint step-000002 needs about 2.5 MB in {root}, "), (
        error
    )
    assert error.endswith(
        f"the newest intact checkpoint is {root / 'step-000001'}; free space there, or keep fewer "
        "checkpoints with --trainer.keep_last N (now all are kept), then continue with --trainer.resume true"
    ), error
    checkpoints = kept["second"] / "run" / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir()) == ["latest", "step-000001"]
    assert (checkpoints / "latest").read_text() == "step-000001\n"
    verdict = verify_checkpoint(checkpoints / "step-000001")
    assert verdict.verified and verdict.intact


@pytest.mark.parametrize("name", ["first", "two_ranks"])
def test_a_write_the_disk_refuses_removes_its_partial_folder(small_disks, name):
    """On two ranks the writer's failure reaches the other rank, which stops with it instead of
    waiting for a checkpoint that never comes (one line from the writer, status 2, no traceback)."""
    tmp_path, kept = small_disks
    root = tmp_path / "disks" / name / "run" / "checkpoints"
    error = _one_error(kept[name])
    assert error.startswith(
        f"es-lightning: error: writing checkpoint step-000001 into {root} failed, the disk is full ("
    ), error
    assert "no checkpoint has been written yet" in error
    assert list((kept[name] / "run" / "checkpoints").iterdir()) == []  # the partial folder is gone


def test_a_run_resumed_after_a_full_disk_ends_as_an_uninterrupted_run(
    small_disks, tmp_path, es_two_updates_run
):
    """The run the full disk stopped after update 1, resumed where there is room, reaches the same
    weights, bit for bit, as the same run never stopped."""
    _, kept = small_disks
    (tmp_path / "run.yaml").write_text(TINY_ES_RECIPE)
    resumed = tmp_path / "resumed"
    shutil.copytree(kept["second"] / "run", resumed)
    two_steps = ("--trainer.max_steps", "2", "--trainer.checkpoint_every", "1")
    straight = es_two_updates_run  # the same recipe and settings, never stopped
    fit(tmp_path, "resumed", *two_steps, "--trainer.resume", "true", recipe=TINY_ES_RECIPE)
    final = {out: Checkpoint(out / "checkpoints" / "step-000002") for out in (straight, resumed)}
    assert final[resumed].state["step"] == 2
    assert_bit_identical(dict(final[straight].named_weights()), dict(final[resumed].named_weights()))
