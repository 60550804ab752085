import json
from pathlib import Path

import pytest
import torch

from es_lightning.training.checkpoint import (
    STATE_FILE,
    checkpoints_root,
    latest_checkpoint,
    load_state,
    resolve_resume,
    save_checkpoint,
    write_model_meta,
)


@pytest.fixture()
def meta_dir(tmp_path: Path) -> Path:
    meta = tmp_path / "meta"
    meta.mkdir()
    (meta / "config.json").write_text('{"model_type": "toy"}')
    return meta


def _weights(content: str):
    def write(directory: str) -> None:
        (Path(directory) / "model.safetensors").write_text(content)

    return write


def _step_dirs(out: Path) -> list[str]:
    return sorted(p.name for p in checkpoints_root(out).glob("step-*"))


def test_save_checkpoint_layout_state_and_latest(tmp_path, meta_dir):
    out = tmp_path / "run"
    folder = save_checkpoint(out, 4, _weights("w4"), meta_dir, {"seed": 7, "digest": "abc"})
    assert folder == out / "checkpoints" / "step-000004"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        ["config.json", STATE_FILE, "model.safetensors"]
    )
    assert (folder / "model.safetensors").read_text() == "w4"
    assert (folder / "config.json").read_text() == '{"model_type": "toy"}'
    assert json.loads((folder / STATE_FILE).read_text()) == {"seed": 7, "digest": "abc", "step": 4}
    assert load_state(folder) == {"seed": 7, "digest": "abc", "step": 4}
    assert (out / "checkpoints" / "latest").read_text() == "step-000004\n"
    assert latest_checkpoint(out) == folder
    # nothing temporary left behind; the meta folder itself is untouched
    assert sorted(p.name for p in checkpoints_root(out).iterdir()) == ["latest", "step-000004"]
    assert sorted(p.name for p in meta_dir.iterdir()) == ["config.json"]

    second = save_checkpoint(out, 8, _weights("w8"), meta_dir, {"seed": 7})
    assert second.name == "step-000008"
    assert (out / "checkpoints" / "latest").read_text() == "step-000008\n"
    assert latest_checkpoint(out) == second
    assert _step_dirs(out) == ["step-000004", "step-000008"]


def test_failed_write_leaves_no_step_folder_and_keeps_latest(tmp_path, meta_dir):
    out = tmp_path / "run"
    good = save_checkpoint(out, 2, _weights("w2"), meta_dir, {})

    def broken(directory: str) -> None:
        (Path(directory) / "model.safetensors").write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        save_checkpoint(out, 3, broken, meta_dir, {})
    assert _step_dirs(out) == ["step-000002"]
    assert (out / "checkpoints" / "latest").read_text() == "step-000002\n"
    assert latest_checkpoint(out) == good
    assert resolve_resume(True, out) == good

    # a later successful save of the same step cleans up and lands normally
    third = save_checkpoint(out, 3, _weights("w3"), meta_dir, {})
    assert (third / "model.safetensors").read_text() == "w3"
    assert sorted(p.name for p in checkpoints_root(out).iterdir()) == ["latest", "step-000002", "step-000003"]


def test_saving_a_step_again_replaces_it(tmp_path, meta_dir):
    out = tmp_path / "run"
    save_checkpoint(out, 1, _weights("old"), meta_dir, {"v": 1})
    (checkpoints_root(out) / "step-000001" / "stale.txt").write_text("x")
    folder = save_checkpoint(out, 1, _weights("new"), meta_dir, {"v": 2})
    assert (folder / "model.safetensors").read_text() == "new"
    assert not (folder / "stale.txt").exists()
    assert load_state(folder) == {"v": 2, "step": 1}


def test_latest_checkpoint_fallbacks(tmp_path, meta_dir):
    out = tmp_path / "run"
    assert latest_checkpoint(out) is None  # no checkpoints folder at all
    for step in (3, 12, 7):
        save_checkpoint(out, step, _weights(str(step)), meta_dir, {})
    root = checkpoints_root(out)
    assert latest_checkpoint(out) == root / "step-000007"  # the pointer wins over the highest number

    (root / "latest").unlink()
    assert latest_checkpoint(out) == root / "step-000012"  # no pointer: the newest complete folder

    (root / "step-000020").mkdir()  # incomplete (no trainer_state.json): ignored
    assert latest_checkpoint(out) == root / "step-000012"

    (root / "latest").write_text("step-000099\n")  # pointer to a folder that is gone
    assert latest_checkpoint(out) == root / "step-000012"
    (root / "latest").write_text("step-000020\n")  # pointer to an incomplete folder
    assert latest_checkpoint(out) == root / "step-000012"


def test_resolve_resume(tmp_path, meta_dir):
    out = tmp_path / "run"
    for value in (False, "", "false", "False"):
        assert resolve_resume(value, out) is None

    with pytest.raises(FileNotFoundError, match="no checkpoint in .*checkpoints to resume from"):
        resolve_resume(True, out)

    first = save_checkpoint(out, 1, _weights("1"), meta_dir, {})
    last = save_checkpoint(out, 2, _weights("2"), meta_dir, {})
    for value in (True, "true", "True", "latest"):
        assert resolve_resume(value, out) == last
    assert resolve_resume(str(first), out) == first
    assert (
        resolve_resume(str(first), tmp_path / "another_run") == first
    )  # an explicit folder needs no output_dir

    missing = tmp_path / "nope" / "step-000001"
    with pytest.raises(FileNotFoundError, match="is not a checkpoint folder") as err:
        resolve_resume(str(missing), out)
    assert str(missing) in str(err.value)

    with pytest.raises(FileNotFoundError, match=f"not a checkpoint folder \\(no {STATE_FILE}\\)"):
        resolve_resume(str(meta_dir), out)


def test_write_model_meta_with_the_tiny_model(tiny_model_path, tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_path)
    directory = write_model_meta(
        str(tiny_model_path), tokenizer, torch.bfloat16, tmp_path / "meta" / "nested"
    )
    assert directory == tmp_path / "meta" / "nested"
    names = {p.name for p in directory.iterdir()}
    assert {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"} <= names
    assert "model.safetensors" not in names  # metadata only

    raw = json.loads((directory / "config.json").read_text())
    assert raw.get("dtype", raw.get("torch_dtype")) == "bfloat16"
    assert raw["vocab_size"] == 99 and raw["model_type"] == "qwen2"

    config = AutoConfig.from_pretrained(directory)
    assert (getattr(config, "dtype", None) or config.torch_dtype) == torch.bfloat16
    assert config.hidden_size == AutoConfig.from_pretrained(tiny_model_path).hidden_size

    reloaded = AutoTokenizer.from_pretrained(directory)
    assert reloaded("Repeat: 42\n")["input_ids"] == tokenizer("Repeat: 42\n")["input_ids"]

    # the folder is a usable meta_dir for a checkpoint
    folder = save_checkpoint(tmp_path / "run", 5, _weights("w"), directory, {"seed": 0})
    assert (folder / "tokenizer.json").is_file() and (folder / "config.json").is_file()
