import json
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from es_lightning.models.registry import PACKAGED_MODELS, resolve_model
from es_lightning.models.tiny import TinyConfig, build_tiny_model
from es_lightning.module import ReasoningModule
from es_lightning.tasks import CountdownTiny
from scripts.warmstart import countdown
from scripts.warmstart.common import IGNORE
from scripts.warmstart.countdown import (
    build_examples,
    countdown_config,
    diagnose,
    error_profile,
    train_countdown_model,
)

ROW = {"nums": [4, 8, 2], "target": 10}
PATH = ((8, "-", 2, 6), (6, "+", 4, 10))
PACKAGED = "es-lightning/tiny-countdown"
SMALL = TinyConfig(hidden_size=64, num_attention_heads=1, num_hidden_layers=1, intermediate_size=64)
QUICK = dict(batch_size=8, n_problems=40, held_out=20, config=SMALL, progress=False)


@pytest.fixture(scope="module")
def module(tiny_model_path):
    return ReasoningModule(model=str(tiny_model_path), task=CountdownTiny())


def test_examples_are_prompt_plus_worked_solution_with_completion_labels(module):
    other = {"nums": [2, 3, 12, 1], "target": 31}
    (ids, labels), (other_ids, other_labels) = build_examples(
        module, [ROW, other], [PATH, ((12, "-", 2, 10), (10, "*", 3, 30), (30, "+", 1, 31))]
    )
    prompt = module.encode([ROW])[0]  # exactly what rollouts feed the model
    assert ids[: len(prompt)] == prompt
    assert module.tokenizer.decode(ids) == "Q: 4 8 2 -> 10\n8-2=6\n6+4=10\nA: (8-2)+4</s>"
    assert labels[: len(prompt)] == [IGNORE] * len(prompt)
    assert labels[len(prompt) :] == ids[len(prompt) :] and labels[-1] == module.tokenizer.eos_token_id
    assert module.tokenizer.decode(
        other_labels[-len("12-2=10\n10*3=30\n30+1=31\nA: ((12-2)*3)+1") - 1 :]
    ) == ("12-2=10\n10*3=30\n30+1=31\nA: ((12-2)*3)+1</s>")
    with pytest.raises(ValueError):
        build_examples(module, [ROW, other], [PATH])


@pytest.mark.parametrize(
    ("completion", "verdict"),
    [
        ("8-2=6\n6+4=10\nA: (8-2)+4", "correct"),
        ("8-2=6\n6*4=25\nA: (8-2)*4", "wrong_value/arithmetic"),
        ("8-2=7\n7+4=11\nA: (8-2)+4+0", "wrong_numbers"),
        ("8*2=16\n16-4=10\nA: (8*2)-4", "wrong_value/forced_target"),  # 16-4 is 12, not 10
        ("8*2=15\n15-4=10\nA: (8*2)-4", "wrong_value/arithmetic"),  # an earlier line is wrong
        ("8-2=6\nsix plus four\nA: (8-2)*4", "wrong_value/arithmetic"),
        ("8-2=6\n6*4=24\nA: (8-2)*4", "wrong_value/missed_target"),
        ("8-2=6\n6+6=12\nA: (8-2)*4", "wrong_value/numbers"),  # 6 used twice
        ("8-3=5\n5+5=10\nA: (8-2)*4", "wrong_value/numbers"),  # 3 is not given
        ("8+4=12\n12-2=10\nA: (8-2)*4", "wrong_value/transcription"),
        ("A: 8+2", "wrong_numbers"),
        ("A: 8/(4-4)", "malformed"),
        ("8-2=6", "no_answer"),
    ],
)
def test_diagnose_splits_wrong_values_by_their_working(completion, verdict):
    assert diagnose(completion, ROW) == verdict


def test_error_profile_shares():
    profile = error_profile([ROW, ROW], [["A: 8+4-2", "A: 8+2"], ["A: 8+4-2", "x"]])
    assert profile == {"correct": 0.5, "no_answer": 0.25, "wrong_numbers": 0.25}


