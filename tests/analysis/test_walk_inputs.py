"""The null's ES settings read from real checkpoint folders (written by the trainer's own writer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from es_lightning.analysis.walk_inputs import WalkOptions, read_walks
from es_lightning.errors import ConfigError
from tests.analysis.conftest import ES, GRPO, write_run


def test_es_run(tiny_model_path, tmp_path):
    ckpt = write_run(tmp_path / "es", tiny_model_path, 4, ES, skipped=[2])
    walks = read_walks(ckpt, str(tiny_model_path))
    assert walks.reason is None and walks.notes == []
    (walk,) = walks.walks
    assert (walk.learning_rate, walk.population_size, walk.applied_updates) == (2e-3, 8, 3)
    assert walk.update_sq_norm_sum == pytest.approx(0.1**2 + 0.3**2 + 0.4**2)  # steps 1, 3, 4
    assert "T = 4, 1 skipped" in walks.sources[0]


def test_options_replace_the_run_settings(tiny_model_path, tmp_path):
    ckpt = write_run(tmp_path / "es", tiny_model_path, 4, ES, skipped=[])
    (walk,) = read_walks(ckpt, None, WalkOptions(learning_rate=1e-3, applied_updates=2)).walks
    assert (walk.learning_rate, walk.population_size, walk.applied_updates) == (1e-3, 8, 2)
    assert walk.update_sq_norm_sum is None  # the logged norms are of the run's T, not the one given


def test_no_metrics_counts_every_update(tiny_model_path, tmp_path):
    ckpt = write_run(tmp_path / "es", tiny_model_path, 4, ES)
    walks = read_walks(ckpt)
    assert walks.walks[0].applied_updates == 4 and "skipped updates are unknown" in walks.notes[0]


def test_grpo_run_has_no_null(tiny_model_path, tmp_path):
    walks = read_walks(write_run(tmp_path / "grpo", tiny_model_path, 4, GRPO))
    assert walks.walks == [] and walks.reason == "n/a: not an ES run"


def _pipeline(root: Path, model: Path, stages: list[tuple[str, dict]]) -> list[Path]:
    plan = {"pipeline": "_then_".join(n for n, _ in stages), "stages": []}
    folders = []
    for i, (name, strategy) in enumerate(stages):
        run = root / f"stage{i + 1}_{name}"
        plan["stages"].append({"name": name, "updates": 2, "output_dir": str(run)})
        folders.append(write_run(run, model, 2, strategy, skipped=[1] if strategy["name"] == "es" else None))
    (root / "pipeline.json").write_text(json.dumps(plan))
    return folders


def test_pipeline_stages(tiny_model_path, tmp_path):
    _, after_grpo = _pipeline(tmp_path / "a", tiny_model_path, [("es", ES), ("grpo", GRPO)])
    walks = read_walks(after_grpo)
    assert [w.applied_updates for w in walks.walks] == [1]  # the ES stage's 2 updates, 1 skipped
    assert walks.notes == ["stage2_grpo/step-000002 (grpo): its change is not modelled"]
    _, after_es = _pipeline(tmp_path / "b", tiny_model_path, [("grpo", GRPO), ("es", ES)])
    walks = read_walks(after_es)
    assert [w.applied_updates for w in walks.walks] == [1]
    assert walks.notes == ["stage1_grpo/step-000002 (grpo): its change is not modelled"]
    first, second = _pipeline(tmp_path / "c", tiny_model_path, [("es", ES), ("es2", {**ES, "name": "es"})])
    assert [w.applied_updates for w in read_walks(second).walks] == [1, 1]  # ES stages add
    assert [w.applied_updates for w in read_walks(first).walks] == [1]


def test_bare_folder(tiny_model_path):
    assert read_walks(tiny_model_path).reason.startswith("n/a: not a training checkpoint")
    with pytest.raises(ConfigError, match="random_walk.applied_updates"):
        read_walks(tiny_model_path, options=WalkOptions(learning_rate=1e-3, population_size=8))
    (walk,) = read_walks(tiny_model_path, options=WalkOptions(2e-3, 32, 27)).walks
    assert (walk.learning_rate, walk.population_size, walk.applied_updates) == (2e-3, 32, 27)


def test_a_different_base_is_noted(tiny_model_path, tmp_path):
    ckpt = write_run(tmp_path / "es", tiny_model_path, 4, ES, skipped=[])
    walks = read_walks(ckpt, str(tmp_path / "elsewhere"))
    assert any("not from --base" in n for n in walks.notes)
