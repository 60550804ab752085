import json
import shutil
from pathlib import Path

import pytest
import torch

from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import Completion, RolloutOutput, SamplingConfig
from es_lightning.tasks import GSM8K, Echo

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
ROW = {"digits": "4821"}


@pytest.fixture(scope="module")
def chat_model_path(tiny_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model folder with a simple chat template added to its tokenizer config."""
    folder = tmp_path_factory.mktemp("chat") / "model"
    shutil.copytree(tiny_model_path, folder)
    config_file = folder / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config["chat_template"] = CHAT_TEMPLATE
    config_file.write_text(json.dumps(config))
    return folder


def _outputs(*texts_per_prompt: list[str]) -> list[RolloutOutput]:
    return [
        RolloutOutput(prompt_token_ids=[1, 2], completions=[Completion(text=t, token_ids=[3]) for t in texts])
        for texts in texts_per_prompt
    ]


def test_plain_template_without_and_with_system_prompt(tiny_model_path):
    plain = ReasoningModule(str(tiny_model_path), Echo())
    assert not plain.uses_chat_template
    assert plain.format_prompt(ROW) == "Repeat: 4821\n\n"

    with_system = ReasoningModule(str(tiny_model_path), Echo(system_prompt="Be brief."))
    assert with_system.format_prompt(ROW) == "Be brief.\nRepeat: 4821\n\n"

    custom = ReasoningModule(str(tiny_model_path), Echo(), plain_template="[{system}]Q: {prompt}A:")
    assert custom.format_prompt(ROW) == "[]Q: Repeat: 4821\nA:"
    custom_sys = ReasoningModule(
        str(tiny_model_path), Echo(system_prompt="S"), plain_template="[{system}]Q: {prompt}A:"
    )
    assert custom_sys.format_prompt(ROW) == "[S\n]Q: Repeat: 4821\nA:"


def test_chat_template_is_used_when_the_tokenizer_has_one(chat_model_path):
    module = ReasoningModule(str(chat_model_path), Echo(system_prompt="Be brief."))
    assert module.uses_chat_template
    assert module.format_prompt(ROW) == "<|system|>Be brief.\n<|user|>Repeat: 4821\n\n<|assistant|>"

    no_system = ReasoningModule(str(chat_model_path), Echo())
    assert no_system.format_prompt(ROW) == "<|user|>Repeat: 4821\n\n<|assistant|>"

    ids = module.encode([ROW])[0]
    assert module.tokenizer.decode(ids) == module.format_prompt(ROW)
    assert len(ids) == len(module.format_prompt(ROW))  # one token per character, no BOS added


def test_chat_template_never_forces_plain(chat_model_path):
    module = ReasoningModule(str(chat_model_path), Echo(system_prompt="Be brief."), chat_template="never")
    assert module.tokenizer.chat_template  # the tokenizer has one ...
    assert not module.uses_chat_template  # ... but it is not used
    assert module.format_prompt(ROW) == "Be brief.\nRepeat: 4821\n\n"


def test_encode_round_trips_the_prompt_text(tiny_model_path):
    module = ReasoningModule(str(tiny_model_path), Echo(system_prompt="Sys"))
    rows = [{"digits": "0"}, {"digits": "9876543210"}, {"digits": "55"}]
    encoded = module.encode(rows)
    assert len(encoded) == 3
    for row, ids in zip(rows, encoded, strict=True):
        assert isinstance(ids, list) and all(isinstance(i, int) for i in ids)
        text = module.format_prompt(row)
        assert module.tokenizer.decode(ids) == text
        assert len(ids) == len(text)
    assert module.encode([]) == []


def test_max_prompt_tokens_error_names_the_row(tiny_model_path):
    # "Repeat: 1\n\n" is 11 characters = 11 tokens; "Repeat: 123456789\n\n" is 19
    module = ReasoningModule(str(tiny_model_path), Echo(), max_prompt_tokens=11)
    assert len(module.encode([{"digits": "1"}])[0]) == 11  # exactly at the limit is fine
    with pytest.raises(ValueError, match=r"prompt of row 1 has 19 tokens > max_prompt_tokens=11"):
        module.encode([{"digits": "1"}, {"digits": "123456789"}])


@pytest.fixture(scope="module")
def gsm8k_rows(gsm8k_test_file: Path) -> list[dict]:
    with gsm8k_test_file.open() as f:
        return [json.loads(next(f)) for _ in range(2)]


def test_score_shape_prompt_by_sample(tiny_model_path, gsm8k_rows):
    assert gsm8k_rows[0]["answer"].endswith("#### 18") and gsm8k_rows[1]["answer"].endswith("#### 3")
    module = ReasoningModule(str(tiny_model_path), GSM8K())
    outputs = _outputs(["She makes $18.\n#### 18", "#### 17", "no idea"], ["It takes 3 bolts.", "#### 3.00"])
    scores = module.score(gsm8k_rows, outputs)
    assert [len(s) for s in scores] == [3, 2]
    assert [[s.reward for s in row] for row in scores] == [[1.0, 0.0, 0.0], [1.0, 1.0]]
    assert [[s.answer for s in row] for row in scores] == [["18", "17", None], ["3", "3"]]

    # the rows are matched to their own outputs: swapping the completions swaps the rewards
    swapped = module.score(gsm8k_rows, _outputs(["#### 3"], ["#### 18", "#### 3"]))
    assert [[s.reward for s in row] for row in swapped] == [[0.0], [0.0, 1.0]]

    # a prompt without completions gets an empty list
    empty = module.score(gsm8k_rows, _outputs([], ["#### 3"]))
    assert [[s.reward for s in row] for row in empty] == [[], [1.0]]


def test_score_length_mismatch(tiny_model_path, gsm8k_rows):
    module = ReasoningModule(str(tiny_model_path), GSM8K())
    with pytest.raises(ValueError, match="2 rows but 1 outputs"):
        module.score(gsm8k_rows, _outputs(["#### 18"]))


def test_with_task_keeps_model_and_tokenizer(tiny_model_path):
    sampling = SamplingConfig(n=4, temperature=0.7)
    module = ReasoningModule(
        str(tiny_model_path),
        Echo(),
        plain_template="> {prompt}",
        train_sampling=sampling,
        max_prompt_tokens=99,
    )
    tokenizer = module.tokenizer
    assert module.with_task(module.task) is module

    other = Echo(system_prompt="X", prompt_template="Say {digits}")
    clone = module.with_task(other)
    assert clone is not module and isinstance(clone, ReasoningModule)
    assert clone.task is other and isinstance(module.task, Echo) and module.task is not other
    assert clone.tokenizer is tokenizer
    assert (clone.model, clone.plain_template, clone.train_sampling, clone.max_prompt_tokens) == (
        module.model,
        "> {prompt}",
        sampling,
        99,
    )
    assert clone.format_prompt(ROW) == "> Say 4821"
    assert module.format_prompt(ROW) == "> Repeat: 4821\n"  # the original is unchanged


def test_torch_dtype(tiny_model_path):
    auto = ReasoningModule(str(tiny_model_path), Echo())
    assert auto.torch_dtype(torch.device("cpu")) == torch.float32
    assert auto.torch_dtype("cpu") == torch.float32
    assert auto.torch_dtype(torch.device("cuda")) == torch.bfloat16
    assert (
        ReasoningModule(str(tiny_model_path), Echo(), dtype="float16").torch_dtype(torch.device("cpu"))
        == torch.float16
    )
    assert (
        ReasoningModule(str(tiny_model_path), Echo(), dtype="bfloat16").torch_dtype("cpu") == torch.bfloat16
    )


def test_constructor_errors(tiny_model_path):
    with pytest.raises(ValueError, match=r"plain_template must contain '\{prompt\}', got 'Q: \{question\}'"):
        ReasoningModule(str(tiny_model_path), Echo(), plain_template="Q: {question}")
    with pytest.raises(TypeError, match="task must be a Task, got str"):
        ReasoningModule(str(tiny_model_path), "echo")


def test_check_model_source(tiny_model_path, tmp_path, monkeypatch):
    ReasoningModule(str(tiny_model_path), Echo()).check_model_source()  # a real folder: fine
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ValueError, match="'Qwen/Qwen2.5-0.5B-Instruct' is no local folder.*HF cache"):
        ReasoningModule("Qwen/Qwen2.5-0.5B-Instruct", Echo()).check_model_source()  # not cached here
    with pytest.raises(ValueError, match="module.tokenizer: 'org/tok'"):
        ReasoningModule(str(tiny_model_path), Echo(), tokenizer="org/tok").check_model_source()

    missing = tmp_path / "no_such_model"
    with pytest.raises(FileNotFoundError, match=r"does not exist \(no config.json\)") as err:
        ReasoningModule(str(missing), Echo()).check_model_source()
    assert repr(str(missing)) in str(err.value)

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        ReasoningModule(str(empty), Echo()).check_model_source()


@pytest.mark.parametrize("backend", ["hf_rollout", pytest.param("vllm_rollout", marks=pytest.mark.vllm)])
def test_reward_functions_get_the_rollouts_own_completion_ids(backend, request, tiny_model_path):
    """TRL's ``completion_ids``: the token ids the engine generated for each completion, which
    decode to the completion's text (its end-of-sequence token, when it stopped on one, kept)."""
    from es_lightning.tasks import FunctionTask

    seen: dict[str, list] = {}

    def by_ids(completions, completion_ids, **kwargs):
        seen.setdefault("completions", []).extend(completions)
        seen.setdefault("ids", []).extend(completion_ids)
        return [float(len(ids)) for ids in completion_ids]

    rollout = request.getfixturevalue(backend)
    module = ReasoningModule(str(tiny_model_path), FunctionTask(reward_funcs=[by_ids]))
    rows = [{"prompt": f"Q: {i}+{i}="} for i in range(3)]
    outputs = rollout.generate(
        module.encode(rows), SamplingConfig(n=2, temperature=1.0, max_tokens=8, seed=1)
    )
    scores = module.score(rows, outputs)
    generated = [c for out in outputs for c in out.completions]
    assert seen["ids"] == [c.token_ids for c in generated] and all(seen["ids"])
    assert seen["completions"] == [c.text for c in generated]
    eos = module.tokenizer.eos_token_id
    for ids, completion in zip(seen["ids"], generated):
        assert all(isinstance(t, int) for t in ids)
        assert (
            module.tokenizer.decode([t for t in ids if t != eos], skip_special_tokens=True) == completion.text
        )
    assert [s.reward for per in scores for s in per] == [float(len(c.token_ids)) for c in generated]
