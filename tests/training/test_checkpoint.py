import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from es_lightning.checkpoint import (
    MANIFEST_FILE,
    STATE_FILE,
    Checkpoint,
    checkpoints_root,
    latest_checkpoint,
    resolve_resume,
    save_checkpoint,
    write_model_meta,
)
from es_lightning.checkpoint_manifest import DamagedCheckpointError


def _tensors(value: float) -> dict[str, torch.Tensor]:
    return {"a.weight": torch.full((2, 3), value), "b.bias": torch.arange(4, dtype=torch.float32) + value}


def _save(out: Path, step: int, value: float, meta_dir: Path, state: dict | None = None, **kwargs) -> Path:
    kwargs.setdefault("write_state", lambda folder: None)
    return save_checkpoint(
        out,
        step,
        _tensors(value).items(),
        serving_dtype=torch.bfloat16,
        meta_dir=meta_dir,
        strategy_name="es",
        trainer_state=state or {},
        **kwargs,
    )


def _value(folder: Path) -> float:
    return float(load_file(folder / "es_state" / "master.safetensors")["a.weight"][0, 0])


def _step_dirs(out: Path) -> list[str]:
    return sorted(p.name for p in checkpoints_root(out).glob("step-*"))


def test_save_checkpoint_layout_state_and_latest(tmp_path, meta_dir):
    out = tmp_path / "run"

    def write_state(folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "optimizer.pt").write_text("moments")

    folder = _save(
        out,
        4,
        1.5,
        meta_dir,
        {"seed": 7},
        write_state=write_state,
        hparams={"sigma": 0.001},
        callbacks_state={"0:Drift": {"curve": [1.0]}},
    )
    assert folder == out / "checkpoints" / "step-000004"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [
            "config.json",
            STATE_FILE,
            "model.safetensors",
            "es_state",
            "hparams.yaml",
            "callbacks.pt",
            MANIFEST_FILE,
        ]
    )
    assert sorted(p.name for p in (folder / "es_state").iterdir()) == ["master.safetensors", "optimizer.pt"]
    served, master = (
        load_file(folder / "model.safetensors"),
        load_file(folder / "es_state" / "master.safetensors"),
    )
    for name, t in _tensors(1.5).items():
        assert torch.equal(master[name], t) and master[name].dtype == torch.float32
        assert torch.equal(served[name], t.to(torch.bfloat16))
    assert (folder / "config.json").read_text() == '{"model_type": "toy"}'
    state = json.loads((folder / STATE_FILE).read_text())
    assert state == {"seed": 7, "step": 4, "strategy": "es", "serving_dtype": "torch.bfloat16"}
    ckpt = Checkpoint(folder)
    assert ckpt.step == 4 and ckpt.strategy == "es" and ckpt.state_dir() == folder / "es_state"
    assert ckpt.hparams() == {"sigma": 0.001}
    assert ckpt.callbacks_state() == {"0:Drift": {"curve": [1.0]}}
    assert (out / "checkpoints" / "latest").read_text() == "step-000004\n"
    assert latest_checkpoint(out) == folder
    # nothing temporary left behind; the meta folder itself is untouched
    assert sorted(p.name for p in checkpoints_root(out).iterdir()) == ["latest", "step-000004"]
    assert sorted(p.name for p in meta_dir.iterdir()) == ["config.json"]

    second = _save(out, 8, 2.0, meta_dir)
    assert second.name == "step-000008"
    assert (out / "checkpoints" / "latest").read_text() == "step-000008\n"
    assert latest_checkpoint(out) == second
    assert _step_dirs(out) == ["step-000004", "step-000008"]


def test_failed_write_leaves_no_step_folder_and_keeps_latest(tmp_path, meta_dir):
    out = tmp_path / "run"
    good = _save(out, 2, 2.0, meta_dir)

    def broken(folder: Path) -> None:
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        _save(out, 3, 3.0, meta_dir, write_state=broken)
    assert _step_dirs(out) == ["step-000002"]
    assert (out / "checkpoints" / "latest").read_text() == "step-000002\n"
    assert latest_checkpoint(out) == good
    assert resolve_resume(True, out) == good

    # a later successful save of the same step cleans up and lands normally
    third = _save(out, 3, 3.0, meta_dir)
    assert _value(third) == 3.0
    assert sorted(p.name for p in checkpoints_root(out).iterdir()) == ["latest", "step-000002", "step-000003"]


def test_saving_a_step_again_replaces_it(tmp_path, meta_dir):
    out = tmp_path / "run"
    _save(out, 1, 1.0, meta_dir, {"v": 1})
    (checkpoints_root(out) / "step-000001" / "stale.txt").write_text("x")
    folder = _save(out, 1, 5.0, meta_dir, {"v": 2})
    assert _value(folder) == 5.0
    assert not (folder / "stale.txt").exists()
    assert Checkpoint(folder).state["v"] == 2


def test_non_writer_ranks_consume_the_weights_and_write_nothing(tmp_path, meta_dir):
    consumed, state_calls = [], []

    def weights():
        for name, t in _tensors(1.0).items():
            consumed.append(name)  # a sharded strategy gathers here, on every rank
            yield name, t

    out = tmp_path / "run"
    save_checkpoint(
        out,
        1,
        weights(),
        serving_dtype=torch.float32,
        meta_dir=meta_dir,
        strategy_name="grpo",
        write_state=state_calls.append,
        trainer_state={},
        is_writer=False,
    )
    assert consumed == list(_tensors(1.0)) and state_calls == [
        checkpoints_root(out) / ".tmp-step-000001" / "grpo_state"
    ]
    assert not checkpoints_root(out).exists()


