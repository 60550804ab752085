"""The model card (README.md) in a finished run's final checkpoint: on a real tiny run with an
evaluation before and after, and on a pipeline stage's folder written by hand."""

from __future__ import annotations

import json

import pytest
import yaml

from es_lightning.analysis.threshold import copy_model_meta
from es_lightning.evaluation.columns import format_table
from es_lightning.training.model_card import card_text, write_model_card
from tests.helpers import TINY_ES_RECIPE, fit

RECIPE = TINY_ES_RECIPE.replace("evaluation: null", "evaluation: {num_samples: 2, ks: [1, 2], max_tokens: 6}")


@pytest.mark.integration
def test_a_run_writes_the_card_of_its_final_checkpoint(tmp_path):
    out = fit(tmp_path, "run", "--trainer.max_steps", "1", recipe=RECIPE)
    card = (out / "checkpoints" / "step-000001" / "README.md").read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert front["library_name"] == "transformers" and "es" in front["tags"]
    assert "base_model" not in front  # a built-in model is no hub id
    assert "- **Base model**: `es-lightning/tiny-random`" in card
    assert "- **Method**: ES (evolution strategies in parameter space)" in card
    assert "- **Updates**: 1, 4 prompts each, seed 3" in card
    assert "\npopulation_size: 4\n" in card and "\nsigma: 0.05\n" in card  # the method's settings
    assert "class_path: es_lightning.tasks.Echo" in card and "n_train: 12" in card  # the data
    before, after = (json.loads((out / "eval" / f"{t}.json").read_text()) for t in ("before", "after"))
    table = format_table({"before": before, "after": after}, difference="change", details=True)
    assert f"```\n{table}\n```" in card
    assert any(line.split()[:2] == ["echo", "pass@2"] for line in table.splitlines())
    assert "- `echo`: 4 problems x 2 samples (test split)" in card
    assert f"es-lightning fit --config {out}/config.yaml --trainer.output_dir {out}_reproduced" in card
    assert f"Launched as: `es-lightning fit --config {tmp_path}/run.yaml --trainer.output_dir {out}" in card


def test_a_pipeline_stage_card_without_evaluation(tmp_path):
    run = tmp_path / "seq"
    checkpoint = run / "stage2_grpo" / "checkpoints" / "step-000002"
    checkpoint.mkdir(parents=True)
    (run / "pipeline.json").write_text(json.dumps({"stages": [{"name": "es"}, {"name": "grpo"}]}))
    (run / "config.yaml").write_text("module:\n  model: Qwen/Qwen2.5-0.5B-Instruct\n  task: gsm8k\n")
    hparams = {
        "strategy": {"name": "grpo", "group_size": 4},
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "task": "gsm8k",
    }
    (checkpoint / "hparams.yaml").write_text(yaml.safe_dump(hparams))
    (checkpoint / "trainer_state.json").write_text(json.dumps({"step": 2, "seed": 0}))
    card = card_text(checkpoint, run / "stage2_grpo")
    assert yaml.safe_load(card.split("---")[1])["base_model"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert (
        "- **Method**: GRPO (group relative policy optimisation) (stage 2 of the pipeline es then grpo)"
        in card
    )
    assert "\ngroup_size: 4\n" in card
    assert "The run wrote no evaluation" in card
    assert f"es-lightning fit --config {run}/config.yaml --trainer.output_dir {run}_reproduced" in card
    write_model_card(checkpoint, run / "stage2_grpo")
    (checkpoint / "config.json").write_text("{}")
    copy_model_meta(checkpoint, tmp_path / "export")  # analyze's exports are other models: no card
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == ["config.json"]
