"""A run whose process group cannot start (a MASTER_PORT another process holds) ends with one
line naming the address, before any engine starts."""

from __future__ import annotations

import socket

import pytest

from es_lightning import ESStrategy, HFRollout, ReasoningModule, SamplingConfig, Trainer, TrainerConfig
from es_lightning.errors import ConfigError
from es_lightning.tasks import Echo


@pytest.mark.usefixtures("fresh_process_group")
def test_a_busy_master_port_is_named_in_one_line(tmp_path, tiny_model_path, monkeypatch):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
        monkeypatch.setenv("MASTER_PORT", str(port))
        rollout = HFRollout()
        module = ReasoningModule(
            model=str(tiny_model_path),
            task=Echo(length=4, n_train=4, n_test=2),
            train_sampling=SamplingConfig(max_tokens=4),
        )
        config = TrainerConfig(output_dir=str(tmp_path / "run"), max_steps=1, batch_size=2, accelerator="cpu")
        with pytest.raises(ConfigError) as raised:
            Trainer(module, ESStrategy(population_size=2), rollout, config).fit()
    message = str(raised.value)
    assert f"MASTER_ADDR:MASTER_PORT 127.0.0.1:{port}" in message and "\n" not in message
    assert "EADDRINUSE" in message and "unset MASTER_PORT" in message
    assert rollout.model is None  # failed before the rollout was set up