def test_short_run_is_bit_reproducible_and_records_its_settings(tmp_path):
    first = train_countdown_model(tmp_path / "a", steps=3, **QUICK)
    again = train_countdown_model(tmp_path / "b", steps=3, **QUICK)
    weights = (first / "model.safetensors").read_bytes()
    assert weights == (again / "model.safetensors").read_bytes()  # bit-identical
    assert weights != (build_tiny_model(tmp_path / "init", SMALL) / "model.safetensors").read_bytes()
    other_seed = train_countdown_model(tmp_path / "c", steps=3, seed=1, **QUICK)
    assert weights != (other_seed / "model.safetensors").read_bytes()
    settings = json.loads((first / "training_config.json").read_text())
    assert settings["steps"] == 3 and settings["threads"] == 1 and settings["n_problems"] == 40
    assert settings["task"] == {
        "max_number": 20, "max_target": 100, "max_value": 400, "four_number_fraction": 0.6,
        "min_solutions": 2, "seed": 0,
    }  # fmt: skip
    assert {"config.json", "generation_config.json", "tokenizer.json"} <= {p.name for p in first.iterdir()}


def test_training_keeps_the_callers_rng_threads_and_determinism_flag(tmp_path):
    torch.manual_seed(7)
    expected, threads = torch.rand(3), torch.get_num_threads()
    torch.manual_seed(7)
    train_countdown_model(tmp_path / "m", steps=1, **QUICK)
    assert torch.rand(3).equal(expected)
    assert torch.get_num_threads() == threads
    assert not torch.are_deterministic_algorithms_enabled()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"steps": 0}, "steps, batch_size and n_problems"), ({"max_number": 0}, "max_number")],
)
def test_bad_options_are_refused(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        train_countdown_model(tmp_path / "bad", **{"steps": 1, **kwargs}, progress=False)


def test_the_training_set_never_holds_a_held_out_problem():
    task = countdown.training_task(n_problems=3000, held_out=1000)
    test_keys = {(tuple(sorted(r["nums"])), r["target"]) for r in CountdownTiny(n_test=1000).load("test")}
    assert not test_keys & {(tuple(sorted(r["nums"])), r["target"]) for r in task.load("train")}


def test_cli_help(capsys):
    from scripts.warmstart.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main(["countdown", "--help"])
    assert exit_.value.code == 0
    assert "--steps" in capsys.readouterr().out


def test_packaged_model_resolves_in_place_and_is_small(tmp_path, monkeypatch):
    monkeypatch.setenv("ES_LIGHTNING_CACHE", str(tmp_path / "cache"))
    folder = Path(resolve_model(PACKAGED))
    assert folder == PACKAGED_MODELS[PACKAGED] and folder.parent.name == "assets"
    assert not (tmp_path / "cache").exists()
    names = {p.name for p in folder.iterdir()}
    assert {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "TRAINING.md",
    } <= names
    assert (folder / "model.safetensors").stat().st_size <= 5 * 2**20
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "qwen2" and config["hidden_size"] // config["num_attention_heads"] == 64
    settings = json.loads((folder / "training_config.json").read_text())
    assert settings["model"] == asdict(countdown_config(0))
    assert settings["held_out"] >= 200  # the default test split was never trained on


def test_packaged_model_leaves_room_for_pass_at_k_to_rise_and_fall():
    """The coverage demo's starting point, through the project's evaluation runner (transformers
    rollout, T=0.6): Pass@1 in [15%, 40%] and Pass@16 in [50%, 85%] on held-out problems."""
    summary = countdown.evaluate_countdown_model(resolve_model(PACKAGED), n_test=100, num_samples=16)
    assert 0.15 <= summary["pass@1"] <= 0.40, summary
    assert 0.50 <= summary["pass@16"] <= 0.85, summary
    # its mistakes are in the reasoning, not in the answer format
    assert summary.get("errors/no_answer", 0.0) + summary.get("errors/malformed", 0.0) < 0.02, summary
