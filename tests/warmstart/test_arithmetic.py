import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from es_lightning.models.registry import PACKAGED_MODELS, resolve_model
from es_lightning.models.tiny import build_tiny_model
from es_lightning.module import ReasoningModule
from es_lightning.tasks import Arithmetic
from scripts.warmstart import arithmetic
from scripts.warmstart.arithmetic import arithmetic_config, build_examples, train_arithmetic_model
from scripts.warmstart.common import IGNORE, collate, completion_loss, lr_factor

ROW = {"a": 12, "b": 7, "c": 5}
PACKAGED = "es-lightning/tiny-arithmetic"


@pytest.fixture(scope="module")
def module(tiny_model_path):
    return ReasoningModule(model=str(tiny_model_path), task=Arithmetic())


def test_only_completion_and_eos_tokens_carry_labels(module):
    (ids, labels), (other_ids, _) = build_examples(module, [ROW, {"a": 1, "b": 2, "c": 30}])
    prompt = module.encode([ROW])[0]  # exactly what rollouts feed the model
    assert ids[: len(prompt)] == prompt
    assert module.tokenizer.decode(ids) == "Q: 12+7-5=?\n12+7=19\n19-5=14\nA: 14</s>"
    assert labels[: len(prompt)] == [IGNORE] * len(prompt)
    assert labels[len(prompt) :] == ids[len(prompt) :]
    assert module.tokenizer.decode(labels[len(prompt) :]) == "12+7=19\n19-5=14\nA: 14</s>"
    assert labels[-1] == module.tokenizer.eos_token_id == 2

    input_ids, batch_labels = collate([(ids, labels), (other_ids, other_ids)], pad_id=0)
    width = max(len(ids), len(other_ids))
    assert input_ids.shape == batch_labels.shape == (2, width)
    assert input_ids[0, : len(ids)].tolist() == ids and set(input_ids[0, len(ids) :].tolist()) <= {0}
    assert set(batch_labels[0, len(ids) :].tolist()) <= {IGNORE}


def test_alt_answer_style_is_trained_but_not_graded(module):
    assert arithmetic.solution_text(ROW) == "12+7=19\n19-5=14\nA: 14"
    assert arithmetic.solution_text(ROW, alt_answer=True) == "12+7=19\n19-5=14\nAnswer: 14"
    rows = [ROW, {"a": 1, "b": 2, "c": 30}]
    (plain, _), (alt, alt_labels) = build_examples(module, rows, [False, True])
    assert module.tokenizer.decode(alt_labels[len(module.encode(rows[1:])[0]) :]) == (
        "1+2=3\n3-30=-27\nAnswer: -27</s>"
    )
    assert module.tokenizer.decode(plain).endswith("A: 14</s>")
    # the verifier reads only `A:`: the other style earns nothing, however right the number
    assert module.task.score("1+2=3\n3-30=-27\nAnswer: -27", rows[1]).reward == 0.0
    assert module.task.score("1+2=3\n3-30=-27\nA: -27", rows[1]).reward == 1.0
    with pytest.raises(ValueError, match="2 alt_answer flags for 1 rows"):
        build_examples(module, rows[:1], [True, False])


@pytest.mark.slow
def test_alt_answer_fraction_is_seeded_and_validated(tmp_path):
    with pytest.raises(ValueError, match="alt_answer_fraction"):
        train_arithmetic_model(tmp_path / "bad", steps=1, alt_answer_fraction=1.5, progress=False)

    def weights(name, fraction):
        folder = train_arithmetic_model(
            tmp_path / name, steps=2, batch_size=8, max_number=4, held_out=10,
            alt_answer_fraction=fraction, progress=False,
        )  # fmt: skip
        assert json.loads((folder / "training_config.json").read_text())["alt_answer_fraction"] == fraction
        return (folder / "model.safetensors").read_bytes()

    half = weights("half", 0.5)
    assert half == weights("half-again", 0.5)  # the same problems get the other style
    assert half != weights("none", 0.0)


def test_completion_loss_averages_over_labelled_positions_only(tiny_model_path, module):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    input_ids, labels = collate(build_examples(module, [ROW, {"a": 3, "b": 30, "c": 1}]), pad_id=0)
    loss = completion_loss(model, input_ids, labels)
    with torch.no_grad():
        logp = F.log_softmax(model(input_ids=input_ids).logits.float(), -1)
    terms = [
        -logp[b, t - 1, labels[b, t]]
        for b in range(labels.shape[0])
        for t in range(1, labels.shape[1])
        if labels[b, t] != IGNORE
    ]
    assert len(terms) == sum(len(s) for s in ["12+7=19\n19-5=14\nA: 14", "3+30=33\n33-1=32\nA: 32"]) + 2
    assert loss.item() == pytest.approx(torch.stack(terms).mean().item(), rel=1e-5)


