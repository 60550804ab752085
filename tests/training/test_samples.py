"""Text samples: samples.jsonl, and the text each kind of logger takes (TensorBoard, CSV, log_text)."""

from __future__ import annotations

import csv
import json

from lightning.fabric.loggers import CSVLogger as FabricCSVLogger
from lightning.fabric.loggers import Logger
from lightning.pytorch.loggers import CSVLogger as LightningCSVLogger
from tensorboard.backend.event_processing import plugin_event_accumulator as event_accumulator

from es_lightning.strategies.base import Sample
from es_lightning.training.loggers import tensorboard_logger
from es_lightning.training.samples import (
    COLUMNS,
    log_samples,
    markdown_table,
    truncate_samples,
)

SAMPLES = [
    Sample(
        prompt="What is 2+2?",
        completion="4 | four\nok",
        reward=1.0,
        member=3,
        advantage=0.75,
        rewards={"exact": 1.0, "brief": 0.0},
        logged={"extracted": "4"},
    ),
    Sample(prompt="Échoe 1234", completion="1234", reward=0.25),
]


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def read_csv(path):
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def tensorboard_texts(folder, tag="samples/text_summary"):
    """``{step: text}`` of a TensorBoard run's text summaries (the text plugin stores tensors)."""
    acc = event_accumulator.EventAccumulator(str(folder), size_guidance={event_accumulator.TENSORS: 0})
    acc.Reload()
    if tag not in acc.Tags()["tensors"]:
        return {}
    return {e.step: e.tensor_proto.string_val[0].decode() for e in acc.Tensors(tag)}


class TextLogger(Logger):
    """A logger with W&B's ``log_text(key, columns, data, step)``, recording what it gets."""

    def __init__(self):
        super().__init__()
        self.texts = []

    name = "text"
    version = "0"

    def log_metrics(self, metrics, step=None): ...

    def log_hyperparams(self, params, *args, **kwargs): ...

    def log_text(self, key, columns=None, data=None, dataframe=None, step=None):
        self.texts.append((key, columns, data, step))


class OtherTextLogger(TextLogger):
    def log_text(self, text):  # another signature: skipped with a warning
        raise AssertionError("not called with a table")


def test_markdown_table_escapes_pipes_and_line_breaks():
    rows = [[1, s.member, s.reward, s.advantage, "", "", s.prompt, s.completion] for s in SAMPLES]
    assert markdown_table(rows).splitlines() == [
        "| step | member | reward | advantage | rewards | logged | prompt | completion |",
        "|---|---|---|---|---|---|---|---|",
        "| 1 | 3 | 1.000 | 0.750 |  |  | What is 2+2? | 4 \\| four<br>ok |",
        "| 1 |  | 0.250 |  |  |  | Échoe 1234 | 1234 |",
    ]


def test_samples_reach_jsonl_both_csv_loggers_tensorboard_and_log_text(tmp_path):
    fabric_csv = FabricCSVLogger(tmp_path / "logs", name="fabric_csv", version="")
    lightning_csv = LightningCSVLogger(tmp_path / "logs", name="lightning_csv", version="")
    tensorboard = tensorboard_logger(tmp_path)
    text = TextLogger()
    loggers = [fabric_csv, lightning_csv, tensorboard, text]
    log_samples(tmp_path, loggers, SAMPLES, step=2)
    log_samples(tmp_path, loggers, SAMPLES[:1], step=4)
    log_samples(tmp_path, loggers, [], step=6)  # nothing to write
    tensorboard.finalize("success")

    records = read_jsonl(tmp_path / "samples.jsonl")
    assert [r["step"] for r in records] == [2, 2, 4]
    assert records[0] == {
        "step": 2,
        "member": 3,
        "reward": 1.0,
        "advantage": 0.75,
        "rewards": {"exact": 1.0, "brief": 0.0},
        "logged": {"extracted": "4"},
        "prompt": "What is 2+2?",
        "completion": "4 | four\nok",
    }
    assert records[1]["member"] is None and records[1]["prompt"] == "Échoe 1234"
    assert records[1]["advantage"] is None and records[1]["rewards"] == {} == records[1]["logged"]
    for logger in (fabric_csv, lightning_csv):
        rows = read_csv(tmp_path / "logs" / logger.name / "samples.csv")
        assert [(r["step"], r["completion"]) for r in rows] == [
            ("2", "4 | four\nok"),
            ("2", "1234"),
            ("4", "4 | four\nok"),
        ]
        assert list(rows[0]) == COLUMNS
    texts = tensorboard_texts(tmp_path / "tensorboard")
    assert sorted(texts) == [2, 4]
    assert "4 \\| four<br>ok" in texts[2] and "Échoe 1234" in texts[2] and "Échoe" not in texts[4]
    assert [(key, step, len(data)) for key, _, data, step in text.texts] == [
        ("samples", 2, 2),
        ("samples", 4, 1),
    ]
    assert text.texts[0][1] == COLUMNS
    assert text.texts[0][2][0] == [
        2,
        3,
        1.0,
        0.75,
        "exact=1 brief=0",
        "extracted=4",
        "What is 2+2?",
        "4 | four\nok",
    ]
    assert "| 0.750 | exact=1 brief=0 | extracted=4 |" in texts[2]


def test_a_pipeline_stage_logs_on_the_global_axis_and_jsonl_keeps_both(tmp_path):
    csv_logger = FabricCSVLogger(tmp_path, name="csv", version="")
    text = TextLogger()
    log_samples(tmp_path, [csv_logger, text], SAMPLES[:1], step=1, step_offset=10)
    assert read_jsonl(tmp_path / "samples.jsonl")[0]["step"] == 1
    assert read_jsonl(tmp_path / "samples.jsonl")[0]["global_step"] == 11
    assert read_csv(tmp_path / "csv" / "samples.csv")[0]["step"] == "11"
    assert text.texts[0][3] == 11


def test_a_logger_whose_log_text_takes_no_table_is_skipped_with_a_warning(tmp_path, capsys):
    log_samples(tmp_path, [OtherTextLogger()], SAMPLES, step=1)
    log_samples(tmp_path, [OtherTextLogger()], SAMPLES, step=2)
    warned = [line for line in capsys.readouterr().err.splitlines() if "does not take a table" in line]
    assert len(warned) == 1 and warned[0].startswith("es-lightning: warning: OtherTextLogger.log_text")
    assert len(read_jsonl(tmp_path / "samples.jsonl")) == 4


def test_truncate_samples_drops_what_followed_the_checkpoint(tmp_path):
    csv_logger = LightningCSVLogger(tmp_path, name="csv", version="")
    for step in (1, 2, 3):
        log_samples(tmp_path, [csv_logger], SAMPLES, step=step, step_offset=5)
    truncate_samples(tmp_path, [csv_logger], after_step=2, step_offset=5)
    assert [r["step"] for r in read_jsonl(tmp_path / "samples.jsonl")] == [1, 1, 2, 2]
    assert [r["step"] for r in read_csv(tmp_path / "csv" / "samples.csv")] == ["6", "6", "7", "7"]
    log_samples(tmp_path, [csv_logger], SAMPLES[:1], step=3, step_offset=5)  # the resumed run goes on
    assert [r["step"] for r in read_csv(tmp_path / "csv" / "samples.csv")] == ["6", "6", "7", "7", "8"]
    truncate_samples(tmp_path / "empty", [], after_step=0)  # no files yet: nothing to do
