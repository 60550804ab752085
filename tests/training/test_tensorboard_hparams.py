"""TensorBoard's HPARAMS tab: the resolved configuration beside the final evaluation's metrics."""

from __future__ import annotations

import pytest

from es_lightning.training.loggers import tensorboard_logger
from tests.helpers import TINY_ES_RECIPE, fit


def _read(folder):
    """(hparams plugin data by tag, scalars by tag as [(step, value)]), as TensorBoard reads the run."""
    from tensorboard.backend.event_processing import plugin_event_accumulator as tb
    from tensorboard.plugins.hparams import plugin_data_pb2
    from tensorboard.util import tensor_util

    acc = tb.EventAccumulator(str(folder), size_guidance={tb.TENSORS: 0})
    acc.Reload()
    plugins = acc.ActivePlugins()
    hparams = {
        tag: plugin_data_pb2.HParamsPluginData.FromString(content)
        for tag, content in (acc.PluginTagToContent("hparams") if "hparams" in plugins else {}).items()
    }
    scalars = {
        tag: [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors(tag)]
        for tag in (acc.PluginTagToContent("scalars") if "scalars" in plugins else {})
    }
    return hparams, scalars


def test_hparams_are_written_at_the_end_with_the_last_eval_metrics(tmp_path):
    logger = tensorboard_logger(tmp_path)
    logger.log_hyperparams({"strategy": {"sigma": 0.001, "name": "es"}, "trainer": {"max_steps": 3}})
    logger.log_metrics({"eval/echo/pass@1": 0.25, "train/reward_mean": 0.1}, step=0)
    assert _read(tmp_path / "tensorboard")[0] == {}  # nothing until the run ends: no metrics yet
    logger.log_metrics({"eval/echo/pass@1": 0.75, "eval/echo/greedy": 1.0}, step=3)
    logger.finalize("success")

    hparams, scalars = _read(tmp_path / "tensorboard")
    experiment = hparams["_hparams_/experiment"].experiment
    assert {m.name.tag for m in experiment.metric_infos} == {"eval/echo/pass@1", "eval/echo/greedy"}
    session = hparams["_hparams_/session_start_info"].session_start_info.hparams
    assert session["strategy/sigma"].number_value == 0.001
    assert session["strategy/name"].string_value == "es"
    assert session["trainer/max_steps"].number_value == 3
    assert scalars["eval/echo/pass@1"] == [(0, 0.25), (3, 0.75)]  # the tab shows the last; none twice
    assert scalars["eval/echo/greedy"] == [(3, 1.0)]


@pytest.mark.parametrize("status", ["interrupted", "failed"])
def test_no_hparams_when_the_run_did_not_finish(tmp_path, status):
    logger = tensorboard_logger(tmp_path)
    logger.log_hyperparams({"a": 1})
    logger.log_metrics({"eval/echo/pass@1": 0.5}, step=1)
    logger.finalize(status)
    assert _read(tmp_path / "tensorboard")[0] == {}


@pytest.mark.integration
def test_a_smoke_run_fills_the_hparams_tab_with_its_final_evaluation(tmp_path):
    recipe = TINY_ES_RECIPE.replace(
        "evaluation: null", "evaluation: {num_samples: 2, ks: [1, 2], max_tokens: 6}"
    )
    out = fit(tmp_path, "run", "--trainer.max_steps", "1", "--trainer.eval_before", "false", recipe=recipe)
    hparams, scalars = _read(out / "tensorboard")
    tags = {m.name.tag for m in hparams["_hparams_/experiment"].experiment.metric_infos}
    assert {"eval/echo/pass@1", "eval/echo/pass@2", "eval/echo/maj@1", "eval/echo/greedy"} <= tags
    session = hparams["_hparams_/session_start_info"].session_start_info.hparams
    assert session["strategy/init_args/population_size"].number_value == 4  # the resolved config
    import json

    after = json.loads((out / "eval" / "after.json").read_text())
    assert scalars["eval/echo/pass@1"][-1][1] == pytest.approx(after["echo"]["pass@1"])
