"""Model-loading options reach every loader of the model: the module's tokenizer, the HF rollout,
the GRPO trainer model, the ES start, the vLLM engine and each checkpoint's files.

Nothing is downloaded: a revision test reads an offline HF hub cache built in ``tmp_path`` (one
repository at two commits, ``refs/main`` and ``refs/v2``, as ``hf download`` leaves them), and the
custom-code model is the tiny model with a config and model class of its own in the folder.
"""

from __future__ import annotations

import json
import sys

import pytest
import torch
from huggingface_hub import constants
from lightning.fabric import Fabric

from es_lightning.checkpoint import write_model_meta
from es_lightning.errors import ConfigError
from es_lightning.models.loading import ModelLoading, copy_model_code
from es_lightning.models.tiny import TinyConfig, build_tiny_model
from es_lightning.module import ReasoningModule
from es_lightning.rollout.base import Rollout, SamplingConfig
from es_lightning.rollout.hf import HFRollout
from es_lightning.strategies import GRPOStrategy
from es_lightning.tasks import Echo
from es_lightning.weight_files import weight_files

CPU = torch.device("cpu")
COMMITS = {"main": "a" * 40, "v2": "b" * 40}


def _task() -> Echo:
    return Echo(length=4, n_train=8, n_test=4)


def _weights_sum(folder) -> float:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    return sum(p.double().sum().item() for p in model.parameters())


@pytest.fixture()
def two_revisions(tmp_path, monkeypatch):
    """``org/tiny`` in an offline hub cache: ``main`` (seed 0) and ``v2`` (seed 1, its tokenizer
    with model_max_length 384); returns ``{revision: snapshot folder}``."""
    repo = tmp_path / "hub" / "models--org--tiny"
    snapshots = {}
    for seed, (ref, commit) in enumerate(COMMITS.items()):
        snapshot = build_tiny_model(repo / "snapshots" / commit, TinyConfig(seed=seed))
        if ref == "v2":
            config = json.loads((snapshot / "tokenizer_config.json").read_text())
            (snapshot / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 384}))
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(commit)
        snapshots[ref] = snapshot
    for name, value in (("HF_HUB_CACHE", str(tmp_path / "hub")), ("HF_HUB_OFFLINE", "1")):
        monkeypatch.setenv(name, value)  # for engine processes
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return snapshots


@pytest.fixture()
def custom_code_model(tmp_path, monkeypatch):
    """The tiny model as an architecture transformers does not know: ``model_type: tiny_custom``,
    its config and model classes in the folder (``auto_map``), as hub repositories ship them.
    transformers copies such code into ``HF_MODULES_CACHE``: here one in ``tmp_path``."""
    import transformers.dynamic_module_utils as dynamic

    modules = tmp_path / "modules"
    modules.mkdir()
    monkeypatch.setattr(dynamic, "HF_MODULES_CACHE", str(modules))
    monkeypatch.setenv("HF_MODULES_CACHE", str(modules))  # for subprocesses
    monkeypatch.syspath_prepend(str(modules))  # before another test's modules folder
    for name in [m for m in sys.modules if m.split(".")[0] == "transformers_modules"]:
        monkeypatch.delitem(sys.modules, name)  # imported again, from the folder above
    folder = build_tiny_model(tmp_path / "tiny-custom")
    config = json.loads((folder / "config.json").read_text())
    config.update(
        model_type="tiny_custom",
        architectures=["TinyCustomForCausalLM"],
        auto_map={
            "AutoConfig": "configuration_tiny_custom.TinyCustomConfig",
            "AutoModelForCausalLM": "modeling_tiny_custom.TinyCustomForCausalLM",
        },
    )
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    (folder / "configuration_tiny_custom.py").write_text(
        "from transformers import Qwen2Config\n\n\n"
        "class TinyCustomConfig(Qwen2Config):\n"
        '    model_type = "tiny_custom"\n'
    )
    (folder / "modeling_tiny_custom.py").write_text(
        "from transformers import Qwen2ForCausalLM\n\n"
        "from .configuration_tiny_custom import TinyCustomConfig\n\n\n"
        "class TinyCustomForCausalLM(Qwen2ForCausalLM):\n"
        "    config_class = TinyCustomConfig\n"
    )
    return folder


