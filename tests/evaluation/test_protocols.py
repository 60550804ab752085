"""Named evaluation protocols: their settings, and the expansion of a name in a recipe's value."""

from __future__ import annotations

import dataclasses

import pytest

from es_lightning.errors import ConfigError, UnknownNameError
from es_lightning.evaluation.runner import EvalConfig
from es_lightning.presets import (
    PROTOCOLS,
    EvalProtocol,
    expand_protocol,
    register_protocol,
)

PAPER = {
    **dataclasses.asdict(EvalConfig()),  # the fields the recipes left at their defaults
    "num_samples": 32,  # M (docs/paper.md: M = 32 samples at T = 0.6, K in {1, 16, 32})
    "temperature": 0.6,
    "max_tokens": 2048,
    "ks": [1, 16, 32],
    "greedy": True,
}
"""The ``evaluation:`` block the easy recipes spelled out, with EvalConfig's defaults filled in."""


def test_paper_protocol_is_the_block_the_recipes_spelled_out():
    assert expand_protocol("paper") == PAPER
    assert expand_protocol("paper_hard") == {**PAPER, "max_tokens": 8192}
    assert expand_protocol("demo_cpu") == {
        **PAPER,
        "num_samples": 16,
        "max_tokens": 32,
        "ks": [1, 2, 4, 8, 16],
    }
    assert expand_protocol("smoke_cpu") == {**PAPER, "num_samples": 4, "max_tokens": 8, "ks": [1, 2, 4]}


def test_every_protocol_is_a_valid_eval_config():
    for protocol in PROTOCOLS.values():
        assert EvalConfig(**protocol.settings()) == protocol.config


def test_a_protocol_key_takes_the_other_keys_as_changes():
    assert expand_protocol({"protocol": "paper", "max_tokens": 64, "ks": None}) == {
        **PAPER,
        "max_tokens": 64,
        "ks": None,
    }


def test_inline_yaml_from_the_command_line_is_expanded():
    assert expand_protocol("{protocol: paper_hard, limit: 100}") == {
        **PAPER,
        "max_tokens": 8192,
        "limit": 100,
    }
    with pytest.raises(ConfigError, match="does not read as YAML"):
        expand_protocol("{protocol: paper, ks: [1}")


def test_values_without_a_name_pass_unchanged():
    settings = {"num_samples": 4, "ks": [1, 4]}
    for value in (None, "null", settings, "{num_samples: 4}", "protocols/mine.yaml"):
        assert expand_protocol(value) is value


def test_an_unknown_name_lists_the_known_ones():
    for value in ("papr", {"protocol": "papr"}):
        with pytest.raises(UnknownNameError, match=r"'papr'; known protocols: paper, paper_hard"):
            expand_protocol(value)
    with pytest.raises(ConfigError, match="evaluation.protocol must name a protocol"):
        expand_protocol({"protocol": 3})


def test_each_expansion_is_a_fresh_copy():
    expand_protocol("paper")["ks"].append(64)
    assert PROTOCOLS.find("paper").config.ks == [1, 16, 32]


def test_a_taken_name_is_refused_for_another_protocol():
    assert register_protocol(PROTOCOLS.find("paper")) is PROTOCOLS.find("paper")  # the same again: fine
    with pytest.raises(ValueError, match="'paper' is taken"):
        register_protocol(EvalProtocol("paper", EvalConfig(num_samples=8)))
    assert PROTOCOLS.find("paper").config.num_samples == 32
