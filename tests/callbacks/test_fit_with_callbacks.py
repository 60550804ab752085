"""Every built-in callback attached from a recipe to real ES and GRPO runs (tiny model, CPU)."""

from __future__ import annotations

import json

import pytest

from es_lightning.checkpoint import Checkpoint
from es_lightning.models.registry import resolve_model
from es_lightning.training.loggers import read_metrics
from tests.helpers import fit

pytestmark = pytest.mark.integration

CALLBACKS = """
callbacks:
  - class_path: es_lightning.callbacks.TokenEntropy
    init_args: {every_n_updates: 2, num_prompts: 4, max_tokens: 6}
  - class_path: es_lightning.callbacks.ParameterDrift
    init_args: {every_n_updates: 2}
  - class_path: es_lightning.callbacks.LayerAttribution
    init_args: {top_k: 10}
  - class_path: es_lightning.callbacks.PopulationDiversity
    init_args: {every_n_updates: 2, num_prompts: 2, samples_per_prompt: 2}
  - class_path: es_lightning.callbacks.HeldOutPassAtK
    init_args:
      tasks: {echo_long: {class_path: es_lightning.tasks.Echo, init_args: {length: 5, n_test: 4}}}
      every_n_updates: 2
      evaluation: {num_samples: 2, max_tokens: 7, ks: [1, 2], limit: 4, greedy: false}
"""
COMMON = """
module:
  model: es-lightning/tiny-random
  task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 16, n_test: 8}}
  train_sampling: {temperature: 1.0, max_tokens: 6}
rollout: {class_path: es_lightning.rollout.hf.HFRollout}
trainer: {batch_size: 4, seed: 3, accelerator: cpu, progress_bar: false, checkpoint_every: 2}
evaluation: null
"""
ES = (
    COMMON
    + CALLBACKS
    + """
strategy:
  class_path: es_lightning.strategies.ESStrategy
  init_args: {population_size: 4, sigma: 0.05, learning_rate: 0.05}
"""
)
GRPO = (
    COMMON
    + CALLBACKS
    + """
strategy:
  class_path: es_lightning.strategies.GRPOStrategy
  init_args: {group_size: 4, learning_rate: 3.0e-3, micro_batch_size: 16}
"""
)
KINDS = ("embedding", "attention", "mlp", "norm")


def _by_step(out, key):
    return {m["step"]: m[key] for m in read_metrics(out / "metrics.jsonl") if key in m}


def _check_instruments(out, es: bool):
    assert sorted(_by_step(out, "entropy/echo")) == [0, 2, 4]
    assert all(0 < v < 5 for v in _by_step(out, "entropy/echo").values())
    assert sorted(_by_step(out, "heldout/echo_long/pass@1")) == [0, 2, 4]
    assert sorted(_by_step(out, "drift/rel_l2")) == [2, 4]
    for kind in KINDS:
        assert sorted(_by_step(out, f"drift/rel_l2/{kind}")) == [2, 4]
    assert sorted(_by_step(out, "attribution/top_k/norm")) == [2, 4]
    for step in (2, 4):
        record = json.loads((out / "analysis" / f"attribution-step-{step:06d}.json").read_text())
        assert len(record["top_k"]) == 10 and sum(record["top_k_by_kind"].values()) == 10
        assert sum(record["top_k_by_layer"].values()) == 10
    diversity = ("p_pop", "p_same", "gap", "js", "js_excess", "gap_excess")
    for key in diversity:
        assert sorted(_by_step(out, f"diversity/{key}")) == ([2, 4] if es else [])
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(out / "tensorboard")).Reload()
    tags = set(events.Tags()["scalars"])
    assert {"entropy/echo", "drift/rel_l2", "heldout/echo_long/pass@1"} <= tags
    assert ("diversity/js" in tags) == es
    assert "attribution/top_k/text_summary" in events.Tags()["tensors"]


@pytest.fixture(scope="module")
def es_straight_run(tmp_path_factory):
    """The ES run with every instrument, four updates without a stop: what the instruments log,
    and what a run stopped after two and resumed must log again. Tests never write into it."""
    return fit(tmp_path_factory.mktemp("es"), "es", "--trainer.max_steps", "4", recipe=ES)


@pytest.mark.parametrize("name", ["es", "grpo"])
def test_every_instrument_logs_on_a_real_run(tmp_path, name, request):
    if name == "es":
        out = request.getfixturevalue("es_straight_run")
    else:
        out = fit(tmp_path, name, "--trainer.max_steps", "4", recipe=GRPO)
    _check_instruments(out, es=name == "es")
    # the drift curve equals `es-lightning analyze` on the final checkpoint
    from es_lightning.analysis.command import run_analyze

    result = run_analyze(
        base=resolve_model("es-lightning/tiny-random"),
        checkpoint=str(out / "checkpoints" / "step-000004"),
        output=tmp_path / f"{name}.json",
    )
    assert _by_step(out, "drift/rel_l2")[4] == pytest.approx(result["rel_l2"], rel=1e-9)
    assert _by_step(out, "drift/rel_l2/attention")[4] == pytest.approx(
        result["rel_l2_by_kind"]["attention"], rel=1e-9
    )
    record = json.loads((out / "analysis" / "attribution-step-000004.json").read_text())
    assert [e["name"] for e in record["top_k"]] == [e["name"] for e in result["top_k"][:10]]


def test_resume_continues_the_curves(tmp_path, es_straight_run):
    straight = es_straight_run
    resumed = fit(tmp_path, "resumed", "--trainer.max_steps", "2", recipe=ES)
    state = Checkpoint(resumed / "checkpoints" / "step-000002").callbacks_state()
    assert state["0:TokenEntropy"]["history"].keys() == {0, 2}
    assert [h["step"] for h in state["1:ParameterDrift"]["history"]] == [2]
    fit(tmp_path, "resumed", "--trainer.max_steps", "4", "--trainer.resume", "true", recipe=ES)
    for key in ("entropy/echo", "drift/rel_l2", "heldout/echo_long/pass@1", "diversity/js"):
        assert _by_step(resumed, key) == _by_step(straight, key), key
        logged = [m["step"] for m in read_metrics(resumed / "metrics.jsonl") if key in m]
        assert len(logged) == len(set(logged)), f"{key} logged twice at a step after the resume"
    final = Checkpoint(resumed / "checkpoints" / "step-000004").callbacks_state()
    assert final["0:TokenEntropy"]["history"].keys() == {0, 2, 4}
    assert [h["step"] for h in final["1:ParameterDrift"]["history"]] == [2, 4]