def _grpo_model(module: ReasoningModule, rollout: Rollout) -> torch.nn.Module:
    """The GRPO trainer model ``prepare`` loads for ``module``."""
    fabric = Fabric(accelerator="cpu", devices=1, strategy=GRPOStrategy())
    fabric.launch()
    fabric.strategy.prepare(fabric, module, rollout, None)
    return fabric.strategy._unwrapped()


# -- revision -------------------------------------------------------------------------------------
@pytest.mark.usefixtures("fresh_process_group")
@pytest.mark.parametrize(("revision", "ref"), [(None, "main"), ("v2", "v2"), (COMMITS["v2"], "v2")])
def test_a_revision_reaches_the_tokenizer_the_rollout_the_trainer_model_and_the_es_start(
    two_revisions, revision, ref
):
    sums = {name: _weights_sum(folder) for name, folder in two_revisions.items()}
    assert sums["main"] != sums["v2"]
    module = ReasoningModule("org/tiny", _task(), revision=revision)
    module.check_model_source()
    assert module.tokenizer.model_max_length == (384 if ref == "v2" else 512)
    rollout = HFRollout()
    rollout.setup(module.model, CPU, torch.float32, module.loading)
    assert rollout.checksum() == pytest.approx(sums[ref], rel=1e-12)
    rollout.es_init()  # the ES start: the weight files of the same revision
    assert rollout.es.checksum() == pytest.approx(sums[ref], rel=1e-9)
    assert weight_files(module.model, revision) == [str(two_revisions[ref] / "model.safetensors")]
    trainer_model = _grpo_model(module, rollout)
    assert sum(p.double().sum().item() for p in trainer_model.parameters()) == pytest.approx(
        sums[ref], rel=1e-12
    )


def test_a_revision_that_is_not_cached_is_named(two_revisions, monkeypatch):
    with pytest.raises(ConfigError) as err:
        ReasoningModule("org/tiny", _task(), revision="v3").check_model_source()
    message = str(err.value)
    assert "module.model: 'org/tiny' at revision 'v3'" in message and "HF_HUB_OFFLINE=1" in message
    assert "hf download org/tiny --revision v3" in message
    # with the hub reachable, it is asked about the revision
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RevisionNotFoundError

    from es_lightning.models import source

    def model_info(self, repo_id, timeout=None, revision=None):
        error = RevisionNotFoundError.__new__(RevisionNotFoundError)
        Exception.__init__(error, f"404 Client Error: Revision Not Found for {repo_id}@{revision}")
        raise error

    monkeypatch.setattr(source, "hub_offline", lambda: False)
    monkeypatch.setattr(HfApi, "model_info", model_info)
    with pytest.raises(ConfigError, match="the hub has no revision 'v3' of it"):
        ReasoningModule("org/tiny", _task(), revision="v3").check_model_source()


def test_a_revision_is_never_applied_to_a_local_folder(tiny_model_path, two_revisions):
    with pytest.raises(ConfigError, match="revision 'v2' names a hub commit, but model .* is a local folder"):
        ReasoningModule(str(tiny_model_path), _task(), revision="v2")
    module = ReasoningModule("org/tiny", _task(), revision="v2")
    assert module.loading.hub_kwargs("org/tiny") == {"trust_remote_code": False, "revision": "v2"}
    assert module.loading.hub_kwargs(str(tiny_model_path)) == {"trust_remote_code": False}
    stage = module.with_model(str(tiny_model_path))  # e.g. a pipeline stage's start (a checkpoint)
    rollout = HFRollout()
    rollout.setup(stage.model, CPU, torch.float32, stage.loading)
    assert rollout.checksum() == pytest.approx(_weights_sum(tiny_model_path), rel=1e-12)
    assert stage.tokenizer.model_max_length == 384  # the tokenizer stays v2's
    with pytest.raises(ConfigError, match="module.revision: empty"):
        ModelLoading(revision=" ")


# -- model_kwargs ---------------------------------------------------------------------------------
@pytest.mark.usefixtures("fresh_process_group")
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_model_kwargs_reach_the_rollout_and_trainer_models(tiny_model_path, attention):
    module = ReasoningModule(str(tiny_model_path), _task(), model_kwargs={"attn_implementation": attention})
    rollout = HFRollout()
    rollout.setup(module.model, CPU, torch.float32, module.loading)
    assert rollout.model.config._attn_implementation == attention
    assert _grpo_model(module, rollout).config._attn_implementation == attention


