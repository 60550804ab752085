import hashlib
import json
from dataclasses import asdict
from pathlib import Path

import pytest
import torch

from es_lightning.errors import ConfigError
from es_lightning.models.registry import PACKAGED_MODELS, resolve_model
from es_lightning.models.tiny import TinyConfig, build_tiny_model
from es_lightning.module import ReasoningModule
from es_lightning.tasks import Arithmetic, CountdownTiny
from scripts.warmstart import two_tasks
from scripts.warmstart.common import IGNORE
from scripts.warmstart.countdown import step_sequences
from scripts.warmstart.two_tasks import (
    ARITHMETIC,
    COUNTDOWN,
    MixedStream,
    Problem,
    encode_problems,
    train_two_task_model,
    training_sets,
    two_task_config,
)

PACKAGED = "es-lightning/tiny-countdown-arithmetic"
SMALL = TinyConfig(hidden_size=64, num_attention_heads=1, num_hidden_layers=1, intermediate_size=64)
COUNTDOWN_ROW, COUNTDOWN_PATH = {"nums": [4, 8, 2], "target": 10}, ((8, "-", 2, 6), (6, "+", 4, 10))
ARITHMETIC_ROW = {"a": 12, "b": 7, "c": 5}


def countdown_key(row):
    return tuple(sorted(int(n) for n in row["nums"])), int(row["target"])


def arithmetic_key(row):
    return int(row["a"]), int(row["b"]), int(row["c"])


@pytest.fixture(scope="module")
def modules(tiny_model_path):
    """Both tasks' modules on one model folder: one tokenizer for both."""
    return (
        ReasoningModule(model=str(tiny_model_path), task=CountdownTiny()),
        ReasoningModule(model=str(tiny_model_path), task=Arithmetic()),
    )


@pytest.fixture(scope="module")
def small_sets():
    """The real training sets with 2,000 countdown problems (the full 30,000 take a minute)."""
    return training_sets(n_problems=2000, held_out=1000)


def test_examples_keep_their_order_and_each_tasks_prompt(modules):
    problems = [
        Problem(ARITHMETIC, ARITHMETIC_ROW),
        Problem(COUNTDOWN, COUNTDOWN_ROW, COUNTDOWN_PATH),
        Problem(ARITHMETIC, {"a": 1, "b": 2, "c": 30}),
    ]
    examples = encode_problems(problems, *modules)
    tokenizer = modules[0].tokenizer
    assert [tokenizer.decode(ids) for ids, _ in examples] == [
        "Q: 12+7-5=?\n12+7=19\n19-5=14\nA: 14</s>",
        "Q: 4 8 2 -> 10\n8-2=6\n6+4=10\nA: (8-2)+4</s>",
        "Q: 1+2-30=?\n1+2=3\n3-30=-27\nA: -27</s>",
    ]
    for problem, (ids, labels) in zip(problems, examples):
        module = modules[0] if problem.task == COUNTDOWN else modules[1]
        prompt = module.encode([problem.row])[0]  # exactly what rollouts feed the model
        assert ids[: len(prompt)] == prompt and labels[: len(prompt)] == [IGNORE] * len(prompt)
        assert labels[len(prompt) :] == ids[len(prompt) :]
    assert encode_problems(problems[1:2], *modules) == examples[1:2]  # one task alone
    with pytest.raises(ValueError, match="unknown task"):
        encode_problems([Problem("gsm8k", {})], *modules)


def test_one_character_tokenizer_covers_both_tasks(modules, small_sets):
    """Every character of both tasks' prompts and solutions is a token: decoding gives the text back."""
    _, _, countdown_rows, paths, arithmetic_rows = small_sets
    problems = [Problem(COUNTDOWN, row, path[-1]) for row, path in zip(countdown_rows[:300], paths)]
    problems += [Problem(ARITHMETIC, row) for row in arithmetic_rows[:300]]
    tokenizer = modules[0].tokenizer
    for ids, _ in encode_problems(problems, *modules):
        assert tokenizer.pad_token_id not in ids  # no character fell back to the unknown token
        text = tokenizer.decode(ids)
        assert text.startswith("Q: ") and text.endswith("</s>") and len(ids) == len(text) - len("</s>") + 1


