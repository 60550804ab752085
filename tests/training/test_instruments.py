"""Named instrument sets: their callbacks, and the expansion of names in a recipe's ``callbacks``."""

from __future__ import annotations

import pytest

from es_lightning.errors import UnknownNameError
from es_lightning.presets import (
    INSTRUMENT_SETS,
    InstrumentSet,
    expand_instruments,
    register_instrument_set,
)

DRIFT = {"class_path": "es_lightning.callbacks.ParameterDrift", "init_args": {"every_n_updates": 10}}
ATTRIBUTION = {"class_path": "es_lightning.callbacks.LayerAttribution", "init_args": {"top_k": 100}}
DIVERSITY = {"class_path": "es_lightning.callbacks.PopulationDiversity"}
GPQA_ENTROPY = {
    "class_path": "es_lightning.callbacks.TokenEntropy",
    "init_args": {
        "task": {"class_path": "es_lightning.tasks.GPQA"},
        "every_n_updates": 10,
        "num_prompts": 64,
        "temperature": 0.6,
        "max_tokens": 2048,
    },
}
"""The entries the paper recipes spelled out (easy_qwen1p5b.yaml before it named them)."""


def test_sets_hold_the_entries_the_recipes_spelled_out():
    assert expand_instruments("weight_change") == [DRIFT, ATTRIBUTION]
    assert expand_instruments("population_diversity") == [DIVERSITY]
    assert expand_instruments("gpqa_entropy") == [GPQA_ENTROPY]
    assert expand_instruments("paper_instruments") == [GPQA_ENTROPY, DRIFT, ATTRIBUTION, DIVERSITY]


def test_names_in_a_list_expand_in_place_beside_other_entries():
    mine = {"class_path": "my_pkg.MyCallback", "init_args": {"x": 1}}
    assert expand_instruments(["weight_change", mine, "ParameterDrift", "population_diversity"]) == [
        DRIFT,
        ATTRIBUTION,
        mine,
        "ParameterDrift",  # a class name: jsonargparse resolves it
        DIVERSITY,
    ]


def test_values_without_a_name_pass_unchanged():
    for value in (
        None,
        "null",
        "[ParameterDrift]",
        "ParameterDrift",
        "es_lightning.callbacks.ParameterDrift",
    ):
        assert expand_instruments(value) is value


def test_inline_yaml_from_the_command_line_is_expanded():
    assert expand_instruments("[weight_change, ParameterDrift]") == [DRIFT, ATTRIBUTION, "ParameterDrift"]


def test_an_unknown_name_lists_the_known_ones():
    for value in ("paper_instrumnets", ["weight_change", "paper_instrumnets"]):
        with pytest.raises(UnknownNameError, match=r"'paper_instrumnets'; known sets: weight_change, "):
            expand_instruments(value)


def test_each_expansion_is_a_fresh_copy():
    expand_instruments("weight_change")[0]["init_args"]["every_n_updates"] = 1
    assert INSTRUMENT_SETS.find("weight_change").callbacks[0]["init_args"]["every_n_updates"] == 10


def test_a_set_needs_a_lower_case_name_and_class_paths():
    with pytest.raises(ValueError, match="lower_case"):
        InstrumentSet("PaperInstruments", (DRIFT,))
    with pytest.raises(ValueError, match="class_path"):
        InstrumentSet("empty", ())
    with pytest.raises(ValueError, match="class_path"):
        InstrumentSet("no_path", ({"init_args": {}},))
    with pytest.raises(ValueError, match="'weight_change' is taken"):
        register_instrument_set(InstrumentSet("weight_change", (DRIFT,)))
    assert len(INSTRUMENT_SETS["weight_change"].callbacks) == 2
