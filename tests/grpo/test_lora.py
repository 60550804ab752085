"""GRPO with LoRA on the tiny model: merged weights, adapter-only training, engine sync, checkpoints
(transformers, PEFT, exact resume) and refused settings."""

from __future__ import annotations

import copy
import json
import sys

import pytest
import torch
from lightning.fabric import Fabric
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

from es_lightning.checkpoint import Checkpoint
from es_lightning.errors import ConfigError
from es_lightning.grpo.lora import LoRASettings, engine_holds_frozen_weights, merged_weights, wrap_with_lora
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import SamplingConfig
from es_lightning.strategies import GRPOFSDPStrategy, GRPOStrategy
from es_lightning.tasks import Echo
from es_lightning.training.config import TrainerConfig
from es_lightning.training.loggers import read_metrics
from es_lightning.training.resume import check_resume_compatible
from tests.helpers import assert_bit_identical, fit

pytest.importorskip("peft")

TARGETS = ("q_proj", "v_proj", "down_proj")  # k_proj, o_proj, gate_proj, up_proj stay plain
SETTINGS = LoRASettings(rank=4, alpha=8.0, target_modules=TARGETS)


def _targeted(name: str) -> bool:
    return name.endswith(".weight") and name.rsplit(".", 2)[-2] in TARGETS


def _peft_name(name: str) -> str:
    module, leaf = name.rsplit(".", 1)
    inner = ".base_layer" if module.rsplit(".", 1)[-1] in TARGETS else ""
    return f"base_model.model.{module}{inner}.{leaf}"


def _base(tiny_model_path):
    return AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)


def test_merged_weights_are_w_plus_scaled_ba_and_match_peft_merge(tiny_model_path):
    base = {n: p.detach().clone() for n, p in _base(tiny_model_path).named_parameters()}
    model = wrap_with_lora(_base(tiny_model_path), SETTINGS)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # B starts at zero; give it values so the merge is not trivially W
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    params = dict(model.named_parameters())
    merged = dict(merged_weights(model))

    assert list(merged) == list(base)  # plain HF names, no adapters, the model's order
    for name, weight in merged.items():
        if _targeted(name):
            prefix = "base_model.model." + name.removesuffix(".weight")
            a, b = params[f"{prefix}.lora_A.default.weight"], params[f"{prefix}.lora_B.default.weight"]
            expected = base[name] + (8.0 / 4) * b.detach() @ a.detach()  # W + (α/r)·B·A
            torch.testing.assert_close(weight, expected, rtol=1e-6, atol=1e-7)
            assert not torch.equal(weight, base[name])
        else:
            assert torch.equal(weight, base[name]), name
    # the trainer model is not merged in place; peft's own merge agrees
    assert all(torch.equal(params[_peft_name(n)], base[n]) for n in base)
    peft_merged = copy.deepcopy(model).merge_and_unload().state_dict()
    assert_bit_identical(merged, {n: peft_merged[n] for n in merged})
    assert_bit_identical(dict(merged_weights(model)), merged)  # merging twice changes nothing


def _setup(tiny_model_path, rollout, **kwargs):
    fabric = Fabric(accelerator="cpu", devices=1, strategy=GRPOStrategy(**kwargs))
    fabric.launch()
    module = ReasoningModule(
        model=str(tiny_model_path),
        task=Echo(length=4, n_train=32, n_test=4),
        train_sampling=SamplingConfig(temperature=1.0, max_tokens=6),
    )
    fabric.strategy.prepare(fabric, module, rollout, None)
    return fabric, fabric.strategy, module