def test_mixed_stream_is_seeded_and_fills_each_batch_from_both_tasks():
    countdown_rows = [{"nums": [n, 1, 1], "target": n} for n in range(5)]
    paths = [(("x",), ("y",))] * 5  # two stand-in step sequences per problem
    arithmetic_rows = [{"a": n, "b": 1, "c": 1} for n in range(3)]

    def batches(seed, n):
        stream = MixedStream(countdown_rows, paths, arithmetic_rows, 4, 1, seed)
        return [stream.next_problems() for _ in range(n)]

    first = batches(0, 6)
    assert first == batches(0, 6)  # bit-for-bit the same problems and solution draws
    assert first != batches(1, 6)
    assert all([p.task for p in batch] == [COUNTDOWN] * 3 + [ARITHMETIC] for batch in first)
    countdown = [p.row["target"] for batch in first for p in batch if p.task == COUNTDOWN]
    arithmetic = [p.row["a"] for batch in first for p in batch if p.task == ARITHMETIC]
    assert sorted(countdown[:5]) == sorted(countdown[5:10]) == list(range(5))  # epochs over the rows
    assert sorted(arithmetic[:3]) == sorted(arithmetic[3:6]) == list(range(3))
    assert {p.steps for batch in first for p in batch if p.task == COUNTDOWN} == {("x",), ("y",)}
    with pytest.raises(ConfigError, match="arithmetic_per_batch"):
        MixedStream(countdown_rows, paths, arithmetic_rows, 4, 5, 0)


def test_mixed_stream_never_holds_a_held_out_problem(small_sets):
    """The first 1,000 problems of both tasks' seeded test streams (their test and validation
    splits among them) are in none of the first 20,000 examples."""
    _, _, countdown_rows, paths, arithmetic_rows = small_sets
    held_countdown = {countdown_key(r) for r in CountdownTiny(n_test=1000, seed=0).load("test")}
    held_arithmetic = {arithmetic_key(r) for r in Arithmetic(n_test=1000, seed=0).load("test")}
    for task, held in ((CountdownTiny(), held_countdown), (Arithmetic(), held_arithmetic)):
        key = countdown_key if task.name == COUNTDOWN else arithmetic_key
        assert {key(r) for r in task.load("test") + task.load("validation")} <= held
    stream = MixedStream(countdown_rows, paths, arithmetic_rows, 100, 25, seed=0)
    seen = [p for _ in range(200) for p in stream.next_problems()]
    countdown = {countdown_key(p.row) for p in seen if p.task == COUNTDOWN}
    arithmetic = {arithmetic_key(p.row) for p in seen if p.task == ARITHMETIC}
    assert len(countdown) == 2000 and len(arithmetic) == 5000  # every problem drawn, none twice in an epoch
    assert not countdown & held_countdown and not arithmetic & held_arithmetic
    assert len(arithmetic_rows) == 30**3 - 1000  # every other a+b-c problem is trained on
    task = CountdownTiny(seed=0)
    for p in seen[:500]:  # each drawn solution is one of the problem's step sequences
        if p.task == COUNTDOWN:
            assert p.steps in step_sequences(task, p.row)


