"""Fixtures shared by the training tests: a checkpoint's metadata, and the reference ES runs that
several modules compare against (each trained once per test session, then only read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import REDRAW_TWO_UPDATES, TINY_ES_RECIPE, fit


@pytest.fixture()
def meta_dir(tmp_path: Path) -> Path:
    """The model metadata a checkpoint copies (a config.json is enough for the checkpoint layer)."""
    meta = tmp_path / "meta"
    meta.mkdir()
    (meta / "config.json").write_text('{"model_type": "toy"}')
    return meta


@pytest.fixture(scope="session")
def es_one_rank_redraw_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``TINY_ES_RECIPE`` on one rank, the update redrawn, two updates (``REDRAW_TWO_UPDATES``):
    the run that two ranks on one node (``test_fit_es``) and two nodes (``test_multinode``) must
    give bit for bit. Tests read it and never write into it."""
    tmp = tmp_path_factory.mktemp("es_one_rank")
    return fit(tmp, "one", *REDRAW_TWO_UPDATES, "--trainer.devices", "1", recipe=TINY_ES_RECIPE)


@pytest.fixture(scope="session")
def es_straight_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``TINY_ES_RECIPE`` for four updates without a stop (its only checkpoint is step 4): what a
    run stopped after two and resumed must equal (``test_fit_es``), and the ``noise: generator``
    run the noise table's run must differ from (``test_fit_es_noise_table``). Tests read it and
    never write into it."""
    tmp = tmp_path_factory.mktemp("es_straight")
    return fit(tmp, "straight", "--trainer.max_steps", "4", recipe=TINY_ES_RECIPE)


@pytest.fixture(scope="session")
def es_two_updates_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``TINY_ES_RECIPE`` for two updates, a checkpoint after each: the uninterrupted run that a
    run stopped by a full disk must end as (``test_disk_space``), and the finished run whose
    resumes ``test_damaged_checkpoints`` refuses (on its own copy). Tests read it and never write
    into it."""
    tmp = tmp_path_factory.mktemp("es_two_updates")
    every = ("--trainer.max_steps", "2", "--trainer.checkpoint_every", "1")
    return fit(tmp, "run", *every, recipe=TINY_ES_RECIPE)
