"""Names in a ``fit`` recipe (``evaluation: paper``, ``callbacks: paper_instruments``) resolve, through
the real parser, to exactly the settings written out; a typo names the valid choices; ``--help``
lists them."""

from __future__ import annotations

import contextlib
import io
import warnings

import pytest
import yaml

from es_lightning.presets import INSTRUMENT_SETS, PROTOCOLS, accept_names
from es_lightning.training.command import fit_parser

BASE = """
module:
  model: es-lightning/tiny-random
  task: {class_path: es_lightning.tasks.Echo, init_args: {length: 4, n_train: 12, n_test: 4}}
strategy: {class_path: es_lightning.strategies.ESStrategy, init_args: {population_size: 4}}
rollout: {class_path: es_lightning.rollout.hf.HFRollout}
trainer: {batch_size: 4, accelerator: cpu}
"""
EXPLICIT = """
evaluation:
  num_samples: 32
  temperature: 0.6
  max_tokens: 2048
  ks: [1, 16, 32]
  greedy: true
callbacks:
  - class_path: es_lightning.callbacks.TokenEntropy
    init_args:
      task: {class_path: es_lightning.tasks.GPQA}
      every_n_updates: 10
      num_prompts: 64
      temperature: 0.6
      max_tokens: 2048
  - class_path: es_lightning.callbacks.ParameterDrift
    init_args: {every_n_updates: 10}
  - class_path: es_lightning.callbacks.LayerAttribution
    init_args: {top_k: 100}
  - class_path: es_lightning.callbacks.PopulationDiversity
"""
"""The blocks easy_qwen1p5b.yaml spelled out before it named them."""


@pytest.fixture(scope="module")
def parser():
    return fit_parser()


def resolve(parser, tmp_path, recipe: str, *argv: str) -> dict:
    """The configuration ``--print_config`` prints for ``recipe`` and ``argv``, as data."""
    path = tmp_path / "recipe.yaml"
    path.write_text(recipe)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return yaml.safe_load(
            parser.dump(parser.parse_args(["--config", str(path), *argv]), skip_unset=False)
        )


def parse_error(parser, tmp_path, recipe: str, *argv: str) -> str:
    errors = io.StringIO()
    with pytest.raises(SystemExit), contextlib.redirect_stderr(errors):
        resolve(parser, tmp_path, recipe, *argv)
    return errors.getvalue()


def test_named_protocol_and_instruments_resolve_to_the_explicit_blocks(parser, tmp_path):
    explicit = resolve(parser, tmp_path, BASE + EXPLICIT)
    assert explicit["evaluation"]["max_tokens"] == 2048 and len(explicit["callbacks"]) == 4
    assert resolve(parser, tmp_path, BASE + "evaluation: paper\ncallbacks: paper_instruments\n") == explicit
    parts = (
        "callbacks: [gpqa_entropy, weight_change, {class_path: es_lightning.callbacks.PopulationDiversity}]\n"
    )
    assert resolve(parser, tmp_path, BASE + "evaluation: {protocol: paper}\n" + parts) == explicit
    on_the_command_line = resolve(
        parser, tmp_path, BASE, "--evaluation", "paper", "--callbacks", "[gpqa_entropy, weight_change]"
    )
    assert on_the_command_line["evaluation"] == explicit["evaluation"]
    assert on_the_command_line["callbacks"] == explicit["callbacks"][:3]


def test_fields_after_a_name_change_only_themselves(parser, tmp_path):
    paper = resolve(parser, tmp_path, BASE + "evaluation: paper\n")["evaluation"]
    changed = resolve(parser, tmp_path, BASE + "evaluation: paper\n", "--evaluation.max_tokens", "64")
    assert changed["evaluation"] == {**paper, "max_tokens": 64}
    inline = resolve(parser, tmp_path, BASE, "--evaluation", "{protocol: paper, ks: null}")
    assert inline["evaluation"] == {**paper, "ks": None}
    appended = resolve(
        parser, tmp_path, BASE + "callbacks: weight_change\n", "--callbacks+=population_diversity"
    )
    assert [c["class_path"].rsplit(".", 1)[1] for c in appended["callbacks"]] == [
        "ParameterDrift",
        "LayerAttribution",
        "PopulationDiversity",
    ]


def test_expanded_entries_are_still_type_checked(parser, tmp_path):
    error = parse_error(parser, tmp_path, BASE + "evaluation: {protocol: paper, num_samples: many}\n")
    assert "num_samples" in error


def test_a_typo_names_the_valid_choices(parser, tmp_path):
    error = parse_error(parser, tmp_path, BASE + "evaluation: papr\n")
    assert "unknown evaluation protocol 'papr'" in error and all(name in error for name in PROTOCOLS)
    error = parse_error(parser, tmp_path, BASE, "--callbacks", "paper_instrumnets")
    assert "unknown instrument set 'paper_instrumnets'" in error and all(n in error for n in INSTRUMENT_SETS)
    error = parse_error(parser, tmp_path, BASE + "callbacks: [weight_change, entropy]\n")
    assert "unknown instrument set 'entropy'" in error


def test_help_lists_every_name(parser):
    out = io.StringIO()
    with pytest.raises(SystemExit), contextlib.redirect_stdout(out):
        parser.parse_args(["--help"])
    text = " ".join(out.getvalue().split())  # undo the line wrapping
    for name in [*PROTOCOLS, *INSTRUMENT_SETS]:
        assert f"{name} (" in text, name


def test_only_the_fit_parser_takes_names():
    from jsonargparse import ArgumentParser

    with pytest.raises(ValueError, match="no typed argument 'evaluation'"):
        accept_names(ArgumentParser())