def test_three_step_run_writes_a_loadable_reproducible_model(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    quick = dict(steps=3, batch_size=8, arithmetic_per_batch=3, n_problems=40, held_out=20)
    quick |= dict(init=None, config=SMALL)  # random weights of a smaller size
    folder = train_two_task_model(tmp_path / "a", **quick, progress=False)
    weights = (folder / "model.safetensors").read_bytes()
    assert (
        weights
        == (train_two_task_model(tmp_path / "b", **quick, progress=False) / "model.safetensors").read_bytes()
    )
    assert weights != (build_tiny_model(tmp_path / "init", SMALL) / "model.safetensors").read_bytes()
    settings = json.loads((folder / "training_config.json").read_text())
    assert (settings["steps"], settings["arithmetic_per_batch"], settings["threads"]) == (3, 3, 1)
    assert settings["tasks"][COUNTDOWN]["train_problems"] == 40
    assert settings["tasks"][ARITHMETIC]["train_problems"] == 30**3 - 20
    assert settings["final_loss"] > 0

    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    ids = torch.tensor([tokenizer("Q: 12+7-5=?\n")["input_ids"]])
    assert model(input_ids=ids).logits.shape == (1, ids.shape[1], len(tokenizer))


def test_a_start_from_a_trained_model_copies_it_and_records_which(tmp_path, tiny_model_path):
    from scripts.warmstart.two_tasks import HF_FILES, start_model

    recorded = start_model(tmp_path / "out", str(tiny_model_path), None, seed=0)
    for name in HF_FILES:
        assert (tmp_path / "out" / name).read_bytes() == (tiny_model_path / name).read_bytes()
    expected = hashlib.sha256((tiny_model_path / "model.safetensors").read_bytes()).hexdigest()
    assert recorded == {"init": str(tiny_model_path), "init_sha256": expected, "model": None}
    with pytest.raises(ConfigError, match="lacks"):
        start_model(tmp_path / "out2", str(tmp_path / "nowhere"), None, seed=0)
    with pytest.raises(ConfigError, match="not both"):
        start_model(tmp_path / "out3", str(tiny_model_path), SMALL, seed=0)


def test_bad_settings_are_refused_before_any_work(tmp_path):
    with pytest.raises(ConfigError, match="arithmetic_per_batch"):
        train_two_task_model(tmp_path / "bad", steps=1, batch_size=8, arithmetic_per_batch=9)
    with pytest.raises(ConfigError, match="steps, batch_size and n_problems"):
        train_two_task_model(tmp_path / "bad", steps=0)
    assert not (tmp_path / "bad").exists()


def test_cli_help(capsys):
    from scripts.warmstart.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main(["two_tasks", "--help"])
    assert exit_.value.code == 0
    assert "--arithmetic-per-batch" in capsys.readouterr().out


def test_packaged_model_resolves_in_place(tmp_path, monkeypatch):
    monkeypatch.setenv("ES_LIGHTNING_CACHE", str(tmp_path / "cache"))
    folder = Path(resolve_model(PACKAGED))
    assert folder == PACKAGED_MODELS[PACKAGED] and folder.parent.name == "assets"
    assert not (tmp_path / "cache").exists()  # used where it is, nothing copied or built
    names = {p.name for p in folder.iterdir()}
    assert {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "tokenizer.json",
        "TRAINING.md",
    } <= names
    assert (folder / "model.safetensors").stat().st_size <= 5 * 2**20
    settings = json.loads((folder / "training_config.json").read_text())
    assert settings["model"] == asdict(two_task_config(0))
    assert settings["held_out"] >= 400  # the default test and validation splits were never trained on


@pytest.mark.slow
def test_packaged_model_knows_both_tasks_with_room_to_lose_and_gain():
    """The forgetting setting's starting point, through the project's evaluation runner
    (transformers rollout, T=0.6, the first 100 test problems of each task, 16 samples)."""
    summaries = two_tasks.evaluate_two_task_model(resolve_model(PACKAGED), n_test=100)
    countdown, arithmetic = summaries[COUNTDOWN], summaries[ARITHMETIC]
    assert 0.15 <= countdown["pass@1"] <= 0.40 and countdown["pass@16"] <= 0.90, countdown
    assert 0.40 <= arithmetic["pass@1"] <= 0.85 and arithmetic["pass@16"] <= 0.95, arithmetic