def test_learning_rate_schedule():
    assert lr_factor(0, 100, 5) == pytest.approx(0.2)
    assert lr_factor(4, 100, 5) == pytest.approx(1.0)
    assert lr_factor(5, 100, 5) == pytest.approx(1.0)
    assert lr_factor(52, 100, 5) == pytest.approx(0.5, abs=0.02)
    assert lr_factor(100, 100, 5) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.slow
def test_short_run_is_bit_reproducible(tmp_path):
    """Two runs of four steps (warmup, then the cosine decay) at the default model size and thread
    count give the same bytes; the settings are recorded beside the weights."""

    def run(name):
        folder = train_arithmetic_model(
            tmp_path / name, steps=4, seed=0, batch_size=16, max_number=10, held_out=100, progress=False
        )
        return folder, (folder / "model.safetensors").read_bytes()

    folder, first = run("a")
    _, again = run("b")
    assert first == again  # bit-identical weights
    init = build_tiny_model(tmp_path / "init", arithmetic_config(0)) / "model.safetensors"
    assert init.read_bytes() != first  # the weights were trained
    settings = json.loads((folder / "training_config.json").read_text())
    assert settings["steps"] == 4 and settings["seed"] == 0 and settings["batch_size"] == 16
    assert settings["threads"] == 2 and settings["model"]["num_hidden_layers"] == 4  # the defaults
    assert {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"} <= {
        p.name for p in folder.iterdir()
    }


def test_training_keeps_the_callers_rng_and_determinism_flag(tmp_path):
    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    train_arithmetic_model(tmp_path / "m", steps=1, batch_size=4, max_number=4, held_out=10, progress=False)
    assert torch.rand(3).equal(expected)
    assert not torch.are_deterministic_algorithms_enabled()


def test_cli_help(capsys):
    from scripts.warmstart.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main(["arithmetic", "--help"])
    assert exit_.value.code == 0
    assert "--steps" in capsys.readouterr().out


def test_packaged_model_resolves_in_place_and_is_small(tmp_path, monkeypatch):
    monkeypatch.setenv("ES_LIGHTNING_CACHE", str(tmp_path / "cache"))
    folder = Path(resolve_model(PACKAGED))
    assert folder == PACKAGED_MODELS[PACKAGED] and folder.parent.name == "assets"
    assert not (tmp_path / "cache").exists()  # used where it is, nothing copied or built
    names = {p.name for p in folder.iterdir()}
    required = {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    }
    assert required | {"TRAINING.md"} <= names
    assert (folder / "model.safetensors").stat().st_size <= 5 * 2**20
    config = json.loads((folder / "config.json").read_text())
    assert config["model_type"] == "qwen2" and config["hidden_size"] // config["num_attention_heads"] >= 32


def test_packaged_model_loads_and_solves_held_out_problems():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from es_lightning.rollout.base import SamplingConfig
    from es_lightning.rollout.hf import HFRollout

    module = ReasoningModule(model=PACKAGED, task=Arithmetic(n_test=20))
    tokenizer = AutoTokenizer.from_pretrained(module.model)
    text = "Q: 12+7-5=?\n12+7=19\n19-5=14\nA: 14"
    assert tokenizer.decode(tokenizer(text)["input_ids"]) == text
    assert tokenizer.eos_token_id == 2
    model = AutoModelForCausalLM.from_pretrained(module.model)
    assert next(model.parameters()).dtype == torch.float32

    rows = module.task.load("test")
    with HFRollout(batch_size=64) as rollout:
        rollout.setup(module.model, torch.device("cpu"), torch.float32)
        outputs = rollout.generate(module.encode(rows), SamplingConfig(n=1, temperature=0.0, max_tokens=48))
    scores = [s[0] for s in module.score(rows, outputs)]
    assert all(out.completions[0].finish_reason == "stop" for out in outputs)  # it learned to stop
    assert sum(s.reward for s in scores) > 0  # the shipped weights are the trained ones


def test_packaged_model_leaves_room_for_both_optimizers():
    """The demo's starting point: Pass@1 in [20%, 60%] at T=0.6 and Pass@16 at least 20 points higher."""
    summary = arithmetic.evaluate_arithmetic_model(resolve_model(PACKAGED), n_test=100)
    assert 0.2 <= summary["pass@1"] <= 0.6, summary["pass@1"]
    assert summary["pass@16"] >= summary["pass@1"] + 0.2, summary