def test_model_kwargs_that_other_settings_own_are_refused(tiny_model_path):
    with pytest.raises(ConfigError, match=r"'dtype' is set by module.dtype; 'device_map' is set by trainer"):
        ReasoningModule(
            str(tiny_model_path), _task(), model_kwargs={"dtype": "bfloat16", "device_map": "auto"}
        )
    with pytest.raises(ConfigError, match="'trust_remote_code' is set by module.trust_remote_code"):
        ModelLoading(model_kwargs={"trust_remote_code": True})


# -- trust_remote_code ----------------------------------------------------------------------------
def test_custom_code_needs_trust_remote_code_and_then_loads_everywhere(custom_code_model, tmp_path):
    with pytest.raises(
        ConfigError, match=r"needs its own code .*model_type 'tiny_custom'.*trust_remote_code: true"
    ):
        ReasoningModule(str(custom_code_model), _task()).check_model_source()
    with pytest.raises(ValueError, match="trust_remote_code=True"):  # what transformers says later
        HFRollout().setup(str(custom_code_model), CPU, torch.float32)

    module = ReasoningModule(str(custom_code_model), _task(), trust_remote_code=True)
    module.check_model_source()
    rollout = HFRollout()
    rollout.setup(module.model, CPU, torch.float32, module.loading)
    assert type(rollout.model).__name__ == "TinyCustomForCausalLM"
    out = rollout.generate(
        module.encode(module.task.load("test")[:2]), SamplingConfig(temperature=0, max_tokens=4)
    )
    assert all(len(o.completions[0].token_ids) >= 1 for o in out)

    # a checkpoint's files: config (auto_map), the code, the tokenizer -> loads on its own
    from transformers import AutoConfig

    meta = write_model_meta(module.model, module.tokenizer, torch.float32, tmp_path / "meta", module.loading)
    assert {"configuration_tiny_custom.py", "modeling_tiny_custom.py"} <= {p.name for p in meta.iterdir()}
    assert type(AutoConfig.from_pretrained(meta, trust_remote_code=True)).__name__ == "TinyCustomConfig"


def test_hub_style_auto_map_entries_point_at_the_copied_code(custom_code_model, tmp_path):
    """transformers writes ``org/name--module.Class`` for code of a hub model; the copy points home."""
    target = tmp_path / "checkpoint"
    target.mkdir()
    config = json.loads((custom_code_model / "config.json").read_text())
    config["auto_map"] = {k: f"org/tiny-custom--{v}" for k, v in config["auto_map"].items()}
    config["auto_map"]["AutoTokenizer"] = ["other/repo--tok.Tok", None]  # code elsewhere: kept as is
    (target / "config.json").write_text(json.dumps(config))
    copied = copy_model_code(str(custom_code_model), target)  # the local folder stands in for the snapshot
    copied_names = sorted(p.name for p in copied)
    assert copied_names == ["configuration_tiny_custom.py", "modeling_tiny_custom.py"]
    config = json.loads((target / "config.json").read_text())
    assert config["auto_map"]["AutoTokenizer"] == ["other/repo--tok.Tok", None]
    assert config["auto_map"]["AutoConfig"] == "org/tiny-custom--configuration_tiny_custom.TinyCustomConfig"
    # the rewrite applies to the model's own repository name
    (target / "config.json").write_text(json.dumps({"auto_map": {"AutoConfig": f"{custom_code_model}--x.C"}}))
    (target / "x.py").write_text("")
    copy_model_code(str(custom_code_model), target)
    assert json.loads((target / "config.json").read_text())["auto_map"] == {"AutoConfig": "x.C"}


