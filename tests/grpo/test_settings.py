"""GRPO's settings: GRPOLoss and GRPOSettings check their values once, the strategy's keyword
arguments are exactly their fields, and hparams() records each setting once (the help:
tests/strategies/test_strategy_help.py)."""

import inspect
from dataclasses import fields

import pytest
import torch

from es_lightning.errors import ConfigError
from es_lightning.grpo import GRPOLoss, grpo_loss
from es_lightning.grpo.lora import LoRASettings
from es_lightning.grpo.settings import SETTING_NAMES, GRPOSettings, build_settings, settings_hparams
from es_lightning.strategies import GRPOStrategy
from tests.grpo.test_loss import _reference, _tensors

FABRIC_ARGUMENTS = {"self", "process_group_backend", "kwargs"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(clip_eps=1.5), r"GRPOLoss: invalid clip_eps=1.5 \(must be in \(0, 1\)\)"),
        (dict(clip_eps=0.0), r"clip_eps=0.0 \(must be in \(0, 1\)\)"),
        (dict(clip_eps_high=-0.1), r"clip_eps_high=-0.1 \(must be null or > 0\)"),
        (dict(beta=-1.0), r"beta=-1.0 \(must be >= 0\)"),
        (dict(loss_aggregation="sum"), r"loss_aggregation='sum' \(must be token_mean or sequence_mean\)"),
        (dict(clip_eps=2.0, beta=-1.0), r"clip_eps=2.0 \(must be in \(0, 1\)\); beta=-1.0"),
    ],
)
def test_loss_names_each_bad_setting(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        GRPOLoss(**kwargs)


def test_settings_name_each_bad_setting_and_take_betas_as_a_list():
    with pytest.raises(
        ConfigError, match=r"GRPOSettings: invalid group_size=1 \(must be >= 2\); warmup_ratio=1.0"
    ):
        GRPOSettings(group_size=1, warmup_ratio=1.0)
    assert GRPOSettings(adam_betas=[0.9, 0.95]).adam_betas == (0.9, 0.95)  # type: ignore[arg-type]


def test_build_settings_names_the_bad_values_of_both_in_the_given_order():
    with pytest.raises(
        ConfigError, match=r"GRPOStrategy: invalid group_size=1 \(must be >= 2\); clip_eps=2.0"
    ):
        build_settings(group_size=1, clip_eps=2.0, micro_batch_size=4)


@pytest.mark.parametrize("aggregation", ["token_mean", "sequence_mean"])
def test_loss_module_is_grpo_loss_with_its_settings_and_matches_the_plain_reference(aggregation):
    rows = _reference(0.2, 0.28, beta=0.1)
    toks = [tok for row in rows for tok in row]
    if aggregation == "token_mean":
        expected = sum(tok[0] for tok in toks) / 5
    else:
        expected = sum(sum(tok[0] for tok in row) / len(row) for row in rows) / 2
    logp, old, adv, mask, ref = _tensors()
    loss_fn = GRPOLoss(clip_eps=0.2, clip_eps_high=0.28, beta=0.1, loss_aggregation=aggregation)
    loss, stats = loss_fn(logp, old, adv, mask, ref_logp=ref)
    direct, direct_stats = grpo_loss(
        logp,
        old,
        adv,
        mask,
        clip_eps=0.2,
        clip_eps_high=0.28,
        ref_logp=ref,
        beta=0.1,
        aggregation=aggregation,
    )
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    assert torch.equal(loss, direct) and stats == direct_stats


def test_strategy_arguments_are_the_settings_fields_with_their_defaults():
    """The recipes' strategy.init_args: every field of GRPOSettings and GRPOLoss, nothing else
    besides Fabric's, with the fields' defaults."""
    parameters = inspect.signature(GRPOStrategy.__init__).parameters
    assert set(parameters) - FABRIC_ARGUMENTS == set(SETTING_NAMES)
    assert len(SETTING_NAMES) == len(set(SETTING_NAMES)) == len(fields(GRPOSettings)) + len(fields(GRPOLoss))
    defaults = {
        **{f.name: f.default for f in fields(GRPOSettings)},
        **{f.name: f.default for f in fields(GRPOLoss)},
    }
    assert {name: parameters[name].default for name in SETTING_NAMES} == defaults
    assert (
        defaults["clip_eps"] == 0.2 and defaults["group_size"] == 8 and defaults["adam_betas"] == (0.9, 0.999)
    )


def test_hparams_list_every_setting_exactly_once():
    lora = LoRASettings(rank=4, target_modules=("q_proj",))
    strategy = GRPOStrategy(group_size=4, clip_eps=0.1, adam_betas=(0.9, 0.95), lora=None)
    hparams = strategy.hparams()
    assert list(hparams) == [*SETTING_NAMES, "process_group_backend"]
    assert hparams["group_size"] == 4 and hparams["clip_eps"] == 0.1 and hparams["adam_betas"] == [0.9, 0.95]
    assert hparams["process_group_backend"] is None and hparams["lora"] is None
    settings, loss = build_settings(lora=lora, beta=0.05)
    recorded = settings_hparams(settings, loss)
    assert recorded["lora"] == {
        "rank": 4,
        "alpha": 16.0,
        "dropout": 0.0,
        "target_modules": ["q_proj"],
        "seed": 0,
    }
    assert recorded["beta"] == 0.05
