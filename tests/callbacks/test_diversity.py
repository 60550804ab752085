"""PopulationDiversity on real tiny ES runs (transformers rollout): its metrics, a training it leaves
unchanged, and ``analyze`` reading the same run's settings for the random-walk null."""

from __future__ import annotations

import json

import pytest

from es_lightning.analysis.command import run_analyze
from es_lightning.callbacks import PopulationDiversity
from es_lightning.callbacks.probe import ProbePrompts
from es_lightning.errors import ConfigError
from es_lightning.models.registry import resolve_model
from es_lightning.tasks import Echo
from es_lightning.training.batches import batch_indices
from es_lightning.training.loggers import read_metrics
from tests.helpers import fit

RECIPE = """
module:
  model: es-lightning/tiny-random
  task:
    class_path: es_lightning.tasks.FunctionTask
    init_args:
      train: {{path: {data}/train.jsonl}}
      test: {{path: {data}/test.jsonl}}
      reward_funcs: [tests.callbacks.test_diversity.even_first_character]
      name: parity
  train_sampling: {{temperature: 1.0, max_tokens: 3}}
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {{population_size: 4, sigma: 0.05, learning_rate: 0.05}}
rollout: {{class_path: es_lightning.rollout.hf.HFRollout}}
trainer: {{batch_size: 4, seed: 3, accelerator: cpu, progress_bar: false, max_steps: 2}}
evaluation: null
"""
PROBE = """
callbacks:
  - class_path: es_lightning.callbacks.PopulationDiversity
    init_args: {every_n_updates: 1, num_prompts: 4, samples_per_prompt: 4}
"""
DIVERSITY = ("p_pop", "p_same", "gap", "js", "js_baseline", "gap_baseline", "js_excess", "gap_excess")
THEORY = ("alignment_cov", "transfer_kl", "mixture_gain", "centre_gain", "transfer_margin")


def even_first_character(completions, **kwargs):
    """Success when a response starts with a character of even code point: about half the time
    for a random model, and members' rates differ by how their weights tilt the first token."""
    return [float(bool(c) and ord(c[0]) % 2 == 0) for c in completions]


def _recipe(root):
    data = root / "data"
    data.mkdir(exist_ok=True)
    for split, n in (("train", 24), ("test", 4)):
        rows = [{"prompt": f"Say {i}", "answer": str(i)} for i in range(n)]
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return RECIPE.format(data=data)


@pytest.fixture(scope="module")
def probed(tmp_path_factory):
    """Two sampled updates of a tiny ES run, each probed."""
    root = tmp_path_factory.mktemp("diversity")
    return fit(root, "probed", recipe=_recipe(root) + PROBE)


def _training(run):
    return {r["step"]: r for r in read_metrics(run / "metrics.jsonl") if "es/skipped" in r}


@pytest.mark.integration
def test_probe_metrics_appear(probed, tmp_path):
    records = read_metrics(probed / "metrics.jsonl")
    training = _training(probed)
    logged = {r["step"]: r for r in records if "diversity/js" in r}
    assert sorted(logged) == [1, 2]
    for step, record in logged.items():
        for key in DIVERSITY:
            assert record[f"diversity/{key}"] is not None, key
        assert 0 < record["diversity/p_same"] <= record["diversity/p_pop"] < 1
        assert 0 < record["diversity/js"] <= 1
        assert record["diversity/js_baseline"] == pytest.approx(0.0, abs=1e-12)  # common seeds: one copy
        assert record["diversity/js_excess"] == pytest.approx(record["diversity/js"], abs=1e-12)
        applied = training[step]["es/skipped"] == 0.0
        assert all((f"diversity/{key}" in record) == applied for key in THEORY), step
        if applied:
            assert record["diversity/transfer_kl"] >= 0
    # analyze reads α, N and T_applied of this run for the random-walk null
    result = run_analyze(
        base=resolve_model("es-lightning/tiny-random"),
        checkpoint=str(probed / "checkpoints" / "step-000002"),
        output=tmp_path / "probed.json",
        progress=False,
    )
    (walk,) = result["null"]["inputs"]["walks"]
    assert (walk["learning_rate"], walk["population_size"]) == (0.05, 4)
    assert walk["applied_updates"] == 2 - sum(training[s]["es/skipped"] for s in (1, 2))


@pytest.mark.integration
def test_the_probe_leaves_the_training_unchanged(probed, tmp_path):
    """The probe samples with its own seeds and the centre is restored after each member: the run
    makes the same updates as without the callback."""
    plain = fit(tmp_path, "plain", recipe=_recipe(tmp_path))
    with_probe, without = _training(probed), _training(plain)
    for step in (1, 2):
        for key in ("train/reward_mean", "es/update_norm", "es/skipped"):
            assert with_probe[step][key] == without[step][key], (step, key)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"every_n_updates": 0}, "every_n_updates"),
        ({"samples_per_prompt": 1}, "samples_per_prompt must be >= 2"),
        ({"temperature": -1.0}, "temperature"),
        ({"split": "test"}, "split"),
    ],
)
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        PopulationDiversity(**kwargs)


def test_probe_prompts_come_from_the_validation_split_first():
    task = Echo(length=4, n_train=12, n_test=4, n_validation=8)
    probe = ProbePrompts(task, "auto", 3, train_limit=None)
    assert probe.source == "validation split" and probe.rows(4, 0, 0) == task.load("validation")[:3]


def test_probe_prompts_without_a_validation_split():
    task = Echo(length=4, n_train=12, n_test=4, n_validation=0)
    train = task.load("train")
    with pytest.raises(ConfigError, match="split 'validation'"):
        ProbePrompts(task, "validation", 3, train_limit=None)
    unused = ProbePrompts(task, "auto", 3, train_limit=8)  # rows 8..11 are never trained on
    assert unused.source == "train rows past train_limit" and unused.rows(4, 0, 5) == train[9:12]
    tail = ProbePrompts(task, "auto", 3, train_limit=None)
    for position in range(6):
        batch = set(batch_indices(12, 4, 0, position))
        rows = tail.rows(4, 0, position)
        expected = sorted(i for i in range(12) if i not in batch)[-3:]
        assert rows == [train[i] for i in expected], position
    with pytest.raises(ConfigError, match="every training row is in the update's batch"):
        ProbePrompts(task, "train", 3, train_limit=4).rows(4, 0, 0)
