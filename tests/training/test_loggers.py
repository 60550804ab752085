import json
import math

import torch

from es_lightning.training.loggers import JSONLLogger, read_metrics


def test_one_line_per_call_with_step_first(tmp_path):
    root = tmp_path / "run" / "nested"  # created on first write
    logger = JSONLLogger(root)
    assert logger.path == root / "metrics.jsonl"
    assert not root.exists()

    logger.log_metrics({"train/reward": 0.25, "lr": 1e-3}, step=0)
    logger.log_metrics({"train/reward": torch.tensor(0.5)}, step=1)
    logger.log_metrics({"eval/pass@1": 1}, step=None)

    lines = logger.path.read_text().splitlines()
    assert len(lines) == 3
    assert lines[0] == '{"step": 0, "train/reward": 0.25, "lr": 0.001}'
    assert json.loads(lines[1]) == {"step": 1, "train/reward": 0.5}
    assert json.loads(lines[2]) == {"step": None, "eval/pass@1": 1.0}
    assert isinstance(json.loads(lines[2])["eval/pass@1"], float)


def test_non_finite_values_become_null(tmp_path):
    logger = JSONLLogger(tmp_path)
    logger.log_metrics(
        {"a": math.nan, "b": math.inf, "c": -math.inf, "d": torch.tensor(float("nan")), "e": 2.0}, step=3
    )
    text = logger.path.read_text()
    assert "NaN" not in text and "Infinity" not in text  # strict JSON
    assert json.loads(text) == {"step": 3, "a": None, "b": None, "c": None, "d": None, "e": 2.0}


def test_appends_across_logger_instances_and_read_metrics_round_trip(tmp_path):
    records = [{"step": 0, "x": 1.5}, {"step": 1, "x": None}, {"step": 2, "x": -0.125, "y": 3.0}]
    JSONLLogger(tmp_path).log_metrics({"x": 1.5}, step=0)
    resumed = JSONLLogger(tmp_path)  # a resumed run keeps appending to the same file
    resumed.log_metrics({"x": float("inf")}, step=1)
    resumed.log_metrics({"x": -0.125, "y": 3}, step=2)
    assert read_metrics(tmp_path / "metrics.jsonl") == records
    assert read_metrics(str(resumed.path)) == records


def test_read_metrics_skips_blank_lines(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text('{"step": 0, "a": 1.0}\n\n   \n{"step": 1, "a": null}\n')
    assert read_metrics(path) == [{"step": 0, "a": 1.0}, {"step": 1, "a": None}]


def test_custom_filename_and_logger_properties(tmp_path):
    logger = JSONLLogger(tmp_path, filename="eval.jsonl")
    logger.log_metrics({"m": 0.0}, step=7)
    logger.log_hyperparams({"lr": 0.1})  # a no-op: writes nothing
    assert logger.path == tmp_path / "eval.jsonl"
    assert [p.name for p in tmp_path.iterdir()] == ["eval.jsonl"]
    assert read_metrics(logger.path) == [{"step": 7, "m": 0.0}]
    assert (logger.name, logger.version, logger.root_dir) == ("jsonl", "0", str(tmp_path))


def test_truncate_metrics_drops_rows_after_the_checkpoint(tmp_path):
    from es_lightning.training.loggers import truncate_metrics

    logger = JSONLLogger(tmp_path)
    for step in (0, 1, 2, 3, 4):
        logger.log_metrics({"x": step}, step=step)
    with logger.path.open("a") as f:
        f.write('{"step": 5, "x": ')  # the last line a kill cut short
    assert truncate_metrics(logger.path, after_step=2) == 3
    assert [r["step"] for r in read_metrics(logger.path)] == [0, 1, 2]
    assert truncate_metrics(logger.path, after_step=2) == 0  # nothing more to drop
    assert truncate_metrics(tmp_path / "absent.jsonl", after_step=0) == 0


def test_a_pipeline_stage_writes_its_own_step_and_the_global_one(tmp_path):
    logger = JSONLLogger(tmp_path, step_offset=10)
    logger.log_metrics({"x": 1.0}, step=13)  # the loggers' axis: 10 updates before this stage
    logger.log_metrics({"x": 2.0}, step=None)
    assert read_metrics(logger.path) == [{"step": 3, "global_step": 13, "x": 1.0}, {"step": None, "x": 2.0}]
    JSONLLogger(tmp_path / "first", step_offset=0).log_metrics({"x": 0.0}, step=1)
    assert read_metrics(tmp_path / "first" / "metrics.jsonl") == [{"step": 1, "global_step": 1, "x": 0.0}]


def test_hyperparameters_reach_fabric_and_lightning_csv_loggers(tmp_path):
    import yaml
    from lightning.fabric.loggers import CSVLogger as FabricCSVLogger
    from lightning.pytorch.loggers import CSVLogger as LightningCSVLogger

    from es_lightning.training.loggers import log_hyperparams

    hparams = {"strategy": {"init_args": {"sigma": 0.05}}, "trainer": {"output_dir": tmp_path}}
    fabric_csv = FabricCSVLogger(tmp_path, name="fabric", version="")  # takes no hyperparameters itself
    lightning_csv = LightningCSVLogger(tmp_path, name="lightning", version="")
    log_hyperparams([JSONLLogger(tmp_path), fabric_csv, lightning_csv], hparams)
    fabric = yaml.safe_load((tmp_path / "fabric" / "hparams.yaml").read_text())
    assert fabric == {"strategy": {"init_args": {"sigma": 0.05}}, "trainer": {"output_dir": str(tmp_path)}}
    lightning = yaml.unsafe_load((tmp_path / "lightning" / "hparams.yaml").read_text())
    assert lightning["strategy"] == {"init_args": {"sigma": 0.05}}