@pytest.mark.usefixtures("fresh_process_group")
def test_step_trains_only_adapters_and_the_engine_serves_the_merge(tiny_model_path, hf_rollout):
    fabric, strategy, module = _setup(
        tiny_model_path, hf_rollout, group_size=8, learning_rate=1e-2, micro_batch_size=32, lora=SETTINGS
    )
    model = strategy._unwrapped()
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    assert sum(len(g["params"]) for g in strategy.optimizer.param_groups) == len(trainable)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    merged_before = {n: w.clone() for n, w in strategy.named_weights(hf_rollout)}
    assert_bit_identical(merged_before, {n: p.detach() for n, p in _base(tiny_model_path).named_parameters()})

    rows = module.task.load("train")
    for step in range(2):  # A moves from the second step on (B = 0 gives A no gradient at first)
        metrics = strategy.training_step(fabric, module, hf_rollout, rows[8 * step : 8 * step + 8], step, 0)
        assert metrics.metrics["grpo/grad_norm"] > 0
    after = dict(model.named_parameters())
    changed = {n for n in before if not torch.equal(before[n], after[n].detach())}
    assert changed == trainable  # every adapter moved, no base weight did

    merged = dict(strategy.named_weights(hf_rollout))
    moved = {n for n in merged if not torch.equal(merged[n], merged_before[n])}
    assert moved == {
        n for n in merged if _targeted(n)
    }  # embeddings, norms, biases, k/o/gate/up: bit-identical
    served = dict(hf_rollout.model.named_parameters())
    assert_bit_identical({n: served[n].detach() for n in merged}, merged)


@pytest.mark.usefixtures("fresh_process_group")
def test_reference_is_the_base_and_gradient_checkpointing_reaches_adapters(tiny_model_path, hf_rollout):
    settings = LoRASettings(rank=4, alpha=32.0, target_modules=TARGETS)
    fabric, strategy, module = _setup(
        tiny_model_path,
        hf_rollout,
        group_size=4,
        learning_rate=3e-2,
        beta=0.1,
        inner_iterations=2,
        gradient_checkpointing=True,
        lora=settings,
    )
    assert list(strategy.reference.parameters()) == []  # no second copy of the weights
    rows = module.task.load("train")[:8]
    before = {n: p.detach().clone() for n, p in strategy._unwrapped().named_parameters() if p.requires_grad}
    strategy.training_step(fabric, module, hf_rollout, rows, 0, run_seed=0)
    metrics = strategy.training_step(fabric, module, hf_rollout, rows, 1, run_seed=0).metrics
    assert metrics["grpo/kl"] > 0.0  # the adapted policy has moved away from the frozen base
    after = dict(strategy._unwrapped().named_parameters())
    assert all(not torch.equal(before[n], after[n].detach()) for n in before)


@pytest.mark.vllm
@pytest.mark.usefixtures("fresh_process_group")
def test_vllm_engine_serves_the_merged_weights(tiny_model_path, vllm_rollout):
    fabric, strategy, module = _setup(
        tiny_model_path, vllm_rollout, group_size=4, learning_rate=1e-2, micro_batch_size=32, lora=SETTINGS
    )
    rows = module.task.load("train")[:8]
    for step in range(2):
        strategy.training_step(fabric, module, vllm_rollout, rows, step, run_seed=1)
    expected = sum(w.double().sum().item() for _, w in strategy.named_weights(vllm_rollout))
    base = sum(p.double().sum().item() for p in _base(tiny_model_path).parameters())
    assert vllm_rollout.checksum() == pytest.approx(expected, rel=1e-9)
    assert expected != pytest.approx(base, rel=1e-9)


