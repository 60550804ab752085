"""check_model_source: local folders, built-in names and hub ids (cached, offline, unknown)."""

from __future__ import annotations

import pytest
from huggingface_hub import constants

from es_lightning.errors import ConfigError, MissingPathError
from es_lightning.models import source
from es_lightning.models.source import check_model_source


@pytest.fixture()
def hub_cache(tmp_path, monkeypatch):
    """An empty HF hub cache; ``cache("org/name")`` adds a model to it as hf downloads do."""
    root = tmp_path / "hub"
    root.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(root))

    def cache(repo_id: str) -> None:
        repo = root / f"models--{repo_id.replace('/', '--')}"
        snapshot = repo / "snapshots" / ("a" * 40)
        snapshot.mkdir(parents=True)
        (snapshot / "config.json").write_text("{}")
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text("a" * 40)

    return cache


def test_local_folders(tiny_model_path, tmp_path):
    check_model_source(str(tiny_model_path))
    with pytest.raises(MissingPathError, match="'.*no_such' does not exist"):
        check_model_source(str(tmp_path / "no_such"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingPathError, match="has no config.json"):
        check_model_source(str(tmp_path / "empty"), "--base")
    with pytest.raises(MissingPathError, match="runs/a/checkpoints"):  # two slashes: a path, not a hub id
        check_model_source("runs/a/checkpoints/step-000001")


def test_built_in_names(hub_cache):
    check_model_source("es-lightning/tiny-random")
    with pytest.raises(ConfigError, match="unknown built-in model 'es-lightning/tiny-randm'.*tiny-random"):
        check_model_source("es-lightning/tiny-randm")


def test_hub_ids_in_the_cache_pass_offline(hub_cache, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_cache("org/cached-model")
    check_model_source("org/cached-model")
    with pytest.raises(ConfigError) as err:
        check_model_source("org/other-model")
    message = str(err.value)
    assert "module.model: 'org/other-model'" in message and "HF_HUB_OFFLINE=1" in message
    assert constants.HF_HUB_CACHE in message  # where it looked


def test_hub_ids_not_cached_are_asked_of_the_hub(hub_cache, monkeypatch):
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    monkeypatch.setattr(source, "hub_offline", lambda: False)
    answers = {}

    def model_info(self, repo_id, timeout=None):
        answer = answers[repo_id]
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(HfApi, "model_info", model_info)
    answers["org/exists"] = object()
    check_model_source("org/exists")  # not cached, but the download will find it
    not_found = RepositoryNotFoundError.__new__(RepositoryNotFoundError)  # as raised for a 404
    Exception.__init__(not_found, "404 Client Error: Repository Not Found")
    answers["org/typo"] = not_found
    with pytest.raises(ConfigError, match="the hub has no model of that name"):
        check_model_source("org/typo")
    answers["org/offline"] = ConnectionError("Name or service not known")
    with pytest.raises(ConfigError, match="the hub cannot be reached .*Name or service not known"):
        check_model_source("org/offline")


def test_invalid_hub_ids_are_named(hub_cache):
    with pytest.raises(ConfigError, match="valid hub id"):
        check_model_source("not a model id")