@pytest.mark.integration
def test_a_grpo_run_on_custom_code_checkpoints_it_and_resumes_from_it(custom_code_model, tmp_path):
    from transformers import AutoModelForCausalLM

    from es_lightning.checkpoint import Checkpoint, latest_checkpoint
    from tests.helpers import fit

    recipe = f"""
module:
  model: {custom_code_model}
  trust_remote_code: true
  model_kwargs: {{attn_implementation: eager}}
  task: {{class_path: es_lightning.tasks.Echo, init_args: {{length: 4, n_train: 8, n_test: 4}}}}
  train_sampling: {{temperature: 1.0, max_tokens: 6}}
strategy: {{class_path: es_lightning.strategies.GRPOStrategy, init_args: {{group_size: 2}}}}
rollout: {{class_path: es_lightning.rollout.hf.HFRollout}}
trainer: {{batch_size: 2, seed: 0, accelerator: cpu, progress_bar: false}}
evaluation: null
"""
    out = fit(tmp_path, "run", "--trainer.max_steps", "1", recipe=recipe)
    fit(tmp_path, "run", "--trainer.max_steps", "2", "--trainer.resume", "true", recipe=recipe)  # from it
    checkpoint = Checkpoint(latest_checkpoint(out))
    assert checkpoint.step == 2
    assert (checkpoint.path / "modeling_tiny_custom.py").is_file()
    assert checkpoint.hparams()["model_loading"] == {
        "revision": None,
        "trust_remote_code": True,
        "model_kwargs": {"attn_implementation": "eager"},
    }
    model = AutoModelForCausalLM.from_pretrained(checkpoint.path, trust_remote_code=True)
    assert type(model).__name__ == "TinyCustomForCausalLM"


# -- vLLM -----------------------------------------------------------------------------------------
@pytest.mark.vllm
def test_vllm_engine_arguments_carry_the_revision_and_remote_code(tiny_model_path):
    from es_lightning.rollout.vllm import VLLMRollout

    rollout = VLLMRollout(engine_kwargs={"max_num_batched_tokens": 512})
    rollout.setup("org/tiny", CPU, torch.float32, ModelLoading(revision="v2", trust_remote_code=True))
    args = rollout.engine_args()
    assert args["model"] == "org/tiny" and args["max_num_batched_tokens"] == 512
    assert (args["revision"], args["tokenizer_revision"], args["trust_remote_code"]) == ("v2", "v2", True)
    rollout.setup(str(tiny_model_path), CPU, torch.float32, ModelLoading(revision="v2"))  # a checkpoint
    assert "revision" not in rollout.engine_args() and rollout.engine_args()["trust_remote_code"] is False
    clashing = VLLMRollout(engine_kwargs={"trust_remote_code": True})
    with pytest.raises(
        ConfigError, match="engine_kwargs sets trust_remote_code=True but module.trust_remote_code"
    ):
        clashing.setup("org/tiny", CPU, torch.float32, ModelLoading())


@pytest.mark.integration
@pytest.mark.vllm
def test_a_vllm_engine_serves_the_revision_asked_for(two_revisions):
    from es_lightning.rollout.vllm import VLLMRollout

    module = ReasoningModule("org/tiny", _task(), revision="v2")
    rollout = VLLMRollout(gpu_memory_utilization=0.1, max_model_len=128)
    rollout.setup(module.model, CPU, torch.float32, module.loading)
    try:
        rollout.start()
        assert rollout.checksum() == pytest.approx(_weights_sum(two_revisions["v2"]), rel=1e-9)
        rollout.es_init()  # the ES start read from the same revision's files
        assert rollout.es.checksum() == pytest.approx(_weights_sum(two_revisions["v2"]), rel=1e-9)
    finally:
        rollout.close()


def test_the_evaluate_command_loads_the_revision_asked_for(two_revisions, tmp_path, monkeypatch):
    from es_lightning.evaluation.command import run_evaluate
    from es_lightning.evaluation.runner import EvalConfig

    loaded = {}

    class Recording(HFRollout):
        def setup(self, model_path, device, dtype, loading=None):
            super().setup(model_path, device, dtype, loading)
            loaded.update(checksum=self.checksum(), path=model_path)

    evaluation = EvalConfig(num_samples=1, max_tokens=4, limit=2, ks=[1], greedy=False)
    output = tmp_path / "eval.json"
    run_evaluate(
        _task(),
        model="org/tiny",
        revision="v2",
        output=output,
        evaluation=evaluation,
        rollout=Recording(),
        device="cpu",
    )
    assert loaded["checksum"] == pytest.approx(_weights_sum(two_revisions["v2"]), rel=1e-12)
    assert json.loads(output.read_text())["echo"]["n_prompts"] == 2
    with pytest.raises(ConfigError, match="--model: 'org/tiny' at revision 'v3'"):
        run_evaluate(
            _task(), model="org/tiny", revision="v3", output=output, rollout=Recording(), device="cpu"
        )
