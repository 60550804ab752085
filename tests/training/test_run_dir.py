"""One run per folder: a rerun is refused, `overwrite` starts over, `resume: auto`, `keep_last`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from es_lightning.errors import ConfigError
from es_lightning.training.loggers import read_metrics
from es_lightning.training.run_dir import prepare_run_dir, prune_checkpoints, run_artifacts
from tests.helpers import CLI, TINY_ES_RECIPE, fit, subprocess_env

RECIPE = TINY_ES_RECIPE.replace("progress_bar: false", "progress_bar: false, checkpoint_every: 1")


def _old_run(folder: Path) -> None:
    (folder / "checkpoints" / "step-000001").mkdir(parents=True)
    (folder / "metrics.jsonl").write_text('{"step": 1}\n')
    (folder / "tensorboard").mkdir()
    (folder / "notes.txt").write_text("mine")


def test_a_folder_with_a_run_is_refused_naming_what_is_there(tmp_path):
    _old_run(tmp_path)
    with pytest.raises(
        ConfigError, match=r"already holds a run \(metrics.jsonl, tensorboard/, checkpoints/\)"
    ):
        prepare_run_dir(tmp_path, resume=False, overwrite=False)
    prepare_run_dir(tmp_path, resume=True, overwrite=False)  # a resume continues it
    assert len(run_artifacts(tmp_path)) == 3


def test_a_run_started_from_python_is_told_the_python_settings(tmp_path):
    _old_run(tmp_path)
    with pytest.raises(ConfigError) as refused:
        prepare_run_dir(tmp_path, resume=False, overwrite=False, python=True)
    assert (
        "continue it with TrainerConfig(resume=True) (or 'auto'), start over with TrainerConfig(overwrite=True)"
        in str(refused.value)
    )
    assert "--trainer" not in str(refused.value)


def test_overwrite_deletes_the_run_and_nothing_else(tmp_path):
    _old_run(tmp_path)
    prepare_run_dir(tmp_path, resume=False, overwrite=True)
    assert run_artifacts(tmp_path) == [] and (tmp_path / "notes.txt").read_text() == "mine"
    prepare_run_dir(tmp_path / "new", resume=False, overwrite=False)  # nothing there: a fresh run


def test_resume_auto_starts_over_only_without_a_checkpoint(tmp_path):
    (tmp_path / "metrics.jsonl").write_text('{"step": 1}\n')  # killed before its first checkpoint
    prepare_run_dir(tmp_path, resume="auto", overwrite=False)
    assert run_artifacts(tmp_path) == []
    _old_run(tmp_path)
    (tmp_path / "checkpoints" / "step-000001" / "trainer_state.json").write_text("{}")
    prepare_run_dir(tmp_path, resume="auto", overwrite=False)
    assert (tmp_path / "metrics.jsonl").is_file()  # a checkpoint: the run continues


def test_prune_keeps_the_newest(tmp_path):
    root = tmp_path / "checkpoints"
    for step in (1, 2, 3, 4):
        (root / f"step-{step:06d}").mkdir(parents=True)
        (root / f"step-{step:06d}" / "trainer_state.json").write_text("{}")
    (root / "latest").write_text("step-000004\n")
    deleted = prune_checkpoints(tmp_path, keep_last=2)
    assert [p.name for p in deleted] == ["step-000001", "step-000002"]
    assert sorted(p.name for p in root.glob("step-*")) == ["step-000003", "step-000004"]
    assert prune_checkpoints(tmp_path, keep_last=None) == []


def test_prune_keeps_the_checkpoint_steps_and_the_newest_of_the_others(tmp_path):
    root = tmp_path / "checkpoints"
    for step in (1, 2, 3, 5, 10, 15, 20):
        (root / f"step-{step:06d}").mkdir(parents=True)
    (root / "latest").write_text("step-000020\n")
    deleted = prune_checkpoints(tmp_path, keep_last=1, keep_steps=[1, 2, 3, 5, 15])
    assert [p.name for p in deleted] == ["step-000010"]  # the other newest one (20) stays
    assert [int(p.name[5:]) for p in sorted(root.glob("step-*"))] == [1, 2, 3, 5, 15, 20]


@pytest.mark.integration
def test_cli_refuses_a_rerun_overwrites_and_resumes_auto(tmp_path):
    out = fit(tmp_path, "run", "--trainer.max_steps", "2", "--trainer.keep_last", "1", recipe=RECIPE)
    assert sorted(p.name for p in (out / "checkpoints").glob("step-*")) == ["step-000002"]
    again = [*CLI, "fit", "--config", str(tmp_path / "run.yaml"), "--trainer.output_dir", str(out)]
    refused = subprocess.run(again, cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "already holds a run" in refused.stderr and "--trainer.overwrite true" in refused.stderr

    fit(tmp_path, "run", "--trainer.max_steps", "2", "--trainer.overwrite", "true", recipe=RECIPE)
    steps = [m["step"] for m in read_metrics(out / "metrics.jsonl") if "train/reward_mean" in m]
    assert steps == [1, 2]  # the old run's rows are gone, not appended to

    fit(tmp_path, "run", "--trainer.max_steps", "3", "--trainer.resume", "auto", recipe=RECIPE)
    steps = [m["step"] for m in read_metrics(out / "metrics.jsonl") if "train/reward_mean" in m]
    assert steps == [1, 2, 3]  # continued from step 2
    fresh = fit(tmp_path, "fresh", "--trainer.max_steps", "1", "--trainer.resume", "auto", recipe=RECIPE)
    assert (fresh / "checkpoints" / "step-000001").is_dir()  # nothing to resume: a fresh run


@pytest.mark.integration
def test_a_run_keeps_its_checkpoint_steps_and_records_them(tmp_path):
    steps = ("--trainer.max_steps", "6", "--trainer.checkpoint_every", "2", "--trainer.keep_last", "1")
    out = fit(tmp_path, "run", *steps, "--trainer.checkpoint_steps", "[1, 3]", recipe=TINY_ES_RECIPE)
    kept = sorted(int(p.name[5:]) for p in (out / "checkpoints").glob("step-*"))
    assert kept == [1, 3, 6]  # 2 and 4 were pruned (keep_last 1 of the others), 1 and 3 are kept
    hparams = yaml.safe_load((out / "checkpoints" / "step-000003" / "hparams.yaml").read_text())
    assert hparams["trainer"]["checkpoint_steps"] == [1, 3] and hparams["trainer"]["checkpoint_every"] == 2
    assert yaml.safe_load((out / "config.yaml").read_text())["trainer"]["checkpoint_steps"] == [1, 3]


@pytest.mark.parametrize("variable", ["RANK", "LOCAL_RANK", "NODE_RANK"])
def test_launched_ranks_leave_the_folder_to_rank_zero(tmp_path, monkeypatch, variable):
    _old_run(tmp_path)
    monkeypatch.setenv(variable, "1")
    prepare_run_dir(tmp_path, resume=False, overwrite=True)  # neither refused nor deleted here
    assert len(run_artifacts(tmp_path)) == 3
    monkeypatch.setenv(variable, "0")
    with pytest.raises(ConfigError):
        prepare_run_dir(tmp_path, resume=False, overwrite=False)
