"""``es-lightning tune`` end to end: two ES trials of one update on the validation split.

The task is the built-in arithmetic task with a tripwire on its test split
(:mod:`tests.tune.tripwire`): a trial that read the test split (its evaluation, a callback) would
fail, so finished trials show that the tune and the callbacks kept for selection never read it.
"""

from __future__ import annotations

import json

import pytest
import yaml

from es_lightning.report.readers import read_after, read_before
from es_lightning.tune import Selection, TuneMethod, run_tune
from tests.helpers import REPO
from tests.tune.tripwire import TINY_TUNE_RECIPE as RECIPE

GRID = {"strategy.init_args.learning_rate": [1.0e-9, 0.05]}
LABELS = ["learning_rate=1e-09", "learning_rate=0.05"]


@pytest.fixture
def recipe(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the trials import tests.tune.tripwire
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # one torch thread per trial: faster on a busy machine
    path = tmp_path / "es.yaml"
    path.write_text(RECIPE)
    return str(path)


@pytest.mark.integration
def test_tune_runs_the_grid_on_validation_and_chooses_by_the_fixed_rule(tmp_path, recipe):
    out = tmp_path / "tune"
    tune = run_tune(
        methods={"es": TuneMethod(recipe=recipe, grid=GRID)},
        selection=Selection(metric="eval/arithmetic/pass@1"),
        budget=["--trainer.max_steps 1"],
        validation_overrides=["--evaluation.limit 6"],
        output_dir=out,
    )
    trials = tune["trials"]
    assert [(t["label"], t["status"]) for t in trials] == [(label, "finished") for label in LABELS]
    for trial in trials:
        run = out / "trials" / "es" / trial["label"] / "seed0"
        before, after = read_before(run)["arithmetic"], read_after(run)["arithmetic"]
        assert before["split"] == after["split"] == "validation" and after["n_prompts"] == 6
        assert trial["delta"] == pytest.approx(after["pass@1"] - before["pass@1"])  # the reference
        assert (
            json.loads((run / "heldout" / "step-000001.json").read_text())["arith"]["split"] == "validation"
        )
        metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        assert not any(key.startswith("entropy/") for m in metrics for key in m)  # TokenEntropy removed
        compute = trial["compute"]
        assert compute["updates"] == 1 and compute["generated_tokens"] > 0 and compute["peak_rss_mb"] > 50
        assert compute["rollouts"] == pytest.approx(2 * 4)  # N members x B prompts x 1 response
    assert trials[0]["delta"] == 0.0  # α = 1e-9 leaves the fp32 weights as they were: it did nothing
    best = max(trials, key=lambda t: t["delta"])  # ties: the first in grid order
    chosen = tune["methods"]["es"]["chosen"]
    assert chosen["label"] == best["label"] and chosen["score"] == best["delta"]
    assert tune["methods"]["es"]["removed_callbacks"] == ["es_lightning.callbacks.TokenEntropy"]

    recipe_of_choice = yaml.safe_load((out / "chosen" / "es.yaml").read_text())
    assert recipe_of_choice["evaluation"]["split"] == "test"  # the report's recipe reads the test split
    assert recipe_of_choice["trainer"]["max_steps"] == 1  # the budget it was chosen under
    assert (
        recipe_of_choice["strategy"]["init_args"]["learning_rate"]
        == best["settings"]["strategy.init_args.learning_rate"]
    )
    text = (out / "TUNE.md").read_text()
    assert f"**{chosen['label']}** (chosen)" in text and "eval/arithmetic/pass@1" in text
    assert json.loads((out / "tune.json").read_text()) == tune

    # Again, with one trial's final evaluation gone: the other is reused, that one would run again.
    (out / "trials" / "es" / LABELS[1] / "seed0" / "eval" / "after.json").unlink()
    again = run_tune(
        methods={"es": TuneMethod(recipe=recipe, grid=GRID)},
        selection=Selection(metric="eval/arithmetic/pass@1"),
        budget=["--trainer.max_steps 1"],
        validation_overrides=["--evaluation.limit 6"],
        output_dir=out,
        launch=False,
    )
    assert [t["status"] for t in again["trials"]] == ["reused", "missing"]
    assert again["trials"][0] == trials[0] | {"status": "reused"}
    # half a grid chooses nothing: the rule waits for every configuration
    assert again["methods"]["es"]["chosen"] is None
    assert again["methods"]["es"]["unfinished"] == [LABELS[1]]
    assert "Not yet chosen: 1 of 2 configurations" in (out / "TUNE.md").read_text()