def test_empty_weight_stream_is_refused(tmp_path, meta_dir):
    with pytest.raises(ValueError, match="streamed no weights"):
        save_checkpoint(
            tmp_path / "run",
            1,
            iter(()),
            serving_dtype=torch.float32,
            meta_dir=meta_dir,
            strategy_name="es",
            write_state=lambda folder: None,
            trainer_state={},
        )


def test_checkpoint_views_stored_fp32_and_served(tmp_path, meta_dir):
    folder = _save(tmp_path / "run", 1, 1.0 + 2**-12, meta_dir)  # not representable in bf16
    ckpt = Checkpoint(folder)
    stored, served = dict(ckpt.named_weights("stored")), dict(ckpt.named_weights("served"))
    assert stored["a.weight"][0, 0].item() == 1.0 + 2**-12
    assert served["a.weight"][0, 0].item() == 1.0  # the bf16 file, read back in fp32
    with pytest.raises(FileNotFoundError, match="not an es-lightning checkpoint"):
        Checkpoint(tmp_path)


def test_latest_checkpoint_fallbacks(tmp_path, meta_dir):
    out = tmp_path / "run"
    assert latest_checkpoint(out) is None  # no checkpoints folder at all
    for step in (3, 12, 7):
        _save(out, step, float(step), meta_dir)
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

    first = _save(out, 1, 1.0, meta_dir)
    last = _save(out, 2, 2.0, meta_dir)
    for value in (True, "true", "True", "latest"):
        assert resolve_resume(value, out) == last
    assert resolve_resume(str(first), out) == first
    assert (
        resolve_resume(str(first), tmp_path / "another_run") == first
    )  # an explicit folder needs no output_dir

    missing = tmp_path / "nope" / "step-000001"
    with pytest.raises(FileNotFoundError, match="does not exist") as err:
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
    folder = _save(tmp_path / "run", 5, 0.0, directory)
    assert (folder / "tokenizer.json").is_file() and (folder / "config.json").is_file()


def test_every_checkpoint_records_a_manifest_of_its_files_last(tmp_path, meta_dir):
    folder = _save(tmp_path / "run", 1, 1.0, meta_dir, hparams={"sigma": 0.1})
    listed = json.loads((folder / MANIFEST_FILE).read_text())["files"]
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert set(listed) == on_disk - {MANIFEST_FILE}
    assert {"trainer_state.json", "hparams.yaml", "es_state/master.safetensors"} <= set(listed)


def _truncate(path: Path) -> None:
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)


def test_resume_falls_back_to_the_newest_intact_checkpoint_and_says_so(tmp_path, meta_dir, capsys):
    out = tmp_path / "run"
    first, second, third = (_save(out, step, float(step), meta_dir) for step in (1, 2, 3))
    _truncate(third / "es_state" / "master.safetensors")
    (second / STATE_FILE).unlink()
    for value in (True, "auto"):
        assert resolve_resume(value, out) == first
    err = capsys.readouterr().err.splitlines()
    assert err == [  # each said once per process, however often it is asked
        f"es-lightning: warning: checkpoint {third} is damaged (es_state/master.safetensors is "
        f"{(third / 'es_state' / 'master.safetensors').stat().st_size} bytes, the manifest says "
        f"{2 * (third / 'es_state' / 'master.safetensors').stat().st_size}); skipped",
        f"es-lightning: warning: checkpoint {second} is damaged (trainer_state.json is missing); skipped",
        f"es-lightning: resuming from {first} (files match its manifest)",
    ]


def test_a_damaged_checkpoint_named_explicitly_is_refused(tmp_path, meta_dir):
    out = tmp_path / "run"
    _save(out, 1, 1.0, meta_dir)
    second = _save(out, 2, 2.0, meta_dir)
    _truncate(second / "model.safetensors")
    with pytest.raises(DamagedCheckpointError, match=f"checkpoint {second} is damaged: model.safetensors is"):
        resolve_resume(str(second), out)


def test_every_checkpoint_damaged_is_refused_even_with_auto(tmp_path, meta_dir):
    out = tmp_path / "run"
    only = _save(out, 1, 1.0, meta_dir)
    (only / STATE_FILE).unlink()
    with pytest.raises(DamagedCheckpointError, match="every checkpoint in .* is damaged"):
        resolve_resume("auto", out)  # not a fresh run that would delete what is left


def test_a_checkpoint_without_manifest_resumes_unverified(tmp_path, meta_dir, capsys):
    out = tmp_path / "run"
    old = _save(out, 1, 1.0, meta_dir)
    (old / MANIFEST_FILE).unlink()  # as written before manifests existed
    assert resolve_resume(True, out) == old
    assert f"es-lightning: warning: resuming from {old} unverified" in capsys.readouterr().err


def test_latest_comes_first_and_newer_folders_are_another_attempts(tmp_path, meta_dir):
    out = tmp_path / "run"
    for step in (1, 2, 4):
        _save(out, step, float(step), meta_dir)
    three = _save(out, 3, 3.0, meta_dir)  # resumed from step 2: step-000004 is an abandoned attempt's
    assert resolve_resume(True, out) == three
    _truncate(three / "model.safetensors")
    assert resolve_resume(True, out) == checkpoints_root(out) / "step-000002"