@pytest.mark.vllm
@pytest.mark.usefixtures("fresh_process_group")
def test_vllm_sync_sends_only_the_adapted_layers_and_the_engine_equals_the_merge(
    tiny_model_path, vllm_rollout, tmp_path, monkeypatch
):
    sent: list[list[str]] = []
    load = vllm_rollout.load_weights

    def recording_load(named):
        named = list(named)
        sent.append([n for n, _ in named])
        load(named)

    monkeypatch.setattr(vllm_rollout, "load_weights", recording_load)
    fabric, strategy, module = _setup(
        tiny_model_path, vllm_rollout, group_size=4, learning_rate=1e-2, micro_batch_size=32, lora=SETTINGS
    )
    rows = module.task.load("train")[:8]
    for step in range(2):
        strategy.training_step(fabric, module, vllm_rollout, rows, step, run_seed=1)
    adapted = [n for n, _ in strategy.named_weights(vllm_rollout) if _targeted(n)]
    assert sent == [adapted] * 3  # prepare's first sync and one per step: the merged W' only
    served = vllm_rollout.digest()
    merged = dict(strategy.named_weights(vllm_rollout))  # every weight, as the engine must hold them
    reference = tmp_path / "merged.safetensors"
    save_file({n: w.contiguous() for n, w in merged.items()}, str(reference))
    monkeypatch.undo()
    vllm_rollout.es_init([str(reference)])  # the whole merged model by another route
    assert vllm_rollout.digest() == served
    vllm_rollout.es_init()
    assert vllm_rollout.digest() != served  # the adapters did move the served weights


def test_engine_holds_frozen_weights_unless_its_start_files_rounded_them(tmp_path, tiny_model_path):
    assert engine_holds_frozen_weights(tiny_model_path, torch.float32)  # the trainer read the same files
    assert engine_holds_frozen_weights("some-org/some-hub-model", torch.bfloat16)
    checkpoint = tmp_path / "step-000002"
    (checkpoint / "grpo_state").mkdir(parents=True)
    (checkpoint / "grpo_state" / "master.safetensors").write_bytes(b"")  # fp32 master beside the served file
    assert not engine_holds_frozen_weights(checkpoint, torch.float32)  # serving dtype not recorded
    for written, serving, exact in [
        (torch.float32, torch.bfloat16, True),  # bf16 engine casts the fp32 file as a sync would
        (torch.bfloat16, torch.bfloat16, True),
        (torch.bfloat16, torch.float32, False),  # the engine would hold bf16-rounded frozen weights
    ]:
        (checkpoint / "trainer_state.json").write_text(json.dumps({"serving_dtype": str(written)}))
        assert engine_holds_frozen_weights(checkpoint, serving) is exact


@pytest.mark.usefixtures("fresh_process_group")
def test_sync_sends_everything_when_the_engine_may_hold_other_frozen_weights(tiny_model_path, hf_rollout):
    fabric, strategy, _ = _setup(tiny_model_path, hf_rollout, group_size=4, lora=SETTINGS)
    sent: list[list[str]] = []
    hf_rollout.load_weights = lambda named: sent.append([n for n, _ in named])
    strategy.sync_weights(hf_rollout)
    strategy.sync_weights(hf_rollout, everything=True)
    every = [n for n, _ in strategy.named_weights(hf_rollout)]
    assert sent == [[n for n in every if _targeted(n)], every]


LORA_RECIPE = """
module:
  model: {model}
  task: {{class_path: es_lightning.tasks.Echo, init_args: {{length: 4, n_train: 16, n_test: 4}}}}
  train_sampling: {{temperature: 1.0, max_tokens: 6}}
strategy:
  class_path: es_lightning.strategies.GRPOStrategy
  init_args:
    group_size: 4
    learning_rate: 1.0e-2
    micro_batch_size: 8
    lora: {{rank: 4, alpha: 8, dropout: 0.1, target_modules: [q_proj, v_proj, down_proj]}}
rollout: {{class_path: es_lightning.rollout.hf.HFRollout}}
trainer: {{batch_size: 4, seed: 5, accelerator: cpu, progress_bar: false}}
evaluation: null
"""


@pytest.mark.integration
def test_checkpoint_loads_in_transformers_and_peft_and_resumes_exactly(tmp_path, tiny_model_path):
    from peft import PeftModel

    recipe = LORA_RECIPE.format(model=tiny_model_path)
    straight = fit(tmp_path, "straight", "--trainer.max_steps", "3", recipe=recipe)
    resumed = fit(tmp_path, "resumed", "--trainer.max_steps", "1", recipe=recipe)
    fit(tmp_path, "resumed", "--trainer.max_steps", "3", "--trainer.resume", "true", recipe=recipe)
    ckpt = straight / "checkpoints" / "step-000003"
    master = load_file(ckpt / "grpo_state" / "master.safetensors")

    # a plain HF model holding the merged weights; the base is unchanged outside the targets
    loaded = dict(AutoModelForCausalLM.from_pretrained(ckpt, dtype=torch.float32).named_parameters())
    assert_bit_identical({n: loaded[n].detach() for n in master}, master)
    base = dict(_base(tiny_model_path).named_parameters())
    assert {n for n in master if not torch.equal(master[n], base[n].detach())} == {
        n for n in master if _targeted(n)
    }
    # the adapter in PEFT's format, on the source model, merges to the same weights
    adapted = PeftModel.from_pretrained(_base(tiny_model_path), ckpt / "grpo_state")
    assert_bit_identical(dict(merged_weights(adapted)), master)

    # resume continues the run bit-exactly (AdamW moments, dropout masks included)
    assert_bit_identical(master, load_file(resumed / "checkpoints/step-000003/grpo_state/master.safetensors"))
    o1, o2 = (
        torch.load(out / "checkpoints/step-000003/grpo_state/fabric_state.ckpt", weights_only=True)
        for out in (straight, resumed)
    )
    assert_bit_identical(o1["model"], o2["model"])
    assert o1["optimizer"]["state"].keys() == o2["optimizer"]["state"].keys()
    for key, state in o1["optimizer"]["state"].items():
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(state[name], o2["optimizer"]["state"][key][name])
    rewards = [
        [m["train/reward_mean"] for m in read_metrics(o / "metrics.jsonl")] for o in (straight, resumed)
    ]
    assert rewards[0] == rewards[1]

    # the recorded lora settings guard the resume: the same pass, another rank is refused
    trainer = TrainerConfig(batch_size=4, seed=5, accelerator="cpu")
    same = GRPOStrategy(
        group_size=4,
        learning_rate=1e-2,
        micro_batch_size=8,
        lora=LoRASettings(rank=4, alpha=8, dropout=0.1, target_modules=TARGETS),
    )
    assert check_resume_compatible(Checkpoint(ckpt), "grpo", same.hparams(), trainer) == []
    other = GRPOStrategy(group_size=4, learning_rate=1e-2, micro_batch_size=8, lora=LoRASettings(rank=8))
    with pytest.raises(ConfigError, match="strategy.lora"):
        check_resume_compatible(Checkpoint(ckpt), "grpo", other.hparams(), trainer)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(rank=0), r"rank=0 \(must be an integer >= 1\)"),
        (dict(alpha=0.0), "alpha=0.0"),
        (dict(dropout=1.0), "dropout=1.0"),
        (dict(target_modules=()), "target_modules=\\[\\]"),
    ],
)
def test_bad_settings_are_named(kwargs, match):
    with pytest.raises(ConfigError, match=match):
        LoRASettings(**kwargs)


@pytest.mark.usefixtures("fresh_process_group")
def test_unknown_target_module_is_refused_before_training(tiny_model_path, hf_rollout):
    with pytest.raises(ConfigError, match=r"\['qkv_proj'\] match no linear layer"):
        _setup(tiny_model_path, hf_rollout, lora=LoRASettings(target_modules=("q_proj", "qkv_proj")))


def test_fsdp_refuses_lora():
    with pytest.raises(ConfigError, match="not supported under FSDP"):
        GRPOFSDPStrategy(lora=LoRASettings())


def test_missing_peft_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "peft", None)  # an environment without peft
    with pytest.raises(ConfigError, match=r'pip install "es-lightning\[lora\]"'):
        GRPOStrategy(lora=LoRASettings())
